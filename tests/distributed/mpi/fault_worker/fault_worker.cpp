// The program of the MPI fault jobs (expect_job_fails.cmake), run by mpiexec with two ranks
// through dist::run_in_job, as loom-catdog runs its ranks. Each scenario is a failure that must
// end the whole job within seconds, every rank's error naming its cause:
//   sigkill       rank 1 SIGKILLs itself before an all_reduce that rank 0 waits on
//   fail-outside  rank 0 fails outside any collective (as a full disk would) while rank 1 waits
//                 in an all_reduce
//   freeze        rank 1 SIGSTOPs itself; rank 0's all_reduce times out (LOOM_DIST_TIMEOUT)
//   mismatch      rank 0 all-reduces 4096 floats and rank 1 256, without LOOM_DIST_CHECK: the
//                 always-on guard must fail both before MPI touches a buffer
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>

#include "loom/distributed/launch.h"

namespace {

using loom::dist::GroupPtr;

void say(const GroupPtr& group, const std::string& what) {
  std::printf("fault_worker: rank %d %s\n", group->rank(), what.c_str());
  std::fflush(stdout);
}

void all_reduce(const GroupPtr& group, int64_t n) {
  loom::Tensor t = loom::ones({n});
  group->all_reduce(t)->wait();
  say(group, "finished the all_reduce");
}

void run(const std::string& scenario, const GroupPtr& group) {
  say(group, "reached " + scenario);
  group->barrier()->wait();  // both ranks are in the job: the fault comes next
  if (scenario == "sigkill") {
    if (group->rank() == 1) std::raise(SIGKILL);
    all_reduce(group, 16);
  } else if (scenario == "fail-outside") {
    if (group->rank() == 0) throw loom::Error("rank 0 ran out of disk (fail-outside scenario)");
    all_reduce(group, 16);
  } else if (scenario == "freeze") {
    if (group->rank() == 1) std::raise(SIGSTOP);
    all_reduce(group, 16);
  } else if (scenario == "mismatch") {
    all_reduce(group, group->rank() == 0 ? 4096 : 256);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string scenario = argc == 2 ? argv[1] : "";
  if (scenario != "sigkill" && scenario != "fail-outside" && scenario != "freeze" &&
      scenario != "mismatch") {
    std::fprintf(stderr, "usage: fault_worker sigkill|fail-outside|freeze|mismatch\n");
    return 2;
  }
  loom::dist::GroupOptions options;
  options.timeout = loom::dist::resolve_timeout("", "", std::chrono::seconds(60));
  int rank = -1;
  try {
    loom::dist::run_in_job(
        loom::kCPU,
        [&](const GroupPtr& group) {
          rank = group->rank();
          run(scenario, group);
        },
        options, loom::dist::Backend::Mpi);
  } catch (const std::exception& e) {
    std::printf("fault_worker: rank %d failed: %s\n", rank, e.what());
    std::fflush(stdout);
    return 1;
  }
  return 0;
}
