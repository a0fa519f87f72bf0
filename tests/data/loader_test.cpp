// DataLoader and samplers on the CPU: batching, drop_last, per-epoch shuffling, results that do
// not depend on the number of workers, the bounded prefetch, shutdown mid-epoch, worker
// exceptions and bad samples reaching the caller, and DistributedSampler's shards.
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "data_testing.h"
#include "loom/data/data_loader.h"
#include "loom/data/image_folder.h"

namespace loom::data {
namespace {

using testing::random_image;

// n random 5x4 RGB images; label = index, so a batch tells which samples it holds. Optional
// failures by index, a delay per get, and a record of the highest index asked for.
class ToyDataset : public Dataset {
 public:
  explicit ToyDataset(int64_t n) : n_(n) {}
  int64_t size() const override { return n_; }
  Example get(int64_t index) const override {
    int64_t seen = max_requested.load();
    while (index > seen && !max_requested.compare_exchange_weak(seen, index)) {
    }
    {
      std::lock_guard<std::mutex> lock(requested_mutex);
      requested.insert(index);
    }
    if (delay_ms) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    if (bad.count(index))
      throw BadSample(::loom::detail::concat("/toy/", index, ".jpg: not a readable JPEG"));
    if (index == crash_at) throw std::runtime_error("toy dataset exploded");
    if (index == odd_shape_at) return Example{random_image(3, 3, 3, index), index};
    return Example{image(index), index};
  }
  static Tensor image(int64_t index) { return random_image(5, 4, 3, 1000 + index); }

  std::set<int64_t> bad;
  int64_t crash_at = -1;
  int64_t odd_shape_at = -1;
  int delay_ms = 0;
  mutable std::atomic<int64_t> max_requested{-1};
  mutable std::mutex requested_mutex;
  mutable std::set<int64_t> requested;  // every index asked for

