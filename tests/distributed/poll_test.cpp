// poll.h: how a wait for a collective spends the host's time. NCCL returns ncclInProgress from
// every collective with two or more ranks (it enqueues on a helper thread), so the communicator
// reads "busy" for some microseconds: the wait must spin through them, not sleep (finding F1),
// and give up at once when the group aborts (F3). The multigpu tests time it over real NCCL.
#include "loom/distributed/poll.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "testing.h"

namespace loom::dist {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::microseconds;

double micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

TEST(Backoff, SpinsThroughTheFirst200MicrosecondsThenSleepsLongerAndLonger) {
  // Before, the NCCL backend slept 200 us at the first "in progress" answer: every collective of
  // two or more ranks cost >= 200 us of host time inside backward's bucket hooks. Now nothing in
  // the first 200 us of a wait sleeps, however often it asks.
  const Clock::time_point start = Clock::now();
  Backoff backoff(microseconds(200), std::chrono::milliseconds(1), start);
  for (int i = 0; i < 10000; ++i) ASSERT_EQ(backoff.next(start + microseconds(i % 199)).count(), 0);
  std::vector<int64_t> sleeps;
  for (int i = 0; i < 9; ++i) sleeps.push_back(backoff.next(start + microseconds(200 + i)).count());
  EXPECT_EQ(sleeps, (std::vector<int64_t>{10, 20, 40, 80, 160, 320, 640, 1000, 1000}));
}

TEST(PollUntil, ALongWaitSleepsInsteadOfSpinning) {
  // Past the spin, a wait of 50 ms polls some hundred times (sleeps of up to 1 ms), not millions.
  int polls = 0;
  const Clock::time_point ready_at = Clock::now() + std::chrono::milliseconds(50);
  poll_until(
      [&] {
        ++polls;
        return Clock::now() >= ready_at;
      },
      Clock::now() + testing::scaled(std::chrono::seconds(10)));
  EXPECT_LT(polls, 20000);
  EXPECT_GT(polls, 10);
}

TEST(PollUntil, AnAbortEndsTheWaitAtOnce) {
  // An abort must not queue behind a collective stuck waiting for a peer (finding F3).
  std::atomic<bool> aborted{false};
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    aborted = true;
  });
  const Clock::time_point start = Clock::now();
  const PollEnd end =
      poll_until([] { return false; }, start + testing::scaled(std::chrono::seconds(60)),
                 [&] { return aborted.load(); });
  aborter.join();
  EXPECT_EQ(end, PollEnd::Stopped);
  EXPECT_LT(micros(Clock::now() - start), 1e6 * testing::kSlowdown);
}

TEST(PollUntil, TheDeadlineEndsAWaitThatNeverFinishes) {
  const Clock::time_point start = Clock::now();
  EXPECT_EQ(poll_until([] { return false; }, start + std::chrono::milliseconds(30)),
            PollEnd::TimedOut);
  EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(30));
  EXPECT_LT(Clock::now() - start, testing::scaled(std::chrono::seconds(5)));
}

TEST(PollUntil, FinishingAtTheDeadlineCountsAsFinished) {
  const Clock::time_point start = Clock::now();
  int calls = 0;
  EXPECT_EQ(poll_until([&] { return ++calls > 1; }, start), PollEnd::Finished);
}

}  // namespace
}  // namespace loom::dist
