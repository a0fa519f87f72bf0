// cat, stack, expand and one_hot on CUDA against the CPU, including one_hot's device-side
// range check.
#include "parity_check.h"

namespace loom {
namespace {

using testing::expect_cuda_parity;

Tensor random(const Shape& shape, uint64_t seed) {
  Generator gen(seed);
  return randn(shape, kFloat32, &gen);
}

TEST(ShapeOpsGpu, CatStackExpandParity) {
  LOOM_REQUIRE_CUDA();
  for (int64_t d : {0, 1, 2}) {
    Shape sa{2, 3, 4}, sb{2, 3, 4};
    sb[d] = 5;
    expect_cuda_parity(
        [d](const std::vector<Tensor>& in) {
          return cat({in[0], in[1].transpose(0, 1).transpose(0, 1)}, d);
        },
        {random(sa, 500 + d), random(sb, 510 + d)});
    expect_cuda_parity(
        [d](const std::vector<Tensor>& in) {
          return stack({in[0], in[1]}, d);
        },
        {random(sa, 520 + d), random(sa, 530 + d)});
  }
  expect_cuda_parity(
      [](const std::vector<Tensor>& in) {
        return in[0].expand({4, 3, 5}) * 1.0;
      },
      {random({3, 1}, 540)});
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
