// The program the launch tests start once per rank: it joins its job with init_from_environment
// (RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT, or mpirun) and runs one scenario, telling the
// outcome by its exit code. Nothing in it knows the backend, so mpirun can start it too.
//
//   dist_worker collectives|kill-rank|throw-rank|mismatch
//
//   collectives  every collective on every dtype, answers in closed form
//   kill-rank    rank 1 SIGKILLs itself after a barrier; the others' next collective must fail
//   throw-rank   rank 1 aborts its group with a reason; everyone's collective must fail naming it
//   mismatch     rank 1 broadcasts where the others all-reduce, check_collectives on; all fail
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

}  // namespace

int main(int argc, char** argv) {
  const std::string scenario = argc == 2 ? argv[1] : "";
  int (*run)(ProcessGroup&) = nullptr;
  if (scenario == "collectives") run = collectives;
  if (scenario == "kill-rank") run = kill_rank;
  if (scenario == "throw-rank") run = throw_rank;
  if (scenario == "mismatch") run = mismatch;
  if (run == nullptr) {
    std::fprintf(stderr, "usage: dist_worker collectives|kill-rank|throw-rank|mismatch\n");
    return kUsage;
  }
  loom::dist::GroupOptions options;
  options.timeout = std::chrono::milliseconds(60000);
  if (!timeout_from_environment("dist_worker", &options.timeout)) return kUsage;
  options.check_collectives = scenario == "mismatch";

  loom::dist::GroupPtr group;
  try {
    group = loom::dist::init_from_environment(loom::kCPU, options, loom::dist::Backend::Auto);
  } catch (const loom::Error& e) {
    std::fprintf(stderr, "dist_worker: could not join the job: %s\n", e.what());
    return kJoinFailed;
  }
  int code;
  try {
    code = run(*group);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dist_worker %s: %s failed: %s\n", group->who().c_str(), scenario.c_str(),
                 e.what());
    code = kFailedOtherwise;
  }
  std::fprintf(stderr, "dist_worker %s: %s: exit %d\n", group->who().c_str(), scenario.c_str(),
               code);
  return code;
}
