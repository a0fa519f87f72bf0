// loom::BFloat16, the element type of DType::BFloat16: the top 16 bits of a float32 (sign, the
// same 8 exponent bits, 7 fraction bits). One definition serves the CPU loops and the CUDA
// kernels; it needs nothing of CUDA's own bfloat16 header.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "loom/tensor/host_device.h"

namespace loom {

namespace bf16_bits {

LOOM_HOST_DEVICE uint32_t float_to_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

LOOM_HOST_DEVICE float bits_to_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

// The bits of the bfloat16 nearest to f, ties to even. Adding 0x7FFF plus the lowest kept bit
// and dropping the low 16 bits rounds them: under half down, over half up, exactly half to the
// even neighbour. A carry may run into the exponent: that is how values past the largest
// finite bfloat16 (and its half step) become infinity, and subnormals need no case of their
// own. NaN is kept NaN (a payload only in the dropped bits would truncate to infinity) and
// made quiet, with its sign.
LOOM_HOST_DEVICE uint16_t round_float(float f) {
  const uint32_t u = float_to_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

// The bits of the bfloat16 nearest to d, ties to even, rounded once. Narrowing d to float in
// the usual way first could land exactly on a bfloat16 tie (1 + 2^-8 + 2^-30 would then give
// 1, not 1 + 2^-7), so d is narrowed rounding to odd instead: truncated toward zero, with the
// lowest bit set when anything was cut off. Float keeps 16 bits more than bfloat16, so that
// sticky bit still tells below, at and above half apart, and round_float decides as from d.
LOOM_HOST_DEVICE uint16_t round_double(double d) {
  constexpr double kFloatMax = 3.4028234663852886e38;  // every double past it rounds to inf
  if (d != d) return round_float(static_cast<float>(d));
  if (d > kFloatMax) return 0x7F80u;
  if (d < -kFloatMax) return 0xFF80u;
  uint32_t u = float_to_bits(static_cast<float>(d));
  if (::fabs(static_cast<double>(bits_to_float(u))) > ::fabs(d)) u -= 1;  // one step toward 0
  if (static_cast<double>(bits_to_float(u)) != d) u |= 1u;
  return round_float(bits_to_float(u));
}

}  // namespace bf16_bits

// A value type with no arithmetic of its own: it converts to float exactly (implicitly, so
// `a + b` computes in float) and is made from float, double or an integer explicitly, rounding
// to nearest with ties to even (integers through double: exact up to 2^53).
struct BFloat16 {
  uint16_t bits;

  BFloat16() = default;
  LOOM_HOST_DEVICE explicit BFloat16(float f) : bits(bf16_bits::round_float(f)) {}
  LOOM_HOST_DEVICE explicit BFloat16(double d) : bits(bf16_bits::round_double(d)) {}
  template <typename I, std::enable_if_t<std::is_integral_v<I>, int> = 0>
  LOOM_HOST_DEVICE explicit BFloat16(I i) : BFloat16(static_cast<double>(i)) {}

  LOOM_HOST_DEVICE operator float() const {  // NOLINT: implicit on purpose
    return bf16_bits::bits_to_float(static_cast<uint32_t>(bits) << 16);
  }

  LOOM_HOST_DEVICE static BFloat16 from_bits(uint16_t b) {
    BFloat16 x;
    x.bits = b;
    return x;
  }
};

static_assert(sizeof(BFloat16) == 2 && std::is_trivially_copyable_v<BFloat16>,
              "BFloat16 must be two plain bytes: tensors and files hold it as raw storage");

}  // namespace loom
