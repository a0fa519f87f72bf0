// softmax and log_softmax on the CPU: the case table (softmax_cases.h) against float64 and
// finite differences, values against a plain loop along every dim, stability for huge inputs,
// errors.
#include <cmath>

#include "softmax_cases.h"

namespace loom {
namespace {

LOOM_CASE_TABLE_TEST(Softmax, testing::softmax_cases, Cpu)

// softmax of a [A, B, C] tensor along `dim`, by loop in double.
std::vector<double> loop_softmax(const std::vector<double>& v, const Shape& s, int dim, bool log) {
  std::vector<double> out(v.size());
  const int64_t strides[3] = {s[1] * s[2], s[2], 1};
  for (int64_t i = 0; i < static_cast<int64_t>(v.size()); ++i) {
    const int64_t pos = (i / strides[dim]) % s[dim];
    const int64_t base = i - pos * strides[dim];
    double m = -INFINITY;
    for (int64_t j = 0; j < s[dim]; ++j) m = std::max(m, v[base + j * strides[dim]]);
    double total = 0;
    for (int64_t j = 0; j < s[dim]; ++j) total += std::exp(v[base + j * strides[dim]] - m);
    out[i] = log ? v[i] - m - std::log(total) : std::exp(v[i] - m) / total;
  }
  return out;
}

TEST(Softmax, MatchesLoopAlongEveryDim) {
  Generator gen(31);
  const Shape s{3, 4, 5};
  const Tensor x = randn(s, kFloat64, &gen);
  const auto v = x.to_vector<double>();
  for (int dim = 0; dim < 3; ++dim) {
    EXPECT_TENSOR_NEAR(softmax(x, dim), from_vector(loop_softmax(v, s, dim, false), s), 1e-12,
                       1e-10);
    EXPECT_TENSOR_NEAR(log_softmax(x, dim), from_vector(loop_softmax(v, s, dim, true), s), 1e-12,
                       1e-10);
  }
  EXPECT_TENSOR_NEAR(softmax(x, -1), softmax(x, 2), 0, 0);
  EXPECT_TRUE(softmax(x, 0).is_contiguous());
  // float32 and a long row.
  const Tensor big = randn({2, 3000}, kFloat32, &gen);
  const Tensor rows = sum(softmax(big, 1), {1});
  EXPECT_TENSOR_NEAR(rows, ones({2}), 1e-5, 0);
}

TEST(Softmax, StableForHugeInputs) {
  const Tensor x = from_vector<float>({1000, 1000, -1000, 0, -1000, 1000}, {2, 3});
  const auto p = softmax(x, 1).to_vector<float>();
  const std::vector<float> expected{0.5f, 0.5f, 0.0f, 0.0f, 0.0f, 1.0f};
  for (size_t i = 0; i < p.size(); ++i) EXPECT_NEAR(p[i], expected[i], 1e-6) << i;
  const auto lp = log_softmax(from_vector<float>({1000, 0}), 0).to_vector<float>();
  EXPECT_NEAR(lp[0], 0.0f, 1e-6);
  EXPECT_NEAR(lp[1], -1000.0f, 1e-3);
  const auto lp2 = log_softmax(from_vector<double>({-1000, -1000}), 0).to_vector<double>();
  EXPECT_NEAR(lp2[0], -std::log(2.0), 1e-12);
}

TEST(Softmax, EdgeShapes) {
  EXPECT_EQ(softmax(scalar_tensor(3.0), 0).item<float>(), 1.0f);
  EXPECT_EQ(softmax(zeros({0, 4}), 1).shape(), (Shape{0, 4}));
  EXPECT_EQ(softmax(zeros({4, 0}), 1).shape(), (Shape{4, 0}));
}

TEST(Softmax, Errors) {
  EXPECT_LOOM_ERROR(softmax(zeros({2, 3}), 2), "out of range");
  EXPECT_LOOM_ERROR(log_softmax(zeros({2, 3}), -3), "out of range");
  EXPECT_LOOM_ERROR(softmax(zeros({2}, kInt64), 0),
                    "softmax: needs a floating-point tensor, got int64");
  EXPECT_LOOM_ERROR(log_softmax(Tensor(), 0), "log_softmax: the input tensor is undefined");
}

}  // namespace
}  // namespace loom
