// sum, mean, max, min, argmax, sum_to and expand on the CPU: the case table (reduction_cases.h)
// against float64 and finite differences, values against plain loops, and the errors users hit.
#include <cmath>

#include "reduction_cases.h"

namespace loom {
namespace {

LOOM_CASE_TABLE_TEST(Reduction, testing::reduction_cases, Cpu)

// Sums of a [A, B, C] tensor's values by loop, over the dims whose flag is set.
std::vector<double> loop_sum(const std::vector<double>& v, const Shape& s, bool r0, bool r1,
                             bool r2) {
  const int64_t n0 = r0 ? 1 : s[0], n1 = r1 ? 1 : s[1], n2 = r2 ? 1 : s[2];
  std::vector<double> out(static_cast<size_t>(n0 * n1 * n2), 0.0);
  for (int64_t i = 0; i < s[0]; ++i)
    for (int64_t j = 0; j < s[1]; ++j)
      for (int64_t k = 0; k < s[2]; ++k) {
        const int64_t o = ((r0 ? 0 : i) * n1 + (r1 ? 0 : j)) * n2 + (r2 ? 0 : k);
        out[o] += v[(i * s[1] + j) * s[2] + k];
      }
  return out;
}

TEST(Reduction, SumMatchesLoopsOverEveryDimSet) {
  Generator gen(11);
  const Shape s{3, 4, 5};
  const Tensor x = randn(s, kFloat64, &gen);
  const auto v = x.to_vector<double>();
  EXPECT_NEAR(sum(x).item<double>(), loop_sum(v, s, true, true, true)[0], 1e-12);
  EXPECT_EQ(sum(x).dim(), 0);
  const Tensor a = sum(x, {1});
  EXPECT_EQ(a.shape(), (Shape{3, 5}));
  EXPECT_TENSOR_NEAR(a, from_vector(loop_sum(v, s, false, true, false), {3, 5}), 1e-12, 0);
  const Tensor b = sum(x, {0, -1}, /*keepdim=*/true);
  EXPECT_EQ(b.shape(), (Shape{1, 4, 1}));
  EXPECT_TENSOR_NEAR(b, from_vector(loop_sum(v, s, true, false, true), {1, 4, 1}), 1e-12, 0);
  const Tensor c = sum(x, {2, 0});  // order of the list does not matter
  EXPECT_TENSOR_NEAR(c, from_vector(loop_sum(v, s, true, false, true), {4}), 1e-12, 0);
  // A non-contiguous input reads the same values.
  const Tensor xt = x.transpose(0, 2);  // [5, 4, 3]
  EXPECT_TENSOR_NEAR(sum(xt, {2}), from_vector(loop_sum(v, s, true, false, false), {4, 5}).t(),
                     1e-12, 0);
}

TEST(Reduction, SumOfMillionsOfFloatsStaysAccurate) {
  const int64_t n = int64_t(1) << 23;
  const float value = 0.1f;
  const Tensor x = full({n}, value);
  const double expected = static_cast<double>(value) * static_cast<double>(n);
  EXPECT_NEAR(sum(x).item<float>(), expected, expected * 1e-6);
  EXPECT_NEAR(mean(x).item<float>(), value, 1e-7);
}

TEST(Reduction, IntegerSumsAreInt64) {
  const Tensor mask = from_vector<uint8_t>({1, 0, 1, 1, 0, 1}, {2, 3});
  const Tensor total = sum(mask);
  EXPECT_EQ(total.dtype(), kInt64);
  EXPECT_EQ(total.item<int64_t>(), 4);
  EXPECT_EQ(sum(mask, {1}).to_vector<int64_t>(), (std::vector<int64_t>{2, 2}));
  EXPECT_LOOM_ERROR(mean(mask), "mean: needs a floating-point tensor, got uint8");
}

TEST(Reduction, MeanDividesByTheCount) {
  Generator gen(12);
  const Shape s{3, 4, 5};
  const Tensor x = randn(s, kFloat64, &gen);
  auto expected = loop_sum(x.to_vector<double>(), s, true, false, true);
  for (double& e : expected) e /= 15.0;
  EXPECT_TENSOR_NEAR(mean(x, {0, 2}), from_vector(expected, {4}), 1e-12, 0);
  EXPECT_NEAR(mean(x).item<double>(), sum(x).item<double>() / 60.0, 1e-12);
}

TEST(Reduction, EmptyInputs) {
  EXPECT_TRUE(std::isnan(mean(zeros({0})).item<float>()));
  EXPECT_EQ(sum(zeros({0, 3})).item<float>(), 0.0f);
  const Tensor per_row = mean(zeros({2, 0}), {1});
  EXPECT_EQ(per_row.shape(), (Shape{2}));
  EXPECT_TRUE(std::isnan(per_row.to_vector<float>()[1]));
  EXPECT_EQ(sum(zeros({0, 3}), {1}).shape(), (Shape{0}));
  EXPECT_LOOM_ERROR(max(zeros({0})), "max: cannot reduce over zero elements");
  EXPECT_LOOM_ERROR(min(zeros({3, 0}), 1), "min: cannot reduce over zero elements");
  EXPECT_LOOM_ERROR(argmax(zeros({0, 2})), "argmax: cannot reduce over zero elements");
}

TEST(Reduction, MaxMinAndArgmaxPickTheFirstExtreme) {
  const Tensor x = from_vector<double>({1, 3, 3, 2, -5, -5}, {2, 3});
  EXPECT_EQ(max(x).item<double>(), 3.0);
  EXPECT_EQ(min(x).item<double>(), -5.0);
  EXPECT_EQ(argmax(x).item<int64_t>(), 1);
  EXPECT_EQ(max(x, 1).to_vector<double>(), (std::vector<double>{3, 2}));
  EXPECT_EQ(min(x, -1).to_vector<double>(), (std::vector<double>{1, -5}));
  EXPECT_EQ(argmax(x, 1).to_vector<int64_t>(), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(argmax(x, 0, true).shape(), (Shape{1, 3}));
  EXPECT_EQ(argmax(x, 0).to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 0}));
  EXPECT_EQ(max(x, 0, true).shape(), (Shape{1, 3}));
  // The gradient goes to the first position holding the extreme only.
  Tensor leaf = x.clone().detach().requires_grad_();
  max(leaf).backward();
  EXPECT_EQ(leaf.grad().to_vector<double>(), (std::vector<double>{0, 1, 0, 0, 0, 0}));
  Tensor leaf2 = x.clone().detach().requires_grad_();
  min(leaf2, 1).backward(from_vector<double>({2, 7}));
  EXPECT_EQ(leaf2.grad().to_vector<double>(), (std::vector<double>{2, 0, 0, 0, 7, 0}));
  // Integers work for the extremes.
  const Tensor labels = from_vector<int64_t>({4, 9, 2, 9});
  EXPECT_EQ(argmax(labels).item<int64_t>(), 1);
  EXPECT_EQ(max(labels).item<int64_t>(), 9);
}

TEST(Reduction, ExtremesMatchLoopsOnRandomData) {
  Generator gen(13);
  const Tensor x = randn({6, 7, 8}, kFloat32, &gen);
  const auto v = x.to_vector<float>();
  const auto got = max(x, 1).to_vector<float>();
  const auto idx = argmax(x, 1).to_vector<int64_t>();
  for (int64_t i = 0; i < 6; ++i)
    for (int64_t k = 0; k < 8; ++k) {
      float best = v[(i * 7) * 8 + k];
      int64_t at = 0;
      for (int64_t j = 1; j < 7; ++j) {
        if (v[(i * 7 + j) * 8 + k] > best) best = v[(i * 7 + j) * 8 + k], at = j;
      }
      EXPECT_EQ(got[i * 8 + k], best);
      EXPECT_EQ(idx[i * 8 + k], at);
    }
}

TEST(Reduction, NanPropagatesThroughMax) {
  const Tensor x = from_vector<float>({1, NAN, 5});
  EXPECT_TRUE(std::isnan(max(x).item<float>()));
  EXPECT_EQ(argmax(x).item<int64_t>(), 1);
}

TEST(Reduction, ScalarsReduceToThemselves) {
  const Tensor s = scalar_tensor(2.5, kFloat64);
  EXPECT_EQ(sum(s).item<double>(), 2.5);
  EXPECT_EQ(max(s, 0).item<double>(), 2.5);
  EXPECT_EQ(argmax(s, -1).item<int64_t>(), 0);
}

TEST(Reduction, BadDimsAreRejected) {
  const Tensor x = zeros({2, 3});
  EXPECT_LOOM_ERROR(sum(x, {1, -1}), "sum: dim -1 appears more than once");
  EXPECT_LOOM_ERROR(sum(x, {2}), "out of range");
  EXPECT_LOOM_ERROR(mean(x, {-3}), "out of range");
  EXPECT_LOOM_ERROR(max(x, 5), "out of range");
  EXPECT_LOOM_ERROR(argmax(x, -3), "out of range");
  EXPECT_LOOM_ERROR(sum(Tensor()), "sum: the input tensor is undefined");
}

TEST(SumTo, ReducesBroadcastDims) {
  Generator gen(14);
  const Shape s{2, 3, 4};
  const Tensor x = randn(s, kFloat64, &gen);
  const auto v = x.to_vector<double>();
  const Tensor r = sum_to(x, {3, 1});
  EXPECT_EQ(r.shape(), (Shape{3, 1}));
  EXPECT_TENSOR_NEAR(r, from_vector(loop_sum(v, s, true, false, true), {3, 1}), 1e-12, 0);
  EXPECT_TENSOR_NEAR(sum_to(x, {4}), from_vector(loop_sum(v, s, true, true, false), {4}), 1e-12, 0);
  EXPECT_TRUE(sum_to(x, s).is_same(x));
  EXPECT_NEAR(sum_to(x, {}).item<double>(), sum(x).item<double>(), 1e-12);
  EXPECT_LOOM_ERROR(sum_to(x, {2, 3}),
                    "sum_to: cannot sum a tensor of shape [2, 3, 4] to shape [2, 3]");
  EXPECT_LOOM_ERROR(sum_to(x, {1, 2, 3, 4}), "larger rank");
}

TEST(Expand, ViewsWithStrideZero) {
  const Tensor x = from_vector<float>({1, 2, 3}, {3, 1});
  const Tensor e = x.expand({2, 3, 4});
  EXPECT_EQ(e.shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(e.strides(), (Shape{0, 1, 0}));
  EXPECT_TRUE(e.storage().is_same(x.storage()));
  const auto v = e.to_vector<float>();
  for (int64_t i = 0; i < 24; ++i) EXPECT_EQ(v[i], static_cast<float>((i / 4) % 3 + 1));
  EXPECT_EQ(x.expand({-1, 5}).shape(), (Shape{3, 5}));
  EXPECT_EQ(x.expand_as(zeros({7, 3, 2})).shape(), (Shape{7, 3, 2}));
  EXPECT_EQ(scalar_tensor(1.0).expand({2, 2}).shape(), (Shape{2, 2}));
  EXPECT_LOOM_ERROR(x.expand({4, 1}), "expand: cannot expand shape [3, 1] to [4, 1]");
  EXPECT_LOOM_ERROR(x.expand({3}), "fewer dimensions");
  EXPECT_LOOM_ERROR(x.expand({-1, 3, 1}), "must be given");
}

}  // namespace
}  // namespace loom
