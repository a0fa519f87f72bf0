// Median timing on the CPU and the dispatch to CUDA events for GPU work.
#include "timing.h"

#include <loom/ops/dispatch.h>

#include <algorithm>
#include <chrono>

#include "cuda/launchers.h"

namespace loom::gpu_basics {

Timing summarize(std::vector<double> samples_ms) {
  LOOM_CHECK(!samples_ms.empty(), "timing: no samples");
  std::sort(samples_ms.begin(), samples_ms.end());
  const size_t n = samples_ms.size();
  Timing t;
  t.repeats = static_cast<int>(n);
  t.min_ms = samples_ms.front();
  t.max_ms = samples_ms.back();
  t.median_ms = n % 2 == 1 ? samples_ms[n / 2] : 0.5 * (samples_ms[n / 2 - 1] + samples_ms[n / 2]);
  return t;
}

double wall_ms(const std::function<void()>& work) {
  const auto start = std::chrono::steady_clock::now();
  work();
  const auto stop = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::milli>(stop - start).count();
}

Timing time_on_cpu(const std::function<void()>& work, const TimingOptions& options) {
  LOOM_CHECK(options.warmup >= 0 && options.repeats >= 1, "timing: warmup ", options.warmup,
             " must be >= 0 and repeats ", options.repeats, " >= 1");
  for (int i = 0; i < options.warmup; ++i) work();
  std::vector<double> samples;
  for (int i = 0; i < options.repeats; ++i) samples.push_back(wall_ms(work));
  return summarize(std::move(samples));
}

Timing time_it(Device device, const std::function<void()>& work, const TimingOptions& options) {
  if (device.is_cpu()) return time_on_cpu(work, options);
  LOOM_CHECK(options.warmup >= 0 && options.repeats >= 1, "timing: warmup ", options.warmup,
             " must be >= 0 and repeats ", options.repeats, " >= 1");
  Timing timing;
  LOOM_CUDA_DISPATCH("time_it", timing = cuda_impl::time_with_events(device.index, work, options));
  return timing;
}

}  // namespace loom::gpu_basics
