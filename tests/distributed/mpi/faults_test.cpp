// The MPI backend when ranks go wrong: an abort reaches the other ranks, a rank that never
// arrives is a timeout naming the collective, ranks that call different collectives get an error
// naming both. Each fault has its own group and a deadline of seconds, and each test ends by
// showing that a new group still works.
#include <string>
#include <thread>

#include "mpi_testing.h"

namespace loom::testing {
namespace {

using dist::GroupPtr;
using dist::ProcessGroup;
using Clock = std::chrono::steady_clock;

// The message of the loom::Error that `f` throws, or "" (with a failure) when it throws none.
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a loom::Error";
  return "";
}

#define EXPECT_CONTAINS(text, fragment)                          \
  EXPECT_NE(std::string(text).find(fragment), std::string::npos) \
      << "expected \"" << (fragment) << "\" in: " << (text)

// Polls until the group is aborted or `limit` passes; returns whether it was.
bool aborted_within(const ProcessGroup& g, std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  while (!g.is_aborted() && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return g.is_aborted();
}

TEST(MpiFaults, AbortReachesTheOtherRanksAtOnce) {
  constexpr auto kTimeout = scaled(std::chrono::seconds(5), std::chrono::seconds(60));
  GroupPtr group = fresh_group();
  LOOM_REQUIRE_TWO_RANKS(*group);
  group->set_timeout(kTimeout);
  Tensor t = ones({4});
  const std::string reason = "rank 1 gives up on purpose";
  if (group->rank() == 1) {
    group->abort(reason);
    EXPECT_TRUE(group->is_aborted());
    EXPECT_LOOM_ERROR(group->all_reduce(t), "refused: the group was aborted: " + reason);
  } else {
    // The notice may come before this rank starts (the call refuses) or while it waits.
    const auto start = Clock::now();
    const std::string message = error_of([&] { group->all_reduce(t)->wait(); });
    EXPECT_CONTAINS(message, group->who());
    EXPECT_CONTAINS(message, "all_reduce #0 (sum, float32 [4])");
    EXPECT_CONTAINS(message,
                    "rank 1 of " + std::to_string(group->size()) + " aborted the group: " + reason);
    // Told by rank 1, not by its own deadline.
    EXPECT_LT(seconds_since(start), 0.8 * kTimeout.count() / 1000.0);
    EXPECT_TRUE(group->is_aborted());
    EXPECT_LOOM_ERROR(group->broadcast(t, 0),
                      "broadcast #1 (root 0, float32 [4]) refused: the group was aborted");
  }
  expect_world_usable();
}

TEST(MpiFaults, RankThatNeverArrivesIsATimeoutNamingTheCollective) {
  constexpr auto kTimeout = std::chrono::milliseconds(1500);
  GroupPtr group = fresh_group();
  LOOM_REQUIRE_TWO_RANKS(*group);
  group->set_timeout(kTimeout);
  group->barrier()->wait();  // #0 succeeds, so the one that fails is #1
  Tensor t = zeros({2, 3});
  if (group->rank() == 1) {
    // Never calls all_reduce #1; the ranks that time out tell it.
    EXPECT_TRUE(aborted_within(*group, scaled(std::chrono::seconds(20), kMpiCeiling)));
    EXPECT_CONTAINS(group->abort_reason(), "timed out");
    EXPECT_LOOM_ERROR(group->all_reduce(t), "refused: the group was aborted");
  } else {
    const auto start = Clock::now();
    const std::string message = error_of([&] { group->all_reduce(t)->wait(); });
    EXPECT_CONTAINS(message,
                    "loom.dist: " + group->who() + ": all_reduce #1 (sum, float32 [2, 3]) failed");
    EXPECT_CONTAINS(message, "timed out");
    const double waited = seconds_since(start);
    EXPECT_GE(waited, 1.0);  // its own deadline, or a peer's a moment before
    EXPECT_LT(waited, std::min(10.0 * kSlowdown, 100.0));
    EXPECT_TRUE(group->is_aborted());
    EXPECT_LOOM_ERROR(group->barrier(), "barrier #2 refused: the group was aborted");
  }
  expect_world_usable();
}

TEST(MpiFaults, MismatchedCollectivesNameBothSides) {
  GroupPtr group =
      fresh_group(scaled(std::chrono::seconds(10), kMpiCeiling), /*check_collectives=*/true);
  LOOM_REQUIRE_TWO_RANKS(*group);
  Tensor t = ones({4});
  const std::string message = error_of([&] {
    if (group->rank() == 1) {
      group->broadcast(t, 0)->wait();
    } else {
      group->all_reduce(t)->wait();
    }
  });
  // Every rank fails naming both sides: its own comparison, or (when a peer's abort notice
  // overtakes the last bytes of the fingerprint exchange) the comparison of the peer that told it.
  EXPECT_CONTAINS(message, "collectives differ across ranks");
  EXPECT_CONTAINS(message, "all_reduce #0 (sum, float32");
  EXPECT_CONTAINS(message, "rank 1 called broadcast #0 (root 0, float32");
  EXPECT_TRUE(group->is_aborted());
  expect_world_usable();
}

TEST(MpiFaults, DestroyingAGroupWithPendingWorkTellsThePeers) {
  GroupPtr group = fresh_group(scaled(std::chrono::seconds(10), kMpiCeiling));
  LOOM_REQUIRE_TWO_RANKS(*group);
  if (group->rank() == 0) {
    Tensor t = ones({3});
    dist::WorkPtr pending = group->all_reduce(t);  // the others never join it
    group.reset();
    EXPECT_LOOM_ERROR(pending->wait(), "was destroyed with 1 collectives pending");
  } else {
    // Told by rank 0, before its own timeout.
    EXPECT_TRUE(aborted_within(*group, scaled(std::chrono::seconds(8), std::chrono::seconds(80))));
    EXPECT_CONTAINS(group->abort_reason(),
                    "rank 0 of " + std::to_string(group->size()) + " aborted the group: rank 0 of");
  }
  expect_world_usable();
}

}  // namespace
}  // namespace loom::testing
