// CUDA softmax / log_softmax against the CPU: every dim, short (warp) and long (block) rows,
// forward and backward, and huge inputs.
#include "parity_check.h"

namespace loom {
namespace {

using testing::expect_cuda_parity;

TEST(SoftmaxGpu, ParityForwardAndBackward) {
  LOOM_REQUIRE_CUDA();
  uint64_t seed = 200;
  for (const Shape& shape : {Shape{4, 5, 6}, Shape{3, 3000}, Shape{2, 1500, 2}}) {
    for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
      for (bool log : {false, true}) {
        SCOPED_TRACE(shape_str(shape) + " dim " + std::to_string(d) + (log ? " log" : ""));
        Generator gen(seed++);
        const Tensor x = randn(shape, kFloat32, &gen) * 3.0;
        expect_cuda_parity(
            [d, log](const std::vector<Tensor>& in) {
              return log ? log_softmax(in[0], d) : softmax(in[0], d);
            },
            {x}, 1e-5, 1e-4);
      }
    }
  }
  Generator gen(250);
  const Tensor x64 = randn({5, 7}, kFloat64, &gen);
  expect_cuda_parity([](const std::vector<Tensor>& in) { return softmax(in[0], 1); }, {x64}, 1e-12,
                     1e-10);
}

TEST(SoftmaxGpu, StableForHugeInputs) {
  LOOM_REQUIRE_CUDA();
  const Tensor x = from_vector<float>({1000, 1000, -1000, 0, -1000, 1000}, {2, 3});
  EXPECT_TENSOR_NEAR(softmax(x.cuda(), 1).cpu(), softmax(x, 1), 1e-6, 0);
  EXPECT_TENSOR_NEAR(log_softmax(x.cuda(), 1).cpu(), log_softmax(x, 1), 1e-3, 1e-6);
  const auto p = softmax(x.cuda(), 1).cpu().to_vector<float>();
  EXPECT_NEAR(p[0], 0.5f, 1e-6);
  EXPECT_NEAR(p[5], 1.0f, 1e-6);
}

}  // namespace
}  // namespace loom
