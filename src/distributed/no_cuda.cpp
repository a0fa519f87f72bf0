// The CUDA parts of loom::dist in a build without CUDA: a clear error, never a fallback.
#include "loom/distributed/flat_copy.h"
#include "loom/distributed/nccl_group.h"
#include "loom/distributed/reduce_buffers.h"
#include "loom/tensor/primitives.h"

namespace loom::dist {

NcclId nccl_unique_id() { loom::detail::throw_no_cuda("nccl_unique_id"); }

GroupPtr make_nccl_group(const NcclId&, int, int, int, const GroupOptions&,
                         const std::atomic<bool>*, std::shared_ptr<Store>) {
  loom::detail::throw_no_cuda("the NCCL backend");
}

std::string nccl_version() { return "none"; }

void copy_all_cuda(const std::vector<FlatCopy>&, int) {
  loom::detail::throw_no_cuda("copy_all_cuda");
}

void reduce_buffers_cuda(void*, const std::vector<const void*>&, int64_t, DType, ReduceOp,
                         cuda::StreamHandle) {
  loom::detail::throw_no_cuda("reduce_buffers_cuda");
}

}  // namespace loom::dist
