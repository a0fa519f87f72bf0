// An independent reference for bfloat16 rounding, for the tests: the value of every bit
// pattern from its fields, and the nearest bfloat16 to a double found by searching the ordered
// magnitudes and comparing the distances to both neighbours (ties to the even one). It shares
// nothing with loom's own conversion (src/tensor/bfloat16.h), which adds and truncates bits.
#pragma once

#include <loom/loom.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace loom::testing {

constexpr uint16_t kBf16Inf = 0x7F80;

inline bool bf16_is_nan(uint16_t bits) { return (bits & 0x7F80) == 0x7F80 && (bits & 0x007F) != 0; }

// The value of a bfloat16 magnitude 0..0x7F80 (sign bit clear): 1.fraction x 2^(exponent - 127)
// for normal numbers, 0.fraction x 2^-126 for subnormals. 0x7F80 stands for 2^128, where the
// exponent range would continue: IEEE rounds to infinity exactly from the half-way point
// between the largest finite value and 2^128.
inline double bf16_magnitude(uint16_t m) {
  const int exponent = m >> 7, fraction = m & 0x7F;
  if (exponent == 0) return std::ldexp(fraction, -133);
  return std::ldexp(128 + fraction, exponent - 134);
}

// The value of any non-NaN bfloat16 bit pattern.
inline double bf16_value(uint16_t bits) {
  const uint16_t m = bits & 0x7FFF;
  const double magnitude = m == kBf16Inf ? INFINITY : bf16_magnitude(m);
  return (bits & 0x8000) ? -magnitude : magnitude;
}

// The bits of the bfloat16 nearest to x (not NaN), ties to the even pattern. The distances are
// exact in double: both neighbours are within a factor of two of |x| or finer-grained.
inline uint16_t reference_bf16_bits(double x) {
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const double a = std::fabs(x);
  if (a >= bf16_magnitude(kBf16Inf)) return sign | kBf16Inf;
  uint16_t lo = 0, hi = kBf16Inf;  // invariant: magnitude(lo) <= a < magnitude(hi)
  while (hi - lo > 1) {
    const uint16_t mid = static_cast<uint16_t>((lo + hi) / 2);
    if (bf16_magnitude(mid) <= a) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  const double below = a - bf16_magnitude(lo), above = bf16_magnitude(hi) - a;
  const uint16_t nearest = below < above ? lo : (above < below ? hi : ((lo & 1) ? hi : lo));
  return sign | nearest;
}

inline double round_to_bf16(double x) { return bf16_value(reference_bf16_bits(x)); }

inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

inline float float_from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// The raw bits of a bfloat16 tensor, row-major.
inline std::vector<uint16_t> bf16_bits_of(const Tensor& t) {
  std::vector<uint16_t> bits;
  for (const BFloat16& v : t.to_vector<BFloat16>()) bits.push_back(v.bits);
  return bits;
}

// The bits reference_bf16_bits gives for each element of t (read as float64).
inline std::vector<uint16_t> reference_bits_of(const Tensor& t) {
  std::vector<uint16_t> bits;
  for (double v : t.to_vector<double>()) bits.push_back(reference_bf16_bits(v));
  return bits;
}

// bfloat16 values of magnitude in [0.25, 2) with random signs: on a grid of 2^-9, so every
// partial sum of up to 2^40 of them is exact in double, in any order.
inline Tensor bounded_bf16(const Shape& shape, uint64_t seed) {
  Generator gen(seed);
  const Tensor magnitude = uniform(shape, 0.25, 2.0, kFloat64, &gen);
  return where(gt(rand(shape, kFloat64, &gen), 0.5), magnitude, -magnitude).to(kBFloat16);
}

}  // namespace loom::testing
