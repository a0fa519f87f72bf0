// dropout on CUDA: the same seed draws the same mask as on the CPU, forward and backward.
#include "testing.h"

namespace loom {
namespace {

TEST(DropoutCuda, MaskIsIdenticalToTheCpu) {
  LOOM_REQUIRE_CUDA();
  for (DType dtype : {kFloat32, kFloat64}) {
    Generator data(1);
    const Tensor x = uniform({64, 33, 7}, 0.5, 2.0, dtype, &data);
    Generator a(77), b(77);
    Tensor cpu = x.clone().set_requires_grad(true);
    Tensor gpu = x.cuda().set_requires_grad(true);
    Tensor y_cpu = dropout(cpu, 0.35, true, &a);
    Tensor y_gpu = dropout(gpu, 0.35, true, &b);
    EXPECT_EQ(y_gpu.cpu().to_vector<double>(), y_cpu.to_vector<double>());
    const Tensor g = uniform(x.shape(), -1.0, 1.0, dtype, &data);
    y_cpu.backward(g);
    y_gpu.backward(g.cuda());
    EXPECT_EQ(gpu.grad().cpu().to_vector<double>(), cpu.grad().to_vector<double>());
    EXPECT_EQ(a.offset(), b.offset());
  }
}

TEST(DropoutCuda, IdentityInEval) {
  LOOM_REQUIRE_CUDA();
  Tensor x = randn({10}, TensorOptions().device(kCUDA));
  EXPECT_TRUE(dropout(x, 0.5, false).is_same(x));
}

}  // namespace
}  // namespace loom
