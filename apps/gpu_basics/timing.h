// How loom-gpu-basics times things: warm-up runs first (they absorb one-off costs such as
// module loading and cache warm-up), then the median of repeated runs; CUDA events on the
// GPU's current stream, steady_clock on the CPU.
#pragma once

#include <loom/loom.h>

#include <functional>
#include <vector>

namespace loom::gpu_basics {

struct TimingOptions {
  int warmup = 2;
  int repeats = 10;
};

struct Timing {
  double median_ms = 0;
  double min_ms = 0;
  double max_ms = 0;
  int repeats = 0;
};

// Median of the given samples (the mean of the middle two for an even count).
Timing summarize(std::vector<double> samples_ms);

// Times `work` where it runs: on a CUDA device `work` must only enqueue on that device's
// current stream, and each run is bracketed by events; on the CPU it runs synchronously.
Timing time_it(Device device, const std::function<void()>& work, const TimingOptions& options);
Timing time_on_cpu(const std::function<void()>& work, const TimingOptions& options);

// Wall-clock milliseconds of one call, for one-off costs that events cannot see.
double wall_ms(const std::function<void()>& work);

}  // namespace loom::gpu_basics
