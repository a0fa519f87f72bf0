// batch_norm on the CPU: the case table (batch_norm_cases.h) against float64 and finite
// differences; training outputs and running statistics over two steps against plain loops, eval
// mode on running statistics, float32 under a large mean, batch_norm_relu against the two ops,
// errors.
#include <algorithm>
#include <cmath>

#include "batch_norm_cases.h"

namespace loom {
namespace {

LOOM_CASE_TABLE_TEST(BatchNorm, testing::batch_norm_cases, Cpu)

// Per channel of x [N, C, ...]: the batch mean and the biased variance, by plain loops.
void channel_moments(const Tensor& x, std::vector<double>& mean, std::vector<double>& var) {
  const auto v = x.to_vector<double>();
  const int64_t N = x.size(0), C = x.size(1), inner = x.numel() / (N * C);
  mean.assign(C, 0), var.assign(C, 0);
  for (int64_t c = 0; c < C; ++c) {
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < inner; ++k) mean[c] += v[(n * C + c) * inner + k];
    mean[c] /= N * inner;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < inner; ++k)
        var[c] += std::pow(v[(n * C + c) * inner + k] - mean[c], 2);
    var[c] /= N * inner;
  }
}

Tensor reference_bn(const Tensor& x, const std::vector<double>& mean,
                    const std::vector<double>& var, const Tensor& w, const Tensor& b, double eps) {
  auto v = x.to_vector<double>();
  const auto wv = w.to_vector<double>(), bv = b.to_vector<double>();
  const int64_t C = x.size(1), inner = x.numel() / (x.size(0) * C);
  for (size_t i = 0; i < v.size(); ++i) {
    const int64_t c = (static_cast<int64_t>(i) / inner) % C;
    v[i] = (v[i] - mean[c]) / std::sqrt(var[c] + eps) * wv[c] + bv[c];
  }
  return from_vector(v, x.shape());
}

TEST(BatchNorm, TrainingNormalisesWithBatchStatistics) {
  for (Shape shape : {Shape{4, 3, 5, 6}, Shape{8, 5}, Shape{1, 2, 3, 3}}) {
    for (DType dtype : {kFloat64, kFloat32}) {
      Generator gen(shape[0] * 10 + shape[1]);
      Tensor x = randn(shape, dtype, &gen);
      Tensor w = uniform({shape[1]}, 0.5, 1.5, dtype, &gen), b = randn({shape[1]}, dtype, &gen);
      std::vector<double> mean, var;
      channel_moments(x, mean, var);
      Tensor y = batch_norm(x, w, b, Tensor(), Tensor(), true, 0.1, 1e-5);
      const double tol = dtype == kFloat64 ? 1e-10 : 2e-5;
      EXPECT_TENSOR_NEAR(y, reference_bn(x, mean, var, w, b, 1e-5), tol, tol);
    }
  }
}

TEST(BatchNorm, RunningStatisticsAfterTwoSteps) {
  Generator gen(4);
  const int64_t C = 3;
  Tensor rm = zeros({C}, kFloat64), rv = ones({C}, kFloat64);
  std::vector<double> erm(C, 0.0), erv(C, 1.0);
  for (int step = 0; step < 2; ++step) {
    Tensor x = uniform({4, C, 3, 2}, -1.0, 3.0, kFloat64, &gen);
    std::vector<double> mean, var;
    channel_moments(x, mean, var);
    batch_norm(x, Tensor(), Tensor(), rm, rv, true, 0.2, 1e-5);
    const double m = 4 * 3 * 2;
    for (int64_t c = 0; c < C; ++c) {
      erm[c] = 0.8 * erm[c] + 0.2 * mean[c];
      erv[c] = 0.8 * erv[c] + 0.2 * var[c] * m / (m - 1);  // unbiased, as PyTorch
    }
  }
  EXPECT_TENSOR_NEAR(rm, from_vector(erm), 1e-12, 1e-12);
  EXPECT_TENSOR_NEAR(rv, from_vector(erv), 1e-12, 1e-12);
}

TEST(BatchNorm, EvalUsesRunningStatisticsAndLeavesThem) {
  Generator gen(5);
  Tensor x = randn({3, 2, 4, 4}, kFloat64, &gen);
  Tensor w = from_vector<double>({2.0, 0.5}), b = from_vector<double>({0.1, -0.3});
  Tensor rm = from_vector<double>({0.3, -1.0}), rv = from_vector<double>({4.0, 0.25});
  Tensor y = batch_norm(x, w, b, rm, rv, false, 0.1, 1e-3);
  EXPECT_TENSOR_NEAR(y, reference_bn(x, {0.3, -1.0}, {4.0, 0.25}, w, b, 1e-3), 1e-12, 1e-12);
  EXPECT_EQ(rm.to_vector<double>(), (std::vector<double>{0.3, -1.0}));
  EXPECT_EQ(rv.to_vector<double>(), (std::vector<double>{4.0, 0.25}));
}

