// The GPU data path against the CPU: the affine-warp kernel on a uint8 batch, and DataLoader
// delivery to a CUDA device (host augmentation + async upload, and augmentation on the GPU).
#include "data_testing.h"
#include "loom/data/augment.h"
#include "loom/data/data_loader.h"

namespace loom::data {
namespace {

using testing::random_image;

class BatchDataset : public Dataset {
 public:
  int64_t size() const override { return 50; }
  Example get(int64_t index) const override {
    return Example{random_image(24, 20, 3, 500 + index), index % 2};
  }
};

void random_batch(int64_t n, int64_t h, int64_t w, const AugmentOptions& o, Tensor& images,
                  Tensor& transforms) {
  images = empty({n, h, w, 3}, kUInt8);
  transforms = empty({n, 7}, kFloat64);
  for (int64_t s = 0; s < n; ++s) {
    images.select(0, s).copy_(random_image(h, w, 3, 77 + s));
    const SampleTransform t = transform_matrix(draw_transform(o, h, w, 1, s), h, w);
    for (int k = 0; k < 7; ++k) transforms.data_ptr<double>()[7 * s + k] = t.m[k];
  }
}

TEST(AugmentGpu, WarpKernelMatchesCpu) {
  LOOM_REQUIRE_CUDA();
  for (int variant = 0; variant < 4; ++variant) {
    const FillMode fill = variant % 2 ? FillMode::Constant : FillMode::Nearest;
    AugmentOptions o = AugmentOptions::keras_seed(3);
    o.interpolation = variant / 2 ? WarpInterpolation::Nearest : WarpInterpolation::Bilinear;
    o.rotation_range = 40;
    o.width_shift_range = 0.2;
    o.height_shift_range = 0.1;
    o.fill_mode = fill;
    o.cval = 128;
    o.mean = {0.4, 0.5, 0.6};
    o.std = {0.2, 0.25, 0.3};
    Tensor images, transforms;
    random_batch(33, 31, 45, o, images, transforms);
    const Tensor cpu = augment_batch(images, transforms, o);
    const Tensor gpu = augment_batch(images.cuda(), transforms.cuda(), o);
    EXPECT_TRUE(gpu.is_cuda());
    EXPECT_TENSOR_NEAR(gpu.cpu(), cpu, 1e-4, 1e-5);
  }
}

TEST(AugmentGpu, LoaderToCudaMatchesCpuLoader) {
  LOOM_REQUIRE_CUDA();
  BatchDataset data;
  DataLoaderOptions o;
  o.batch_size = 8;
  o.num_workers = 2;
  o.seed = 4;
  o.augment = AugmentOptions::keras_seed(9);
  DataLoader cpu_loader(data, o);
  o.device = kCUDA;
  DataLoader host_aug(data, o);
  o.augment_on_device = true;
  DataLoader device_aug(data, o);
  for (int64_t epoch : {0, 1}) {
    cpu_loader.start_epoch(epoch);
    host_aug.start_epoch(epoch);
    device_aug.start_epoch(epoch);
    int batches = 0;
    while (auto ref = cpu_loader.next()) {
      auto a = host_aug.next();
      auto b = device_aug.next();
      ASSERT_TRUE(a && b);
      EXPECT_TRUE(a->images.is_cuda() && b->images.is_cuda() && b->labels.is_cuda());
      EXPECT_EQ(a->labels.cpu().to_vector<int64_t>(), ref->labels.to_vector<int64_t>());
      EXPECT_EQ(b->labels.cpu().to_vector<int64_t>(), ref->labels.to_vector<int64_t>());
      EXPECT_TENSOR_NEAR(a->images.cpu(), ref->images, 0, 0);
      EXPECT_TENSOR_NEAR(b->images.cpu(), ref->images, 1e-5, 1e-5);
      ++batches;
    }
    EXPECT_EQ(batches, 7);
    EXPECT_FALSE(host_aug.next());
    EXPECT_FALSE(device_aug.next());
  }
}

}  // namespace
}  // namespace loom::data
