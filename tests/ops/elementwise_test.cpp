// Values of the elementwise ops against loop-computed references on every operand layout
// (broadcast, scalar-shaped, transposed) in float32, float64 and bfloat16, hand-checked corner
// cases, comparisons and where() on every dtype, and the errors users see.
#include <cmath>
#include <functional>
#include <limits>

#include "elementwise_cases.h"

namespace loom {
namespace {

using namespace testing;

// t's values as if broadcast to `shape`, row-major (through the core's expand and copy).
std::vector<double> values_as(const Tensor& t, const Shape& shape) {
  return t.detach().expand(shape).contiguous().to(kFloat64).to_vector<double>();
}

// The reference is computed on the operands' own (rounded) values, so the tolerance covers the
// op alone. bfloat16, computed in float and rounded once: half an ulp, 2^-9 of the value, plus
// float's error; purely relative.
double atol(DType dtype) { return dtype == kFloat32 ? 1e-6 : (dtype == kFloat64 ? 1e-14 : 0.0); }
double rtol(DType dtype) { return dtype == kFloat32 ? 1e-6 : (dtype == kFloat64 ? 1e-14 : 0x1p-8); }

Tensor random_in(const Shape& shape, uint64_t seed, bool positive) {
  Generator gen(seed);
  return positive ? uniform(shape, 0.5, 2.0, kFloat64, &gen) : randn(shape, kFloat64, &gen);
}

struct BinaryRef {
  const char* name;
  std::function<Tensor(const Tensor&, const Tensor&)> op;
  std::function<double(double, double)> ref;
  bool positive;
};

TEST(ElementwiseValues, BinaryOpsMatchLoopsOnEveryLayoutAndDtype) {
  const std::vector<BinaryRef> refs = {
      {"add", [](auto& a, auto& b) { return add(a, b); }, [](double a, double b) { return a + b; },
       false},
      {"sub", [](auto& a, auto& b) { return sub(a, b); }, [](double a, double b) { return a - b; },
       false},
      {"mul", [](auto& a, auto& b) { return mul(a, b); }, [](double a, double b) { return a * b; },
       false},
      {"div", [](auto& a, auto& b) { return div(a, b); }, [](double a, double b) { return a / b; },
       true},
      {"maximum", [](auto& a, auto& b) { return maximum(a, b); },
       [](double a, double b) { return std::max(a, b); }, false},
      {"minimum", [](auto& a, auto& b) { return minimum(a, b); },
       [](double a, double b) { return std::min(a, b); }, false},
      {"pow", [](auto& a, auto& b) { return pow(a, b); },
       [](double a, double b) { return std::pow(a, b); }, true},
  };
  uint64_t seed = 1;
  for (const BinaryRef& r : refs) {
    for (const Layout& layout : binary_layouts()) {
      for (DType dtype : {kFloat32, kFloat64, kBFloat16}) {
        SCOPED_TRACE(std::string(r.name) + " on " + layout.name + " " + dtype_name(dtype));
        Tensor a = random_in(layout.shapes[0], ++seed, r.positive).to(dtype);
        Tensor b = random_in(layout.shapes[1], ++seed, r.positive).to(dtype);
        if (layout.transpose_first) a = a.t();
        const Shape shape = broadcast_shapes(a.shape(), b.shape(), "test");
        const std::vector<double> av = values_as(a, shape), bv = values_as(b, shape);
        std::vector<double> expected(av.size());
        for (size_t i = 0; i < av.size(); ++i) expected[i] = r.ref(av[i], bv[i]);
        const Tensor out = r.op(a, b);
        EXPECT_EQ(out.dtype(), dtype);
        EXPECT_TENSOR_NEAR(out, from_vector<double>(expected, shape), atol(dtype), rtol(dtype));
      }
    }
  }
}

struct UnaryRef {
  const char* name;
  std::function<Tensor(const Tensor&)> op;
  std::function<double(double)> ref;
  bool positive;
};

TEST(ElementwiseValues, UnaryOpsMatchLoopsOnEveryLayoutAndDtype) {
  const std::vector<UnaryRef> refs = {
      {"neg", [](auto& x) { return neg(x); }, [](double x) { return -x; }, false},
      {"exp", [](auto& x) { return exp(x); }, [](double x) { return std::exp(x); }, false},
      {"log", [](auto& x) { return log(x); }, [](double x) { return std::log(x); }, true},
      {"sqrt", [](auto& x) { return sqrt(x); }, [](double x) { return std::sqrt(x); }, true},
      {"abs", [](auto& x) { return abs(x); }, [](double x) { return std::fabs(x); }, false},
      {"clamp", [](auto& x) { return clamp(x, -0.5, 0.25); },
       [](double x) { return std::min(0.25, std::max(-0.5, x)); }, false},
      {"pow", [](auto& x) { return pow(x, 2.5); }, [](double x) { return std::pow(x, 2.5); }, true},
      {"add", [](auto& x) { return x + 1.25; }, [](double x) { return x + 1.25; }, false},
      {"rsub", [](auto& x) { return 1.25 - x; }, [](double x) { return 1.25 - x; }, false},
      {"sub", [](auto& x) { return x - 1.25; }, [](double x) { return x - 1.25; }, false},
      {"mul", [](auto& x) { return 3.0 * x; }, [](double x) { return 3.0 * x; }, false},
      {"div", [](auto& x) { return x / 4.0; }, [](double x) { return x / 4.0; }, false},
      {"rdiv", [](auto& x) { return 2.0 / x; }, [](double x) { return 2.0 / x; }, true},
  };
  uint64_t seed = 1000;
  for (const UnaryRef& r : refs) {
    for (const Layout& layout : unary_layouts()) {
      for (DType dtype : {kFloat32, kFloat64, kBFloat16}) {
        SCOPED_TRACE(std::string(r.name) + " on " + layout.name + " " + dtype_name(dtype));
        Tensor x = random_in(layout.shapes[0], ++seed, r.positive).to(dtype);
        if (layout.transpose_first) x = x.t();
        const std::vector<double> xv = values_as(x, x.shape());
        std::vector<double> expected(xv.size());
        for (size_t i = 0; i < xv.size(); ++i) expected[i] = r.ref(xv[i]);
        const Tensor out = r.op(x);
        EXPECT_EQ(out.dtype(), dtype);
        EXPECT_TENSOR_NEAR(out, from_vector<double>(expected, x.shape()), atol(dtype), rtol(dtype));
      }
    }
  }
}

TEST(ElementwiseValues, HandComputedBroadcasts) {
  Tensor col = from_vector<float>({1, 2, 3}, {3, 1});
  Tensor row = from_vector<float>({10, 20, 30, 40}, {1, 4});
  EXPECT_EQ((col + row).to_vector<float>(),
            (std::vector<float>{11, 21, 31, 41, 12, 22, 32, 42, 13, 23, 33, 43}));
  Tensor cube = arange(24.0, kFloat64).reshape({2, 3, 4});
  Tensor last = from_vector<double>({1, -1, 2, 0.5});
  const Tensor prod = cube * last;
  EXPECT_EQ(prod.shape(), (Shape{2, 3, 4}));
  const std::vector<double> p = prod.to_vector<double>();
  const double factors[] = {1, -1, 2, 0.5};
  for (int i = 0; i < 24; ++i) EXPECT_EQ(p[i], i * factors[i % 4]);
  Tensor s = scalar_tensor(2.0, kFloat64);
  EXPECT_EQ((s - last).to_vector<double>(), (std::vector<double>{1, 3, 0, 1.5}));
  EXPECT_EQ((s * s).dim(), 0);
  EXPECT_EQ((s * s).item<double>(), 4.0);
  EXPECT_EQ(add(zeros({0, 3}), ones({3})).shape(), (Shape{0, 3}));
}

TEST(ElementwiseValues, NanAndInfinityFollowIeeeAndPyTorch) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor a = from_vector<double>({nan, 1, -0.0});
  Tensor b = from_vector<double>({1, nan, 0.0});
  for (double v : {maximum(a, b).to_vector<double>()[0], maximum(a, b).to_vector<double>()[1],
                   minimum(a, b).to_vector<double>()[0], minimum(a, b).to_vector<double>()[1]}) {
    EXPECT_TRUE(std::isnan(v));
  }
  EXPECT_TRUE(std::isnan(clamp(a, 0, 1).to_vector<double>()[0]));
  EXPECT_EQ(div(from_vector<double>({1, -1}), zeros({2}, kFloat64)).to_vector<double>(),
            (std::vector<double>{INFINITY, -INFINITY}));
  EXPECT_TRUE(std::isnan(log(from_vector<double>({-1})).item<double>()));
  EXPECT_FALSE(std::signbit(abs(from_vector<double>({-0.0})).item<double>()));
}

TEST(ElementwiseValues, ComparisonsOnEveryDtype) {
  Tensor a = from_vector<int64_t>({1, 2, 3}, {3, 1});
  Tensor b = from_vector<int64_t>({2, 3}, {1, 2});
  // a vs b broadcast to [3, 2]: pairs (1,2) (1,3) (2,2) (2,3) (3,2) (3,3).
  EXPECT_EQ(eq(a, b).to_vector<uint8_t>(), (std::vector<uint8_t>{0, 0, 1, 0, 0, 1}));
  EXPECT_EQ(ne(a, b).to_vector<uint8_t>(), (std::vector<uint8_t>{1, 1, 0, 1, 1, 0}));
  EXPECT_EQ(lt(a, b).to_vector<uint8_t>(), (std::vector<uint8_t>{1, 1, 0, 1, 0, 0}));
  EXPECT_EQ(le(a, b).to_vector<uint8_t>(), (std::vector<uint8_t>{1, 1, 1, 1, 0, 1}));
  EXPECT_EQ(gt(a, b).to_vector<uint8_t>(), (std::vector<uint8_t>{0, 0, 0, 0, 1, 0}));
  EXPECT_EQ(ge(a, b).to_vector<uint8_t>(), (std::vector<uint8_t>{0, 0, 1, 0, 1, 1}));
  EXPECT_EQ(gt(a, b).dtype(), kUInt8);
  for (DType dtype : {kFloat32, kFloat64, kBFloat16, kInt64, kInt32, kUInt8}) {
    SCOPED_TRACE(dtype_name(dtype));
    Tensor x = from_vector<int>({0, 1, 2, 3}).to(dtype);
    EXPECT_EQ(gt(x, 1.0).to_vector<uint8_t>(), (std::vector<uint8_t>{0, 0, 1, 1}));
    EXPECT_EQ(ge(x, 1.0).to_vector<uint8_t>(), (std::vector<uint8_t>{0, 1, 1, 1}));
    EXPECT_EQ(lt(x, 1.0).to_vector<uint8_t>(), (std::vector<uint8_t>{1, 0, 0, 0}));
    EXPECT_EQ(le(x, 1.0).to_vector<uint8_t>(), (std::vector<uint8_t>{1, 1, 0, 0}));
    EXPECT_EQ(eq(x, 2.0).to_vector<uint8_t>(), (std::vector<uint8_t>{0, 0, 1, 0}));
    EXPECT_EQ(eq(x, x.narrow(0, 0, 1)).to_vector<uint8_t>(), (std::vector<uint8_t>{1, 0, 0, 0}));
  }
  // An integer tensor compares with a fractional number exactly; a float32 tensor in float32.
  EXPECT_EQ(lt(from_vector<int64_t>({2, 3}), 2.5).to_vector<uint8_t>(),
            (std::vector<uint8_t>{1, 0}));
  EXPECT_EQ(gt(from_vector<float>({0.1f}), 0.1).item<uint8_t>(), 0);
  // Transposed operands compare element by element.
  Tensor m = arange(6.0, kFloat64).reshape({2, 3});
  EXPECT_EQ(gt(m.t(), 2.0).to_vector<uint8_t>(), (std::vector<uint8_t>{0, 1, 0, 1, 0, 1}));
}

TEST(ElementwiseValues, WhereBroadcastsAllThreeOnEveryDtype) {
  Tensor cond = from_vector<uint8_t>({1, 0, 1}, {3, 1});
  for (DType dtype : {kFloat32, kFloat64, kBFloat16, kInt64, kInt32, kUInt8}) {
    SCOPED_TRACE(dtype_name(dtype));
    Tensor a = from_vector<int>({1, 2}, {1, 2}).to(dtype);
    Tensor b = full({}, 9, dtype);
    const Tensor out = where(cond, a, b);
    EXPECT_EQ(out.shape(), (Shape{3, 2}));
    EXPECT_EQ(out.dtype(), dtype);
    EXPECT_EQ(out.to(kInt64).to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 9, 9, 1, 2}));
  }
  // Any non-zero byte selects a; a transposed condition is read through its strides.
  Tensor c = from_vector<uint8_t>({0, 7, 1, 0}, {2, 2}).t();
  EXPECT_EQ(where(c, ones({2, 2}), zeros({2, 2})).to_vector<float>(),
            (std::vector<float>{0, 1, 1, 0}));
}

