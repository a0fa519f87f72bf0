// Building blocks of the row kernels (reductions, softmax): a group of threads (one warp, or a
// whole block) owns a row and combines its partial results with warp shuffles.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "loom/ops/reduction_math.h"
#include "loom/tensor/cuda/check.h"

namespace loom::detail {

constexpr int kRowBlock = 256;         // threads per block of every row kernel
constexpr int64_t kWarpRowMax = 1024;  // rows up to this length get a warp, longer a block

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

inline int multiprocessor_count(int device) {
  int count = 0;
  LOOM_CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
  return count;
}

// Blocks for `groups` row groups of kGroup threads: enough to fill the GPU several times over,
// the kernels' grid-stride loops take the rest.
inline unsigned row_blocks(int64_t groups, int group_size, int device) {
  const int64_t per_block = kRowBlock / group_size;
  return static_cast<unsigned>(
      std::clamp<int64_t>(ceil_div(groups, per_block), 1, 32LL * multiprocessor_count(device)));
}

template <typename T>
__device__ __forceinline__ T shfl_xor(T v, int mask) {
  return __shfl_xor_sync(0xffffffffu, v, mask);
}
__device__ __forceinline__ uint8_t shfl_xor(uint8_t v, int mask) {
  return static_cast<uint8_t>(__shfl_xor_sync(0xffffffffu, static_cast<int>(v), mask));
}
__device__ __forceinline__ BFloat16 shfl_xor(BFloat16 v, int mask) {
  const int bits = __shfl_xor_sync(0xffffffffu, static_cast<int>(v.bits), mask);
  return BFloat16::from_bits(static_cast<uint16_t>(bits));
}
template <typename T>
__device__ __forceinline__ ValueIndex<T> shfl_xor(ValueIndex<T> v, int mask) {
  return {shfl_xor(v.value, mask), shfl_xor(v.index, mask)};
}

// Combines v over a group of kGroup threads (32: a warp; kRowBlock: the block); every thread
// of the group receives the result. `shared` holds 32 accumulators; the whole block must call
// this together when kGroup is the block.
template <int kGroup, typename Op>
__device__ __forceinline__ typename Op::acc_t group_reduce(const Op& op, typename Op::acc_t v,
                                                           typename Op::acc_t* shared) {
  for (int mask = 16; mask > 0; mask >>= 1) v = op.combine(v, shfl_xor(v, mask));
  if constexpr (kGroup > 32) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    __syncthreads();  // the previous call may still be reading shared
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    v = lane < kGroup / 32 ? shared[lane] : op.identity();
    for (int mask = 16; mask > 0; mask >>= 1) v = op.combine(v, shfl_xor(v, mask));
  }
  return v;
}

}  // namespace loom::detail
