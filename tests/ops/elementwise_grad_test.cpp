// The case table of every differentiable elementwise op and activation (elementwise_cases.h)
// on every operand layout (broadcast, scalar-shaped, transposed): float32 and bfloat16 against
// float64 and finite differences in float64; plus the gradients that finite differences cannot
// see: kinks, ties and special points.
#include <cmath>

#include "elementwise_cases.h"

namespace loom {
namespace {

using namespace testing;

LOOM_CASE_TABLE_TEST(Elementwise, elementwise_parity_cases, Cpu)

TEST(ElementwiseGrad, OnlyInputsThatRequireGradGetOne) {
  Tensor a = random_leaf({2, 3}, 1);
  Tensor b = randn({3}, kFloat64);
  mul(a, b).backward(ones({2, 3}, kFloat64));
  EXPECT_FALSE(b.grad().defined());
  // d(a*b)/da = b, broadcast over the rows.
  const std::vector<double> bv = b.to_vector<double>();
  const std::vector<double> ga = a.grad().to_vector<double>();
  for (int i = 0; i < 6; ++i) EXPECT_DOUBLE_EQ(ga[i], bv[i % 3]);
}

TEST(ElementwiseGrad, BroadcastGradientsAreSummedBack) {
  Tensor a = from_vector<double>({1, 2, 3}, {3, 1}).set_requires_grad(true);
  Tensor b = from_vector<double>({10, 20, 30, 40}, {1, 4}).set_requires_grad(true);
  add(a, b).backward(ones({3, 4}, kFloat64));
  EXPECT_EQ(a.grad().shape(), (Shape{3, 1}));
  EXPECT_EQ(a.grad().to_vector<double>(), (std::vector<double>{4, 4, 4}));
  EXPECT_EQ(b.grad().to_vector<double>(), (std::vector<double>{3, 3, 3, 3}));
  Tensor s = scalar_tensor(2.0, kFloat64).set_requires_grad(true);
  Tensor x = from_vector<double>({1, 2, 3, 4}, {2, 2}).set_requires_grad(true);
  mul(s, x).backward(ones({2, 2}, kFloat64));
  EXPECT_EQ(s.grad().dim(), 0);
  EXPECT_DOUBLE_EQ(s.grad().item<double>(), 10.0);  // sum of x
}

TEST(ElementwiseGrad, MaximumAndMinimumSplitTiesEqually) {
  Tensor a = from_vector<double>({1, 5, 3}).set_requires_grad(true);
  Tensor b = from_vector<double>({2, 4, 3}).set_requires_grad(true);
  maximum(a, b).backward(from_vector<double>({10, 20, 30}));
  EXPECT_EQ(a.grad().to_vector<double>(), (std::vector<double>{0, 20, 15}));
  EXPECT_EQ(b.grad().to_vector<double>(), (std::vector<double>{10, 0, 15}));
  a.set_grad(Tensor());
  b.set_grad(Tensor());
  minimum(a, b).backward(from_vector<double>({10, 20, 30}));
  EXPECT_EQ(a.grad().to_vector<double>(), (std::vector<double>{10, 0, 15}));
  EXPECT_EQ(b.grad().to_vector<double>(), (std::vector<double>{0, 20, 15}));
}

TEST(ElementwiseGrad, KinksTakePyTorchsConventions) {
  Tensor x = from_vector<double>({-1, 0, 2}).set_requires_grad(true);
  abs(x).backward(from_vector<double>({3, 3, 3}));
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{-3, 0, 3}));
  // clamp passes the gradient on its bounds, inclusive.
  Tensor y = from_vector<double>({-2, -1, 0, 1, 2}).set_requires_grad(true);
  clamp(y, -1, 1).backward(ones({5}, kFloat64));
  EXPECT_EQ(y.grad().to_vector<double>(), (std::vector<double>{0, 1, 1, 1, 0}));
}

TEST(ElementwiseGrad, PowSpecialPoints) {
  // x^0 has gradient 0 everywhere, even at x = 0 where 0 * x^-1 would be NaN.
  Tensor x = from_vector<double>({0, 2}).set_requires_grad(true);
  pow(x, 0.0).backward(ones({2}, kFloat64));
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{0, 0}));
  // x^2 at 0 has gradient 0; x^3 at -2 has gradient 12.
  Tensor z = from_vector<double>({0, -2}).set_requires_grad(true);
  pow(z, 2.0).backward(ones({2}, kFloat64));
  EXPECT_EQ(z.grad().to_vector<double>(), (std::vector<double>{0, -4}));
  Tensor w = from_vector<double>({-2}).set_requires_grad(true);
  pow(w, 3.0).backward(ones({1}, kFloat64));
  EXPECT_DOUBLE_EQ(w.grad().item<double>(), 12.0);
  // d(a^b)/db = a^b log(a), and 0 at a = 0 instead of 0 * -inf.
  Tensor a = from_vector<double>({0, 2}).set_requires_grad(true);
  Tensor b = from_vector<double>({2, 3}).set_requires_grad(true);
  pow(a, b).backward(ones({2}, kFloat64));
  const std::vector<double> gb = b.grad().to_vector<double>();
  EXPECT_EQ(gb[0], 0.0);
  EXPECT_NEAR(gb[1], 8.0 * std::log(2.0), 1e-12);
  EXPECT_EQ(a.grad().to_vector<double>(), (std::vector<double>{0, 12}));
}

TEST(ElementwiseGrad, WhereRoutesTheGradientByTheCondition) {
  Tensor cond = from_vector<uint8_t>({1, 0, 0, 1}, {2, 2});
  Tensor a = from_vector<double>({1, 2}, {1, 2}).set_requires_grad(true);
  Tensor b = scalar_tensor(7.0, kFloat64).set_requires_grad(true);
  where(cond, a, b).backward(from_vector<double>({1, 2, 3, 4}, {2, 2}));
  EXPECT_EQ(a.grad().shape(), (Shape{1, 2}));
  EXPECT_EQ(a.grad().to_vector<double>(), (std::vector<double>{1, 4}));
  EXPECT_DOUBLE_EQ(b.grad().item<double>(), 5.0);
}

TEST(ElementwiseGrad, OneTensorOnBothSidesAndTheSeedIsNotAliased) {
  Tensor x = from_vector<double>({1, -2, 3}).set_requires_grad(true);
  Tensor seed = from_vector<double>({1, 1, 1});
  (x + x).backward(seed);
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{2, 2, 2}));
  x.set_grad(Tensor());
  (x * x).backward(seed);
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{2, -4, 6}));
  // add with a number hands the seed straight back; the leaf's .grad must not alias it.
  x.set_grad(Tensor());
  (x + 1.0).backward(seed);
  (x + 1.0).backward(seed);
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{2, 2, 2}));
  EXPECT_EQ(seed.to_vector<double>(), (std::vector<double>{1, 1, 1}));
}

TEST(ElementwiseGrad, OpsRecordANamedNodeAndComparisonsNone) {
  Tensor x = random_leaf({3}, 7);
  EXPECT_EQ(exp(x).grad_fn()->name(), "exp");
  EXPECT_EQ((x * x).grad_fn()->name(), "mul");
  EXPECT_FALSE(gt(x, x).requires_grad());
  EXPECT_FALSE(lt(x, 0.0).requires_grad());
  NoGradGuard guard;
  EXPECT_FALSE(exp(x).requires_grad());
}

}  // namespace
}  // namespace loom
