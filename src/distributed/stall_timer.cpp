// StallTimer (stall_timer.h): an event pair per stretch on a GPU, a clock pair on the CPU.
#include "loom/distributed/stall_timer.h"

#include "loom/tensor/cuda/graph.h"
#include "loom/tensor/cuda/runtime.h"

namespace loom::dist {

struct StallTimer::Mark {
  std::unique_ptr<cuda::Event> begin, end;                     // a GPU's
  std::chrono::steady_clock::time_point host_begin, host_end;  // the CPU's
};

StallTimer::StallTimer(Device device, int reserve) : device_(device) {
  for (int i = 0; i < reserve; ++i) spare_.push_back(make_mark());
}

std::unique_ptr<StallTimer::Mark> StallTimer::make_mark() const {
  auto mark = std::make_unique<Mark>();
  if (device_.is_cuda()) {
    mark->begin = std::make_unique<cuda::Event>(device_.index);
    mark->end = std::make_unique<cuda::Event>(device_.index);
  }
  return mark;
}
StallTimer::~StallTimer() = default;

void StallTimer::begin() {
  if (open_) {  // the last stretch never ended (its backward threw)
    spare_.push_back(std::move(marks_.back()));
    marks_.pop_back();
  }
  std::unique_ptr<Mark> mark;
  if (!spare_.empty()) {  // events are made once, not inside every timed step
    mark = std::move(spare_.back());
    spare_.pop_back();
  } else {
    mark = make_mark();
  }
  if (device_.is_cuda()) {
    cuda::check_not_capturing(
        device_.index, "DistributedDataParallel::time_exposed_communication",
        "its timing events would be read on the host, where a graph's never finish");
    mark->begin->record(cuda::current_stream(device_.index));
  } else {
    mark->host_begin = std::chrono::steady_clock::now();
  }
  marks_.push_back(std::move(mark));
  open_ = true;
}

void StallTimer::end() {
  if (!open_) return;
  Mark& mark = *marks_.back();
  if (device_.is_cuda()) {
    mark.end->record(cuda::current_stream(device_.index));
  } else {
    mark.host_end = std::chrono::steady_clock::now();
  }
  open_ = false;
}

std::vector<double> StallTimer::take_ms() {
  if (open_) {
    spare_.push_back(std::move(marks_.back()));
    marks_.pop_back();
    open_ = false;
  }
  std::vector<double> ms;
  ms.reserve(marks_.size());
  for (auto& mark : marks_) {
    if (device_.is_cuda()) {
      mark->end->synchronize();
      ms.push_back(cuda::Event::elapsed_ms(*mark->begin, *mark->end));
    } else {
      ms.push_back(
          std::chrono::duration<double, std::milli>(mark->host_end - mark->host_begin).count());
    }
    spare_.push_back(std::move(mark));
  }
  marks_.clear();
  return ms;
}

}  // namespace loom::dist
