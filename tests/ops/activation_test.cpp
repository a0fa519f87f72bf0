// relu, leaky_relu, sigmoid and tanh: values against loops and hand-computed points, sigmoid's
// stability far from 0, gradients at and around the kinks, and dtype errors. (Their float64
// gradient checks on every layout are in elementwise_grad_test.cpp.)
#include <cmath>
#include <functional>

#include "testing.h"

namespace loom {
namespace {

using testing::random_leaf;

struct ActivationRef {
  const char* name;
  std::function<Tensor(const Tensor&)> op;
  std::function<double(double)> ref;
};

TEST(Activation, ValuesMatchLoopsInBothDtypes) {
  const std::vector<ActivationRef> refs = {
      {"relu", [](auto& x) { return relu(x); }, [](double x) { return x > 0 ? x : 0.0; }},
      {"leaky_relu", [](auto& x) { return leaky_relu(x); },
       [](double x) { return x > 0 ? x : 0.01 * x; }},
      {"leaky_relu_0.3", [](auto& x) { return leaky_relu(x, 0.3); },
       [](double x) { return x > 0 ? x : 0.3 * x; }},
      {"sigmoid", [](auto& x) { return sigmoid(x); },
       [](double x) { return 1.0 / (1.0 + std::exp(-x)); }},
      {"tanh", [](auto& x) { return tanh(x); }, [](double x) { return std::tanh(x); }},
  };
  Generator gen(5);
  for (const ActivationRef& r : refs) {
    for (DType dtype : {kFloat32, kFloat64}) {
      SCOPED_TRACE(std::string(r.name) + " " + dtype_name(dtype));
      // Transposed, so the strided path runs too.
      const Tensor x = (randn({5, 4}, kFloat64, &gen) * 3.0).to(dtype).t();
      const std::vector<double> xv = x.contiguous().to(kFloat64).to_vector<double>();
      std::vector<double> expected(xv.size());
      for (size_t i = 0; i < xv.size(); ++i) expected[i] = r.ref(xv[i]);
      const Tensor out = r.op(x);
      EXPECT_EQ(out.dtype(), dtype);
      const double tol = dtype == kFloat32 ? 1e-6 : 1e-14;
      EXPECT_TENSOR_NEAR(out, from_vector<double>(expected, {4, 5}), tol, tol);
    }
  }
}

TEST(Activation, HandComputedPoints) {
  Tensor x = from_vector<double>({-2, 0, 3});
  EXPECT_EQ(relu(x).to_vector<double>(), (std::vector<double>{0, 0, 3}));
  EXPECT_EQ(leaky_relu(x, 0.5).to_vector<double>(), (std::vector<double>{-1, 0, 3}));
  EXPECT_DOUBLE_EQ(sigmoid(x).to_vector<double>()[1], 0.5);
  EXPECT_DOUBLE_EQ(tanh(x).to_vector<double>()[1], 0.0);
  EXPECT_NEAR(sigmoid(x).to_vector<double>()[2], 0.9525741268224334, 1e-15);
  EXPECT_NEAR(tanh(x).to_vector<double>()[0], -0.9640275800758169, 1e-15);
}

TEST(Activation, SigmoidIsStableFarFromZero) {
  for (DType dtype : {kFloat32, kFloat64}) {
    SCOPED_TRACE(dtype_name(dtype));
    const std::vector<double> y = sigmoid(from_vector<double>({-1000, -80, 80, 1000}).to(dtype))
                                      .to(kFloat64)
                                      .to_vector<double>();
    for (double v : y) EXPECT_FALSE(std::isnan(v));
    EXPECT_EQ(y[0], 0.0);
    EXPECT_GT(y[1], 0.0);  // e^-80 is a normal number in both dtypes: the stable form keeps it
    EXPECT_NEAR(y[1], std::exp(-80.0), std::exp(-80.0) * 1e-5);
    EXPECT_EQ(y[2], 1.0);
    EXPECT_EQ(y[3], 1.0);
  }
  // The gradient far out is 0, not NaN.
  Tensor x = from_vector<double>({-1000, 1000}).set_requires_grad(true);
  sigmoid(x).backward(ones({2}, kFloat64));
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{0, 0}));
}

TEST(Activation, GradientsAtAndAroundTheKink) {
  Tensor x = from_vector<double>({-1, 0, 2}).set_requires_grad(true);
  relu(x).backward(from_vector<double>({5, 5, 5}));
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{0, 0, 5}));  // 0 at 0, as PyTorch
  Tensor y = from_vector<double>({-1, 0, 2}).set_requires_grad(true);
  leaky_relu(y, 0.2).backward(from_vector<double>({5, 5, 5}));
  EXPECT_EQ(y.grad().to_vector<double>(), (std::vector<double>{1, 1, 5}));
  // sigmoid' = y (1 - y) and tanh' = 1 - y^2 at hand-picked points.
  Tensor z = from_vector<double>({0, 1}).set_requires_grad(true);
  sigmoid(z).backward(ones({2}, kFloat64));
  const double s1 = 1.0 / (1.0 + std::exp(-1.0));
  EXPECT_NEAR(z.grad().to_vector<double>()[0], 0.25, 1e-15);
  EXPECT_NEAR(z.grad().to_vector<double>()[1], s1 * (1 - s1), 1e-15);
  Tensor w = from_vector<double>({0, 1}).set_requires_grad(true);
  tanh(w).backward(ones({2}, kFloat64));
  EXPECT_NEAR(w.grad().to_vector<double>()[0], 1.0, 1e-15);
  EXPECT_NEAR(w.grad().to_vector<double>()[1], 1 - std::tanh(1.0) * std::tanh(1.0), 1e-15);
}

TEST(Activation, FloatGradientsKeepTheDtype) {
  Tensor x = random_leaf({3, 2}, 9);
  Tensor xf = x.detach().to(kFloat32).set_requires_grad(true);
  tanh(relu(xf)).backward(ones({3, 2}));
  EXPECT_EQ(xf.grad().dtype(), kFloat32);
  EXPECT_EQ(xf.grad().shape(), (Shape{3, 2}));
}

TEST(Activation, IntegerInputsAreRejected) {
  EXPECT_LOOM_ERROR(relu(zeros({2}, kInt64)),
                    "relu: expected float32, float64 or bfloat16 tensors, got int64");
  EXPECT_LOOM_ERROR(leaky_relu(zeros({2}, kUInt8)),
                    "leaky_relu: expected float32, float64 or bfloat16");
  EXPECT_LOOM_ERROR(sigmoid(zeros({2}, kInt32)), "sigmoid: expected float32, float64 or bfloat16");
  EXPECT_LOOM_ERROR(tanh(zeros({2}, kInt32)), "tanh: expected float32, float64 or bfloat16");
}

}  // namespace
}  // namespace loom