 private:
  int64_t n_;
};

std::vector<int64_t> labels_of(const Batch& b) { return b.labels.to_vector<int64_t>(); }

// Every batch of an epoch, concatenated: (labels, image values).
std::pair<std::vector<int64_t>, std::vector<float>> run_epoch(DataLoader& loader, int64_t epoch) {
  std::pair<std::vector<int64_t>, std::vector<float>> all;
  loader.start_epoch(epoch);
  while (auto b = loader.next()) {
    for (int64_t l : labels_of(*b)) all.first.push_back(l);
    for (float v : b->images.to_vector<float>()) all.second.push_back(v);
  }
  return all;
}

TEST(DataLoader, BatchesInOrderWithoutShuffle) {
  ToyDataset data(10);
  DataLoaderOptions o;
  o.batch_size = 4;
  o.shuffle = false;
  DataLoader loader(data, o);
  loader.start_epoch(0);
  EXPECT_EQ(loader.num_batches(), 3);
  auto b0 = loader.next();
  ASSERT_TRUE(b0);
  EXPECT_EQ(b0->images.shape(), (Shape{4, 3, 5, 4}));
  EXPECT_EQ(b0->images.dtype(), kFloat32);
  EXPECT_EQ(labels_of(*b0), (std::vector<int64_t>{0, 1, 2, 3}));
  // Identity transform, rescale 1: the CHW image itself.
  EXPECT_EQ(b0->images.select(0, 2).to_vector<int64_t>(),
            ToyDataset::image(2).permute({2, 0, 1}).contiguous().to_vector<int64_t>());
  EXPECT_EQ(labels_of(*loader.next()), (std::vector<int64_t>{4, 5, 6, 7}));
  auto last = loader.next();
  EXPECT_EQ(labels_of(*last), (std::vector<int64_t>{8, 9}));
  EXPECT_EQ(last->index, 2);
  EXPECT_FALSE(loader.next());
  EXPECT_FALSE(loader.next());
  o.drop_last = true;
  DataLoader dropping(data, o);
  EXPECT_EQ(run_epoch(dropping, 0).first, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(DataLoader, ShufflesPerEpochFromTheSeed) {
  ToyDataset data(50);
  DataLoaderOptions o;
  o.batch_size = 8;
  o.seed = 5;
  o.num_workers = 2;
  DataLoader loader(data, o);
  const auto e0 = run_epoch(loader, 0).first, e1 = run_epoch(loader, 1).first;
  EXPECT_EQ(std::set<int64_t>(e0.begin(), e0.end()).size(), 50u);  // a permutation
  EXPECT_EQ(e0.size(), 50u);
  EXPECT_NE(e0, e1);
  EXPECT_EQ(run_epoch(loader, 0).first, e0);  // the same epoch again: the same order
  o.seed = 6;
  DataLoader other(data, o);
  EXPECT_NE(run_epoch(other, 0).first, e0);
}

TEST(DataLoader, SameResultForAnyNumberOfWorkers) {
  ToyDataset data(37);
  DataLoaderOptions o;
  o.batch_size = 6;
  o.seed = 3;
  o.augment = AugmentOptions::keras_seed(11);
  o.augment.rotation_range = 15;
  DataLoader serial(data, o);
  const auto reference = run_epoch(serial, 2);
  for (int workers : {1, 3, 8}) {
    o.num_workers = workers;
    DataLoader parallel(data, o);
    const auto got = run_epoch(parallel, 2);
    EXPECT_EQ(got.first, reference.first) << workers << " workers";
    EXPECT_EQ(got.second, reference.second) << workers << " workers";
  }
  for (float v : reference.second) {
    EXPECT_GE(v, 0.0f);
    EXPECT_LE(v, 1.0f);
  }
}

TEST(DataLoader, StartingAtBatchKGivesTheRestOfTheEpoch) {
  // Batches k.. of a seeked epoch equal those of a full epoch, pixel for pixel, and the
  // batches before k are never read (what a run resumed mid-epoch relies on).
  ToyDataset full_data(37);
  DataLoaderOptions o;
  o.batch_size = 6;
  o.seed = 5;
  o.augment = AugmentOptions::torchvision_seed(13);
  DataLoader full(full_data, o);
  full.start_epoch(1);
  std::vector<Batch> reference;
  while (auto b = full.next()) reference.push_back(*b);
  ASSERT_EQ(reference.size(), 7u);
  for (int workers : {0, 3}) {
    for (int64_t k : {0, 4, 6, 7}) {
      ToyDataset data(37);
      o.num_workers = workers;
      DataLoader seeked(data, o);
      seeked.start_epoch(1, k);
      size_t next = static_cast<size_t>(k);
      while (auto b = seeked.next()) {
        ASSERT_LT(next, reference.size());
        EXPECT_EQ(b->index, reference[next].index);
        EXPECT_EQ(labels_of(*b), labels_of(reference[next]))
            << "batch " << next << ", " << workers << " workers";
        EXPECT_EQ(b->images.to_vector<float>(), reference[next].images.to_vector<float>());
        ++next;
      }
      EXPECT_EQ(next, reference.size()) << "k " << k;
      // Labels are dataset indices: exactly the samples of batches k.. were read.
      std::set<int64_t> later;
      for (size_t i = static_cast<size_t>(k); i < reference.size(); ++i)
        for (int64_t l : labels_of(reference[i])) later.insert(l);
      EXPECT_EQ(data.requested, later) << "k " << k << ", " << workers << " workers";
    }
  }
  o.num_workers = 0;
  DataLoader bad(full_data, o);
  EXPECT_LOOM_ERROR(bad.start_epoch(0, 8), "cannot start epoch 0 at batch 8: it has 7 batches");
  EXPECT_LOOM_ERROR(bad.start_epoch(0, -1), "cannot start epoch 0 at batch -1");
}

TEST(DataLoader, PrefetchIsBounded) {
  ToyDataset data(40);
  DataLoaderOptions o;
  o.batch_size = 1;
  o.shuffle = false;
  o.num_workers = 3;
  o.prefetch_batches = 4;
  DataLoader loader(data, o);
  loader.start_epoch(0);
  for (int64_t k = 0; k < 12; ++k) {
    ASSERT_TRUE(loader.next());
    std::this_thread::sleep_for(std::chrono::milliseconds(15));  // a slow training step
    // Consumed k + 1 batches: workers may have claimed batches up to k + prefetch only.
    EXPECT_LE(data.max_requested.load(), k + 4) << "after batch " << k;
  }
  EXPECT_GE(data.max_requested.load(), 14);  // ...and they did work ahead
}

TEST(DataLoader, DestructorMidEpochDoesNotHang) {
  ToyDataset data(400);
  data.delay_ms = 2;
  DataLoaderOptions o;
  o.batch_size = 4;
  o.num_workers = 4;
  const auto start = std::chrono::steady_clock::now();
  {
    DataLoader loader(data, o);
    loader.start_epoch(0);
    ASSERT_TRUE(loader.next());
    loader.start_epoch(1);  // abandoning an epoch is a shutdown too
    ASSERT_TRUE(loader.next());
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start,
            loom::testing::scaled(std::chrono::seconds(5)));
}

TEST(DataLoader, WorkerExceptionReachesCaller) {
  ToyDataset data(30);
  data.crash_at = 13;
  DataLoaderOptions o;
  o.batch_size = 4;
  o.shuffle = false;
  for (int workers : {0, 3}) {
    o.num_workers = workers;
    DataLoader loader(data, o);
    loader.start_epoch(0);
    int good = 0;
    try {
      while (loader.next()) ++good;
      ADD_FAILURE() << "no exception with " << workers << " workers";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "toy dataset exploded");
    }
    EXPECT_EQ(good, 3);           // batches 0..2 came out in order before batch 3 failed
    EXPECT_FALSE(loader.next());  // the failed epoch is over
    data.crash_at = -1;
    EXPECT_EQ(run_epoch(loader, 1).first.size(), 30u);  // and the loader is usable again
    data.crash_at = 13;
  }
}

TEST(DataLoader, BadSamplesSkippedWithWarningsOrThrownInStrictMode) {
  ToyDataset data(10);
  data.bad = {2, 7};
  DataLoaderOptions o;
  o.batch_size = 4;
  o.shuffle = false;
  o.num_workers = 2;
  DataLoader loader(data, o);
  ::testing::internal::CaptureStderr();
  const auto labels = run_epoch(loader, 0).first;
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(labels, (std::vector<int64_t>{0, 1, 3, 4, 5, 6, 8, 9}));
  EXPECT_EQ(loader.skipped(), 2);
  EXPECT_NE(err.find("skipping /toy/2.jpg: not a readable JPEG"), std::string::npos) << err;
  EXPECT_NE(err.find("skipping /toy/7.jpg"), std::string::npos) << err;
  EXPECT_NE(err.find("skipped 2 bad samples in epoch 0"), std::string::npos) << err;
  o.on_bad_input = OnBadInput::Throw;
  DataLoader strict(data, o);
  strict.start_epoch(0);
  EXPECT_LOOM_ERROR(while (strict.next()){}, "/toy/2.jpg: not a readable JPEG");
  // A batch whose samples are all bad is left out entirely.
  ToyDataset all_bad(6);
  all_bad.bad = {0, 1, 2};
  o.on_bad_input = OnBadInput::Skip;
  o.batch_size = 3;
  DataLoader skipping(all_bad, o);
  ::testing::internal::CaptureStderr();
  skipping.start_epoch(0);
  auto b = skipping.next();
  ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(b);
  EXPECT_EQ(b->index, 1);
  EXPECT_EQ(labels_of(*b), (std::vector<int64_t>{3, 4, 5}));
}

TEST(DataLoader, BadConfiguration) {
  ToyDataset data(8);
  data.odd_shape_at = 5;
  DataLoaderOptions o;
  o.batch_size = 4;
  o.shuffle = false;
  DataLoader loader(data, o);
  EXPECT_LOOM_ERROR(loader.next(), "call start_epoch(epoch) before next()");
  loader.start_epoch(0);
  ASSERT_TRUE(loader.next());
  EXPECT_LOOM_ERROR(loader.next(),
                    "sample 5 has shape [3, 3, 3] but batch 1 started with [5, 4, 3]");
  o.batch_size = 0;
  EXPECT_LOOM_ERROR(DataLoader(data, o), "batch_size must be positive, got 0");
  o.batch_size = 2;
  o.num_workers = -1;
  EXPECT_LOOM_ERROR(DataLoader(data, o), "num_workers must be non-negative");
  o.num_workers = 0;
  o.augment_on_device = true;
  EXPECT_LOOM_ERROR(DataLoader(data, o), "augment_on_device needs a CUDA device");
  o.augment_on_device = false;
  o.augment.mean = {0.5};
  DataLoader bad_mean(data, o);
  bad_mean.start_epoch(0);
  EXPECT_LOOM_ERROR(bad_mean.next(), "mean has 1 values for 3 channels");
  o.augment.mean.clear();
  o.sampler = std::make_shared<SequentialSampler>(9);
  DataLoader too_long(data, o);
  EXPECT_LOOM_ERROR(too_long.start_epoch(0), "the sampler gave index 8 for a dataset of 8");
  if (!built_with_cuda()) {
    o.sampler = nullptr;
    o.device = kCUDA;
    EXPECT_LOOM_ERROR(DataLoader(data, o), "built without CUDA");
  }
}

TEST(DistributedSampler, DisjointEqualShardsPaddedOrDropped) {
  const int world = 3;
  for (bool drop_last : {false, true}) {
    std::vector<int64_t> all;
    size_t shard_size = 0;
    for (int rank = 0; rank < world; ++rank) {
      DistributedSampler s(10, rank, world, true, 9, drop_last);
      const auto shard = s.indices(4);
      EXPECT_EQ(
          shard,
          DistributedSampler(10, rank, world, true, 9, drop_last).indices(4));  // every rank agrees
      EXPECT_NE(shard, s.indices(5));  // a new permutation each epoch
      shard_size = shard.size();
      EXPECT_EQ(static_cast<int64_t>(shard_size), s.shard_size());
      all.insert(all.end(), shard.begin(), shard.end());
    }
    const std::set<int64_t> distinct(all.begin(), all.end());
    if (drop_last) {
      EXPECT_EQ(shard_size, 3u);       // floor(10 / 3)
      EXPECT_EQ(distinct.size(), 9u);  // disjoint, one sample dropped
    } else {
      EXPECT_EQ(shard_size, 4u);  // ceil(10 / 3); 2 samples repeated as padding
      EXPECT_EQ(distinct.size(), 10u);
    }
  }
  // Without shuffle: rank r gets r, r + w, ...; padding repeats from the start.
  EXPECT_EQ(DistributedSampler(5, 1, 2, false).indices(0), (std::vector<int64_t>{1, 3, 0}));
  EXPECT_EQ(DistributedSampler(5, 0, 2, false).indices(0), (std::vector<int64_t>{0, 2, 4}));
  EXPECT_EQ(DistributedSampler(2, 3, 4, false).indices(0), (std::vector<int64_t>{1}));
}

TEST(DistributedSampler, BadArguments) {
  EXPECT_LOOM_ERROR(DistributedSampler(10, 3, 3), "rank 3 is outside [0, 3)");
  EXPECT_LOOM_ERROR(DistributedSampler(10, 0, 0), "world_size must be at least 1");
  EXPECT_LOOM_ERROR(DistributedSampler(2, 0, 4, true, 0, true), "cannot give each of 4 ranks");
  EXPECT_LOOM_ERROR(RandomSampler(-1, 0), "non-negative");
}

TEST(Sampler, PermutationIsUniformEnough) {
  // Position of element 0 over many epochs: each of 4 places about a quarter of the time.
  int counts[4] = {0, 0, 0, 0};
  for (int e = 0; e < 4000; ++e) {
    const auto p = permutation(4, 1, e);
    for (int i = 0; i < 4; ++i) counts[i] += p[i] == 0;
  }
  for (int c : counts) EXPECT_NEAR(c / 4000.0, 0.25, 0.03);
}

TEST(DataLoaderRealData, CatsDogsBatches) {
  LOOM_REQUIRE_CATS_DOGS(root);
  ImageFolderOptions f;
  f.decode.height = f.decode.width = 64;
  ImageFolder train(root + "/train", f);
  DataLoaderOptions o;
  o.batch_size = 32;
  o.num_workers = 2;
  o.augment = AugmentOptions::keras_seed(1);
  DataLoader loader(train, o);
  loader.start_epoch(0);
  std::set<int64_t> labels;
  for (int k = 0; k < 5; ++k) {
    auto b = loader.next();
    ASSERT_TRUE(b);
    EXPECT_EQ(b->images.shape(), (Shape{32, 3, 64, 64}));
    const auto v = b->images.to_vector<float>();
    double mean = 0;
    for (float x : v) {
      ASSERT_GE(x, 0.0f);
      ASSERT_LE(x, 1.0f);
      mean += x / v.size();
    }
    EXPECT_GT(mean, 0.2);  // photographs, not blank frames
    EXPECT_LT(mean, 0.8);
    for (int64_t l : labels_of(*b)) labels.insert(l);
  }
  EXPECT_EQ(labels, (std::set<int64_t>{0, 1}));
}

}  // namespace
}  // namespace loom::data
