// Tensor's libtorch-named method forms (x.abs(), x.sum(1, true), x.softmax(-1), ...): each gives
// the values and, through autograd, the gradients of the free function it forwards to, on random
// inputs; x.sizes() prints as libtorch prints it; cuda_is_available() is torch::cuda's answer.
#include <functional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "testing.h"

namespace loom {
namespace method_forms_test {

// Same shape, dtype and values, bit for bit: a method runs the very kernel of its free function.
void expect_identical(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  const Tensor a = got.to(kFloat64), b = want.to(kFloat64);
  EXPECT_EQ(a.to_vector<double>(), b.to_vector<double>()) << what;
}

struct UnaryCase {
  std::string name;
  std::function<Tensor(const Tensor&)> method, free;
  bool positive;  // the op needs positive inputs (log, sqrt, fractional pow)
};

std::vector<UnaryCase> unary_cases() {
  return {
      {"abs", [](const Tensor& x) { return x.abs(); }, [](const Tensor& x) { return abs(x); },
       false},
      {"neg", [](const Tensor& x) { return x.neg(); }, [](const Tensor& x) { return neg(x); },
       false},
      {"exp", [](const Tensor& x) { return x.exp(); }, [](const Tensor& x) { return exp(x); },
       false},
      {"log", [](const Tensor& x) { return x.log(); }, [](const Tensor& x) { return log(x); },
       true},
      {"sqrt", [](const Tensor& x) { return x.sqrt(); }, [](const Tensor& x) { return sqrt(x); },
       true},
      {"relu", [](const Tensor& x) { return x.relu(); }, [](const Tensor& x) { return relu(x); },
       false},
      {"sigmoid", [](const Tensor& x) { return x.sigmoid(); },
       [](const Tensor& x) { return sigmoid(x); }, false},
      {"tanh", [](const Tensor& x) { return x.tanh(); }, [](const Tensor& x) { return tanh(x); },
       false},
      {"pow(2.0)", [](const Tensor& x) { return x.pow(2.0); },
       [](const Tensor& x) { return pow(x, 2.0); }, false},
      {"pow(1.5)", [](const Tensor& x) { return x.pow(1.5); },
       [](const Tensor& x) { return pow(x, 1.5); }, true},
      {"clamp(-0.5, 0.7)", [](const Tensor& x) { return x.clamp(-0.5, 0.7); },
       [](const Tensor& x) { return clamp(x, -0.5, 0.7); }, false},
      {"add(2.5)", [](const Tensor& x) { return x.add(2.5); },
       [](const Tensor& x) { return add(x, 2.5); }, false},
      {"sub(2.5)", [](const Tensor& x) { return x.sub(2.5); },
       [](const Tensor& x) { return sub(x, 2.5); }, false},
      {"mul(-3.0)", [](const Tensor& x) { return x.mul(-3.0); },
       [](const Tensor& x) { return mul(x, -3.0); }, false},
      {"div(4.0)", [](const Tensor& x) { return x.div(4.0); },
       [](const Tensor& x) { return div(x, 4.0); }, false},
      {"sum()", [](const Tensor& x) { return x.sum(); }, [](const Tensor& x) { return sum(x); },
       false},
      {"sum(1)", [](const Tensor& x) { return x.sum(1); },
       [](const Tensor& x) { return sum(x, {1}); }, false},
      {"sum(-1, true)", [](const Tensor& x) { return x.sum(-1, true); },
       [](const Tensor& x) { return sum(x, {-1}, true); }, false},
      {"sum({0, 2})",
       [](const Tensor& x) {
         return x.sum({0, 2});
       },
       [](const Tensor& x) {
         return sum(x, {0, 2});
       },
       false},
      {"mean()", [](const Tensor& x) { return x.mean(); }, [](const Tensor& x) { return mean(x); },
       false},
      {"mean(0, true)", [](const Tensor& x) { return x.mean(0, true); },
       [](const Tensor& x) { return mean(x, {0}, true); }, false},
      {"mean({1, 2}, true)",
       [](const Tensor& x) {
         return x.mean({1, 2}, true);
       },
       [](const Tensor& x) {
         return mean(x, {1, 2}, true);
       },
       false},
      {"max()", [](const Tensor& x) { return x.max(); }, [](const Tensor& x) { return max(x); },
       false},
      {"min()", [](const Tensor& x) { return x.min(); }, [](const Tensor& x) { return min(x); },
       false},
      {"amax(1)", [](const Tensor& x) { return x.amax(1); },
       [](const Tensor& x) { return max(x, 1); }, false},
      {"amin(-1, true)", [](const Tensor& x) { return x.amin(-1, true); },
       [](const Tensor& x) { return min(x, -1, true); }, false},
      {"softmax(-1)", [](const Tensor& x) { return x.softmax(-1); },
       [](const Tensor& x) { return softmax(x, -1); }, false},
      {"log_softmax(1)", [](const Tensor& x) { return x.log_softmax(1); },
       [](const Tensor& x) { return log_softmax(x, 1); }, false},
  };
}

// A random [3, 4, 5] leaf; positive ones lie in [0.5, 2.5].
Tensor random_leaf(bool positive) {
  Tensor x = positive ? uniform({3, 4, 5}, 0.5, 2.5) : randn({3, 4, 5});
  return x.requires_grad_();
}

// The gradient of <f(x), w> for a fixed random w, so that every output element weighs
// differently and a wrong backward cannot hide behind a gradient of ones.
Tensor gradient_of(const std::function<Tensor(const Tensor&)>& f, const Tensor& x_value,
                   const Tensor& weight) {
  Tensor x = x_value.detach().clone().requires_grad_();
  Tensor y = f(x);
  sum(mul(y, weight.reshape(y.shape()))).backward();
  return x.grad();
}

TEST(MethodForms, UnaryAndReductionMethodsMatchTheFreeFunctions) {
  manual_seed(37);
  for (const UnaryCase& c : unary_cases()) {
    const Tensor x = random_leaf(c.positive);
    const Tensor got = c.method(x), want = c.free(x);
    expect_identical(got, want, c.name);
    EXPECT_TRUE(got.requires_grad()) << c.name << " must record its backward";
    const Tensor weight = randn({want.numel()});
    const Tensor g_method = gradient_of(c.method, x, weight);
    const Tensor g_free = gradient_of(c.free, x, weight);
    ASSERT_TRUE(g_method.defined()) << c.name;
    expect_identical(g_method, g_free, c.name + " gradient");
  }
}

struct BinaryCase {
  std::string name;
  std::function<Tensor(const Tensor&, const Tensor&)> method, free;
};

TEST(MethodForms, BinaryMethodsMatchTheFreeFunctionsWithGradientsToBothSides) {
  manual_seed(38);
  const std::vector<BinaryCase> cases = {
      {"add", [](const Tensor& a, const Tensor& b) { return a.add(b); },
       [](const Tensor& a, const Tensor& b) { return add(a, b); }},
      {"sub", [](const Tensor& a, const Tensor& b) { return a.sub(b); },
       [](const Tensor& a, const Tensor& b) { return sub(a, b); }},
      {"mul", [](const Tensor& a, const Tensor& b) { return a.mul(b); },
       [](const Tensor& a, const Tensor& b) { return mul(a, b); }},
      {"div", [](const Tensor& a, const Tensor& b) { return a.div(b); },
       [](const Tensor& a, const Tensor& b) { return div(a, b); }},
      {"pow", [](const Tensor& a, const Tensor& b) { return a.pow(b); },
       [](const Tensor& a, const Tensor& b) { return pow(a, b); }},
      {"maximum", [](const Tensor& a, const Tensor& b) { return a.maximum(b); },
       [](const Tensor& a, const Tensor& b) { return maximum(a, b); }},
      {"minimum", [](const Tensor& a, const Tensor& b) { return a.minimum(b); },
       [](const Tensor& a, const Tensor& b) { return minimum(a, b); }},
  };
  for (const BinaryCase& c : cases) {
    // [4, 5] against [5]: broadcasting goes through the method as through the free function.
    const Tensor a = uniform({4, 5}, 0.5, 2.5), b = uniform({5}, 0.5, 2.5);
    expect_identical(c.method(a, b), c.free(a, b), c.name);
    const Tensor weight = randn({4, 5});
    std::vector<Tensor> grads[2];
    for (int form = 0; form < 2; ++form) {
      Tensor la = a.clone().requires_grad_(), lb = b.clone().requires_grad_();
      const Tensor y = form == 0 ? c.method(la, lb) : c.free(la, lb);
      sum(mul(y, weight)).backward();
      grads[form] = {la.grad(), lb.grad()};
    }
    expect_identical(grads[0][0], grads[1][0], c.name + " gradient of self");
    expect_identical(grads[0][1], grads[1][1], c.name + " gradient of other");
  }
}

TEST(MethodForms, MatmulAndBmmMatchTheFreeFunctionsWithGradients) {
  manual_seed(39);
  const Tensor a = randn({3, 4}), b = randn({4, 2});
  expect_identical(a.matmul(b), matmul(a, b), "matmul");
  const Tensor ba = randn({2, 3, 4}), bb = randn({2, 4, 5});
  expect_identical(ba.bmm(bb), bmm(ba, bb), "bmm");
  const Tensor weight = randn({3, 2});
  std::vector<Tensor> grads;
  for (int form = 0; form < 2; ++form) {
    Tensor la = a.clone().requires_grad_(), lb = b.clone().requires_grad_();
    const Tensor y = form == 0 ? la.matmul(lb) : matmul(la, lb);
    sum(mul(y, weight)).backward();
    grads.push_back(la.grad());
    grads.push_back(lb.grad());
  }
  expect_identical(grads[0], grads[2], "matmul gradient of self");
  expect_identical(grads[1], grads[3], "matmul gradient of other");
}

TEST(MethodForms, ArgmaxAndComparisonsMatchTheFreeFunctions) {
  manual_seed(40);
  const Tensor x = randn({4, 6}), y = randn({4, 6});
  expect_identical(x.argmax(), argmax(x), "argmax()");
  expect_identical(x.argmax(1), argmax(x, 1), "argmax(1)");
  expect_identical(x.argmax(0, true), argmax(x, 0, true), "argmax(0, true)");
  EXPECT_EQ(x.argmax(1).dtype(), kInt64);
  // libtorch's max(dim): values and indices together.
  const auto [values, indices] = x.max(1, true);
  expect_identical(values, max(x, 1, true), "std::get<0>(max(1, true))");
  expect_identical(indices, argmax(x, 1, true), "std::get<1>(max(1, true))");
  Tensor leaf = x.clone().requires_grad_();
  std::get<0>(leaf.max(0)).sum().backward();  // a gradient of one at each column's maximum
  expect_identical(leaf.grad().sum(0), ones({6}), "max(0) gradient");
  expect_identical(leaf.grad().argmax(0), argmax(x, 0), "max(0) gradient lies at the argmax");
  // y's own elements are equal to themselves: eq and le must find them, not only unequal ones.
  const Tensor z = where(gt(y, 0.0), x, y);
  expect_identical(x.eq(z), eq(x, z), "eq");
  expect_identical(x.ne(z), ne(x, z), "ne");
  expect_identical(x.lt(y), lt(x, y), "lt");
  expect_identical(x.le(z), le(x, z), "le");
  expect_identical(x.gt(y), gt(x, y), "gt");
  expect_identical(x.ge(z), ge(x, z), "ge");
  expect_identical(x.eq(0.0), eq(x, 0.0), "eq(double)");
  expect_identical(x.lt(0.25), lt(x, 0.25), "lt(double)");
  expect_identical(x.le(0.25), le(x, 0.25), "le(double)");
  expect_identical(x.gt(0.25), gt(x, 0.25), "gt(double)");
  expect_identical(x.ge(0.25), ge(x, 0.25), "ge(double)");
  EXPECT_EQ(x.gt(0.25).dtype(), kUInt8);
}

TEST(MethodForms, ChainsReadAsInLibtorch) {
  manual_seed(41);
  Tensor x = randn({2, 3, 4}).requires_grad_();
  // x.view(...).transpose(...).relu().sum(1).mean(): views, math and reductions in one chain.
  const Tensor chained = x.view({6, 4}).t().relu().sum(1).mean();
  const Tensor nested = mean(sum(relu(x.view({6, 4}).t()), {1}));
  expect_identical(chained, nested, "chain");
  chained.backward();
  const Tensor expected = gt(x.detach(), 0.0).to(kFloat32).div(4.0);  // d mean(sum(relu)) / dx
  expect_identical(x.grad(), expected, "chain gradient");
  // The view forms libtorch users reach for, already members of Tensor.
  EXPECT_EQ(x.reshape({4, -1}).shape(), (Shape{4, 6}));
  EXPECT_EQ(x.flatten(1).shape(), (Shape{2, 12}));
  EXPECT_EQ(x.permute({2, 0, 1}).shape(), (Shape{4, 2, 3}));
  EXPECT_EQ(x.transpose(0, 2).shape(), (Shape{4, 3, 2}));
  EXPECT_EQ(x.unsqueeze(0).squeeze(0).shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(x.to(kFloat64).dtype(), kFloat64);
  EXPECT_EQ(x.to(kCPU).device(), kCPU);
}

TEST(MethodForms, AMistakeIsReportedAsByTheFreeFunction) {
  const Tensor a = zeros({2, 3}), b = zeros({2, 3});
  EXPECT_THROW(a.matmul(b), Error);
  EXPECT_THROW(a.sum(2), Error);
  EXPECT_THROW(a.softmax(5), Error);
  EXPECT_THROW(a.add(zeros({4})), Error);
}

TEST(Sizes, PrintsAsLibtorchAndIsAShape) {
  const Tensor x = zeros({2, 3});
  std::ostringstream out;
  out << x.sizes();
  EXPECT_EQ(out.str(), "[2, 3]");
  std::ostringstream scalar;
  scalar << scalar_tensor(1.0).sizes() << " " << zeros({0, 5, 1}).sizes();
  EXPECT_EQ(scalar.str(), "[] [0, 5, 1]");
  // Everything a Shape does: compare, index, pass where a Shape is taken.
  EXPECT_EQ(x.sizes(), x.shape());
  EXPECT_EQ(x.sizes()[1], 3);
  EXPECT_EQ(x.sizes().size(), 2u);
  EXPECT_EQ(zeros(x.sizes()).shape(), (Shape{2, 3}));
  const Shape copy = x.sizes();
  EXPECT_EQ(copy, (Shape{2, 3}));
}

// The README's snippets choose their device by it: true only when a GPU can be used.
TEST(CudaIsAvailable, FalseWithoutABuildOrADeviceForCuda) {
  EXPECT_EQ(cuda_is_available(), cuda_device_count() > 0);
  if (!built_with_cuda()) EXPECT_FALSE(cuda_is_available());
  if (cuda_is_available()) EXPECT_EQ(zeros({2}, kCUDA).device(), kCUDA);
}

}  // namespace method_forms_test
}  // namespace loom
