// loom::BFloat16's conversions against the independent reference of bf16_reference.h: every bit
// pattern widened exactly, float and double rounded to nearest with ties to even (subnormals,
// the overflow threshold, infinities), NaN kept NaN and quiet, integers.
#include <limits>
#include <random>

#include "bf16_reference.h"
#include "testing.h"

namespace loom {
namespace {

using namespace testing;

uint16_t bits_from_float(float f) { return BFloat16(f).bits; }
uint16_t bits_from_double(double d) { return BFloat16(d).bits; }

TEST(BFloat16, EveryPatternWidensExactlyAndNarrowsBackToItself) {
  for (uint32_t b = 0; b <= 0xFFFF; ++b) {
    const uint16_t bits = static_cast<uint16_t>(b);
    const float wide = BFloat16::from_bits(bits);
    if (bf16_is_nan(bits)) {
      EXPECT_TRUE(std::isnan(wide)) << std::hex << b;
      // The quiet bit is set on the way back; sign and payload stay.
      EXPECT_EQ(bits_from_float(wide), bits | 0x0040) << std::hex << b;
      continue;
    }
    ASSERT_EQ(static_cast<double>(wide), bf16_value(bits)) << std::hex << b;
    ASSERT_EQ(bits_from_float(wide), bits) << std::hex << b;
    ASSERT_EQ(bits_from_double(wide), bits) << std::hex << b;
  }
}

// For each bfloat16 pattern as the top half of a float, low halves that round down, tie, round
// up, and a few random ones: this visits every exponent, subnormals and the overflow boundary.
TEST(BFloat16, FloatsRoundToNearestEvenAtEveryExponent) {
  std::mt19937 rng(7);
  for (uint32_t top = 0; top <= 0xFFFF; ++top) {
    if (bf16_is_nan(static_cast<uint16_t>(top)) || (top & 0x7FFF) == kBf16Inf) continue;
    for (uint32_t low :
         {0x0001u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu, static_cast<uint32_t>(rng() & 0xFFFF),
          static_cast<uint32_t>(rng() & 0xFFFF)}) {
      const float f = float_from_bits(top << 16 | low);
      ASSERT_EQ(bits_from_float(f), reference_bf16_bits(f)) << std::hex << (top << 16 | low);
    }
  }
  for (int i = 0; i < 1000000; ++i) {
    const float f = float_from_bits(static_cast<uint32_t>(rng()));
    if (std::isnan(f)) continue;
    ASSERT_EQ(bits_from_float(f), reference_bf16_bits(f)) << std::hex << float_bits(f);
  }
}

TEST(BFloat16, NamedCases) {
  const float max_finite = std::ldexp(255.0f, 120);  // 0x7F7F: (2 - 2^-7) x 2^127
  const float half_step = std::ldexp(1.0f, 119);     // half an ulp of it
  struct Case {
    float value;
    uint16_t bits;
    const char* why;
  };
  const Case cases[] = {
      {1.0f, 0x3F80, "exact"},
      {-2.5f, 0xC020, "exact, negative"},
      {1.0f + std::ldexp(1.0f, -8), 0x3F80, "tie between 0x3F80 and 0x3F81 goes to even"},
      {1.0f + 3 * std::ldexp(1.0f, -8), 0x3F82, "tie between 0x3F81 and 0x3F82 goes to even"},
      {1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -23), 0x3F81, "just above the tie"},
      {std::ldexp(1.0f, -133), 0x0001, "smallest subnormal"},
      {std::ldexp(1.0f, -134), 0x0000, "half of it: a tie, to even zero"},
      {3 * std::ldexp(1.0f, -134), 0x0002, "tie between subnormals 1 and 2"},
      {std::numeric_limits<float>::denorm_min(), 0x0000, "float's smallest subnormal"},
      {-std::numeric_limits<float>::denorm_min(), 0x8000, "to negative zero"},
      {std::numeric_limits<float>::min(), 0x0080, "smallest normal"},
      {max_finite, 0x7F7F, "largest finite"},
      {max_finite + half_step / 2, 0x7F7F, "below the overflow threshold"},
      {max_finite + half_step, kBf16Inf, "at the threshold: a tie, to even infinity"},
      {std::numeric_limits<float>::max(), kBf16Inf, "overflow"},
      {-std::numeric_limits<float>::max(), 0xFF80, "negative overflow"},
      {INFINITY, kBf16Inf, "infinity"},
      {-INFINITY, 0xFF80, "negative infinity"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(bits_from_float(c.value), c.bits) << c.why;
    EXPECT_EQ(reference_bf16_bits(c.value), c.bits) << c.why << " (the reference)";
  }
}

TEST(BFloat16, NanStaysNanAndQuiet) {
  // Signalling NaNs whose payload lies only in the 16 dropped bits would truncate to infinity.
  for (uint32_t nan :
       {0x7F800001u, 0x7F80FFFFu, 0xFF800001u, 0x7FC00000u, 0xFFFFFFFFu, 0x7FA00000u}) {
    const uint16_t bits = bits_from_float(float_from_bits(nan));
    EXPECT_TRUE(bf16_is_nan(bits)) << std::hex << nan;
    EXPECT_EQ(bits & 0x0040, 0x0040) << std::hex << nan << " is not quiet";
    EXPECT_EQ(bits & 0x8000, (nan >> 16) & 0x8000) << std::hex << nan << " lost its sign";
  }
  EXPECT_TRUE(bf16_is_nan(bits_from_double(std::numeric_limits<double>::quiet_NaN())));
  EXPECT_TRUE(bf16_is_nan(bits_from_double(-std::numeric_limits<double>::signaling_NaN())));
}

// A double is rounded once: going through float first would turn a value just above a tie
// into the tie itself and round it down.
TEST(BFloat16, DoublesRoundOnceNotThroughFloat) {
  const double above_tie = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -30);
  EXPECT_EQ(bits_from_float(static_cast<float>(above_tie)), 0x3F80);  // what double rounding gives
  EXPECT_EQ(bits_from_double(above_tie), 0x3F81);
  EXPECT_EQ(bits_from_double(-above_tie), 0xBF81);
  EXPECT_EQ(bits_from_double(1e300), kBf16Inf);
  EXPECT_EQ(bits_from_double(-1e300), 0xFF80);
  EXPECT_EQ(bits_from_double(std::numeric_limits<double>::max()), kBf16Inf);
  EXPECT_EQ(bits_from_double(1e-300), 0x0000);
  EXPECT_EQ(bits_from_double(-1e-300), 0x8000);
  EXPECT_EQ(bits_from_double(0.1), 0x3DCD);
  const double threshold = bf16_magnitude(0x7F7F) + std::ldexp(1.0, 119);  // largest + half ulp
  EXPECT_EQ(bits_from_double(threshold), kBf16Inf);
  EXPECT_EQ(bits_from_double(threshold - std::ldexp(1.0, 80)), 0x7F7F);

