// cat and stack on CUDA: the case table (shape_ops_cases.h) against the CPU; one_hot against the
// CPU, including its device-side range check.
#include "shape_ops_cases.h"

namespace loom {
namespace {

LOOM_CASE_TABLE_TEST(ShapeOps, testing::shape_ops_cases, Cuda)

TEST(ShapeOpsGpu, PiecesOnAnotherDeviceAreAnError) {
  LOOM_REQUIRE_CUDA();
  EXPECT_LOOM_ERROR(cat({zeros({2}, kCUDA), zeros({2})}), "cat: input 1 is float32 on cpu");
}

TEST(ShapeOpsGpu, OneHot) {
  LOOM_REQUIRE_CUDA();
  Generator gen(550);
  const Tensor idx = randint(0, 10, {6, 7}, TensorOptions(kInt64), &gen);
  EXPECT_TENSOR_NEAR(one_hot(idx.cuda(), 10).cpu(), one_hot(idx, 10), 0, 0);
  const Tensor idx32 = idx.to(kInt32);
  EXPECT_TENSOR_NEAR(one_hot(idx32.cuda(), 10, kFloat64).cpu(), one_hot(idx32, 10, kFloat64), 0, 0);
  EXPECT_LOOM_ERROR(one_hot(from_vector<int64_t>({1, 12, 3}).cuda(), 10),
                    "one_hot: index 12 is out of range for num_classes 10");
  EXPECT_LOOM_ERROR(one_hot(from_vector<int32_t>({-4}).cuda(), 10), "one_hot: index -4");
  // The device is still usable after a rejected launch.
  EXPECT_EQ(one_hot(from_vector<int64_t>({2}).cuda(), 3).cpu().to_vector<float>(),
            (std::vector<float>{0, 0, 1}));
}

}  // namespace
}  // namespace loom
