// Losses against values computed by hand, float64 gradient checks, Keras' BCE clamping,
// reductions and the input checks.
#include <cmath>
#include <functional>

#include "testing.h"

namespace loom::nn {
namespace {

using testing::random_leaf;

double bce(double x, double y) {  // the naive formula, fine for moderate x
  const double p = 1 / (1 + std::exp(-x));
  return -(y * std::log(p) + (1 - y) * std::log(1 - p));
}

TEST(Loss, BceWithLogitsMatchesTheNaiveFormulaAndStaysFinite) {
  const Tensor x = from_vector<double>({-3, -0.5, 0, 0.25, 4}, {5, 1});
  const Tensor y = from_vector<double>({0, 1, 1, 0, 1}, {5, 1});
  const auto per = binary_cross_entropy_with_logits(x, y, Reduction::None).to_vector<double>();
  double total = 0;
  for (int i = 0; i < 5; ++i) {
    EXPECT_NEAR(per[i], bce(x.to_vector<double>()[i], y.to_vector<double>()[i]), 1e-12);
    total += per[i];
  }
  EXPECT_NEAR(binary_cross_entropy_with_logits(x, y, Reduction::Sum).item<double>(), total, 1e-12);
  EXPECT_NEAR(binary_cross_entropy_with_logits(x, y).item<double>(), total / 5, 1e-12);
  // Far in the tails the naive formula overflows; the stable one gives |x| or ~0.
  const Tensor big = from_vector<float>({1000, -1000, 1000}, {3});
  const Tensor labels = from_vector<float>({0, 1, 1}, {3});
  const auto tails =
      binary_cross_entropy_with_logits(big, labels, Reduction::None).to_vector<float>();
  EXPECT_FLOAT_EQ(tails[0], 1000);
  EXPECT_FLOAT_EQ(tails[1], 1000);
  EXPECT_FLOAT_EQ(tails[2], 0);
  // Integer labels are accepted and converted.
  EXPECT_NEAR(binary_cross_entropy_with_logits(x, from_vector<int64_t>({0, 1, 1, 0, 1}, {5, 1}))
                  .item<double>(),
              total / 5, 1e-12);
}

TEST(Loss, BceWithLogitsGradientIsSigmoidMinusTarget) {
  const Tensor x = random_leaf({3, 4}, 21, 2.0);
  const Tensor y = rand({3, 4}, kFloat64);
  testing::Function f = [&](const std::vector<Tensor>& in) {
    return binary_cross_entropy_with_logits(in[0], y, Reduction::None);
  };
  EXPECT_GRADCHECK(f, (std::vector<Tensor>{x}));
  x.impl()->grad = Tensor();
  binary_cross_entropy_with_logits(x, y, Reduction::Sum).backward();
  const auto g = x.grad().to_vector<double>(), xv = x.to_vector<double>(),
             yv = y.to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i)
    EXPECT_NEAR(g[i], 1 / (1 + std::exp(-xv[i])) - yv[i], 1e-12);
}

// The fused kernel's gradient for the targets too (soft labels that require grad), and exactly
// 1/2 - y at x = 0.
TEST(Loss, BceWithLogitsGradientsForBothInputs) {
  const Tensor x = random_leaf({2, 5}, 22, 3.0);
  const Tensor y = random_leaf({2, 5}, 23, 0.3);
  testing::Function f = [](const std::vector<Tensor>& in) {
    return binary_cross_entropy_with_logits(in[0], in[1], Reduction::None);
  };
  EXPECT_GRADCHECK(f, (std::vector<Tensor>{x, y}));
  const Tensor zero = zeros({3}, kFloat64).requires_grad_();
  binary_cross_entropy_with_logits(zero, from_vector<double>({0, 1, 0.25}), Reduction::Sum)
      .backward();
  EXPECT_EQ(zero.grad().to_vector<double>(), (std::vector<double>{0.5, -0.5, 0.25}));
}

TEST(Loss, BinaryCrossEntropyClampsLikeKeras) {
  const Tensor p = from_vector<double>({0.2, 0.9, 0.0, 1.0}, {4});
  const Tensor y = from_vector<double>({0, 1, 1, 0}, {4});
  const auto per = binary_cross_entropy(p, y, Reduction::None).to_vector<double>();
  EXPECT_NEAR(per[0], -std::log(0.8), 1e-12);
  EXPECT_NEAR(per[1], -std::log(0.9), 1e-12);
  // p = 0 with label 1 and p = 1 with label 0: clamped to 1e-7, loss -log(1e-7) = 16.118...
  EXPECT_NEAR(per[2], -std::log(1e-7), 1e-9);
  EXPECT_NEAR(per[3], -std::log(1e-7), 1e-6);
  EXPECT_NEAR(binary_cross_entropy(p, y, Reduction::Mean, 1e-3).item<double>(),
              (-std::log(0.8) - std::log(0.9) - 2 * std::log(1e-3)) / 4, 1e-9);
  EXPECT_LOOM_ERROR(binary_cross_entropy(p, y, Reduction::Mean, 0.7), "eps must be in [0, 0.5)");
  Tensor q = testing::random_away_from({2, 3}, 4, 0.05, 0.95, {}, 0.0);
  q.requires_grad_();
  const Tensor soft_labels = rand({2, 3}, kFloat64);
  testing::Function f = [&](const std::vector<Tensor>& in) {
    return binary_cross_entropy(in[0], soft_labels, Reduction::Sum);
  };
  EXPECT_GRADCHECK(f, (std::vector<Tensor>{q}));
}

TEST(Loss, NllAndCrossEntropyPickTheTargetClass) {
  const Tensor logits = from_vector<double>({1, 2, 3, 0.5, -1, 0}, {2, 3});
  const Tensor targets = from_vector<int64_t>({2, 0}, {2});
  auto log_softmax_row = [](std::vector<double> r) {
    double z = 0;
    for (double v : r) z += std::exp(v);
    for (double& v : r) v -= std::log(z);
    return r;
  };
  const auto r0 = log_softmax_row({1, 2, 3}), r1 = log_softmax_row({0.5, -1, 0});
  const auto per = cross_entropy(logits, targets, Reduction::None).to_vector<double>();
  EXPECT_NEAR(per[0], -r0[2], 1e-12);
  EXPECT_NEAR(per[1], -r1[0], 1e-12);
  EXPECT_NEAR(cross_entropy(logits, targets).item<double>(), (-r0[2] - r1[0]) / 2, 1e-12);
  EXPECT_NEAR(nll_loss(log_softmax(logits, 1), targets, Reduction::Sum).item<double>(),
              -r0[2] - r1[0], 1e-12);
  // Label smoothing 0.1 over 3 classes.
  const double s = 0.1;
  const double smooth0 = (1 - s) * -r0[2] + s / 3 * -(r0[0] + r0[1] + r0[2]);
  const double smooth1 = (1 - s) * -r1[0] + s / 3 * -(r1[0] + r1[1] + r1[2]);
  EXPECT_NEAR(cross_entropy(logits, targets, Reduction::Mean, s).item<double>(),
              (smooth0 + smooth1) / 2, 1e-12);
  EXPECT_NEAR(
      cross_entropy(logits, from_vector<int32_t>({2, 0}, {2}), Reduction::Sum).item<double>(),
      -r0[2] - r1[0], 1e-12);
}

TEST(Loss, CrossEntropyGradchecks) {
  const Tensor logits = random_leaf({4, 5}, 31);
  const Tensor targets = from_vector<int64_t>({4, 0, 2, 2}, {4});
  for (double smoothing : {0.0, 0.2}) {
    testing::Function f = [&](const std::vector<Tensor>& in) {
      return cross_entropy(in[0], targets, Reduction::Mean, smoothing);
    };
    EXPECT_GRADCHECK(f, (std::vector<Tensor>{logits}));
  }
  const Tensor log_probs = random_leaf({4, 5}, 32);
  testing::Function nll = [&](const std::vector<Tensor>& in) {
    return nll_loss(in[0], targets, Reduction::None);
  };
  EXPECT_GRADCHECK(nll, (std::vector<Tensor>{log_probs}));
}

TEST(Loss, MseValuesAndGradient) {
  const Tensor a = from_vector<double>({1, 2, 3, 4}, {2, 2});
  const Tensor b = from_vector<double>({1.5, 2, 1, 5}, {2, 2});
  EXPECT_NEAR(mse_loss(a, b).item<double>(), (0.25 + 0 + 4 + 1) / 4, 1e-12);
  EXPECT_NEAR(mse_loss(a, b, Reduction::Sum).item<double>(), 5.25, 1e-12);
  EXPECT_EQ(mse_loss(a, b, Reduction::None).shape(), (Shape{2, 2}));
  const Tensor x = random_leaf({3, 2}, 41);
  const Tensor t = randn({3, 2}, kFloat64);
  testing::Function f = [&](const std::vector<Tensor>& in) { return mse_loss(in[0], t); };
  EXPECT_GRADCHECK(f, (std::vector<Tensor>{x}));
}

TEST(Loss, BadInputsThrowNamingTheLoss) {
  const Tensor logits = zeros({4, 3});
  EXPECT_LOOM_ERROR(cross_entropy(logits, zeros({4})), "targets must be class indices");
  EXPECT_LOOM_ERROR(cross_entropy(logits, zeros({3}, kInt64)),
                    "targets [3] must be [N] for input [4, 3]");
  EXPECT_LOOM_ERROR(cross_entropy(zeros({4}), zeros({4}, kInt64)),
                    "expected input [N, C], got [4]");
  EXPECT_LOOM_ERROR(cross_entropy(logits, zeros({4}, kInt64), Reduction::Mean, 1.5),
                    "label_smoothing must be in [0, 1]");
  EXPECT_LOOM_ERROR(nll_loss(zeros({4, 3}, kInt64), zeros({4}, kInt64)),
                    "nll_loss: input must be floating-point");
  EXPECT_LOOM_ERROR(binary_cross_entropy_with_logits(zeros({4, 1}), zeros({4})),
                    "input [4, 1] and targets [4] must have the same shape");
  EXPECT_LOOM_ERROR(mse_loss(zeros({2}), Tensor()), "mse_loss: input and targets must be defined");
  EXPECT_LOOM_ERROR(binary_cross_entropy(zeros({2}, kInt64), zeros({2})), "must be floating-point");
}

TEST(Loss, BFloat16PredictionsAreWidenedToFloat32) {
  // Mixed precision's outputs: every loss computes in float32 on the same (bfloat16) values, and
  // the gradient returns to the bfloat16 predictions rounded once.
  Generator gen(70);
  const Tensor logits = randn({64, 1}, kFloat32, &gen).to(kBFloat16);
  const Tensor labels = randint(0, 2, {64, 1}, kInt64, &gen).to(kFloat32);
  const Tensor classes = randint(0, 5, {64}, kInt64, &gen);
  const Tensor scores = randn({64, 5}, kFloat32, &gen).to(kBFloat16);
  auto check = [](const Tensor& pred, const std::function<Tensor(const Tensor&)>& loss) {
    Tensor p16 = pred.detach().requires_grad_(), p32 = pred.to(kFloat32).detach().requires_grad_();
    const Tensor l16 = loss(p16), l32 = loss(p32);
    EXPECT_EQ(l16.dtype(), kFloat32);
    EXPECT_EQ(l16.item<float>(), l32.item<float>());
    l16.backward();
    l32.backward();
    ASSERT_EQ(p16.grad().dtype(), kBFloat16);
    EXPECT_EQ(p16.grad().to(kFloat32).to_vector<float>(),
              p32.grad().to(kBFloat16).to(kFloat32).to_vector<float>());
  };
  check(logits, [&](const Tensor& p) { return binary_cross_entropy_with_logits(p, labels); });
  check(logits, [&](const Tensor& p) { return mse_loss(p, labels); });
  check(scores, [&](const Tensor& p) { return cross_entropy(p, classes); });
}

}  // namespace
}  // namespace loom::nn
