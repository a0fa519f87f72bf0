// Per-channel sums over an [n, c, inner] tensor (NCHW with inner = H * W; or NHWC): batch norm's
// moments and gradient terms, and a convolution's bias gradient. Each channel is cut into
// chunks reduced by separate blocks (so even a few channels fill the GPU), in double, into
// partial results that a second, tiny pass adds in a fixed order: deterministic, no atomics.
// When one chunk per channel is enough, the first pass finishes the channel itself.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "loom/ops/cuda/row_launch.cuh"
#include "loom/tensor/cuda/check.h"
#include "loom/tensor/tensor.h"

namespace loom::detail {

// [n, c, inner]; channels_last: stored [n, inner, c] (NHWC), channels fastest.
struct ChannelLayout {
  int64_t n = 0, c = 0, inner = 0;
  bool channels_last = false;
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

// Channels last: the data is m = n * inner rows of c channels. Block (tile, chunk) covers
// kTileChannels channels of one chunk of rows; thread (x, y) sums channel tile * kTileChannels + x
// over rows y, y + kTileRows, ... of the chunk (a warp reads 32 neighbouring channels of one row:
// coalesced), and the kTileRows partial sums of each channel are added in a fixed order.
constexpr int kTileChannels = 32, kTileRows = kThreads / kTileChannels;

template <bool kFinal, typename I, typename Term, typename Finish>
__global__ void __launch_bounds__(kThreads)
    rows_partial_kernel(ChannelLayout g, I chunk_len, Term term, Finish finish, double* partial_a,
                        double* partial_b) {
  const int64_t c = blockIdx.x * int64_t(kTileChannels) + threadIdx.x;
  const I m = static_cast<I>(g.n * g.inner);
  const I begin = static_cast<I>(blockIdx.y) * chunk_len;
  const I end = m - begin < chunk_len ? m : begin + chunk_len;
  double a = 0.0, b = 0.0;
  if (c < g.c) {
    for (I row = begin + static_cast<I>(threadIdx.y); row < end; row += kTileRows) {
      term(static_cast<int64_t>(row) * g.c + c, c, a, b);
    }
  }
  __shared__ double shared_a[kTileRows][kTileChannels], shared_b[kTileRows][kTileChannels];
  shared_a[threadIdx.y][threadIdx.x] = a, shared_b[threadIdx.y][threadIdx.x] = b;
  __syncthreads();
  if (threadIdx.y != 0 || c >= g.c) return;
  for (int k = 1; k < kTileRows; ++k) a += shared_a[k][threadIdx.x], b += shared_b[k][threadIdx.x];
  if constexpr (kFinal) {
    finish(c, a, b);
  } else {
    const int64_t slot = c * gridDim.y + blockIdx.y;
    partial_a[slot] = a, partial_b[slot] = b;
  }
}

// One warp a channel: lane l adds chunks l, l + 32, ..., then a shuffle tree adds the lanes (a
// fixed order: deterministic). Channels last can have hundreds of chunks a channel, which one
// thread a channel took 60 us to add for resnet18's first layers.
constexpr int kCombineWarps = kThreads / 32;

template <typename Finish>
__global__ void combine_kernel(int64_t channels, int64_t chunks, const double* partial_a,
                               const double* partial_b, Finish finish) {
  const int lane = threadIdx.x % 32;
  for (int64_t c = blockIdx.x * int64_t(kCombineWarps) + threadIdx.x / 32; c < channels;
       c += int64_t(gridDim.x) * kCombineWarps) {
    double a = 0.0, b = 0.0;
    for (int64_t k = lane; k < chunks; k += 32)
      a += partial_a[c * chunks + k], b += partial_b[c * chunks + k];
    for (int offset = 16; offset > 0; offset /= 2) {
      a += __shfl_down_sync(0xffffffffu, a, offset);
      b += __shfl_down_sync(0xffffffffu, b, offset);
    }
    if (lane == 0) finish(c, a, b);
  }
}

template <typename I, typename Term, typename Finish>
void launch(const ChannelLayout& g, const Term& term, const Finish& finish, int device,
            cudaStream_t stream) {
  const int64_t m = g.n * g.inner;
  const int64_t target_blocks = 8LL * multiprocessor_count(device);
  // Channel-major: a block per (channel, chunk); channels last: a block per (32 channels, chunk),
  // each of its threads reading a kTileRows-th of the chunk's rows.
  const int64_t tiles = g.channels_last ? ceil_div(g.c, kTileChannels) : g.c;
  const int64_t per_block = g.channels_last ? kTileRows * kMinPerThread : kThreads * kMinPerThread;
  const int64_t chunks = std::clamp<int64_t>(
      std::min(ceil_div(target_blocks, tiles), ceil_div(m, per_block)), 1, 65535);
  const int64_t chunk_len = std::max<int64_t>(ceil_div(m, chunks), 1);
  // An empty channel still gets one block, which finishes it with zero sums.
  const dim3 grid(static_cast<unsigned>(tiles),
                  static_cast<unsigned>(std::max<int64_t>(ceil_div(m, chunk_len), 1)));
  const dim3 block = g.channels_last ? dim3(kTileChannels, kTileRows) : dim3(kThreads);
  auto run_partial = [&](auto final, double* partial_a, double* partial_b) {
    constexpr bool kFinal = decltype(final)::value;
    if (g.channels_last) {
      rows_partial_kernel<kFinal, I><<<grid, block, 0, stream>>>(g, static_cast<I>(chunk_len), term,
                                                                 finish, partial_a, partial_b);
    } else {
      partial_kernel<kFinal, I><<<grid, block, 0, stream>>>(g, static_cast<I>(chunk_len), term,
                                                            finish, partial_a, partial_b);
    }
    LOOM_CUDA_KERNEL_CHECK();
  };
  if (grid.y == 1) {
    run_partial(std::true_type{}, nullptr, nullptr);
    return;
  }
  // Scratch from the caching allocator on this stream: freeing it at scope exit is safe, a later
  // user of the block is ordered after these kernels on the same stream.
  const Tensor scratch =
      empty({2, g.c * grid.y}, TensorOptions(kFloat64).device(cuda_device(device)));
  double* partial_a = scratch.data_ptr<double>();
  double* partial_b = partial_a + g.c * grid.y;
  run_partial(std::false_type{}, partial_a, partial_b);
  const unsigned combine_blocks =
      static_cast<unsigned>(std::min<int64_t>(ceil_div(g.c, kCombineWarps), 65535));
  combine_kernel<<<combine_blocks, kThreads, 0, stream>>>(g.c, int64_t(grid.y), partial_a,
                                                          partial_b, finish);
  LOOM_CUDA_KERNEL_CHECK();
}

}  // namespace channel_reduce_impl

// For every channel c: a, b = sums of term(i, c, a, b) over its elements (i: flat index into
// the tensor), then finish(c, a, b) once. Term and Finish are device functors.
template <typename Term, typename Finish>
void channel_reduce(const ChannelLayout& g, const Term& term, const Finish& finish, int device,
                    cudaStream_t stream) {
  LOOM_ASSERT(g.c >= 1 && g.c <= std::numeric_limits<int32_t>::max(), "channel_reduce: ", g.c,
              " channels");
  // The within-channel position plus one block's stride must stay below the type's limit.
  if (g.n * g.inner + channel_reduce_impl::kThreads < std::numeric_limits<int32_t>::max()) {
    channel_reduce_impl::launch<uint32_t>(g, term, finish, device, stream);
  } else {
    channel_reduce_impl::launch<int64_t>(g, term, finish, device, stream);
  }
}

}  // namespace loom::detail
