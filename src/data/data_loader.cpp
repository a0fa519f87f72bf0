// The DataLoader's machinery: a ring of `prefetch` slots; worker w claims batch b only while
// b < consumed + prefetch, fills slot b % prefetch, and the caller takes slots in batch order.
// CPU delivery hands each batch's freshly allocated tensors to the caller; CUDA delivery fills
// the slot's reusable pinned buffer and uploads it on a side stream.
#include "loom/data/data_loader.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>

#include "loom/data/host_buffer.h"
#include "loom/data/transfer.h"

namespace loom::data {

using ::loom::detail::concat;

namespace {

size_t align_up(size_t n) { return (n + 255) & ~size_t{255}; }

// Byte offsets of one batch's regions in a staging buffer: labels, images (float or uint8) and,
// for GPU augmentation, the transforms.
struct StagingLayout {
  size_t labels = 0, transforms = 0, images = 0, total = 0;
  StagingLayout(int64_t n, int64_t pixels_per_sample, bool raw) {
    labels = 0;
    transforms = align_up(static_cast<size_t>(n) * sizeof(int64_t));
    images = transforms + (raw ? align_up(static_cast<size_t>(n) * 7 * sizeof(double)) : 0);
    total = images + static_cast<size_t>(n * pixels_per_sample) * (raw ? 1 : sizeof(float));
  }
};

}  // namespace

struct DataLoader::Slot {
  int id = 0;
  int64_t batch = -1;
  bool ready = false;
  int64_t capacity = 0;  // samples the batch may hold
  int64_t count = 0;     // samples it holds (bad ones are left out)
  int64_t skipped = 0;
  Shape image_shape;  // [H, W, C] of the batch's samples
  std::exception_ptr error;
  Tensor images, labels;  // CPU delivery: this batch's own tensors
  HostBuffer staging;     // CUDA delivery: reused across batches
};

struct DataLoader::Shared {
  std::mutex mutex;
  std::condition_variable work_cv;   // workers wait for a free slot
  std::condition_variable ready_cv;  // the caller waits for its batch
  std::vector<std::unique_ptr<Slot>> slots;
  std::vector<std::thread> workers;
  int64_t next_claim = 0;
  int64_t consumed = 0;
  std::atomic<bool> stop{false};
  std::unique_ptr<DeviceTransfer> transfer;
};

DataLoader::DataLoader(const Dataset& dataset, DataLoaderOptions options)
    : dataset_(dataset), options_(std::move(options)), shared_(std::make_unique<Shared>()) {
  LOOM_CHECK(options_.batch_size > 0, "DataLoader: batch_size must be positive, got ",
             options_.batch_size);
  LOOM_CHECK(options_.num_workers >= 0, "DataLoader: num_workers must be non-negative, got ",
             options_.num_workers);
  LOOM_CHECK(options_.prefetch_batches >= 0,
             "DataLoader: prefetch_batches must be non-negative, got ", options_.prefetch_batches);
  LOOM_CHECK(!options_.augment_on_device || options_.device.is_cuda(),
             "DataLoader: augment_on_device needs a CUDA device, got ", options_.device.str());
  prefetch_ = options_.num_workers == 0       ? 1
              : options_.prefetch_batches > 0 ? options_.prefetch_batches
                                              : 2 * options_.num_workers;
  for (int i = 0; i < prefetch_; ++i) {
    shared_->slots.push_back(std::make_unique<Slot>());
    shared_->slots.back()->id = i;
  }
  if (options_.device.is_cuda()) {
    shared_->transfer = std::make_unique<DeviceTransfer>(options_.device.index, prefetch_);
  }
  if (!options_.sampler) {
    options_.sampler = options_.shuffle
                           ? std::shared_ptr<const Sampler>(
                                 std::make_shared<RandomSampler>(dataset_.size(), options_.seed))
                           : std::make_shared<SequentialSampler>(dataset_.size());
  }
}

DataLoader::~DataLoader() { stop_workers(); }

void DataLoader::stop_workers() {
  {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    shared_->stop = true;
  }
  shared_->work_cv.notify_all();
  for (std::thread& t : shared_->workers) t.join();
  shared_->workers.clear();
}

void DataLoader::start_epoch(int64_t epoch, int64_t first_batch) {
  stop_workers();
  epoch_ = epoch;
  order_ = options_.sampler->indices(epoch);
  for (int64_t i : order_) {
    LOOM_CHECK(i >= 0 && i < dataset_.size(), "DataLoader: the sampler gave index ", i,
               " for a dataset of ", dataset_.size());
  }
  num_batches_ = batches_per_epoch(static_cast<int64_t>(order_.size()), options_);
  LOOM_CHECK(first_batch >= 0 && first_batch <= num_batches_, "DataLoader: cannot start epoch ",
             epoch, " at batch ", first_batch, ": it has ", num_batches_, " batches");
  skipped_ = 0;
  finished_ = false;
  shared_->next_claim = first_batch;
  shared_->consumed = first_batch;
  for (auto& slot : shared_->slots) {
    slot->ready = false;
    slot->batch = -1;
  }
  shared_->stop = false;
  for (int w = 0; w < options_.num_workers; ++w)
    shared_->workers.emplace_back([this] { worker_loop(); });
}

void DataLoader::worker_loop() {
  Shared& s = *shared_;
  for (;;) {
    int64_t batch;
    Slot* slot;
    {
      std::unique_lock<std::mutex> lock(s.mutex);
      s.work_cv.wait(lock, [&] {
        return s.stop || s.next_claim >= num_batches_ || s.next_claim < s.consumed + prefetch_;
      });
      if (s.stop || s.next_claim >= num_batches_) return;
      batch = s.next_claim++;
      slot = s.slots[batch % prefetch_].get();
    }
    fill(batch, *slot);
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      slot->batch = batch;
      slot->ready = true;
    }
    s.ready_cv.notify_all();
  }
}

