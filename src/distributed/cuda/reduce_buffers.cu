// reduce_buffers_cuda: the rank-order fold of reduce_buffers.h as one kernel per eight ranks.
#include <algorithm>

#include "loom/distributed/reduce_buffers.h"
#include "loom/tensor/cuda/check.h"

namespace loom::dist {

namespace {

constexpr int kPack = 8;  // source pointers passed by value to one launch
struct Sources {
  const void* ptr[kPack];
};

// dst[i] = (first ? srcs[0][i] : dst[i]) (+) the remaining sources, then / divisor when > 0.
template <typename T>
__global__ void fold_kernel(T* dst, Sources srcs, int count, bool first, int64_t n, ReduceOp op,
                            int divisor) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int k = 0;
    T acc = first ? static_cast<const T*>(srcs.ptr[k++])[i] : dst[i];
    for (; k < count; ++k) acc = combine(op, acc, static_cast<const T*>(srcs.ptr[k])[i]);
    if (divisor > 0) acc = static_cast<T>(acc / static_cast<T>(divisor));
    dst[i] = acc;
  }
}

}  // namespace

void reduce_buffers_cuda(void* dst, const std::vector<const void*>& srcs, int64_t n, DType dtype,
                         ReduceOp op, cuda::StreamHandle stream) {
  LOOM_ASSERT(!srcs.empty(), "reduce_buffers_cuda: no sources");
  if (n == 0) return;
  constexpr int kThreads = 256;
  const int64_t blocks = std::min<int64_t>((n + kThreads - 1) / kThreads, 4096);
  const int total = static_cast<int>(srcs.size());
  LOOM_DISPATCH_ALL(dtype, "reduce", [&] {
    // Later passes fold into dst what earlier ones left there, so the order stays rank order.
    for (int begin = 0; begin < total; begin += kPack) {
      Sources pack{};
      const int count = std::min(kPack, total - begin);
      for (int k = 0; k < count; ++k) pack.ptr[k] = srcs[begin + k];
      const bool last = begin + count == total;
      fold_kernel<scalar_t><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
          static_cast<scalar_t*>(dst), pack, count, begin == 0, n, op,
          last && op == ReduceOp::Avg ? total : 0);
      LOOM_CUDA_KERNEL_CHECK();
    }
  });
}

}  // namespace loom::dist
