// CUDA softmax / log_softmax: the case table (softmax_cases.h) against the CPU, and huge inputs.
#include "softmax_cases.h"

namespace loom {
namespace {

LOOM_CASE_TABLE_TEST(Softmax, testing::softmax_cases, Cuda)

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
