// Seedable random tensors. Numbers come from a counter-based generator (a hash of seed and
// element index), so the same seed gives the same numbers on the CPU and on every GPU, and
// no state has to be shared between threads.
#pragma once

#include <cstdint>

#include "loom/tensor/tensor.h"

namespace loom {

class Generator {
 public:
  explicit Generator(uint64_t seed = 0) : seed_(seed) {}
  uint64_t seed() const { return seed_; }
  uint64_t offset() const { return offset_; }
  void set_state(uint64_t seed, uint64_t offset) { seed_ = seed, offset_ = offset; }
  // Reserves n consecutive counters and returns the first.
  uint64_t advance(uint64_t n) {
    const uint64_t first = offset_;
    offset_ += n;
    return first;
  }

 private:
  uint64_t seed_;
  uint64_t offset_ = 0;
};

// The generator the factories below use when none is given: this thread's own while a
// GeneratorGuard is alive on it (dist::spawn gives each rank one), else the process-wide one
// (thread-safe). manual_seed seeds that same generator.
Generator& default_generator();
void manual_seed(uint64_t seed);

// Makes `generator` this thread's default generator until the guard is destroyed, so ranks
// running as threads of one process each draw their own numbers.
class GeneratorGuard {
 public:
  explicit GeneratorGuard(Generator& generator);
  ~GeneratorGuard();
  GeneratorGuard(const GeneratorGuard&) = delete;
  GeneratorGuard& operator=(const GeneratorGuard&) = delete;

 private:
  Generator* previous_;
};

// Uniform in [0, 1), standard normal, and integers uniform in [low, high).
Tensor rand(const Shape& shape, const TensorOptions& options = {}, Generator* gen = nullptr);
Tensor randn(const Shape& shape, const TensorOptions& options = {}, Generator* gen = nullptr);
Tensor randint(int64_t low, int64_t high, const Shape& shape,
               const TensorOptions& options = TensorOptions(kInt64), Generator* gen = nullptr);
// Uniform in [low, high).
Tensor uniform(const Shape& shape, double low, double high, const TensorOptions& options = {},
               Generator* gen = nullptr);

}  // namespace loom
