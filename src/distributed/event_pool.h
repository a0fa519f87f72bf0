// Internal: the ordering events (no timing) a group records on one device, reused: every
// collective and every watched replay needs one, and creating a CUDA event costs more than
// recording it. Taken by one thread, the one that issues the group's collectives.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "loom/tensor/cuda/runtime.h"

namespace loom::dist {

class EventPool {
 public:
  explicit EventPool(int device) : device_(device) {}

  // An event nobody else holds any more (the Work that held it has finished and let it go, so
  // the pool's reference is the only one), else a new one.
  std::shared_ptr<cuda::Event> spare() {
    for (size_t i = 0; i < events_.size(); ++i) {
      std::shared_ptr<cuda::Event>& e = events_[(next_ + i) % events_.size()];
      if (e.use_count() == 1) {
        next_ = (next_ + i + 1) % events_.size();
        return e;
      }
    }
    events_.push_back(std::make_shared<cuda::Event>(device_, false));
    return events_.back();
  }
  void clear() { events_.clear(); }

 private:
  int device_;
  std::vector<std::shared_ptr<cuda::Event>> events_;
  size_t next_ = 0;
};

}  // namespace loom::dist
