// Sequential, random and distributed index orders.
#include "loom/data/sampler.h"

#include <numeric>
#include <utility>

#include "loom/tensor/error.h"
#include "loom/tensor/random_bits.h"

namespace loom::data {

std::vector<int64_t> permutation(int64_t n, uint64_t seed, int64_t epoch) {
  LOOM_CHECK(n >= 0, "permutation: size must be non-negative, got ", n);
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  // A distinct key per epoch; the salt keeps it apart from the augmentation's key of (seed, epoch).
  const uint64_t key = random_bits::hash(seed ^ 0x5DEECE66Dull, static_cast<uint64_t>(epoch));
  for (int64_t i = n - 1; i > 0; --i) {
    const int64_t j = static_cast<int64_t>(
        random_bits::below(key, static_cast<uint64_t>(i), static_cast<uint64_t>(i + 1)));
    std::swap(order[i], order[j]);
  }
  return order;
}

SequentialSampler::SequentialSampler(int64_t size) : size_(size) {
  LOOM_CHECK(size >= 0, "SequentialSampler: size must be non-negative, got ", size);
}

std::vector<int64_t> SequentialSampler::indices(int64_t) const {
  std::vector<int64_t> order(static_cast<size_t>(size_));
  std::iota(order.begin(), order.end(), int64_t{0});
  return order;
}

RandomSampler::RandomSampler(int64_t size, uint64_t seed) : size_(size), seed_(seed) {
  LOOM_CHECK(size >= 0, "RandomSampler: size must be non-negative, got ", size);
}

std::vector<int64_t> RandomSampler::indices(int64_t epoch) const {
  return permutation(size_, seed_, epoch);
}

namespace {
// The arguments every sharding sampler shares; `who` names the sampler in the message.
void check_shard(const char* who, int64_t size, int rank, int world_size) {
  LOOM_CHECK(world_size >= 1, who, ": world_size must be at least 1, got ", world_size);
  LOOM_CHECK(rank >= 0 && rank < world_size, who, ": rank ", rank, " is outside [0, ", world_size,
             ")");
  LOOM_CHECK(size >= 0, who, ": size must be non-negative, got ", size);
}
}  // namespace

DistributedSampler::DistributedSampler(int64_t size, int rank, int world_size, bool shuffle,
                                       uint64_t seed, bool drop_last)
    : size_(size), rank_(rank), world_size_(world_size), shuffle_(shuffle), seed_(seed) {
  check_shard("DistributedSampler", size, rank, world_size);
  shard_size_ = drop_last ? size / world_size : (size + world_size - 1) / world_size;
  LOOM_CHECK(shard_size_ > 0 || size == 0, "DistributedSampler: ", size,
             " samples cannot give each of ", world_size, " ranks one sample with drop_last");
}

std::vector<int64_t> DistributedSampler::indices(int64_t epoch) const {
  std::vector<int64_t> order =
      shuffle_ ? permutation(size_, seed_, epoch) : SequentialSampler(size_).indices(epoch);
  const int64_t total = shard_size_ * world_size_;
  std::vector<int64_t> shard;
  shard.reserve(static_cast<size_t>(shard_size_));
  for (int64_t k = rank_; k < total; k += world_size_) {
    shard.push_back(order[static_cast<size_t>(k % size_)]);  // k >= size_: padding from the start
  }
  return shard;
}

DistributedEvalSampler::DistributedEvalSampler(int64_t size, int rank, int world_size)
    : size_(size), rank_(rank), world_size_(world_size) {
  check_shard("DistributedEvalSampler", size, rank, world_size);
}

std::vector<int64_t> DistributedEvalSampler::indices(int64_t) const {
  std::vector<int64_t> shard;
  for (int64_t i = rank_; i < size_; i += world_size_) shard.push_back(i);
  return shard;
}

}  // namespace loom::data
