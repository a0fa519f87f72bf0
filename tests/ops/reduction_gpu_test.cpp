// CUDA reductions: the case table (reduction_cases.h) against the CPU, forward and backward, on
// warp rows and block rows; argmax, and the two-pass split for few huge rows.
#include <cmath>

#include "reduction_cases.h"

namespace loom {
namespace {

LOOM_CASE_TABLE_TEST(Reduction, testing::reduction_cases, Cuda)

Tensor random(const Shape& shape, uint64_t seed) {
  Generator gen(seed);
  return randn(shape, kFloat32, &gen);
}

TEST(ReductionGpu, ArgmaxParity) {
  LOOM_REQUIRE_CUDA();
  const Tensor x = random({7, 300, 5}, 120);
  for (int64_t d : {0, 1, 2}) {
    EXPECT_EQ(argmax(x.cuda(), d).cpu().to_vector<int64_t>(), argmax(x, d).to_vector<int64_t>());
  }
  EXPECT_EQ(argmax(x.cuda()).item<int64_t>(), argmax(x).item<int64_t>());
}

TEST(ReductionGpu, FullSumOfHugeTensorUsesTheSplitPathAccurately) {
  LOOM_REQUIRE_CUDA();
  const int64_t n = int64_t(1) << 26;
  Generator gen(121);
  const Tensor x = rand({n}, TensorOptions(kFloat32).device(kCUDA), &gen);
  const double cpu_total = sum(x.cpu()).item<double>();
  EXPECT_NEAR(sum(x).item<double>(), cpu_total, std::abs(cpu_total) * 1e-6);
  EXPECT_NEAR(mean(x).item<double>(), cpu_total / n, 1e-6);
  // Two rows of 2^24: still split, per row.
  const Tensor rows = x.reshape({4, n / 4});
  EXPECT_TENSOR_NEAR(sum(rows, {1}).cpu(), sum(rows.cpu(), {1}), 0, 1e-6);
}

TEST(ReductionGpu, ArgmaxOfHugeRowFindsTheFirstMaximum) {
  LOOM_REQUIRE_CUDA();
  const int64_t n = int64_t(1) << 22;
  Generator gen(122);
  Tensor x = rand({n}, TensorOptions(kFloat32).device(kCUDA), &gen);
  x.narrow(0, n - 5, 1).fill_(7.0);
  x.narrow(0, 123457, 1).fill_(7.0);
  EXPECT_EQ(argmax(x).item<int64_t>(), 123457);
  EXPECT_EQ(max(x).item<float>(), 7.0f);
  x.narrow(0, 99, 1).fill_(-3.0);
  EXPECT_EQ(min(x).item<float>(), -3.0f);
}

TEST(ReductionGpu, IntegersNanAndEmpty) {
  LOOM_REQUIRE_CUDA();
  const Tensor mask = from_vector<uint8_t>({1, 0, 1, 1, 0, 1}, {2, 3}).cuda();
  EXPECT_EQ(sum(mask).item<int64_t>(), 4);
  EXPECT_EQ(sum(mask, {0}).cpu().to_vector<int64_t>(),
            (std::vector<int64_t>{2, 0, 2}));  // [[1,0,1],[1,0,1]]
  EXPECT_EQ(sum(mask, {1}).cpu().to_vector<int64_t>(), (std::vector<int64_t>{2, 2}));
  const Tensor labels = from_vector<int64_t>({4, 9, 2, 9}).cuda();
  EXPECT_EQ(argmax(labels).item<int64_t>(), 1);
  EXPECT_TRUE(std::isnan(max(from_vector<float>({1, NAN, 5}).cuda()).item<float>()));
  EXPECT_TRUE(std::isnan(mean(zeros({0}, kCUDA)).item<float>()));
  EXPECT_LOOM_ERROR(max(zeros({0}, kCUDA)), "cannot reduce over zero elements");
}

}  // namespace
}  // namespace loom
