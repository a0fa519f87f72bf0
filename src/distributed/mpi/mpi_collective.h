// One collective as one non-blocking MPI call (MPI_Iallreduce, MPI_Ibcast, MPI_Iallgather,
// MPI_Ireduce_scatter_block, MPI_Ibarrier) on CPU tensors, and what remains to do once it has
// completed. Private to src/distributed/mpi/.
#pragma once

#include <mpi.h>

#include "loom/distributed/work.h"
#include "loom/tensor/tensor.h"

namespace loom::dist::mpi {

// Starts the collective `info` describes on `comm` and returns its request; all_reduce and
// broadcast work in place on `output`, barrier takes no tensors. The caller holds
// call_mutex(). Throws loom::Error when MPI refuses it or a count does not fit MPI's int.
MPI_Request issue(const CollectiveInfo& info, const Tensor& input, const Tensor& output,
                  MPI_Comm comm);

// After the request has completed: Avg is MPI_SUM divided here by the world size, once.
void finish(const CollectiveInfo& info, const Tensor& output, int world_size);

}  // namespace loom::dist::mpi
