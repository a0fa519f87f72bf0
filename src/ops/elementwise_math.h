// Internal: the per-element maths of every elementwise op, and of the backward helpers that need a
// kernel of their own: one functor each, compiled into both the CPU loops and the CUDA kernels, and
// the list of them (LOOM_ELEMENTWISE_OPS, at the end) from which the backends' op enum and dispatch
// are generated. Each functor states its types as `signature` = Sig<Out, In...> so the loop drivers
// can bind the operands without knowing the op.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "loom/tensor/strided_index.h"  // LOOM_HOST_DEVICE

namespace loom::detail {

template <typename Out, typename... In>
struct Sig {};

// The numbers an op takes besides its tensors (slope, bounds, exponent, scalar operand).
struct OpParams {
  double a = 0.0;
  double b = 0.0;
};

// Functors with parameters are built from OpParams; the others are default-constructed.
template <typename F>
F make_functor(const OpParams& p) {
  if constexpr (std::is_constructible_v<F, const OpParams&>) {
    return F(p);
  } else {
    return F{};
  }
}

// ---- unary ---------------------------------------------------------------------------------

template <typename T>
struct Neg {
  using signature = Sig<T, T>;
  LOOM_HOST_DEVICE T operator()(T x) const { return -x; }
};

template <typename T>
struct Exp {
  using signature = Sig<T, T>;
  LOOM_HOST_DEVICE T operator()(T x) const { return std::exp(x); }
};

template <typename T>
struct Log {
  using signature = Sig<T, T>;
  LOOM_HOST_DEVICE T operator()(T x) const { return std::log(x); }
};

template <typename T>
struct Sqrt {
  using signature = Sig<T, T>;
  LOOM_HOST_DEVICE T operator()(T x) const { return std::sqrt(x); }
};

template <typename T>
struct Abs {
  using signature = Sig<T, T>;
  LOOM_HOST_DEVICE T operator()(T x) const { return std::fabs(x); }
};

// `x < 0 ? 0 : x` rather than `x > 0 ? x : 0` so that NaN propagates, as in PyTorch.
template <typename T>
struct Relu {
  using signature = Sig<T, T>;
  LOOM_HOST_DEVICE T operator()(T x) const { return x < T(0) ? T(0) : x; }
};

template <typename T>
struct LeakyRelu {
  using signature = Sig<T, T>;
  T slope;
  explicit LeakyRelu(const OpParams& p) : slope(static_cast<T>(p.a)) {}
  LOOM_HOST_DEVICE T operator()(T x) const { return x > T(0) ? x : x * slope; }
};

// exp is only ever taken of a non-positive number, so neither branch overflows.
template <typename T>
struct Sigmoid {
  using signature = Sig<T, T>;
  LOOM_HOST_DEVICE T operator()(T x) const {
    if (x >= T(0)) return T(1) / (T(1) + std::exp(-x));
    const T e = std::exp(x);
    return e / (T(1) + e);
  }
};

template <typename T>
struct Tanh {
  using signature = Sig<T, T>;
  LOOM_HOST_DEVICE T operator()(T x) const { return std::tanh(x); }
};

template <typename T>
struct Clamp {
  using signature = Sig<T, T>;
  T lo, hi;
  explicit Clamp(const OpParams& p) : lo(static_cast<T>(p.a)), hi(static_cast<T>(p.b)) {}
  LOOM_HOST_DEVICE T operator()(T x) const { return x < lo ? lo : (x > hi ? hi : x); }
};

template <typename T>
struct PowScalar {
  using signature = Sig<T, T>;
  T exponent;
  explicit PowScalar(const OpParams& p) : exponent(static_cast<T>(p.a)) {}
  LOOM_HOST_DEVICE T operator()(T x) const { return std::pow(x, exponent); }
};

// The scalar is converted to the tensor's dtype first, as PyTorch does for floating tensors.
template <typename T>
struct AddScalar {
  using signature = Sig<T, T>;
  T s;
  explicit AddScalar(const OpParams& p) : s(static_cast<T>(p.a)) {}
  LOOM_HOST_DEVICE T operator()(T x) const { return x + s; }
};

template <typename T>
struct MulScalar {
  using signature = Sig<T, T>;
  T s;
  explicit MulScalar(const OpParams& p) : s(static_cast<T>(p.a)) {}
  LOOM_HOST_DEVICE T operator()(T x) const { return x * s; }
};

template <typename T>
struct DivScalar {
  using signature = Sig<T, T>;
  T s;
  explicit DivScalar(const OpParams& p) : s(static_cast<T>(p.a)) {}
  LOOM_HOST_DEVICE T operator()(T x) const { return x / s; }
};

// s / x
template <typename T>
struct RDivScalar {
  using signature = Sig<T, T>;
  T s;
  explicit RDivScalar(const OpParams& p) : s(static_cast<T>(p.a)) {}
  LOOM_HOST_DEVICE T operator()(T x) const { return s / x; }
};

// ---- comparisons (uint8 0/1) -----------------------------------------------------------------

enum class Cmp { Eq, Ne, Lt, Le, Gt, Ge };

template <Cmp K, typename C>
LOOM_HOST_DEVICE uint8_t compare(C a, C b) {
  if constexpr (K == Cmp::Eq)
    return a == b;
  else if constexpr (K == Cmp::Ne)
    return a != b;
  else if constexpr (K == Cmp::Lt)
    return a < b;
  else if constexpr (K == Cmp::Le)
    return a <= b;
  else if constexpr (K == Cmp::Gt)
    return a > b;
  else
    return a >= b;
}

template <typename T, Cmp K>
struct Compare {
  using signature = Sig<uint8_t, T, T>;
  LOOM_HOST_DEVICE uint8_t operator()(T a, T b) const { return compare<K>(a, b); }
};

// A floating tensor compares in its own dtype (0.1f > 0.1 is false, as in PyTorch); an integer
// tensor compares in double, so 2 < 2.5 holds.
template <typename T, Cmp K>
struct CompareScalar {
  using C = std::conditional_t<std::is_floating_point_v<T>, T, double>;
  using signature = Sig<uint8_t, T>;
  C s;
  explicit CompareScalar(const OpParams& p) : s(static_cast<C>(p.a)) {}
  LOOM_HOST_DEVICE uint8_t operator()(T x) const { return compare<K>(static_cast<C>(x), s); }
};

template <typename T>
using Eq = Compare<T, Cmp::Eq>;
template <typename T>
using Ne = Compare<T, Cmp::Ne>;
template <typename T>
using Lt = Compare<T, Cmp::Lt>;
template <typename T>
using Le = Compare<T, Cmp::Le>;
template <typename T>
using Gt = Compare<T, Cmp::Gt>;
template <typename T>
using Ge = Compare<T, Cmp::Ge>;
template <typename T>
using EqScalar = CompareScalar<T, Cmp::Eq>;
template <typename T>
using LtScalar = CompareScalar<T, Cmp::Lt>;
template <typename T>
using LeScalar = CompareScalar<T, Cmp::Le>;
template <typename T>
using GtScalar = CompareScalar<T, Cmp::Gt>;
template <typename T>
using GeScalar = CompareScalar<T, Cmp::Ge>;

// ---- binary ---------------------------------------------------------------------------------

template <typename T>
struct Add {
  using signature = Sig<T, T, T>;
  LOOM_HOST_DEVICE T operator()(T a, T b) const { return a + b; }
};

// relu(a + b), relu's rule (NaN passes): a residual block's sum and activation in one pass.
template <typename T>
struct AddRelu {
  using signature = Sig<T, T, T>;
  LOOM_HOST_DEVICE T operator()(T a, T b) const {
    const T s = a + b;
    return s < T(0) ? T(0) : s;
  }
};

template <typename T>
struct Sub {
  using signature = Sig<T, T, T>;
  LOOM_HOST_DEVICE T operator()(T a, T b) const { return a - b; }
};

template <typename T>
struct Mul {
  using signature = Sig<T, T, T>;
  LOOM_HOST_DEVICE T operator()(T a, T b) const { return a * b; }
};

template <typename T>
struct Div {
  using signature = Sig<T, T, T>;
  LOOM_HOST_DEVICE T operator()(T a, T b) const { return a / b; }
};

// NaN in either operand gives NaN, as in PyTorch (`a != a` is the NaN test).
template <typename T>
struct Maximum {
  using signature = Sig<T, T, T>;
  LOOM_HOST_DEVICE T operator()(T a, T b) const { return (a != a || a > b) ? a : b; }
};

template <typename T>
struct Minimum {
  using signature = Sig<T, T, T>;
  LOOM_HOST_DEVICE T operator()(T a, T b) const { return (a != a || a < b) ? a : b; }
};

template <typename T>
struct Pow {
  using signature = Sig<T, T, T>;
  LOOM_HOST_DEVICE T operator()(T a, T b) const { return std::pow(a, b); }
};

// Binary cross-entropy of a logit x against a target y, in the stable form
// max(x, 0) - x y + log(1 + exp(-|x|)): one kernel instead of the seven of its composition.
template <typename T>
struct BceWithLogits {
  using signature = Sig<T, T, T>;
  LOOM_HOST_DEVICE T operator()(T x, T y) const {
    const T ax = x < T(0) ? -x : x;
    return (x > T(0) ? x : T(0)) - x * y + std::log1p(std::exp(-ax));
  }
};

template <typename T>
struct Where {
  using signature = Sig<T, uint8_t, T, T>;
  LOOM_HOST_DEVICE T operator()(uint8_t cond, T a, T b) const { return cond ? a : b; }
};

// ---- backward helpers: (grad, saved input or output) -> grad of the input -------------------

// Given relu's output y: the gradient passes where y > 0.
template <typename T>
struct ReluBackward {
  using signature = Sig<T, T, T>;
  LOOM_HOST_DEVICE T operator()(T g, T y) const { return y > T(0) ? g : T(0); }
};

template <typename T>
struct LeakyReluBackward {
  using signature = Sig<T, T, T>;
  T slope;
  explicit LeakyReluBackward(const OpParams& p) : slope(static_cast<T>(p.a)) {}
  LOOM_HOST_DEVICE T operator()(T g, T x) const { return x > T(0) ? g : g * slope; }
};

// Given sigmoid's output y: dy/dx = y (1 - y).
template <typename T>
struct SigmoidBackward {
  using signature = Sig<T, T, T>;
  LOOM_HOST_DEVICE T operator()(T g, T y) const { return g * y * (T(1) - y); }
};

// Given tanh's output y: dy/dx = 1 - y^2.
template <typename T>
struct TanhBackward {
  using signature = Sig<T, T, T>;
  LOOM_HOST_DEVICE T operator()(T g, T y) const { return g * (T(1) - y * y); }
};

// sign(x) g, with 0 at x = 0 (PyTorch's choice).
template <typename T>
struct AbsBackward {
  using signature = Sig<T, T, T>;
  LOOM_HOST_DEVICE T operator()(T g, T x) const { return x > T(0) ? g : (x < T(0) ? -g : T(0)); }
};

// The gradient passes where lo <= x <= hi, bounds included.
template <typename T>
struct ClampBackward {
  using signature = Sig<T, T, T>;
  T lo, hi;
  explicit ClampBackward(const OpParams& p) : lo(static_cast<T>(p.a)), hi(static_cast<T>(p.b)) {}
  LOOM_HOST_DEVICE T operator()(T g, T x) const { return (x >= lo && x <= hi) ? g : T(0); }
};

// The gradient of maximum (minimum) for `self`: all of g where self wins, half of it on a tie
// (so the two operands' gradients still sum to g), none where it loses.
template <typename T, bool kMax>
struct ExtremumBackward {
  using signature = Sig<T, T, T, T>;
  LOOM_HOST_DEVICE T operator()(T g, T self, T other) const {
    const bool wins = kMax ? self > other : self < other;
    return wins ? g : (self == other ? g * T(0.5) : T(0));
  }
};

// d/dx of BceWithLogits: g (sigmoid(x) - y), exactly 1/2 - y at x = 0.
template <typename T>
struct BceWithLogitsBackward {
  using signature = Sig<T, T, T, T>;
  LOOM_HOST_DEVICE T operator()(T g, T x, T y) const {
    return g * (T(1) / (T(1) + std::exp(-x)) - y);
  }
};

template <typename T>
using MaximumBackward = ExtremumBackward<T, true>;
template <typename T>
using MinimumBackward = ExtremumBackward<T, false>;

// Every functor above, by name, with the dtypes it takes: `floating` (float32, float64,
// bfloat16 computed in float32) or `all` (every dtype: comparisons and where). Operands come in
// the functor's order. A new op is its functor and its line here, then its public function.
// clang-format off
#define LOOM_ELEMENTWISE_OPS(X)                                                               \
  /* (x) */                                                                                   \
  X(Neg, floating) X(Exp, floating) X(Log, floating) X(Sqrt, floating) X(Abs, floating)       \
  X(Relu, floating) X(LeakyRelu, floating) X(Sigmoid, floating) X(Tanh, floating)            \
  X(Clamp, floating) X(PowScalar, floating)                                                   \
  X(AddScalar, floating) X(MulScalar, floating) X(DivScalar, floating) X(RDivScalar, floating) \
  X(EqScalar, all) X(LtScalar, all) X(LeScalar, all) X(GtScalar, all) X(GeScalar, all)         \
  /* (a, b) */                                                                                \
  X(Add, floating) X(AddRelu, floating) X(Sub, floating) X(Mul, floating) X(Div, floating)                        \
  X(Maximum, floating) X(Minimum, floating) X(Pow, floating) X(BceWithLogits, floating)      \
  X(Eq, all) X(Ne, all) X(Lt, all) X(Le, all) X(Gt, all) X(Ge, all)                           \
  /* (cond, a, b) */                                                                          \
  X(Where, all)                                                                               \
  /* (grad, saved) */                                                                         \
  X(ReluBackward, floating) X(LeakyReluBackward, floating) X(SigmoidBackward, floating)      \
  X(TanhBackward, floating) X(AbsBackward, floating) X(ClampBackward, floating)              \
  /* (grad, self, other) */                                                                   \
  X(MaximumBackward, floating) X(MinimumBackward, floating) X(BceWithLogitsBackward, floating)
// clang-format on

}  // namespace loom::detail
