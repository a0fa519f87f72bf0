// The mapping of loom's collectives, dtypes and reductions onto MPI's built-in ones.
#include "loom/distributed/mpi/mpi_collective.h"

#include <climits>

#include "loom/distributed/mpi/mpi_runtime.h"

namespace loom::dist::mpi {

namespace {

MPI_Datatype mpi_type(DType dtype) {
  switch (dtype) {
    case kFloat32:
      return MPI_FLOAT;
    case kFloat64:
      return MPI_DOUBLE;
    case kInt64:
      return MPI_INT64_T;
    case kInt32:
      return MPI_INT32_T;
    case kUInt8:
      return MPI_UINT8_T;
    case kBFloat16:
      break;  // MPI has no bfloat16 type
  }
  LOOM_FAIL("mpi: no MPI datatype for ", dtype_name(dtype));
}

// Avg sums: the division by the world size comes in finish().
MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Avg:
      return MPI_SUM;
    case ReduceOp::Max:
      return MPI_MAX;
    case ReduceOp::Min:
      return MPI_MIN;
  }
  LOOM_FAIL("mpi: no MPI reduction for ", reduce_op_name(op));
}

// MPI counts are int; a larger tensor is refused rather than silently truncated.
int mpi_count(const CollectiveInfo& info, int64_t numel) {
  LOOM_CHECK(numel <= INT_MAX, "mpi: ", info.describe(), " moves ", numel,
             " elements per rank, more than an MPI count holds (", INT_MAX, "); split the tensor");
  return static_cast<int>(numel);
}

}  // namespace

MPI_Request issue(const CollectiveInfo& info, const Tensor& input, const Tensor& output,
                  MPI_Comm comm) {
  MPI_Request request = MPI_REQUEST_NULL;
  switch (info.kind) {
    case OpKind::AllReduce:
      LOOM_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, output.raw_data(),
                                    mpi_count(info, output.numel()), mpi_type(info.dtype),
                                    mpi_op(info.reduce), comm, &request));
      break;
    case OpKind::Broadcast:
      LOOM_MPI_CHECK(MPI_Ibcast(output.raw_data(), mpi_count(info, output.numel()),
                                mpi_type(info.dtype), info.root, comm, &request));
      break;
    case OpKind::AllGather: {
      const int count = mpi_count(info, input.numel());
      LOOM_MPI_CHECK(MPI_Iallgather(input.raw_data(), count, mpi_type(info.dtype),
                                    output.raw_data(), count, mpi_type(info.dtype), comm,
                                    &request));
      break;
    }
    case OpKind::ReduceScatter:
      LOOM_MPI_CHECK(MPI_Ireduce_scatter_block(
          input.raw_data(), output.raw_data(), mpi_count(info, output.numel()),
          mpi_type(info.dtype), mpi_op(info.reduce), comm, &request));
      break;
    case OpKind::Barrier:
      LOOM_MPI_CHECK(MPI_Ibarrier(comm, &request));
      break;
  }
  return request;
}

void finish(const CollectiveInfo& info, const Tensor& output, int world_size) {
  const bool reduces = info.kind == OpKind::AllReduce || info.kind == OpKind::ReduceScatter;
  if (!reduces || info.reduce != ReduceOp::Avg) return;
  LOOM_DISPATCH_FLOATING(output.dtype(), "mpi avg", [&] {
    scalar_t* p = output.data_ptr<scalar_t>();
    const auto n = static_cast<scalar_t>(world_size);
    for (int64_t i = 0, e = output.numel(); i < e; ++i) p[i] /= n;
  });
}

}  // namespace loom::dist::mpi
