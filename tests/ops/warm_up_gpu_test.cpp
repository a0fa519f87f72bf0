// loom::warm_up (ops/warm_up.h) on the GPU: run on threads of their own, once or at the same
// time, it leaves the device usable, and the first convolution and GEMM after it (on another
// thread, whose cuDNN and cuBLAS handles are its own) agree with the CPU.
#include <thread>
#include <vector>

#include "testing.h"

namespace loom {
namespace {

using namespace testing;

TEST(WarmUpGpu, OnAThreadThenTheFirstConvAndMatmulAgreeWithTheCpu) {
  LOOM_REQUIRE_CUDA();
  std::thread warm([] { warm_up(cuda_device(0)); });
  warm.join();
  const Tensor x = random_leaf({4, 3, 12, 12}, 1).detach().to(kFloat32);
  const Tensor w = random_leaf({8, 3, 3, 3}, 2).detach().to(kFloat32);
  const Tensor a = random_leaf({5, 7}, 3).detach().to(kFloat32),
               b = random_leaf({7, 6}, 4).detach().to(kFloat32);
  EXPECT_TENSOR_NEAR(conv2d(x.to(cuda_device(0)), w.to(cuda_device(0))).cpu(), conv2d(x, w), 1e-4,
                     1e-4);
  EXPECT_TENSOR_NEAR(matmul(a.to(cuda_device(0)), b.to(cuda_device(0))).cpu(), matmul(a, b), 1e-4,
                     1e-4);
}

TEST(WarmUpGpu, ThreadsMayWarmUpAtOnceAndAgain) {
  LOOM_REQUIRE_CUDA();
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) threads.emplace_back([] { warm_up(cuda_device(0)); });
  warm_up(cuda_device(0));
  for (std::thread& t : threads) t.join();
  warm_up(cuda_device(0));
  const Tensor x = random_leaf({64}, 5).detach().to(kFloat32);
  EXPECT_TENSOR_NEAR((x.to(cuda_device(0)) * 2.0).cpu(), x * 2.0, 0, 0);
}

}  // namespace
}  // namespace loom
