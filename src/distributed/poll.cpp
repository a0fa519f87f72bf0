// Backoff and poll_until of poll.h.
#include "loom/distributed/poll.h"

#include <algorithm>
#include <thread>

namespace loom::dist {

Backoff::Backoff(std::chrono::microseconds spin, std::chrono::microseconds longest_sleep,
                 Clock::time_point start)
    : spin_until_(start + spin), longest_sleep_(longest_sleep) {}

std::chrono::microseconds Backoff::next(Clock::time_point now) {
  if (now < spin_until_) return std::chrono::microseconds(0);
  const std::chrono::microseconds sleep = sleep_;
  sleep_ = std::min(sleep_ * 2, longest_sleep_);
  return sleep;
}

void Backoff::pause() {
  const std::chrono::microseconds sleep = next(Clock::now());
  if (sleep.count() == 0) {
    std::this_thread::yield();
  } else {
    std::this_thread::sleep_for(sleep);
  }
}

PollEnd poll_until(const std::function<bool()>& finished, Backoff::Clock::time_point deadline,
                   const std::function<bool()>& stop) {
  Backoff backoff;
  for (;;) {
    if (finished()) return PollEnd::Finished;
    if (stop && stop()) return PollEnd::Stopped;
    if (Backoff::Clock::now() >= deadline)
      return finished() ? PollEnd::Finished : PollEnd::TimedOut;
    backoff.pause();
  }
}

}  // namespace loom::dist
