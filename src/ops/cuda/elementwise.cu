// The CUDA kernel of every elementwise op: a grid-stride loop over the output on the current
// stream of the output's device. Dense operands index directly; broadcast or strided ones go
// through a StridedIndexer (see ops/elementwise_backend.h). When every operand is dense and
// aligned, a thread reads 16 bytes of each at once (elementwise_vec_kernel); otherwise each
// computes kUnroll elements (a block-width apart, so accesses stay coalesced) before storing any,
// which keeps several loads in flight per thread; the loop counts in 32 bits when the size allows.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "loom/ops/elementwise_backend.h"
#include "loom/tensor/cuda/check.h"
#include "loom/tensor/cuda/runtime.h"
#include "loom/tensor/cuda/vector_pack.cuh"

namespace loom::detail {

namespace {

constexpr int kThreads = 256;

// Enough blocks to cover n, capped so that very large tensors loop instead.
int64_t blocks_for(int64_t n) {
  return std::min<int64_t>((n + kThreads - 1) / kThreads, 65535LL * 32);
}

constexpr int kUnroll = 4;

template <typename I, typename F, typename Out, typename... Operands>
__global__ void elementwise_kernel(F f, Out* out, I n, Operands... operands) {
  const I stride = I(gridDim.x) * I(blockDim.x) * kUnroll;
  for (I base = blockIdx.x * I(blockDim.x) * kUnroll + threadIdx.x; base < n; base += stride) {
    Out results[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const I i = base + u * I(blockDim.x);
      if (i < n) results[u] = f(operands[i]...);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const I i = base + u * I(blockDim.x);
      if (i < n) out[i] = results[u];
    }
  }
}

// Dense operands only: each thread reads V neighbouring elements of every operand at once (16
// bytes of the widest type: 8 bfloat16, 4 float), which a bfloat16 relu needs to get near the
// memory's bandwidth; the same functor on the same elements, so the results are the scalar
// kernel's.
template <int V, typename I, typename F, typename Out, typename... In>
__global__ void elementwise_vec_kernel(F f, Out* out, I vectors, DenseOperand<In>... operands) {
  for (I v = blockIdx.x * I(blockDim.x) + threadIdx.x; v < vectors;
       v += I(gridDim.x) * I(blockDim.x)) {
    Chunk<V, Out> result;
    [&](const Chunk<V, In>&... in) {
#pragma unroll
      for (int k = 0; k < V; ++k) result.v[k] = f(in.v[k]...);
    }(reinterpret_cast<const Chunk<V, In>*>(operands.data)[v]...);
    reinterpret_cast<Chunk<V, Out>*>(out)[v] = result;
  }
}

template <typename T>
struct IsDense : std::false_type {};
template <typename T>
struct IsDense<DenseOperand<T>> : std::true_type {};

// Whether indices up to n plus one grid stride (of `blocks` blocks) fit in 32 bits.
bool fits_int32(int64_t n, int64_t blocks) {
  return n + blocks * kThreads * kUnroll < std::numeric_limits<int32_t>::max();
}

}  // namespace

void cuda_elementwise(ElementwiseOp op, const char* name, const Tensor& out,
                      const std::vector<Tensor>& inputs, const OpParams& params) {
  const int device = out.device().index;
  cuda::DeviceGuard guard(device);
  cudaStream_t stream = cuda::current_stream(device);
  launch_elementwise(
      op, name, out, inputs, params,
      [&](const auto& f, auto* out_data, int64_t n, const auto&... operands) {
        using Out = std::remove_pointer_t<decltype(out_data)>;
        if constexpr ((IsDense<std::decay_t<decltype(operands)>>::value && ...)) {
          constexpr size_t widest = std::max({sizeof(Out), sizeof(*operands.data)...});
          constexpr int V = static_cast<int>(16 / widest);
          if (V > 1 && n % V == 0 && n / V < std::numeric_limits<int32_t>::max() / 2 &&
              aligned_to(out_data, V) && (aligned_to(operands.data, V) && ...)) {
            const int32_t vectors = static_cast<int32_t>(n / V);
            elementwise_vec_kernel<V>
                <<<blocks_for(vectors), kThreads, 0, stream>>>(f, out_data, vectors, operands...);
            LOOM_CUDA_KERNEL_CHECK();
            return;
          }
        }
        const int64_t blocks = blocks_for((n + kUnroll - 1) / kUnroll);
        if (fits_int32(n, blocks)) {
          elementwise_kernel<<<blocks, kThreads, 0, stream>>>(f, out_data, static_cast<int32_t>(n),
                                                              operands...);
        } else {
          elementwise_kernel<<<blocks, kThreads, 0, stream>>>(f, out_data, n, operands...);
        }
        LOOM_CUDA_KERNEL_CHECK();
      });
}

}  // namespace loom::detail
