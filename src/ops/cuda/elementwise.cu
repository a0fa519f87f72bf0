// The CUDA kernel of every elementwise op: a grid-stride loop over the output on the current
// stream of the output's device. Dense operands index directly; broadcast or strided ones go
// through a StridedIndexer (see ops/kernels/elementwise_launch.h).
#include <algorithm>

#include "ops/kernels/elementwise_launch.h"
#include "tensor/cuda/check.h"
#include "tensor/cuda/runtime.h"

namespace loom::detail {

namespace {

constexpr int kThreads = 256;

// Enough blocks to cover n, capped so that very large tensors loop instead.
int64_t blocks_for(int64_t n) {
  return std::min<int64_t>((n + kThreads - 1) / kThreads, 65535LL * 32);
}

template <typename F, typename Out, typename... Operands>
__global__ void elementwise_kernel(F f, Out* out, int64_t n, Operands... operands) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += stride) {
    out[i] = f(operands[i]...);
  }
}

}  // namespace

void cuda_elementwise(ElementwiseOp op, const char* name, const Tensor& out,
                      const std::vector<Tensor>& inputs, const OpParams& params) {
  const int device = out.device().index;
  cuda::DeviceGuard guard(device);
  cudaStream_t stream = cuda::current_stream(device);
  launch_elementwise(op, name, out, inputs, params,
                     [&](const auto& f, auto* out_data, int64_t n, const auto&... operands) {
                       elementwise_kernel<<<blocks_for(n), kThreads, 0, stream>>>(f, out_data, n,
                                                                                  operands...);
                       LOOM_CUDA_KERNEL_CHECK();
                     });
}

}  // namespace loom::detail
