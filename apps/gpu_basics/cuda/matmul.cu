// The hand-written matmul kernels (row-major C[m, n] = A[m, k] B[k, n]) and the one switch that
// picks a kernel. Both kernels handle any m, n, k: out-of-range loads read zeros, out-of-range
// outputs are not stored.
#include <cuda_runtime.h>

#include "cuda/cuda_check.h"
#include "cuda/launchers.h"

namespace loom::gpu_basics::cuda_impl {
namespace {

// Naive: one thread per output, both operands read from global memory for every multiply.
// threadIdx.x runs along a row of C, so a warp reads one row of B contiguously and one value
// of A (a broadcast).
__global__ void matmul_naive_kernel(const float* __restrict__ a, const float* __restrict__ b,
                                    float* __restrict__ c, int m, int n, int k) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= m || col >= n) return;
  float sum = 0.0f;
  for (int p = 0; p < k; ++p)
    sum += a[static_cast<int64_t>(row) * k + p] * b[static_cast<int64_t>(p) * n + col];
  c[static_cast<int64_t>(row) * n + col] = sum;
}

// Tiled: a block computes a kBM x kBN tile of C. For each step of kBK along k it stages an
// A tile (kBM x kBK) and a B tile (kBK x kBN) in shared memory, where every staged value is
// reused by 16 threads; each thread then accumulates a kTM x kTN patch of C in registers, so
// one shared-memory read feeds 8 multiply-adds. A thread's patch is two 4x4 blocks per
// direction, 64 apart, so that a warp reads shared memory in float4s without bank conflicts.
constexpr int kBM = 128;
constexpr int kBN = 128;
constexpr int kBK = 8;
constexpr int kTM = 8;
constexpr int kTN = 8;
constexpr int kTiledThreads = (kBM / kTM) * (kBN / kTN);  // 256
constexpr int kHalf = 64;                                 // distance between a patch's two halves
constexpr int kPadA = 4;  // keeps the transposed stores into As from hitting one bank

__global__ void __launch_bounds__(kTiledThreads)
    matmul_tiled_kernel(const float* __restrict__ a, const float* __restrict__ b,
                        float* __restrict__ c, int m, int n, int k) {
  // As holds the A tile transposed (As[p][i] = A[row0 + i][p0 + p]) so that a thread's
  // column of A values for one p is contiguous.
  __shared__ __align__(16) float As[kBK][kBM + kPadA];
  __shared__ __align__(16) float Bs[kBK][kBN];

  const int tid = threadIdx.x;
  const int row0 = blockIdx.y * kBM;
  const int col0 = blockIdx.x * kBN;
  const int tr = tid / (kBN / kTN);  // 0..15: which 4-row groups of the tile
  const int tc = tid % (kBN / kTN);  // 0..15: which 4-column groups

  float acc[kTM][kTN] = {};
  for (int p0 = 0; p0 < k; p0 += kBK) {
    // Consecutive threads read consecutive k of one A row and consecutive columns of one B row.
    for (int l = tid; l < kBM * kBK; l += kTiledThreads) {
      const int i = l / kBK;
      const int p = l % kBK;
      const int row = row0 + i;
      const int q = p0 + p;
      As[p][i] = (row < m && q < k) ? a[static_cast<int64_t>(row) * k + q] : 0.0f;
    }
    for (int l = tid; l < kBK * kBN; l += kTiledThreads) {
      const int p = l / kBN;
      const int j = l % kBN;
      const int q = p0 + p;
      const int col = col0 + j;
      Bs[p][j] = (q < k && col < n) ? b[static_cast<int64_t>(q) * n + col] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int p = 0; p < kBK; ++p) {
      float a_reg[kTM];
      float b_reg[kTN];
      const float4 a_lo = *reinterpret_cast<const float4*>(&As[p][tr * 4]);
      const float4 a_hi = *reinterpret_cast<const float4*>(&As[p][kHalf + tr * 4]);
      const float4 b_lo = *reinterpret_cast<const float4*>(&Bs[p][tc * 4]);
      const float4 b_hi = *reinterpret_cast<const float4*>(&Bs[p][kHalf + tc * 4]);
      a_reg[0] = a_lo.x, a_reg[1] = a_lo.y, a_reg[2] = a_lo.z, a_reg[3] = a_lo.w;
      a_reg[4] = a_hi.x, a_reg[5] = a_hi.y, a_reg[6] = a_hi.z, a_reg[7] = a_hi.w;
      b_reg[0] = b_lo.x, b_reg[1] = b_lo.y, b_reg[2] = b_lo.z, b_reg[3] = b_lo.w;
      b_reg[4] = b_hi.x, b_reg[5] = b_hi.y, b_reg[6] = b_hi.z, b_reg[7] = b_hi.w;
#pragma unroll
      for (int i = 0; i < kTM; ++i) {
#pragma unroll
        for (int j = 0; j < kTN; ++j) acc[i][j] += a_reg[i] * b_reg[j];
      }
    }
    __syncthreads();
  }

#pragma unroll
  for (int i = 0; i < kTM; ++i) {
    const int row = row0 + (i < 4 ? tr * 4 + i : kHalf + tr * 4 + i - 4);
    if (row >= m) continue;
#pragma unroll
    for (int j = 0; j < kTN; ++j) {
      const int col = col0 + (j < 4 ? tc * 4 + j : kHalf + tc * 4 + j - 4);
      if (col < n) c[static_cast<int64_t>(row) * n + col] = acc[i][j];
    }
  }
}

unsigned blocks(int64_t extent, int per_block) {
  return static_cast<unsigned>((extent + per_block - 1) / per_block);
}

}  // namespace

void matmul(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k,
            MatmulKernel kernel, int device, Stream stream) {
  const int mi = static_cast<int>(m);
  const int ni = static_cast<int>(n);
  const int ki = static_cast<int>(k);
  switch (kernel) {
    case MatmulKernel::kNaive: {
      const dim3 block(32, 8);
      matmul_naive_kernel<<<dim3(blocks(n, 32), blocks(m, 8)), block, 0, stream>>>(a, b, c, mi, ni,
                                                                                   ki);
      GPU_BASICS_KERNEL_CHECK();
      return;
    }
    case MatmulKernel::kTiled:
      matmul_tiled_kernel<<<dim3(blocks(n, kBN), blocks(m, kBM)), kTiledThreads, 0, stream>>>(
          a, b, c, mi, ni, ki);
      GPU_BASICS_KERNEL_CHECK();
      return;
    case MatmulKernel::kLibrary:
      matmul_cublas(a, b, c, m, n, k, /*tf32=*/false, device, stream);
      return;
    case MatmulKernel::kLibraryTf32:
      matmul_cublas(a, b, c, m, n, k, /*tf32=*/true, device, stream);
      return;
  }
  LOOM_ASSERT(false, "matmul: unknown kernel");
}

}  // namespace loom::gpu_basics::cuda_impl
