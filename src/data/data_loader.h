// DataLoader: batches of float32 NCHW images and int64 labels from a Dataset, produced by N
// worker threads into a bounded ring of prefetch slots (memory never grows with the epoch),
// augmented per sample as Keras does, and optionally delivered to a GPU through pinned buffers
// and asynchronous copies (or warped on the GPU from uint8). Batches come out in order, and
// each sample's augmentation depends only on (seed, epoch, dataset index), so the result is the
// same for any number of workers.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "loom/data/augment.h"
#include "loom/data/bad_input.h"
#include "loom/data/dataset.h"
#include "loom/data/sampler.h"
#include "loom/tensor/tensor.h"

namespace loom::data {

struct DataLoaderOptions {
  int64_t batch_size = 32;
  bool shuffle = true;     // a RandomSampler(seed) when no sampler is given
  bool drop_last = false;  // leave out a final short batch
  uint64_t seed = 0;       // the shuffling seed (augmentation has its own in `augment`)
  std::shared_ptr<const Sampler> sampler;  // e.g. a DistributedSampler; overrides shuffle
  int num_workers = 0;       // 0: batches are made in the calling thread, when asked for
  int prefetch_batches = 0;  // batches in flight at most; 0 means 2 per worker
  // The per-sample transform (identity with rescale only, for evaluation); see AugmentOptions.
  AugmentOptions augment;
  Device device = kCPU;            // where batches are delivered
  bool pin_memory = true;          // pinned staging buffers when the device is CUDA
  bool augment_on_device = false;  // CUDA only: upload uint8 and warp on the GPU
  OnBadInput on_bad_input = OnBadInput::Skip;
};

struct Batch {
  Tensor images;      // float32 [B, C, H, W] on the loader's device
  Tensor labels;      // int64 [B] on the loader's device
  int64_t index = 0;  // batch number within the epoch
};

class DataLoader {
 public:
  // The dataset must outlive the loader and return images of one shape (set a decode size).
  DataLoader(const Dataset& dataset, DataLoaderOptions options);
  ~DataLoader();  // stops and joins the workers, also mid-epoch
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  // Starts epoch `epoch` (abandoning any unfinished one): the sampler's order for it, and the
  // augmentation's draws for it. With first_batch k the epoch starts at its batch k: batches
  // 0..k-1 are never read or augmented, and batch k onwards are exactly those of a full epoch
  // (how a run resumed mid-epoch skips what it already trained on). 0 <= k <= num_batches().
  void start_epoch(int64_t epoch, int64_t first_batch = 0);
  // The next batch, or nothing at the end of the epoch. A worker's exception (or, in strict
  // mode, a bad file) is rethrown here and ends the epoch. In Skip mode a bad sample is left
  // out of its batch (which is then shorter) with one warning line, and the epoch's count is
  // printed when the epoch ends.
  std::optional<Batch> next();

  int64_t num_batches() const { return num_batches_; }  // of the current epoch
  int64_t skipped() const { return skipped_; }          // bad samples skipped so far this epoch
  const DataLoaderOptions& options() const { return options_; }

 private:
  struct Slot;
  struct Shared;
  void stop_workers();
  void worker_loop();
  void fill(int64_t batch, Slot& slot);
  Batch deliver(Slot& slot);

  const Dataset& dataset_;
  DataLoaderOptions options_;
  int prefetch_ = 1;
  int64_t epoch_ = -1;
  std::vector<int64_t> order_;
  int64_t num_batches_ = 0;
  int64_t skipped_ = 0;
  bool finished_ = true;
  std::unique_ptr<Shared> shared_;
};

// The batches an epoch of `samples` makes in batches of `options.batch_size`: the short last one
// counted unless options.drop_last (what DataLoader::num_batches() is for a full epoch).
inline int64_t batches_per_epoch(int64_t samples, const DataLoaderOptions& options) {
  const int64_t bs = options.batch_size;
  return options.drop_last ? samples / bs : (samples + bs - 1) / bs;
}

// Rank `shard.rank`'s loader options among `shard.world_size` ranks, made from one rank's: for
// training, a DistributedSampler with the options' shuffle and seed (each epoch's order dealt
// into equal shards, so every rank takes the same number of steps, and N ranks of batch b see
// together what one rank of batch N*b sees); for evaluation, a DistributedEvalSampler (every
// sample exactly once over the ranks). For one rank the options come back unchanged; for
// several, options that already name a sampler are an error.
DataLoaderOptions train_shard_options(DataLoaderOptions options, int64_t dataset_size, Shard shard);
DataLoaderOptions eval_shard_options(DataLoaderOptions options, int64_t dataset_size, Shard shard);

}  // namespace loom::data
