// dropout on the CPU: the share of dropped elements, the 1/(1-p) scaling, seeding, the
// identity in eval, the gradient through the same mask, errors.
#include <cmath>

#include "testing.h"

namespace loom {
namespace {

TEST(Dropout, DropsAboutPAndScalesTheRest) {
  for (double p : {0.1, 0.5, 0.8}) {
    Generator data(3), mask(17);
    Tensor x = uniform({200000}, 0.5, 2.0, kFloat64, &data);
    const auto xv = x.to_vector<double>();
    const auto yv = dropout(x, p, true, &mask).to_vector<double>();
    int64_t zeros = 0;
    for (size_t i = 0; i < xv.size(); ++i) {
      if (yv[i] == 0) {
        ++zeros;
      } else {
        ASSERT_NEAR(yv[i], xv[i] / (1 - p), 1e-12) << "element " << i;
      }
    }
    // 200000 Bernoulli(p) draws: the standard deviation of the share is below 0.0012.
    EXPECT_NEAR(static_cast<double>(zeros) / xv.size(), p, 0.006) << "p = " << p;
  }
}

TEST(Dropout, SeededMasksRepeatAndDiffer) {
  Tensor x = uniform({1000}, 1.0, 2.0, kFloat32);
  Generator a(42), b(42), c(43);
  const auto ya = dropout(x, 0.5, true, &a).to_vector<float>();
  EXPECT_EQ(ya, dropout(x, 0.5, true, &b).to_vector<float>());
  EXPECT_NE(ya, dropout(x, 0.5, true, &c).to_vector<float>());
  // The generator advanced: the next mask differs from the first.
  EXPECT_NE(ya, dropout(x, 0.5, true, &a).to_vector<float>());
  EXPECT_EQ(a.offset(), 2000u);
}

TEST(Dropout, IdentityInEvalAndForZeroP) {
  Tensor x = randn({4, 5});
  EXPECT_TRUE(dropout(x, 0.5, false).is_same(x));
  EXPECT_TRUE(dropout(x, 0.0, true).is_same(x));
}

TEST(Dropout, GradientUsesTheSameMask) {
  Generator gen(8);
  Tensor x = uniform({50, 40}, 1.0, 2.0, kFloat64);
  x.set_requires_grad(true);
  Tensor y = dropout(x, 0.3, true, &gen);
  Tensor g = uniform({50, 40}, -1.0, 1.0, kFloat64);
  y.backward(g);
  const auto xv = x.to_vector<double>(), yv = y.to_vector<double>();
  const auto gv = g.to_vector<double>(), dx = x.grad().to_vector<double>();
  for (size_t i = 0; i < xv.size(); ++i) {
    ASSERT_NEAR(dx[i], yv[i] == 0 ? 0.0 : gv[i] / 0.7, 1e-12) << "element " << i;
  }
  Tensor leaf = testing::random_leaf({6, 7}, 5);
  EXPECT_GRADCHECK(
      [](const std::vector<Tensor>& in) {
        Generator fixed(123);  // the same mask on every evaluation
        return dropout(in[0], 0.4, true, &fixed);
      },
      (std::vector<Tensor>{leaf}));
}

TEST(Dropout, Errors) {
  Tensor x = randn({3});
  EXPECT_LOOM_ERROR(dropout(x, -0.1, true), "p must be in [0, 1), got -0.1");
  EXPECT_LOOM_ERROR(dropout(x, 1.0, true), "got 1");
  EXPECT_LOOM_ERROR(dropout(x.to(kInt64), 0.5, true), "floating point");
  EXPECT_LOOM_ERROR(dropout(Tensor(), 0.5, true), "undefined");
}

}  // namespace
}  // namespace loom