// The per-element passes run in float32 for float32 data: x - mean comes first, so a mean 1000
// times the spread still normalises to float32's precision, not to 1000 ulps of it.
TEST(BatchNorm, Float32KeepsItsPrecisionUnderALargeMean) {
  Generator gen(11);
  const Tensor x64 = add(randn({6, 3, 5, 5}, kFloat64, &gen), 1000.0);
  const Tensor x = x64.to(kFloat32).to(kFloat64).to(kFloat32);
  std::vector<double> mean, var;
  channel_moments(x.to(kFloat64), mean, var);
  const Tensor w = uniform({3}, 0.5, 1.5, kFloat32, &gen), b = randn({3}, kFloat32, &gen);
  const Tensor y = batch_norm(x, w, b, Tensor(), Tensor(), true);
  EXPECT_TENSOR_NEAR(y.to(kFloat64), reference_bn(x.to(kFloat64), mean, var, w, b, 1e-5), 2e-4,
                     1e-4);
}

// relu(batch_norm(x)) in one op: the same outputs and the same gradients of x, weight and bias
// as the two ops, in training and eval, float64 and float32 (the same rules, so equal to
// rounding).
TEST(BatchNorm, FusedReluMatchesReluOfBatchNorm) {
  for (Shape shape : {Shape{4, 3, 5, 6}, Shape{8, 5}, Shape{2, 16, 3, 3}}) {
    for (DType dtype : {kFloat64, kFloat32}) {
      for (bool training : {true, false}) {
        SCOPED_TRACE(shape_str(shape) + " " + dtype_name(dtype) +
                     (training ? " training" : " eval"));
        Generator gen(shape[1] * 7 + training);
        const Tensor x0 = randn(shape, dtype, &gen);
        const Tensor w0 = uniform({shape[1]}, -1.5, 1.5, dtype, &gen),
                     b0 = randn({shape[1]}, dtype, &gen);
        const Tensor rm = randn({shape[1]}, dtype, &gen),
                     rv = uniform({shape[1]}, 0.5, 2.0, dtype, &gen);
        const Tensor upstream = randn(shape, dtype, &gen);
        auto run = [&](bool fused) {
          Tensor x = x0.clone().set_requires_grad(true), w = w0.clone().set_requires_grad(true);
          Tensor b = b0.clone().set_requires_grad(true);
          const Tensor rm_run = rm.clone(), rv_run = rv.clone();
          const Tensor y = fused ? batch_norm_relu(x, w, b, rm_run, rv_run, training)
                                 : relu(batch_norm(x, w, b, rm_run, rv_run, training));
          sum(y * upstream).backward();
          return std::vector<Tensor>{y.detach(), x.grad(), w.grad(), b.grad(), rm_run, rv_run};
        };
        const auto fused = run(true), composed = run(false);
        const double tol = dtype == kFloat64 ? 1e-12 : 1e-5;
        for (size_t i = 0; i < fused.size(); ++i) {
          SCOPED_TRACE("result " + std::to_string(i));
          EXPECT_TENSOR_NEAR(fused[i], composed[i], tol, tol);
        }
        const auto y = fused[0].to_vector<double>();
        EXPECT_GT(std::count(y.begin(), y.end(), 0.0), 0) << "no element was cut by the relu";
      }
    }
  }
}

TEST(BatchNorm, Errors) {
  Tensor x = randn({4, 3, 2, 2});
  Tensor c3 = ones({3}), c2 = ones({2});
  EXPECT_LOOM_ERROR(batch_norm(randn({4}), Tensor(), Tensor(), Tensor(), Tensor(), true),
                    "[N, C, ...]");
  EXPECT_LOOM_ERROR(batch_norm(x, c2, Tensor(), Tensor(), Tensor(), true), "weight has shape [2]");
  EXPECT_LOOM_ERROR(batch_norm(x, Tensor(), c2, Tensor(), Tensor(), true), "bias has shape");
  EXPECT_LOOM_ERROR(batch_norm(x, Tensor(), Tensor(), c3, Tensor(), true), "or neither");
  EXPECT_LOOM_ERROR(batch_norm(x, Tensor(), Tensor(), c2, c2, true), "running_mean has shape");
  EXPECT_LOOM_ERROR(batch_norm(x, Tensor(), Tensor(), Tensor(), Tensor(), false),
                    "eval mode needs");
  EXPECT_LOOM_ERROR(batch_norm(x, ones({3}, kFloat64), Tensor(), Tensor(), Tensor(), true),
                    "weight (float64, cpu) must be float32");
  EXPECT_LOOM_ERROR(batch_norm(x, Tensor(), Tensor(), Tensor(), Tensor(), true, 0.1, 0.0),
                    "eps must be positive");
  EXPECT_LOOM_ERROR(batch_norm(x, Tensor(), Tensor(), Tensor(), Tensor(), true, 1.5), "momentum");
  EXPECT_LOOM_ERROR(batch_norm(randn({1, 3}), Tensor(), Tensor(), Tensor(), Tensor(), true),
                    "more than one value");
  EXPECT_LOOM_ERROR(batch_norm(x.to(kInt64), Tensor(), Tensor(), Tensor(), Tensor(), true),
                    "floating point");
  Tensor strided = ones({3, 2}).select(1, 0);
  EXPECT_LOOM_ERROR(batch_norm(x, Tensor(), Tensor(), strided, strided, true), "contiguous");
  EXPECT_LOOM_ERROR(batch_norm_relu(x, c2, Tensor(), Tensor(), Tensor(), true),
                    "weight has shape [2]");
}

}  // namespace
}  // namespace loom
