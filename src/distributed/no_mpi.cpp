// Stands in for src/distributed/mpi/ in a build without MPI.
#include "loom/distributed/mpi/mpi_group.h"

namespace loom::dist {

GroupPtr make_mpi_group(const GroupOptions& /*options*/) {
  throw Error("loom was built without MPI (install libopenmpi-dev and rebuild)");
}

void end_mpi_job_at_exit() {}

}  // namespace loom::dist
