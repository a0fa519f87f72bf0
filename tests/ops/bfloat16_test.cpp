// The ops that take bfloat16 on the CPU, against float64 references on the same (bfloat16)
// values: elementwise maths and activations (computed in float, rounded once), sum and mean
// (accumulated in double), max/min/argmax, pooling, batch norm (float32 statistics), dropout,
// their gradients, and the clear error of every op that does not take bfloat16 on the CPU.
#include <cmath>

#include "bf16_reference.h"
#include "elementwise_cases.h"

namespace loom {
namespace {

using namespace testing;

// bfloat16 keeps 8 significant bits: one rounding is off by at most half an ulp, 2^-9 of the
// value, and float's own error is some 2^-24 more.
constexpr double kBf16Rtol = 0x1p-8;

// Random bfloat16 values and the same values in float64 (exactly).
struct Operand {
  Tensor bf16, f64;
};

Operand random_operand(const Shape& shape, uint64_t seed) {
  Generator gen(seed);
  const Tensor x = randn(shape, kFloat64, &gen).to(kBFloat16);
  return {x, x.to(kFloat64)};
}

// Every elementwise op and activation on bfloat16 operands against the same op in float64 on
// the same values. Ops built from IEEE-exact float operations give the correctly rounded
// result: a sum, difference, product, quotient or square root of bfloat16 values is exact in
// float or lies far from a bfloat16 tie, so rounding float's result once equals rounding the
// exact one (here float64's, itself exact or correctly rounded). The libm ones (exp, log,
// tanh, pow) are within kBf16Rtol, and so is leaky_relu: its slope 0.1 is no bfloat16 value,
// so its float product may round twice. ElementwiseValues checks the same ops against loops.
TEST(BFloat16Ops, EveryElementwiseOpIsRoundedOnceFromFloat) {
  uint64_t seed = 100;
  for (const OpCase& c : differentiable_cases()) {
    for (const Layout& layout : layouts_for(c)) {
      SCOPED_TRACE(c.name + " on " + layout.name);
      std::vector<Tensor> bf16, f64;
      for (const Shape& shape : layout.shapes) {
        bf16.push_back(make_input(c, shape, ++seed).detach().to(kBFloat16));
        f64.push_back(bf16.back().to(kFloat64));
      }
      const Function f = with_layout(c.f, layout);
      const Tensor out = f(bf16), expected = f(f64);
      ASSERT_EQ(out.dtype(), kBFloat16);
      if (uses_libm(c.name) || c.name.rfind("leaky_relu", 0) == 0) {
        EXPECT_TENSOR_NEAR(out, expected, 0.0, kBf16Rtol);
      } else {
        EXPECT_EQ(bf16_bits_of(out), reference_bits_of(expected));
      }
    }
  }
}

Operand bounded_operand(const Shape& shape, uint64_t seed) {
  const Tensor x = bounded_bf16(shape, seed);
  return {x, x.to(kFloat64)};
}

TEST(BFloat16Ops, SumIsTheExactSumRoundedOnceAndMeanIsWithinOneRounding) {
  for (const Shape& shape : {Shape{7}, Shape{300000}, Shape{64, 513}}) {
    SCOPED_TRACE(shape_str(shape));
    const Operand x = bounded_operand(shape, 3 + shape.size());
    const Tensor s = sum(x.bf16);
    ASSERT_EQ(s.dtype(), kBFloat16);
    EXPECT_EQ(bf16_bits_of(s), reference_bits_of(sum(x.f64)));
    EXPECT_TENSOR_NEAR(mean(x.bf16), mean(x.f64), 0.0, kBf16Rtol);
  }
  const Operand m = bounded_operand({64, 513}, 9);
  EXPECT_EQ(bf16_bits_of(sum(m.bf16, {1})), reference_bits_of(sum(m.f64, {1})));
  EXPECT_EQ(bf16_bits_of(sum(m.bf16.t(), {1}, true)), reference_bits_of(sum(m.f64.t(), {1}, true)));
  EXPECT_TENSOR_NEAR(mean(m.bf16, {0}), mean(m.f64, {0}), 0.0, kBf16Rtol);
  EXPECT_EQ(sum(m.bf16, {0}, true).shape(), (Shape{1, 513}));
}

TEST(BFloat16Ops, MaxMinAndArgmaxAreExact) {
  const Operand x = random_operand({37, 45}, 12);
  EXPECT_EQ(max(x.bf16).to(kFloat64).item<double>(), max(x.f64).item<double>());
  EXPECT_EQ(min(x.bf16).to(kFloat64).item<double>(), min(x.f64).item<double>());
  EXPECT_EQ(max(x.bf16, 1).to(kFloat64).to_vector<double>(), max(x.f64, 1).to_vector<double>());
  EXPECT_EQ(min(x.bf16.t(), 0).to(kFloat64).to_vector<double>(),
            min(x.f64.t(), 0).to_vector<double>());
  EXPECT_EQ(argmax(x.bf16, 0).to_vector<int64_t>(), argmax(x.f64, 0).to_vector<int64_t>());
  EXPECT_EQ(argmax(x.bf16).item<int64_t>(), argmax(x.f64).item<int64_t>());
}

TEST(BFloat16Ops, GradientsFlowInBFloat16) {
  // d/dx sum(x * w + x) = w + 1 (accumulated from two paths), d/dw = x: both bit for bit.
  const Operand xv = random_operand({5, 6}, 20), wv = random_operand({5, 6}, 21);
  Tensor x = xv.bf16.detach().requires_grad_(), w = wv.bf16.detach().requires_grad_();
  sum(x * w + x).backward();
  ASSERT_EQ(x.grad().dtype(), kBFloat16);
  EXPECT_EQ(bf16_bits_of(x.grad()), reference_bits_of(wv.f64 + 1.0));
  EXPECT_EQ(bf16_bits_of(w.grad()), bf16_bits_of(xv.bf16));

  // mean(tanh(x)): (1 - y^2) / n from the rounded y = tanh(x). Rounding y moves 1 - y^2 by up
  // to 2^-8 absolutely, hence an absolute tolerance of 2^-7 / n beside the relative one.
  Tensor t = xv.bf16.detach().requires_grad_();
  mean(tanh(t)).backward();
  const Tensor y = tanh(xv.f64);
  const double n = 30;
  EXPECT_TENSOR_NEAR(t.grad(), (1.0 - y * y) / n, 0x1p-7 / n, kBf16Rtol);

  // max routes the gradient to the first maximum through a bfloat16 one_hot.
  Tensor m = xv.bf16.detach().requires_grad_();
  max(m).backward();
  std::vector<float> expected(30, 0.0f);
  expected[argmax(xv.f64).item<int64_t>()] = 1.0f;
  EXPECT_EQ(m.grad().to(kFloat32).to_vector<float>(), expected);
}

TEST(BFloat16Ops, OpsWithoutBFloat16SayWhichOpAndDtype) {
  // On the CPU, products and convolutions compute in float32 only (autocast is CUDA's), and
  // softmax and the optimizers take float32 (mixed precision keeps them there).
  Generator gen(30);
  const Tensor x = randn({2, 3, 5, 5}, kBFloat16, &gen), w = randn({4, 3, 3, 3}, kBFloat16, &gen);
  const Tensor m = randn({3, 4}, kBFloat16, &gen);
  EXPECT_LOOM_ERROR(matmul(m, m.t()), "matmul: dtype bfloat16 is not supported");
  EXPECT_LOOM_ERROR(conv2d(x, w), "conv2d: dtype bfloat16 is not supported");
  EXPECT_LOOM_ERROR(softmax(m, 1), "softmax: dtype bfloat16 is not supported");
  EXPECT_LOOM_ERROR(log_softmax(m, 1), "log_softmax: dtype bfloat16 is not supported");
  Tensor p = randn({4}, kBFloat16, &gen).requires_grad_();
  sum(p * p).backward();
  optim::Adam adam({p});
  EXPECT_LOOM_ERROR(adam.step(), "Adam.step: dtype bfloat16 is not supported");
  // Batch norm on bfloat16 data keeps its statistics and parameters in float32.
  const Tensor ones3 = ones({3}, kBFloat16), zeros3 = zeros({3}, kBFloat16);
  EXPECT_LOOM_ERROR(batch_norm(x, ones3, zeros3, Tensor(), Tensor(), true),
                    "batch_norm: weight (bfloat16, cpu) must be float32");
}

TEST(BFloat16Ops, PoolingSelectsAndAveragesWithOneRounding) {
  const Operand x = random_operand({2, 3, 9, 8}, 40);
  EXPECT_EQ(bf16_bits_of(max_pool2d(x.bf16, 2)), reference_bits_of(max_pool2d(x.f64, 2)));
  EXPECT_EQ(bf16_bits_of(max_pool2d(x.bf16, 3, 2, 1)),
            reference_bits_of(max_pool2d(x.f64, 3, 2, 1)));
  EXPECT_EQ(bf16_bits_of(avg_pool2d(x.bf16, 3, 2, 1)),
            reference_bits_of(avg_pool2d(x.f64, 3, 2, 1)));
  // Max pooling's gradient goes to the first maximum of each window, as float64's does; with
  // tiling windows each input gets one output's gradient, exactly.
  Tensor a = x.bf16.detach().requires_grad_(), b = x.f64.detach().requires_grad_();
  const Operand w = random_operand({2, 3, 4, 4}, 41);
  max_pool2d(a, 2).backward(w.bf16);
  max_pool2d(b, 2).backward(w.f64);
  EXPECT_EQ(bf16_bits_of(a.grad()), reference_bits_of(b.grad()));
}

TEST(BFloat16Ops, BatchNormOnBFloat16UsesFloat32StatisticsAndRoundsOnce) {
  const Operand x = random_operand({4, 3, 5, 5}, 50);
  Generator gen(51);
  const Tensor weight = randn({3}, kFloat32, &gen), bias = randn({3}, kFloat32, &gen);
  Tensor rm = zeros({3}), rv = ones({3});
  Tensor rm64 = zeros({3}, kFloat64), rv64 = ones({3}, kFloat64);
  const Tensor y = batch_norm(x.bf16, weight, bias, rm, rv, true);
  ASSERT_EQ(y.dtype(), kBFloat16);
  const Tensor y64 = batch_norm(x.f64, weight.to(kFloat64), bias.to(kFloat64), rm64, rv64, true);
  // The statistics in float32 (from double sums) are within float's rounding of float64's, and
  // the output is one bfloat16 rounding away.
  EXPECT_TENSOR_NEAR(y, y64, 1e-5, kBf16Rtol);
  EXPECT_EQ(rm.dtype(), kFloat32);
  EXPECT_TENSOR_NEAR(rm, rm64, 1e-7, 1e-6);
  EXPECT_TENSOR_NEAR(rv, rv64, 1e-7, 1e-6);
}

TEST(BFloat16Ops, DropoutKeepsWhatFloat32KeepsForTheSameSeed) {
  const Operand x = random_operand({40, 30}, 60);
  Generator a(61), b(61);
  const Tensor y16 = dropout(x.bf16, 0.4, true, &a),
               y32 = dropout(x.bf16.to(kFloat32), 0.4, true, &b);
  ASSERT_EQ(y16.dtype(), kBFloat16);
  EXPECT_EQ(eq(y16.to(kFloat32), 0.0).to_vector<uint8_t>(), eq(y32, 0.0).to_vector<uint8_t>());
  EXPECT_TENSOR_NEAR(y16, y32, 0.0, kBf16Rtol);
}

}  // namespace
}  // namespace loom
