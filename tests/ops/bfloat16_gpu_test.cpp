// CPU/CUDA parity of the reductions in bfloat16: sums accumulate in double, exactly for these
// bounded inputs, so both devices agree bit for bit whatever the order, through the split pass
// too; max, min and argmax (ties included) too; and ops without bfloat16 fail the same way on a
// GPU. Their gradients are in reduction_cases.h, the elementwise ops' in elementwise_cases.h.
#include "bf16_reference.h"
#include "testing.h"

namespace loom {
namespace {

using namespace testing;

TEST(BFloat16OpsGpu, ReductionsMatchTheCpuBitForBit) {
  LOOM_REQUIRE_CUDA();
  // Short rows (a warp each), long rows (a block each), and one row long enough to be split
  // over blocks and combined in a second pass.
  for (const Shape& shape : {Shape{300, 37}, Shape{8, 5000}, Shape{1, 1 << 18}}) {
    SCOPED_TRACE(shape_str(shape));
    const Tensor x = bounded_bf16(shape, 910 + shape[1]);
    const Tensor xg = x.to(kCUDA);
    EXPECT_EQ(bf16_bits_of(sum(xg).cpu()), bf16_bits_of(sum(x)));
    EXPECT_EQ(bf16_bits_of(sum(xg, {1}).cpu()), bf16_bits_of(sum(x, {1})));
    EXPECT_EQ(bf16_bits_of(sum(xg, {1}).cpu()), reference_bits_of(sum(x.to(kFloat64), {1})));
    EXPECT_EQ(bf16_bits_of(mean(xg, {1}).cpu()), bf16_bits_of(mean(x, {1})));
    EXPECT_EQ(bf16_bits_of(sum(xg.t(), {1}, true).cpu()), bf16_bits_of(sum(x.t(), {1}, true)));
    EXPECT_EQ(bf16_bits_of(max(xg, 1).cpu()), bf16_bits_of(max(x, 1)));
    EXPECT_EQ(bf16_bits_of(min(xg, 1).cpu()), bf16_bits_of(min(x, 1)));
    EXPECT_EQ(argmax(xg, 1).cpu().to_vector<int64_t>(), argmax(x, 1).to_vector<int64_t>());
    EXPECT_EQ(argmax(xg).item<int64_t>(), argmax(x).item<int64_t>());
  }
}

TEST(BFloat16OpsGpu, OpsWithoutBFloat16SayWhichOpAndDtype) {
  LOOM_REQUIRE_CUDA();
  Generator gen(930);
  const TensorOptions gpu = TensorOptions(kBFloat16).device(kCUDA);
  const Tensor m = randn({3, 4}, gpu, &gen);
  EXPECT_LOOM_ERROR(softmax(m, 1), "softmax: dtype bfloat16 is not supported");
  // Products and convolutions take bfloat16 on CUDA (autocast_gpu_test.cpp checks their values).
  EXPECT_EQ(matmul(m, m.t()).dtype(), kBFloat16);
  EXPECT_EQ(conv2d(randn({1, 3, 5, 5}, gpu, &gen), randn({2, 3, 3, 3}, gpu, &gen)).dtype(),
            kBFloat16);
}

}  // namespace
}  // namespace loom
