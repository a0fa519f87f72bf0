// The counter-based random bits behind loom's random tensors (host and device): element i of a
// draw is a hash of (seed, counter + i), so results do not depend on device or thread count.
#pragma once

#include <cmath>
#include <cstdint>

#include "loom/tensor/strided_index.h"

namespace loom::random_bits {

// SplitMix64's finaliser over a seed-keyed counter: a bijection with good avalanche, which is
// enough for initialisation, dropout masks and augmentation draws (not for cryptography).
LOOM_HOST_DEVICE uint64_t hash(uint64_t seed, uint64_t counter) {
  uint64_t z =
      seed * 0xD1B54A32D192ED03ull + counter * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  // A second round decorrelates neighbouring counters for nearby seeds.
  z = (z ^ (z >> 32)) * 0xD6E8FEB86659FD93ull;
  return z ^ (z >> 32);
}

// Uniform in [0, 1) with 53 random bits.
LOOM_HOST_DEVICE double uniform(uint64_t seed, uint64_t counter) {
  return static_cast<double>(hash(seed, counter) >> 11) * (1.0 / 9007199254740992.0);
}

// Standard normal by Box-Muller from counters 2c and 2c+1 (computed in double, so the CPU and
// the GPU agree after rounding to float).
LOOM_HOST_DEVICE double normal(uint64_t seed, uint64_t counter) {
  const double u1 = 1.0 - uniform(seed, 2 * counter);  // (0, 1]: log is finite
  const double u2 = uniform(seed, 2 * counter + 1);
  return ::sqrt(-2.0 * ::log(u1)) * ::cos(6.283185307179586 * u2);
}

// Uniform integer in [0, range) by the multiply-shift method (no modulo bias worth noting).
LOOM_HOST_DEVICE uint64_t below(uint64_t seed, uint64_t counter, uint64_t range) {
  const uint64_t bits = hash(seed, counter);
  if (range <= 0xFFFFFFFFull) return ((bits >> 32) * range) >> 32;
  return bits % range;
}

}  // namespace loom::random_bits

namespace loom::random_bits {

// One element of a random fill: kind 0 uniform in [low, high), 1 standard normal, 2 integer in
// [low, high). Uniform values are kept below `high` after rounding to T.
template <typename T>
LOOM_HOST_DEVICE T sample(int kind, double low, double high, uint64_t seed, uint64_t counter) {
  if (kind == 1) return static_cast<T>(normal(seed, counter));
  if (kind == 2) {
    return static_cast<T>(
        low + static_cast<double>(below(seed, counter, static_cast<uint64_t>(high - low))));
  }
  const T v = static_cast<T>(low + (high - low) * uniform(seed, counter));
  return v < static_cast<T>(high) ? v : static_cast<T>(low);
}

}  // namespace loom::random_bits
