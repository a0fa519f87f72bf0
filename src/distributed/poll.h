// Waiting for what another thread, another rank or the device finishes. A collective or an
// event usually completes within microseconds, so a wait spins (yielding the core) for its first
// couple of hundred microseconds and only then sleeps, in steps that grow to a millisecond: a
// short wait costs microseconds of host time, never a sleep, and a long one costs no core.
#pragma once

#include <chrono>
#include <functional>

namespace loom::dist {

class Backoff {
 public:
  using Clock = std::chrono::steady_clock;
  // The wait starts at `start` (now, unless a test says otherwise).
  explicit Backoff(std::chrono::microseconds spin = std::chrono::microseconds(200),
                   std::chrono::microseconds longest_sleep = std::chrono::milliseconds(1),
                   Clock::time_point start = Clock::now());
  // Yields while within `spin` of the Backoff's creation, then sleeps 10 us, 20 us, ... up to
  // `longest_sleep`.
  void pause();
  // The policy itself, for pause() and its tests: what to do at `now` (zero: yield) and the
  // step to the next sleep.
  std::chrono::microseconds next(Clock::time_point now);

 private:
  const Clock::time_point spin_until_;
  const std::chrono::microseconds longest_sleep_;
  std::chrono::microseconds sleep_{10};
};

enum class PollEnd { Finished, Stopped, TimedOut };

// Calls `finished` until it returns true, `stop` (may be empty) returns true, or `deadline`
// passes, pausing with a Backoff between calls; says which ended the wait. `finished` is asked
// first and last, so a wait that ends together with its deadline counts as finished.
PollEnd poll_until(const std::function<bool()>& finished, Backoff::Clock::time_point deadline,
                   const std::function<bool()>& stop = {});

}  // namespace loom::dist
