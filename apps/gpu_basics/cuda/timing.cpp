// GPU timing with CUDA events: a start and a stop event around each run on the device's current
// stream, all recorded before one wait, so timing adds no gap between runs.
#include <cuda_runtime.h>

#include <vector>

#include "cuda/cuda_check.h"
#include "cuda/launchers.h"

namespace loom::gpu_basics::cuda_impl {
namespace {

// Owns the events, so an exception from `work` does not leak them.
class Events {
 public:
  explicit Events(size_t count) : events_(count, nullptr) {
    for (auto& e : events_) GPU_BASICS_CUDA_CHECK(cudaEventCreate(&e));
  }
  ~Events() {
    for (auto e : events_) {
      if (e != nullptr) cudaEventDestroy(e);
    }
  }
  Events(const Events&) = delete;
  Events& operator=(const Events&) = delete;
  cudaEvent_t operator[](size_t i) const { return events_[i]; }

 private:
  std::vector<cudaEvent_t> events_;
};

}  // namespace

Timing time_with_events(int device, const std::function<void()>& work,
                        const TimingOptions& options) {
  loom::cuda::DeviceGuard guard(device);
  const Stream stream = loom::cuda::current_stream(device);
  for (int i = 0; i < options.warmup; ++i) work();
  const size_t repeats = static_cast<size_t>(options.repeats);
  Events events(2 * repeats);
  for (size_t i = 0; i < repeats; ++i) {
    GPU_BASICS_CUDA_CHECK(cudaEventRecord(events[2 * i], stream));
    work();
    GPU_BASICS_CUDA_CHECK(cudaEventRecord(events[2 * i + 1], stream));
  }
  GPU_BASICS_CUDA_CHECK(cudaEventSynchronize(events[2 * repeats - 1]));
  std::vector<double> samples;
  for (size_t i = 0; i < repeats; ++i) {
    float ms = 0;
    GPU_BASICS_CUDA_CHECK(cudaEventElapsedTime(&ms, events[2 * i], events[2 * i + 1]));
    samples.push_back(ms);
  }
  return summarize(std::move(samples));
}

int64_t total_memory(int device) {
  loom::cuda::DeviceGuard guard(device);
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  GPU_BASICS_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  return static_cast<int64_t>(total_bytes);
}

}  // namespace loom::gpu_basics::cuda_impl
