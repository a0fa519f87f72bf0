// The CUDA half of gradient clipping: a fused sum of squares over many tensors (per-block
// reduction, one double atomicAdd per block) and a fused in-place scale.
#include "loom/optim/cuda/multi_tensor.cuh"
#include "loom/tensor/dtype.h"

namespace loom::optim::detail {

namespace {

template <typename T>
__global__ void __launch_bounds__(kChunkThreads)
    sum_squares_kernel(TensorListMeta<1> meta, double* out) {
  int tensor;
  int64_t n;
  const int64_t start = chunk_start(meta, tensor, n);
  const T* x = static_cast<const T*>(meta.ptrs[0][tensor]) + start;
  double sum = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) sum += double(x[i]) * double(x[i]);
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
  __shared__ double warp_sums[kChunkThreads / 32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_sums[warp] = sum;
  __syncthreads();
  if (warp == 0) {
    sum = lane < static_cast<int>(blockDim.x / 32) ? warp_sums[lane] : 0.0;
    for (int offset = 16; offset > 0; offset /= 2)
      sum += __shfl_down_sync(0xffffffffu, sum, offset);
    if (lane == 0) atomicAdd(out, sum);
  }
}

template <typename T>
__global__ void __launch_bounds__(kChunkThreads) scale_kernel(TensorListMeta<1> meta, T factor) {
  int tensor;
  int64_t n;
  const int64_t start = chunk_start(meta, tensor, n);
  T* x = static_cast<T*>(meta.ptrs[0][tensor]) + start;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) x[i] *= factor;
}

}  // namespace

Tensor cuda_sum_of_squares(const std::vector<Tensor>& tensors) {
  LOOM_ASSERT(!tensors.empty());
  Tensor out = zeros({1}, TensorOptions(kFloat64).device(tensors.front().device()));
  double* out_ptr = out.data_ptr<double>();
  LOOM_DISPATCH_FLOATING(tensors.front().dtype(), "clip_grad_norm_", [&] {
    multi_tensor_apply<1>(
        {&tensors}, [&](const TensorListMeta<1>& meta, int blocks, cudaStream_t stream) {
          sum_squares_kernel<scalar_t><<<blocks, kChunkThreads, 0, stream>>>(meta, out_ptr);
        });
  });
  return out;
}

void cuda_scale(const std::vector<Tensor>& tensors, double factor) {
  if (tensors.empty()) return;
  LOOM_DISPATCH_FLOATING(tensors.front().dtype(), "clip_grad_norm_", [&] {
    multi_tensor_apply<1>(
        {&tensors}, [&](const TensorListMeta<1>& meta, int blocks, cudaStream_t stream) {
          scale_kernel<scalar_t>
              <<<blocks, kChunkThreads, 0, stream>>>(meta, static_cast<scalar_t>(factor));
        });
  });
}

}  // namespace loom::optim::detail
