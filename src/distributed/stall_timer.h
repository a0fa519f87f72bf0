// Times stretches of one device's work in order: on a GPU, device events recorded on the current
// stream at begin() and end() (the host never waits while measuring); on the CPU, the host
// clock. DistributedDataParallel uses one to measure how long the compute stream stalls waiting
// for all-reduces that backward did not hide.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "loom/tensor/device.h"

namespace loom::cuda {
class Event;
}

namespace loom::dist {

class StallTimer {
 public:
  // `reserve` stretches' events are made now, so that timing them creates nothing mid-step.
  explicit StallTimer(Device device, int reserve = 0);
  ~StallTimer();
  StallTimer(const StallTimer&) = delete;
  StallTimer& operator=(const StallTimer&) = delete;

  void begin();
  void end();
  // The milliseconds of every begin/end pair since the last call, in order; on a GPU it waits
  // for the last one to have run. A begin without its end is left out.
  std::vector<double> take_ms();

 private:
  struct Mark;
  std::unique_ptr<Mark> make_mark() const;
  Device device_;
  std::vector<std::unique_ptr<Mark>> marks_;  // begun, not yet taken
  std::vector<std::unique_ptr<Mark>> spare_;  // taken, their events reusable
  bool open_ = false;
};

}  // namespace loom::dist
