// The program the launch tests start once per rank: it joins its job with init_from_environment
// (RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT, or mpirun) and runs one scenario, telling the
// outcome by its exit code. Nothing in it knows the backend, so mpirun can start it too.
//
//   dist_worker collectives|kill-rank|throw-rank|mismatch|fail-outside|freeze-rank|freeze-server
//
//   collectives    every collective on every dtype, answers in closed form
//   kill-rank      rank 1 SIGKILLs itself after a barrier; the others' next collective must fail
//   throw-rank     rank 1 aborts its group with a reason; every collective must fail naming it
//   mismatch       rank 1 broadcasts where the others all-reduce, check_collectives on; all fail
//   fail-outside   rank 1 throws outside any collective (as a full disk would); run_in_job must
//                  carry its error to the others, whose collective fails naming it
//   freeze-rank    rank 1 SIGSTOPs itself after a barrier; the others must fail naming it by the
//                  heartbeat (LOOM_DIST_HEARTBEAT), not the group's timeout
//   freeze-server  the same for rank 0, which serves the TCP store
//
// Exit codes: 0 all as expected (collectives); 1 a wrong value; 2 bad usage; 3 failed with the
// error the scenario expects; 4 failed otherwise; 5 succeeded where it should have failed;
// 6 could not join the job. LOOM_DIST_TIMEOUT (seconds) sets the group's timeout (default 60).
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>

#include "collective_checks.h"
#include "loom/distributed/launch.h"
#include "worker_timeout.h"

namespace {

using loom::dist::ProcessGroup;

enum Exit {
  kOk = 0,
  kWrong = 1,
  kUsage = 2,
  kFailedAsExpected = 3,
  kFailedOtherwise = 4,
  kUnexpectedSuccess = 5,
  kJoinFailed = 6
};

// What the others' error must name when rank 1 dies. Only the TCP store names it that way;
// other backends (MPI) have their own words, so there any loom::Error will do.
const char* kKilledRankFragment = "rank 1 disconnected";
const char* kThrowReason = "rank 1 threw on purpose (throw-rank scenario)";
const char* kOutsideReason = "rank 1 ran out of disk (fail-outside scenario)";

int expect_failure(ProcessGroup& group, const std::function<void()>& collectives,
                   const std::string& fragment) {
  try {
    collectives();
  } catch (const loom::Error& e) {
    const bool named = fragment.empty() || std::strstr(e.what(), fragment.c_str()) != nullptr;
    std::fprintf(stderr, "dist_worker %s: failed %s: %s\n", group.who().c_str(),
                 named ? "as expected" : "without naming the expected cause", e.what());
    return named ? kFailedAsExpected : kFailedOtherwise;
  }
  std::fprintf(stderr, "dist_worker %s: the collectives succeeded but should have failed\n",
               group.who().c_str());
  return kUnexpectedSuccess;
}

int collectives(ProcessGroup& group) {
  const std::vector<std::string> wrong = loom::testing::check_every_collective(group);
  for (const std::string& w : wrong)
    std::fprintf(stderr, "dist_worker %s: %s\n", group.who().c_str(), w.c_str());
  return wrong.empty() ? kOk : kWrong;
}

int kill_rank(ProcessGroup& group) {
  const bool tcp = std::strcmp(group.backend(), "tcp") == 0;
  if (group.rank() == 1) {
    group.barrier()->wait();  // every rank has joined and is alive: the failure comes next
    std::fflush(nullptr);
    std::raise(SIGKILL);
  }
  // The barrier is inside: rank 1 may die before this rank has read its part of it.
  return expect_failure(
      group,
      [&] {
        group.barrier()->wait();
        group.all_reduce(loom::ones({4}))->wait();
      },
      tcp ? kKilledRankFragment : "");
}

int throw_rank(ProcessGroup& group) {
  if (group.rank() == 1) group.abort(kThrowReason);
  return expect_failure(
      group, [&] { group.all_reduce(loom::ones({4}))->wait(); }, kThrowReason);
}

int mismatch(ProcessGroup& group) {
  return expect_failure(
      group,
      [&] {
        loom::Tensor t = loom::ones({4});
        if (group.rank() == 1) {
          group.broadcast(t, 0)->wait();
        } else {
          group.all_reduce(t)->wait();
        }
      },
      "collectives differ");
}

// Rank 1 may leave the first barrier while others still read its part of it: their barrier
// may fail too, so it is inside what must fail.
int fail_outside(ProcessGroup& group) {
  if (group.rank() == 1) {
    group.barrier()->wait();
    throw loom::Error(kOutsideReason);
  }
  return expect_failure(
      group,
      [&] {
        group.barrier()->wait();
        group.all_reduce(loom::ones({4}))->wait();
      },
      kOutsideReason);
}

// `frozen` stops itself once every rank has joined; the others' next collective must fail
// naming it (TCP: by the store's heartbeat).
int freeze(ProcessGroup& group, int frozen, const char* fragment) {
  if (group.rank() == frozen) {
    group.barrier()->wait();
    std::fflush(nullptr);
    std::raise(SIGSTOP);
  }
  const bool tcp = std::strcmp(group.backend(), "tcp") == 0;
  return expect_failure(
      group,
      [&] {
        group.barrier()->wait();
        group.barrier()->wait();
        group.all_reduce(loom::ones({4}))->wait();
      },
      tcp ? fragment : "");
}

int freeze_rank(ProcessGroup& group) { return freeze(group, 1, "rank 1 stopped answering"); }
int freeze_server(ProcessGroup& group) { return freeze(group, 0, "rank 0 is stopped or frozen"); }

}  // namespace

int main(int argc, char** argv) {
  const std::string scenario = argc == 2 ? argv[1] : "";
  int (*run)(ProcessGroup&) = nullptr;
  if (scenario == "collectives") run = collectives;
  if (scenario == "kill-rank") run = kill_rank;
  if (scenario == "throw-rank") run = throw_rank;
  if (scenario == "mismatch") run = mismatch;
  if (scenario == "fail-outside") run = fail_outside;
  if (scenario == "freeze-rank") run = freeze_rank;
  if (scenario == "freeze-server") run = freeze_server;
  if (run == nullptr) {
    std::fprintf(stderr,
                 "usage: dist_worker collectives|kill-rank|throw-rank|mismatch|fail-outside|"
                 "freeze-rank|freeze-server\n");
    return kUsage;
  }
  loom::dist::GroupOptions options;
  options.timeout = std::chrono::milliseconds(60000);
  if (!timeout_from_environment("dist_worker", &options.timeout)) return kUsage;
  options.check_collectives = scenario == "mismatch";

  // As loom-catdog runs its ranks: an exception leaving a rank aborts its group for the others.
  loom::dist::GroupPtr joined;
  int code = kOk;
  try {
    loom::dist::run_in_job(
        loom::kCPU,
        [&](const loom::dist::GroupPtr& group) {
          joined = group;
          code = run(*group);
        },
        options, loom::dist::Backend::Auto);
  } catch (const std::exception& e) {
    if (!joined) {
      std::fprintf(stderr, "dist_worker: could not join the job: %s\n", e.what());
      return kJoinFailed;
    }
    std::fprintf(stderr, "dist_worker %s: %s failed: %s\n", joined->who().c_str(), scenario.c_str(),
                 e.what());
    const bool expected = scenario == "fail-outside" && std::strstr(e.what(), kOutsideReason);
    code = expected ? kFailedAsExpected : kFailedOtherwise;
  }
  std::fprintf(stderr, "dist_worker %s: %s: exit %d\n", joined->who().c_str(), scenario.c_str(),
               code);
  return code;
}