TEST(ElementwiseValues, ManyElementsUseEveryThread) {
  Tensor a = randn({300, 257}, kFloat64);
  Tensor b = randn({257}, kFloat64);
  const Tensor out = a * b;
  const std::vector<double> av = a.to_vector<double>(), bv = b.to_vector<double>();
  const std::vector<double> ov = out.to_vector<double>();
  for (size_t i = 0; i < av.size(); ++i) ASSERT_EQ(ov[i], av[i] * bv[i % 257]) << i;
}

TEST(ElementwiseErrors, MessagesNameTheOpAndTheValues) {
  EXPECT_LOOM_ERROR(add(zeros({2, 3}), zeros({4})),
                    "add: shapes [2, 3] and [4] cannot be broadcast");
  EXPECT_LOOM_ERROR(maximum(zeros({2}), zeros({3})), "maximum: shapes [2] and [3]");
  EXPECT_LOOM_ERROR(gt(zeros({2}), zeros({3})), "gt: shapes [2] and [3]");
  EXPECT_LOOM_ERROR(mul(zeros({2}), zeros({2}, kFloat64)),
                    "mul: dtypes differ (float32 [2] and float64 [2])");
  EXPECT_LOOM_ERROR(eq(zeros({2}), zeros({2}, kInt64)),
                    "eq: dtypes differ (float32 [2] and int64 [2])");
  EXPECT_LOOM_ERROR(exp(zeros({2}, kInt64)),
                    "exp: expected float32, float64 or bfloat16 tensors, got int64");
  EXPECT_LOOM_ERROR(add(zeros({2}, kInt32), zeros({2}, kInt32)),
                    "add: expected float32, float64 or bfloat16");
  EXPECT_LOOM_ERROR(add(zeros({2}, kUInt8), 1.0), "add: expected float32, float64 or bfloat16");
  EXPECT_LOOM_ERROR(clamp(zeros({2}), 1.0, -1.0), "clamp: min (1) is greater than max (-1)");
  EXPECT_LOOM_ERROR(where(zeros({2}), zeros({2}), zeros({2})),
                    "where: the condition must be uint8, got float32");
  EXPECT_LOOM_ERROR(where(zeros({2}, kUInt8), zeros({2}), zeros({2}, kFloat64)),
                    "where: dtypes differ (float32 [2] and float64 [2])");
  EXPECT_LOOM_ERROR(where(zeros({3}, kUInt8), zeros({2}), zeros({2})), "where: shapes [3] and [2]");
  EXPECT_LOOM_ERROR(add(Tensor(), zeros({2})), "undefined");
}

}  // namespace
}  // namespace loom
