// Per-channel sums over an [n, c, inner] tensor (NCHW with inner = H * W): batch norm's
// moments and gradient terms, and a convolution's bias gradient. Each channel is cut into
// chunks reduced by separate blocks (so even a few channels fill the GPU), in double, into
// partial results that a second, tiny pass adds in a fixed order: deterministic, no atomics.
// When one chunk per channel is enough, the first pass finishes the channel itself.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <limits>

#include "loom/ops/cuda/row_launch.cuh"
#include "loom/tensor/cuda/check.h"
#include "loom/tensor/tensor.h"

namespace loom::detail {

struct ChannelLayout {
  int64_t n = 0, c = 0, inner = 0;
};

namespace channel_reduce_impl {

constexpr int kThreads = 256;
constexpr int64_t kMinPerThread = 16;  // elements a thread reads at least per chunk

// Sums (a, b) over the block; thread 0 receives the totals.
__device__ __forceinline__ void block_sum(double& a, double& b) {
  __shared__ double shared_a[kThreads / 32], shared_b[kThreads / 32];
  for (int offset = 16; offset > 0; offset /= 2) {
    a += __shfl_down_sync(0xffffffffu, a, offset);
    b += __shfl_down_sync(0xffffffffu, b, offset);
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) shared_a[warp] = a, shared_b[warp] = b;
  __syncthreads();
  if (warp == 0) {
    a = lane < kThreads / 32 ? shared_a[lane] : 0.0;
    b = lane < kThreads / 32 ? shared_b[lane] : 0.0;
    for (int offset = 16; offset > 0; offset /= 2) {
      a += __shfl_down_sync(0xffffffffu, a, offset);
      b += __shfl_down_sync(0xffffffffu, b, offset);
    }
  }
}

// Block (c, chunk) sums term(i, c, a, b) over elements [chunk * chunk_len, ...) of channel c's
// m = n * inner elements. kFinal: one chunk per channel, call finish; else store partials at
// [c * chunks + chunk]. I: index type of the within-channel position (divisions are cheaper
// in 32 bits).
template <bool kFinal, typename I, typename Term, typename Finish>
__global__ void __launch_bounds__(kThreads)
    partial_kernel(ChannelLayout g, I chunk_len, Term term, Finish finish, double* partial_a,
                   double* partial_b) {
  const int64_t c = blockIdx.x;
  const I m = static_cast<I>(g.n * g.inner), inner = static_cast<I>(g.inner);
  const I begin = static_cast<I>(blockIdx.y) * chunk_len;
  const I end = m - begin < chunk_len ? m : begin + chunk_len;
  double a = 0.0, b = 0.0;
  for (I j = begin + static_cast<I>(threadIdx.x); j < end; j += kThreads) {
    const I row = j / inner;
    term((static_cast<int64_t>(row) * g.c + c) * g.inner + (j - row * inner), c, a, b);
  }
  block_sum(a, b);
  if (threadIdx.x != 0) return;
  if constexpr (kFinal) {
    finish(c, a, b);
  } else {
    const int64_t slot = c * gridDim.y + blockIdx.y;
    partial_a[slot] = a, partial_b[slot] = b;
  }
}

template <typename Finish>
__global__ void combine_kernel(int64_t channels, int64_t chunks, const double* partial_a,
                               const double* partial_b, Finish finish) {
  for (int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; c < channels;
       c += int64_t(gridDim.x) * blockDim.x) {
    double a = 0.0, b = 0.0;
    for (int64_t k = 0; k < chunks; ++k) a += partial_a[c * chunks + k], b += partial_b[c * chunks + k];
    finish(c, a, b);
  }
}

template <typename I, typename Term, typename Finish>
void launch(const ChannelLayout& g, const Term& term, const Finish& finish, int device,
            cudaStream_t stream) {
  const int64_t m = g.n * g.inner;
  const int64_t target_blocks = 8LL * multiprocessor_count(device);
  const int64_t chunks = std::clamp<int64_t>(
      std::min(ceil_div(target_blocks, g.c), ceil_div(m, kThreads * kMinPerThread)), 1, 65535);
  const int64_t chunk_len = std::max<int64_t>(ceil_div(m, chunks), 1);
  // An empty channel still gets one block, which finishes it with zero sums.
  const dim3 grid(static_cast<unsigned>(g.c), static_cast<unsigned>(std::max<int64_t>(ceil_div(m, chunk_len), 1)));
  if (grid.y == 1) {
    partial_kernel<true, I><<<grid, kThreads, 0, stream>>>(g, static_cast<I>(chunk_len), term, finish,
                                                            nullptr, nullptr);
    LOOM_CUDA_KERNEL_CHECK();
    return;
  }
  // Scratch from the caching allocator on this stream: freeing it at scope exit is safe, a later
  // user of the block is ordered after these kernels on the same stream.
  const Tensor scratch = empty({2, g.c * grid.y}, TensorOptions(kFloat64).device(cuda_device(device)));
  double* partial_a = scratch.data_ptr<double>();
  double* partial_b = partial_a + g.c * grid.y;
  partial_kernel<false, I><<<grid, kThreads, 0, stream>>>(g, static_cast<I>(chunk_len), term, finish,
                                                           partial_a, partial_b);
  LOOM_CUDA_KERNEL_CHECK();
  const unsigned combine_blocks = static_cast<unsigned>(ceil_div(g.c, kThreads));
  combine_kernel<<<combine_blocks, kThreads, 0, stream>>>(g.c, int64_t(grid.y), partial_a, partial_b, finish);
  LOOM_CUDA_KERNEL_CHECK();
}

}  // namespace channel_reduce_impl

// For every channel c: a, b = sums of term(i, c, a, b) over its elements (i: flat index into
// the tensor), then finish(c, a, b) once. Term and Finish are device functors.
template <typename Term, typename Finish>
void channel_reduce(const ChannelLayout& g, const Term& term, const Finish& finish, int device,
                    cudaStream_t stream) {
  LOOM_ASSERT(g.c >= 1 && g.c <= std::numeric_limits<int32_t>::max(), "channel_reduce: ", g.c, " channels");
  // The within-channel position plus one block's stride must stay below the type's limit.
  if (g.n * g.inner + channel_reduce_impl::kThreads < std::numeric_limits<int32_t>::max()) {
    channel_reduce_impl::launch<uint32_t>(g, term, finish, device, stream);
  } else {
    channel_reduce_impl::launch<int64_t>(g, term, finish, device, stream);
  }
}

}  // namespace loom::detail
