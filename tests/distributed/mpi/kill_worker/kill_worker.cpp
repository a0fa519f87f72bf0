// The program of the mpi_sigkill test, run by mpiexec with two ranks: rank 1 SIGKILLs itself
// before an all_reduce that rank 0 waits on. The job must end with a non-zero status rather
// than hang: mpiexec ends it when it sees a rank killed, or else rank 0's deadline does.
#include <csignal>
#include <cstdio>

#include "loom/distributed/mpi/mpi_group.h"

int main() {
  loom::dist::GroupOptions options;
  options.timeout = std::chrono::seconds(30);
  loom::dist::GroupPtr group = loom::dist::make_mpi_group(options);
  if (group->rank() == 1) {
    // The line tells the test the job started and reached the kill.
    std::printf("kill_worker: rank 1 kills itself\n");
    std::fflush(stdout);
    std::raise(SIGKILL);
  }
  loom::Tensor t = loom::ones({16});
  try {
    group->all_reduce(t)->wait();
  } catch (const loom::Error& e) {
    std::fprintf(stderr, "kill_worker: rank %d: %s\n", group->rank(), e.what());
    return 1;
  }
  std::printf("kill_worker: rank %d finished the all_reduce\n", group->rank());
  return 0;
}
