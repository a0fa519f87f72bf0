// A rank's step times: CUDA events on the rank's current stream between steps on a GPU (device
// time, the loader's wait included when the GPU runs dry), the host clock on the CPU.
#pragma once

#include <loom/loom.h>

#include <chrono>
#include <memory>
#include <vector>

namespace loom::scaling {

class StepClock {
 public:
  using Clock = std::chrono::steady_clock;
  // Room for `steps` steps: their events are made now, not between the steps.
  StepClock(Device device, int steps) : device_(device) {
    if (device.is_cuda()) {
      for (int i = 0; i <= steps; ++i)
        marks_.push_back(std::make_unique<cuda::Event>(device.index));
    }
  }
  // Mark i (0 before the first step, i after step i).
  void mark(int i) {
    if (device_.is_cuda()) {
      marks_[static_cast<size_t>(i)]->record(cuda::current_stream(device_.index));
    } else {
      host_.push_back(Clock::now());
    }
  }
  // The milliseconds between consecutive marks, waiting for the last on a GPU.
  std::vector<double> step_ms() const {
    std::vector<double> ms;
    if (device_.is_cuda()) {
      marks_.back()->synchronize();
      for (size_t i = 0; i + 1 < marks_.size(); ++i)
        ms.push_back(cuda::Event::elapsed_ms(*marks_[i], *marks_[i + 1]));
    } else {
      for (size_t i = 0; i + 1 < host_.size(); ++i) {
        ms.push_back(std::chrono::duration<double, std::milli>(host_[i + 1] - host_[i]).count());
      }
    }
    return ms;
  }

 private:
  Device device_;
  std::vector<std::unique_ptr<cuda::Event>> marks_;
  std::vector<Clock::time_point> host_;
};

}  // namespace loom::scaling
