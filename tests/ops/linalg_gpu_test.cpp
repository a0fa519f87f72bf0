// cuBLAS products: the case table (linalg_cases.h) against the Eigen ones, forward and backward;
// an empty inner dimension and the errors.
#include "linalg_cases.h"

namespace loom {
namespace {

LOOM_CASE_TABLE_TEST(Linalg, testing::linalg_cases, Cuda)

TEST(LinalgGpu, EmptyInnerDimensionAndErrors) {
  LOOM_REQUIRE_CUDA();
  EXPECT_EQ(matmul(zeros({2, 0}, kCUDA), zeros({0, 3}, kCUDA)).cpu().to_vector<float>(),
            std::vector<float>(6, 0.0f));
  EXPECT_LOOM_ERROR(matmul(zeros({2, 3}, kCUDA), zeros({3, 2})), "one device");
  EXPECT_LOOM_ERROR(matmul(zeros({2, 3}, kCUDA), zeros({2, 2}, kCUDA)), "[2, 3] and [2, 2]");
}

}  // namespace
}  // namespace loom
