// parallel_for / parallel_chunks: the CPU backend's one way to spread a loop over threads
// (OpenMP), used only when the loop is large enough to repay waking the threads.
// The thread count is OpenMP's: libgomp starts with the CPUs of the process's affinity mask
// (taskset, cgroups) and obeys OMP_NUM_THREADS.
#pragma once

#include <algorithm>
#include <cstdint>

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace loom {

constexpr int64_t kParallelGrain = 32768;

// Threads a parallel region started here would get (1 inside a parallel region: no nesting).
inline int parallel_threads() {
#if defined(_OPENMP)
  return omp_in_parallel() ? 1 : omp_get_max_threads();
#else
  return 1;
#endif
}

template <typename Body>
void parallel_for(int64_t n, Body body, int64_t grain = kParallelGrain) {
#pragma omp parallel for schedule(static) if (n > grain)
  for (int64_t i = 0; i < n; ++i) body(i);
}

// Splits [0, n) into contiguous chunks, one per thread and none (but a lone one) shorter than
// `grain`, and runs body(chunk, begin, end) for each; returns the number of chunks. A chunk is
// a whole loop for the body, so it can keep state (a cursor, a scratch buffer) across elements.
// The split depends only on n, grain and the thread count, never on timing.
template <typename Body>
int64_t parallel_chunks(int64_t n, Body body, int64_t grain = kParallelGrain) {
  if (n <= 0) return 0;
  const int64_t by_size = std::max<int64_t>(1, n / std::max<int64_t>(1, grain));
  const int64_t chunks = std::min<int64_t>(by_size, parallel_threads());
  if (chunks == 1) {
    body(int64_t(0), int64_t(0), n);
    return 1;
  }
#pragma omp parallel for schedule(static) num_threads(static_cast <int>(chunks))
  for (int64_t k = 0; k < chunks; ++k) body(k, n * k / chunks, n * (k + 1) / chunks);
  return chunks;
}

}  // namespace loom
