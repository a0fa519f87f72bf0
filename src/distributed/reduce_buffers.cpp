// reduce_buffers_cpu: the rank-order fold of reduce_buffers.h on the CPU.
#include "loom/distributed/reduce_buffers.h"

#include "loom/tensor/error.h"
#include "loom/tensor/parallel.h"

namespace loom::dist {

void reduce_buffers_cpu(void* dst, const std::vector<const void*>& srcs, int64_t n, DType dtype,
                        ReduceOp op) {
  LOOM_ASSERT(!srcs.empty(), "reduce_buffers_cpu: no sources");
  LOOM_DISPATCH_ALL(dtype, "reduce", [&] {
    auto* out = static_cast<scalar_t*>(dst);
    const int count = static_cast<int>(srcs.size());
    parallel_for(
        n,
        [&](int64_t i) {
          scalar_t acc = static_cast<const scalar_t*>(srcs[0])[i];
          for (int k = 1; k < count; ++k)
            acc = combine(op, acc, static_cast<const scalar_t*>(srcs[k])[i]);
          if (op == ReduceOp::Avg) acc = static_cast<scalar_t>(acc / static_cast<scalar_t>(count));
          out[i] = acc;
        },
        1 << 16);
  });
}

}  // namespace loom::dist
