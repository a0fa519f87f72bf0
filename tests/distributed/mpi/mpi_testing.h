// Helpers of the MPI tests: fresh groups with a deadline, and the check that the MPI world
// still works after a fault. Every rank runs every test, in the same order.
#pragma once

#include <chrono>

#include "distributed/collective_cases.h"
#include "loom/distributed/mpi/mpi_group.h"
#include "testing.h"

namespace loom::testing {

// Where the tests' scaled timeouts stop: inside CTest's 120 s for the mpirun test.
inline constexpr std::chrono::seconds kMpiCeiling(100);

// A new group over every rank (a fresh communicator, so a fault in one test cannot reach the
// next). Tests that pass finish in well under a second; the timeout turns a bug into a failure.
inline dist::GroupPtr fresh_group(
    std::chrono::milliseconds timeout = scaled(std::chrono::seconds(30), kMpiCeiling),
    bool check_collectives = false) {
  dist::GroupOptions options;
  options.timeout = timeout;
  options.check_collectives = check_collectives;
  return dist::make_mpi_group(options);
}

// A collective on a new group still works: what every fault test ends with.
inline void expect_world_usable() {
  dist::GroupPtr group = fresh_group();
  dist::ProcessGroup& g = *group;  // the name LOOM_EXPECT_VALUES reports
  Tensor t = rank_tensor(g, 5, kFloat32);
  g.all_reduce(t)->wait();
  LOOM_EXPECT_VALUES(host_values(t), expected_reduce(dist::ReduceOp::Sum, g.size(), int64_t(i)),
                     "all_reduce on a new group after a fault");
}

// For tests that give rank 1 its own part: every rank skips alike, so none waits for another.
#define LOOM_REQUIRE_TWO_RANKS(group)                                   \
  do {                                                                  \
    if ((group).size() < 2) GTEST_SKIP() << "needs at least two ranks"; \
  } while (0)

// Seconds since `start`.
inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace loom::testing