  // Around every tie of a spread of patterns: the tie itself, and a hair to either side (a
  // distance float cannot hold); then random doubles of every magnitude.
  std::mt19937_64 rng(11);
  for (uint32_t m = 0; m < kBf16Inf; m += 1 + static_cast<uint32_t>(rng() % 61)) {
    const double lo = bf16_magnitude(static_cast<uint16_t>(m));
    const double hi = bf16_magnitude(static_cast<uint16_t>(m + 1));
    const double tie = (lo + hi) / 2, hair = (hi - lo) * std::ldexp(1.0, -30);
    for (double d : {tie, tie - hair, tie + hair, -tie, -(tie + hair)}) {
      ASSERT_EQ(bits_from_double(d), reference_bf16_bits(d)) << std::hexfloat << d;
    }
  }
  for (int i = 0; i < 200000; ++i) {
    const double d =
        std::ldexp(static_cast<double>(rng() >> 11) * 0x1p-53, static_cast<int>(rng() % 300) - 150);
    const double signed_d = (rng() & 1) ? -d : d;
    ASSERT_EQ(bits_from_double(signed_d), reference_bf16_bits(signed_d))
        << std::hexfloat << signed_d;
  }
}

TEST(BFloat16, IntegersRoundToNearestEven) {
  EXPECT_EQ(static_cast<float>(BFloat16(256)), 256.0f);
  EXPECT_EQ(static_cast<float>(BFloat16(257)), 256.0f);  // a tie: 256 = 0x4380 is even
  EXPECT_EQ(static_cast<float>(BFloat16(259)), 260.0f);  // a tie: 260 = 0x4382 is even
  EXPECT_EQ(static_cast<float>(BFloat16(-3)), -3.0f);
  const int64_t big = (int64_t(1) << 40) + (int64_t(1) << 32) + 1;  // just above a tie
  EXPECT_EQ(BFloat16(big).bits, reference_bf16_bits(static_cast<double>(big)));
  EXPECT_EQ(static_cast<float>(BFloat16(uint8_t{255})), 255.0f);  // 8 significant bits hold it
}

}  // namespace
}  // namespace loom