// Makes batch `batch` in `slot`; any failure is kept in slot.error for the caller.
void DataLoader::fill(int64_t batch, Slot& slot) {
  slot.error = nullptr;
  slot.count = 0;
  slot.skipped = 0;
  slot.images = Tensor();
  slot.labels = Tensor();
  const bool to_cuda = options_.device.is_cuda();
  const bool raw = options_.augment_on_device;
  const int64_t begin = batch * options_.batch_size;
  const int64_t end =
      std::min<int64_t>(begin + options_.batch_size, static_cast<int64_t>(order_.size()));
  slot.capacity = end - begin;
  try {
    if (to_cuda) shared_->transfer->wait_host_free(slot.id);
    for (int64_t k = begin; k < end && !shared_->stop; ++k) {
      const int64_t index = order_[k];
      Example example;
      try {
        example = dataset_.get(index);
      } catch (const BadSample& e) {
        if (options_.on_bad_input == OnBadInput::Throw) throw;
        warn(concat("skipping ", e.what()));
        ++slot.skipped;
        continue;
      }
      const Tensor& img = example.image;
      LOOM_CHECK(img.defined() && img.dim() == 3 && img.dtype() == kUInt8 && img.device().is_cpu(),
                 "DataLoader: sample ", index,
                 " is not a uint8 [height, width, channels] CPU image");
      const int64_t h = img.size(0), w = img.size(1), c = img.size(2);
      if (slot.count == 0) {
        detail::check_augment_options(options_.augment, c);
        slot.image_shape = img.shape();
        if (to_cuda) {
          slot.staging.reserve(StagingLayout(slot.capacity, h * w * c, raw).total,
                               options_.pin_memory, to_cuda ? options_.device.index : 0);
        } else {
          slot.images = empty({slot.capacity, c, h, w}, kFloat32);
          slot.labels = empty({slot.capacity}, kInt64);
        }
      }
      LOOM_CHECK(img.shape() == slot.image_shape, "DataLoader: sample ", index, " has shape ",
                 shape_str(img.shape()), " but batch ", batch, " started with ",
                 shape_str(slot.image_shape), " (give the dataset one decode size)");
      const SampleTransform t =
          transform_matrix(draw_transform(options_.augment, h, w, epoch_, index), h, w);
      const Tensor src = img.contiguous();
      const int64_t pixels = h * w * c, at = slot.count;
      if (!to_cuda) {
        detail::warp_image_cpu(src.data_ptr<uint8_t>(), h, w, c, t.m, options_.augment,
                               slot.images.data_ptr<float>() + at * pixels);
        slot.labels.data_ptr<int64_t>()[at] = example.label;
      } else {
        const StagingLayout layout(slot.capacity, pixels, raw);
        auto* base = static_cast<uint8_t*>(slot.staging.data());
        reinterpret_cast<int64_t*>(base + layout.labels)[at] = example.label;
        if (raw) {
          std::memcpy(base + layout.images + at * pixels, src.data_ptr<uint8_t>(),
                      static_cast<size_t>(pixels));
          std::memcpy(base + layout.transforms + at * 7 * sizeof(double), t.m, 7 * sizeof(double));
        } else {
          detail::warp_image_cpu(src.data_ptr<uint8_t>(), h, w, c, t.m, options_.augment,
                                 reinterpret_cast<float*>(base + layout.images) + at * pixels);
        }
      }
      ++slot.count;
    }
  } catch (...) {
    slot.error = std::current_exception();
  }
}

