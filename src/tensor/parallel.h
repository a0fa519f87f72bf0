// parallel_for: the CPU backend's one way to spread a loop over threads (OpenMP), used only
// when the loop is large enough to repay starting the threads.
#pragma once

#include <cstdint>

namespace loom {

constexpr int64_t kParallelGrain = 32768;

template <typename Body>
void parallel_for(int64_t n, Body body, int64_t grain = kParallelGrain) {
#pragma omp parallel for schedule(static) if (n > grain)
  for (int64_t i = 0; i < n; ++i) body(i);
}

}  // namespace loom
