// Pooling on CUDA: one thread per output (forward) or per input pixel (backward, gathering
// from the outputs whose window holds it: no atomics, deterministic), by the shared rules of
// pool_kernels.h.
#include "ops/pool_kernels.h"
#include "tensor/cuda/check.h"
#include "tensor/cuda/runtime.h"

namespace loom::detail {

namespace {

constexpr int kThreads = 256;

int64_t blocks_for(int64_t n) { return std::min<int64_t>((n + kThreads - 1) / kThreads, 65535LL * 32); }

#define LOOM_GRID_LOOP(i, n) \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n); i += int64_t(gridDim.x) * blockDim.x)

template <typename T>
__global__ void max_pool_kernel(const T* in, PoolGeometry g, T* out, int64_t* indices) {
  const int64_t out_plane = g.y.out * g.x.out;
  LOOM_GRID_LOOP(k, g.planes * out_plane) {
    const int64_t p = k / out_plane, cell = k % out_plane;
    max_pool_at(in + p * g.y.in * g.x.in, g, cell / g.x.out, cell % g.x.out, out[k], indices[k]);
  }
}

template <typename T>
__global__ void avg_pool_kernel(const T* in, PoolGeometry g, bool include_pad, T* out) {
  const int64_t out_plane = g.y.out * g.x.out;
  LOOM_GRID_LOOP(k, g.planes * out_plane) {
    const int64_t p = k / out_plane, cell = k % out_plane;
    out[k] = avg_pool_at(in + p * g.y.in * g.x.in, g, include_pad, cell / g.x.out, cell % g.x.out);
  }
}

template <typename T>
__global__ void pool_backward_kernel(const T* grad, const int64_t* indices, PoolGeometry g,
                                     bool include_pad, T* grad_input) {
  const int64_t in_plane = g.y.in * g.x.in, out_plane = g.y.out * g.x.out;
  LOOM_GRID_LOOP(k, g.planes * in_plane) {
    const int64_t p = k / in_plane, cell = k % in_plane;
    grad_input[k] = pool_grad_at(grad + p * out_plane, indices ? indices + p * out_plane : nullptr, g,
                                 include_pad, cell / g.x.in, cell % g.x.in);
  }
}

cudaStream_t stream_of(const Tensor& t) { return cuda::current_stream(t.device().index); }

}  // namespace

void cuda_max_pool2d(const Tensor& x, const PoolGeometry& g, const Tensor& out, const Tensor& indices) {
  cuda::DeviceGuard guard(x.device().index);
  const int64_t n = out.numel();
  LOOM_DISPATCH_FLOATING(x.dtype(), "max_pool2d", [&] {
    max_pool_kernel<<<blocks_for(n), kThreads, 0, stream_of(x)>>>(
        x.data_ptr<scalar_t>(), g, out.data_ptr<scalar_t>(), indices.data_ptr<int64_t>());
    LOOM_CUDA_KERNEL_CHECK();
  });
}

void cuda_avg_pool2d(const Tensor& x, const PoolGeometry& g, bool include_pad, const Tensor& out) {
  cuda::DeviceGuard guard(x.device().index);
  const int64_t n = out.numel();
  LOOM_DISPATCH_FLOATING(x.dtype(), "avg_pool2d", [&] {
    avg_pool_kernel<<<blocks_for(n), kThreads, 0, stream_of(x)>>>(x.data_ptr<scalar_t>(), g, include_pad,
                                                                   out.data_ptr<scalar_t>());
    LOOM_CUDA_KERNEL_CHECK();
  });
}

void cuda_pool2d_backward(const Tensor& grad, const Tensor& indices, const PoolGeometry& g,
                          bool include_pad, const Tensor& grad_input) {
  cuda::DeviceGuard guard(grad.device().index);
  const int64_t n = grad_input.numel();
  const int64_t* idx = indices.defined() ? indices.data_ptr<int64_t>() : nullptr;
  LOOM_DISPATCH_FLOATING(grad.dtype(), "pool2d backward", [&] {
    pool_backward_kernel<<<blocks_for(n), kThreads, 0, stream_of(grad)>>>(
        grad.data_ptr<scalar_t>(), idx, g, include_pad, grad_input.data_ptr<scalar_t>());
    LOOM_CUDA_KERNEL_CHECK();
  });
}

}  // namespace loom::detail