// Turns a filled slot into the caller's Batch (for CUDA: enqueues the upload; the slot's host
// memory stays busy until the copy's event).
Batch DataLoader::deliver(Slot& slot) {
  const int64_t n = slot.count, h = slot.image_shape[0], w = slot.image_shape[1],
                c = slot.image_shape[2];
  Batch out;
  if (!options_.device.is_cuda()) {
    out.images = n == slot.capacity ? slot.images : slot.images.narrow(0, 0, n);
    out.labels = n == slot.capacity ? slot.labels : slot.labels.narrow(0, 0, n);
    slot.images = Tensor();
    slot.labels = Tensor();
    return out;
  }
  const Device dev = options_.device;
  const bool raw = options_.augment_on_device;
  const StagingLayout layout(slot.capacity, h * w * c, raw);
  const auto* base = static_cast<const uint8_t*>(slot.staging.data());
  out.labels = empty({n}, TensorOptions(kInt64).device(dev));
  if (!raw) {
    out.images = empty({n, c, h, w}, TensorOptions(kFloat32).device(dev));
    shared_->transfer->upload(
        slot.id, {{base + layout.labels, out.labels}, {base + layout.images, out.images}});
    return out;
  }
  Tensor pixels = empty({n, h, w, c}, TensorOptions(kUInt8).device(dev));
  Tensor transforms = empty({n, 7}, TensorOptions(kFloat64).device(dev));
  shared_->transfer->upload(slot.id, {{base + layout.labels, out.labels},
                                      {base + layout.transforms, transforms},
                                      {base + layout.images, pixels}});
  out.images = augment_batch(pixels, transforms, options_.augment);
  return out;
}

std::optional<Batch> DataLoader::next() {
  LOOM_CHECK(epoch_ >= 0, "DataLoader: call start_epoch(epoch) before next()");
  Shared& s = *shared_;
  while (!finished_) {
    const int64_t batch = s.consumed;
    if (batch >= num_batches_) {
      finished_ = true;
      stop_workers();
      if (skipped_ > 0)
        warn(concat("DataLoader: skipped ", skipped_, " bad samples in epoch ", epoch_));
      return std::nullopt;
    }
    Slot& slot = *s.slots[batch % prefetch_];
    if (options_.num_workers == 0) {
      fill(batch, slot);
    } else {
      std::unique_lock<std::mutex> lock(s.mutex);
      s.ready_cv.wait(lock, [&] { return slot.ready && slot.batch == batch; });
    }
    skipped_ += slot.skipped;
    std::optional<Batch> out;
    std::exception_ptr error = slot.error;
    if (!error && slot.count > 0) {
      try {
        out = deliver(slot);
        out->index = batch;
      } catch (...) {
        error = std::current_exception();
      }
    }
    if (error) {
      finished_ = true;
      stop_workers();
      std::rethrow_exception(error);
    }
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      slot.ready = false;
      ++s.consumed;
    }
    s.work_cv.notify_all();
    if (out) return out;
  }
  return std::nullopt;
}

namespace {
// The options with `sampler` in place of the one shuffle and seed would make.
DataLoaderOptions with_shard_sampler(DataLoaderOptions options, const char* which, Shard shard,
                                     std::shared_ptr<const Sampler> sampler) {
  LOOM_CHECK(!options.sampler, which, ": the options already name a sampler; shard rank ",
             shard.rank, " of ", shard.world_size, " would replace it");
  options.sampler = std::move(sampler);
  return options;
}
}  // namespace

DataLoaderOptions train_shard_options(DataLoaderOptions options, int64_t dataset_size,
                                      Shard shard) {
  if (shard.world_size == 1 && shard.rank == 0) return options;
  auto sampler = std::make_shared<DistributedSampler>(dataset_size, shard.rank, shard.world_size,
                                                      options.shuffle, options.seed);
  return with_shard_sampler(std::move(options), "train_shard_options", shard, std::move(sampler));
}

DataLoaderOptions eval_shard_options(DataLoaderOptions options, int64_t dataset_size, Shard shard) {
  if (shard.world_size == 1 && shard.rank == 0) return options;
  auto sampler =
      std::make_shared<DistributedEvalSampler>(dataset_size, shard.rank, shard.world_size);
  return with_shard_sampler(std::move(options), "eval_shard_options", shard, std::move(sampler));
}

}  // namespace loom::data
