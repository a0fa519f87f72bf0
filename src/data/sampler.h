// Samplers: the order in which an epoch visits a dataset's indices. A shuffled order is a
// function of (seed, epoch) only, so every rank and every run sees the same permutation.
#pragma once

#include <cstdint>
#include <vector>

namespace loom::data {

// Which part of a dataset a sampler deals: rank `rank` of `world_size` ranks (0 of 1: all of it).
struct Shard {
  int rank = 0;
  int world_size = 1;
};

class Sampler {
 public:
  virtual ~Sampler() = default;
  virtual std::vector<int64_t> indices(int64_t epoch) const = 0;
  // The ranks' samplers say which shard they deal, so a training loop can check that every
  // rank's loader holds its own part of the data.
  virtual Shard shard() const { return {}; }
};

// 0, 1, ..., n - 1 every epoch.
class SequentialSampler : public Sampler {
 public:
  explicit SequentialSampler(int64_t size);
  std::vector<int64_t> indices(int64_t epoch) const override;

 private:
  int64_t size_;
};

// A fresh permutation of 0..n-1 each epoch.
class RandomSampler : public Sampler {
 public:
  RandomSampler(int64_t size, uint64_t seed);
  std::vector<int64_t> indices(int64_t epoch) const override;

 private:
  int64_t size_;
  uint64_t seed_;
};

// Rank `rank` of `world_size` gets every world_size-th index of the epoch's order (a
// permutation when shuffle, else 0..n-1), starting at `rank`, as PyTorch's DistributedSampler:
// the shards are disjoint and of equal size. When n is not a multiple of world_size the order is
// padded by repeating its start (drop_last = false; every sample is seen, a few twice) or its
// tail is dropped (drop_last = true; none is seen twice).
class DistributedSampler : public Sampler {
 public:
  DistributedSampler(int64_t size, int rank, int world_size, bool shuffle = true, uint64_t seed = 0,
                     bool drop_last = false);
  std::vector<int64_t> indices(int64_t epoch) const override;
  Shard shard() const override { return {rank_, world_size_}; }
  int64_t shard_size() const { return shard_size_; }

 private:
  int64_t size_;
  int rank_, world_size_;
  bool shuffle_;
  uint64_t seed_;
  int64_t shard_size_;
};

// For evaluation over ranks: rank `rank` gets rank, rank + world_size, ... of 0..n-1, in order,
// without padding, so over all ranks every sample counts exactly once and summed metrics equal
// one rank's. Shards differ in size by at most one, which is harmless where no step is a
// collective (evaluation), unlike training, where DDP needs every rank to take each step.
class DistributedEvalSampler : public Sampler {
 public:
  DistributedEvalSampler(int64_t size, int rank, int world_size);
  std::vector<int64_t> indices(int64_t epoch) const override;
  Shard shard() const override { return {rank_, world_size_}; }

 private:
  int64_t size_;
  int rank_, world_size_;
};

// A uniform permutation of 0..n-1 from (seed, epoch): Fisher-Yates over counter-based draws.
std::vector<int64_t> permutation(int64_t n, uint64_t seed, int64_t epoch);

}  // namespace loom::data
