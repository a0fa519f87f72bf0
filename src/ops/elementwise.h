// Elementwise arithmetic with NumPy broadcasting, unary maths, comparisons and where().
// Binary ops need both operands on one device with one dtype; comparisons return uint8 (0/1).
#pragma once

#include "loom/tensor/tensor.h"

namespace loom {

Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor add(const Tensor& a, double b);
Tensor sub(const Tensor& a, double b);
Tensor mul(const Tensor& a, double b);
Tensor div(const Tensor& a, double b);
Tensor maximum(const Tensor& a, const Tensor& b);  // gradient to the larger (split on ties)
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& base, double exponent);
Tensor pow(const Tensor& base, const Tensor& exponent);

Tensor neg(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor abs(const Tensor& x);                            // gradient sign(x), 0 at 0
Tensor clamp(const Tensor& x, double min, double max);  // gradient 1 inside [min, max], else 0

Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, double b);
Tensor lt(const Tensor& a, double b);
Tensor ge(const Tensor& a, double b);
Tensor le(const Tensor& a, double b);
Tensor eq(const Tensor& a, double b);
// The per-element binary cross-entropy of logits against targets (broadcast together),
// max(x, 0) - x y + log(1 + exp(-|x|)), in one kernel, with its gradient in one more:
// d/dx = sigmoid(x) - y, d/dy = -x. nn::binary_cross_entropy_with_logits reduces it.
Tensor bce_with_logits_terms(const Tensor& logits, const Tensor& targets);
// cond (uint8, non-zero = take a) broadcasts with a and b.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);

inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator+(const Tensor& a, double b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, double b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, double b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, double b) { return div(a, b); }
inline Tensor operator+(double a, const Tensor& b) { return add(b, a); }
inline Tensor operator-(double a, const Tensor& b) { return add(neg(b), a); }
inline Tensor operator*(double a, const Tensor& b) { return mul(b, a); }
Tensor operator/(double a, const Tensor& b);
inline Tensor operator-(const Tensor& x) { return neg(x); }

}  // namespace loom
