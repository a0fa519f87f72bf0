// CUDA softmax / log_softmax over contiguous rows: a warp (short rows) or a block (long rows)
// per row finds the row maximum, sums exp(x - max), then writes the normalised row.
#include <cmath>

#include "loom/ops/cuda/row_launch.cuh"
#include "loom/ops/softmax_backend.h"
#include "loom/tensor/cuda/runtime.h"

namespace loom::detail {

namespace {

__device__ __forceinline__ float exp_of(float x) { return expf(x); }
__device__ __forceinline__ double exp_of(double x) { return exp(x); }
__device__ __forceinline__ float log_of(float x) { return logf(x); }
__device__ __forceinline__ double log_of(double x) { return log(x); }

// Maximum that propagates NaN, so a row holding NaN comes out NaN as on the CPU.
template <typename T>
struct MaxOp {
  using acc_t = T;
  __device__ T identity() const { return -INFINITY; }
  __device__ T combine(T a, T b) const { return (is_nan_value(a) || a > b) ? a : b; }
};

template <typename T>
struct AddOp {
  using acc_t = T;
  __device__ T identity() const { return T(0); }
  __device__ T combine(T a, T b) const { return a + b; }
};

template <int kGroup, typename T>
__global__ void softmax_rows_kernel(const T* in, T* out, int64_t rows, int64_t length, bool log) {
  __shared__ alignas(16) unsigned char smem[32 * sizeof(T)];
  T* shared = reinterpret_cast<T*>(smem);
  const int lane = threadIdx.x % kGroup;
  const int64_t groups_per_block = blockDim.x / kGroup;
  const int64_t stride = int64_t(gridDim.x) * groups_per_block;
  for (int64_t row = blockIdx.x * groups_per_block + threadIdx.x / kGroup; row < rows;
       row += stride) {
    const T* x = in + row * length;
    T* y = out + row * length;
    const MaxOp<T> max_op;
    T m = max_op.identity();
    for (int64_t j = lane; j < length; j += kGroup) m = max_op.combine(m, x[j]);
    m = group_reduce<kGroup>(max_op, m, shared);
    T total = 0;
    for (int64_t j = lane; j < length; j += kGroup) total += exp_of(x[j] - m);
    total = group_reduce<kGroup>(AddOp<T>{}, total, shared);
    if (log) {
      const T shift = m + log_of(total);
      for (int64_t j = lane; j < length; j += kGroup) y[j] = x[j] - shift;
    } else {
      const T inv = T(1) / total;
      for (int64_t j = lane; j < length; j += kGroup) y[j] = exp_of(x[j] - m) * inv;
    }
  }
}

}  // namespace

void cuda_softmax_rows(const Tensor& in, const Tensor& out, int64_t rows, int64_t length,
                       bool log) {
  const int device = in.device().index;
  cuda::DeviceGuard guard(device);
  cudaStream_t stream = cuda::current_stream(device);
  LOOM_DISPATCH_FLOATING(in.dtype(), log ? "log_softmax" : "softmax", [&] {
    const scalar_t* x = in.data_ptr<scalar_t>();
    scalar_t* y = out.data_ptr<scalar_t>();
    if (length <= kWarpRowMax) {
      softmax_rows_kernel<32>
          <<<row_blocks(rows, 32, device), kRowBlock, 0, stream>>>(x, y, rows, length, log);
    } else {
      softmax_rows_kernel<kRowBlock>
          <<<row_blocks(rows, kRowBlock, device), kRowBlock, 0, stream>>>(x, y, rows, length, log);
    }
    LOOM_CUDA_KERNEL_CHECK();
  });
}

}  // namespace loom::detail
