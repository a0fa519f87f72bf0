// Pooling on CUDA: the case table (pool_cases.h) against the CPU; max pooling's winners and
// gradients against the float64 reference (ties, NaNs, byte and int64 window offsets, both backward
// kernels), with the gradient's memory filled with NaN beforehand, so that a pixel the backward
// leaves unwritten shows.
#include <limits>

#include "pool_cases.h"

namespace loom {
namespace {

// Hands blocks of `shape` filled with NaN back to the caching allocator, so that the next
// allocations of that size on this stream (a backward's dx) start as NaN instead of zeros
// that would hide a missed write.
void leave_nan_blocks(const Shape& shape, DType dtype) {
  std::vector<Tensor> blocks;
  for (int i = 0; i < 4; ++i) {
    blocks.push_back(
        full(shape, std::numeric_limits<double>::quiet_NaN(), TensorOptions(dtype).device(kCUDA)));
  }
}

// The reference's cases and two of a training step's size: classic_cnn's first pool (2x2/2),
// and overlapping 3x3/2 windows with padding over odd sizes.
std::vector<testing::MaxPoolCase> gpu_max_pool_cases() {
  std::vector<testing::MaxPoolCase> cases = testing::max_pool_cases();
  cases.push_back({{8, 32, 64, 64}, 2, 2, 0});
  cases.push_back({{4, 16, 63, 65}, 3, 2, 1});
  return cases;
}

LOOM_CASE_TABLE_TEST(Pool2d, testing::pool_cases, Cuda)

TEST(Pool2dCuda, MaxWinnersAndGradientsMatchTheReference) {
  LOOM_REQUIRE_CUDA();
  uint64_t seed = 500;
  for (const testing::MaxPoolCase& c : gpu_max_pool_cases()) {
    for (DType dtype : {kFloat32, kFloat64}) {
      for (bool tied : {true, false}) {
        SCOPED_TRACE(testing::describe(c, dtype, tied));
        Generator gen(seed++);
        const Tensor x = tied ? testing::tied_input(c.x, seed, dtype) : randn(c.x, dtype, &gen);
        const testing::MaxPoolReference ref = testing::reference_max_pool(x, c.k, c.s, c.p);
        const Tensor w = randn(ref.y.shape(), dtype, &gen);
        Tensor xg = x.cuda().set_requires_grad(true);
        const Tensor y = max_pool2d(xg, c.k, c.s, c.p);
        ASSERT_TRUE(y.is_cuda());
        EXPECT_TENSOR_NEAR(y.cpu(), ref.y, 0, 0);  // a max is exact, NaN where a NaN won
        leave_nan_blocks(c.x, dtype);
        y.backward(w.cuda());
        ASSERT_TRUE(xg.grad().defined() && xg.grad().is_cuda());
        const double tol = dtype == kFloat64 ? 1e-12 : 1e-6;
        EXPECT_TENSOR_NEAR(xg.grad().cpu(), testing::reference_max_pool_grad(x, ref, w), tol, tol);
      }
    }
  }
}

}  // namespace
}  // namespace loom
