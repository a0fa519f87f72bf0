// flip on CUDA against the CPU on fresh random inputs: every run layout and element size, a
// non-contiguous and a channels-last input, a batch of photographs' size, and the gradient.
#include "flip_cases.h"
#include "testing.h"

namespace loom {
namespace {

TEST(FlipGpu, MatchesTheCpuForEveryLayoutAndElementSize) {
  LOOM_REQUIRE_CUDA();
  Generator gen(81);
  for (const testing::FlipCase& c : testing::flip_cases()) {
    const Tensor values = randn(c.shape, TensorOptions(kFloat64), &gen) * 100.0;
    for (DType dtype : {kFloat64, kFloat32, kBFloat16, kInt64, kInt32, kUInt8}) {
      const Tensor x = values.abs().to(dtype);
      SCOPED_TRACE(shape_str(c.shape) + " " + dtype_name(dtype));
      const Tensor got = flip(x.cuda(), c.dims);
      ASSERT_TRUE(got.is_cuda());
      EXPECT_TENSOR_NEAR(got.cpu().to(kFloat64), flip(x, c.dims).to(kFloat64), 0, 0);
    }
  }
}

TEST(FlipGpu, PhotographBatchesStridedAndChannelsLast) {
  LOOM_REQUIRE_CUDA();
  Generator gen(82);
  const Tensor images = randn({128, 3, 96, 96}, TensorOptions(kFloat32), &gen);
  EXPECT_TENSOR_NEAR(flip(images.cuda(), {3}).cpu(), testing::flip_by_slices(images, {3}), 0, 0);
  const Tensor cl = images.cuda().contiguous(MemoryFormat::ChannelsLast);
  EXPECT_TENSOR_NEAR(flip(cl, {3}).cpu(), flip(images, {3}), 0, 0);
  const Tensor strided = images.narrow(2, 5, 40).transpose(1, 3);
  EXPECT_TENSOR_NEAR(flip(strided.cuda(), {1, 2}).cpu(), flip(strided, {1, 2}), 0, 0);
}

TEST(FlipGpu, GradientMatchesTheCpu) {
  LOOM_REQUIRE_CUDA();
  Generator gen(83);
  const Tensor x = randn({4, 3, 6, 5}, TensorOptions(kFloat64), &gen);
  const Tensor w = randn({4, 3, 6, 5}, TensorOptions(kFloat64), &gen);
  Tensor xc = x.clone().requires_grad_(), xg = x.cuda().requires_grad_();
  sum(flip(xc, {0, 3}) * w).backward();
  sum(flip(xg, {0, 3}) * w.cuda()).backward();
  EXPECT_TENSOR_NEAR(xg.grad().cpu(), xc.grad(), 0, 0);
}

}  // namespace
}  // namespace loom
