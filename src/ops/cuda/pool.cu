// Pooling on CUDA, by the shared rules of pool_kernels.h. Forward: one thread per output.
// Backward of max pooling whose windows cannot overlap (stride >= kernel on both axes, the
// common 2x2/2 case): one thread per output writes its whole window (the gradient at the saved
// argmax, zeros elsewhere), a single coalesced pass. Other backward passes gather, one thread
// per input pixel, from the outputs whose window holds it. Neither uses atomics, so results are
// deterministic. Index arithmetic runs in 32 bits when the tensors allow it: the divisions
// dominate these memory-bound kernels otherwise.
#include <cstdint>
#include <limits>

#include "ops/pool_kernels.h"
#include "tensor/cuda/check.h"
#include "tensor/cuda/runtime.h"

namespace loom::detail {

namespace {

constexpr int kThreads = 256;

int64_t blocks_for(int64_t n) { return std::min<int64_t>((n + kThreads - 1) / kThreads, 65535LL * 32); }

// Index type I loops over [0, n): n must fit in I, and so must i + the grid stride.
#define LOOM_GRID_LOOP(I, i, n) \
  for (I i = blockIdx.x * I(blockDim.x) + threadIdx.x; i < (n); i += I(gridDim.x) * I(blockDim.x))

bool fits_int32(int64_t n) {
  return n + 2 * 65535LL * 32 * kThreads < std::numeric_limits<int32_t>::max();
}

template <typename I, typename T>
__global__ void max_pool_kernel(const T* in, PoolGeometry g, T* out, int64_t* indices, I n) {
  const I out_x = static_cast<I>(g.x.out), out_plane = static_cast<I>(g.y.out * g.x.out);
  const I in_plane = static_cast<I>(g.y.in * g.x.in);
  LOOM_GRID_LOOP(I, k, n) {
    const I p = k / out_plane, cell = k - p * out_plane;
    const I oy = cell / out_x;
    max_pool_at(in + p * in_plane, g, oy, cell - oy * out_x, out[k], indices[k]);
  }
}

template <typename I, typename T>
__global__ void avg_pool_kernel(const T* in, PoolGeometry g, bool include_pad, T* out, I n) {
  const I out_x = static_cast<I>(g.x.out), out_plane = static_cast<I>(g.y.out * g.x.out);
  const I in_plane = static_cast<I>(g.y.in * g.x.in);
  LOOM_GRID_LOOP(I, k, n) {
    const I p = k / out_plane, cell = k - p * out_plane;
    const I oy = cell / out_x;
    out[k] = avg_pool_at(in + p * in_plane, g, include_pad, oy, cell - oy * out_x);
  }
}

template <typename I, typename T>
__global__ void pool_backward_kernel(const T* grad, const int64_t* indices, PoolGeometry g,
                                     bool include_pad, T* grad_input, I n) {
  const I in_x = static_cast<I>(g.x.in), in_plane = static_cast<I>(g.y.in * g.x.in);
  const I out_plane = static_cast<I>(g.y.out * g.x.out);
  LOOM_GRID_LOOP(I, k, n) {
    const I p = k / in_plane, cell = k - p * in_plane;
    const I iy = cell / in_x;
    grad_input[k] = pool_grad_at(grad + p * out_plane, indices ? indices + p * out_plane : nullptr, g,
                                 include_pad, iy, cell - iy * in_x);
  }
}

// Max pooling without overlapping windows: output k owns its window, so it writes every input
// pixel of it. n = number of outputs.
template <typename I, typename T>
__global__ void max_pool_scatter_kernel(const T* grad, const int64_t* indices, PoolGeometry g,
                                        T* grad_input, I n) {
  const I out_x = static_cast<I>(g.x.out), out_plane = static_cast<I>(g.y.out * g.x.out);
  const I in_x = static_cast<I>(g.x.in), in_plane = static_cast<I>(g.y.in * g.x.in);
  LOOM_GRID_LOOP(I, k, n) {
    const I p = k / out_plane, cell = k - p * out_plane;
    const I oy = cell / out_x, ox = cell - oy * out_x;
    int64_t y0, y1, x0, x1, unused;
    g.y.window(oy, false, y0, y1, unused);
    g.x.window(ox, false, x0, x1, unused);
    const I argmax = static_cast<I>(indices[k]);
    const T dy = grad[k];
    T* plane = grad_input + p * in_plane;
    for (I y = static_cast<I>(y0); y < static_cast<I>(y1); ++y) {
      for (I x = static_cast<I>(x0); x < static_cast<I>(x1); ++x) {
        const I at = y * in_x + x;
        plane[at] = at == argmax ? dy : T(0);
      }
    }
  }
}

bool windows_overlap(const PoolAxis& a) { return a.adaptive || a.stride < a.kernel; }

// Whether the windows (clipped to the input) together cover every input pixel of an axis.
bool windows_cover(const PoolAxis& a) {
  return !a.adaptive && a.pad == 0 && a.stride == a.kernel && a.out * a.kernel == a.in;
}

cudaStream_t stream_of(const Tensor& t) { return cuda::current_stream(t.device().index); }

// Calls launch(I{}) with I = int32_t when every index below `n` fits, else int64_t.
template <typename Launch>
void with_index_type(int64_t n, Launch&& launch) {
  if (fits_int32(n)) {
    launch(int32_t{});
  } else {
    launch(int64_t{});
  }
}

}  // namespace

void cuda_max_pool2d(const Tensor& x, const PoolGeometry& g, const Tensor& out, const Tensor& indices) {
  cuda::DeviceGuard guard(x.device().index);
  const int64_t n = out.numel();
  LOOM_DISPATCH_FLOATING(x.dtype(), "max_pool2d", [&] {
    with_index_type(std::max(n, x.numel()), [&](auto index) {
      using I = decltype(index);
      max_pool_kernel<I><<<blocks_for(n), kThreads, 0, stream_of(x)>>>(
          x.data_ptr<scalar_t>(), g, out.data_ptr<scalar_t>(), indices.data_ptr<int64_t>(), static_cast<I>(n));
      LOOM_CUDA_KERNEL_CHECK();
    });
  });
}

void cuda_avg_pool2d(const Tensor& x, const PoolGeometry& g, bool include_pad, const Tensor& out) {
  cuda::DeviceGuard guard(x.device().index);
  const int64_t n = out.numel();
  LOOM_DISPATCH_FLOATING(x.dtype(), "avg_pool2d", [&] {
    with_index_type(std::max(n, x.numel()), [&](auto index) {
      using I = decltype(index);
      avg_pool_kernel<I><<<blocks_for(n), kThreads, 0, stream_of(x)>>>(
          x.data_ptr<scalar_t>(), g, include_pad, out.data_ptr<scalar_t>(), static_cast<I>(n));
      LOOM_CUDA_KERNEL_CHECK();
    });
  });
}

void cuda_pool2d_backward(const Tensor& grad, const Tensor& indices, const PoolGeometry& g,
                          bool include_pad, const Tensor& grad_input) {
  cuda::DeviceGuard guard(grad.device().index);
  cudaStream_t stream = stream_of(grad);
  const int64_t n_in = grad_input.numel(), n_out = grad.numel();
  const int64_t* idx = indices.defined() ? indices.data_ptr<int64_t>() : nullptr;
  const bool scatter = idx && !windows_overlap(g.y) && !windows_overlap(g.x);
  LOOM_DISPATCH_FLOATING(grad.dtype(), "pool2d backward", [&] {
    with_index_type(std::max(n_in, n_out), [&](auto index) {
      using I = decltype(index);
      if (!scatter) {
        pool_backward_kernel<I><<<blocks_for(n_in), kThreads, 0, stream>>>(
            grad.data_ptr<scalar_t>(), idx, g, include_pad, grad_input.data_ptr<scalar_t>(), static_cast<I>(n_in));
        LOOM_CUDA_KERNEL_CHECK();
        return;
      }
      // Pixels in no window (gaps between windows, rows past the last one) get zeros first.
      if (!windows_cover(g.y) || !windows_cover(g.x)) {
        LOOM_CUDA_CHECK(cudaMemsetAsync(grad_input.raw_data(), 0, grad_input.nbytes(), stream));
      }
      max_pool_scatter_kernel<I><<<blocks_for(n_out), kThreads, 0, stream>>>(
          grad.data_ptr<scalar_t>(), idx, g, grad_input.data_ptr<scalar_t>(), static_cast<I>(n_out));
      LOOM_CUDA_KERNEL_CHECK();
    });
  });
}

}  // namespace loom::detail
