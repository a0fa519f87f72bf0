// Pooling on CUDA, by the shared rules of pool_math.h. Forward: one thread per output (max
// pooling writes its winner's window offset, one byte for the usual kernels). Backward of max
// pooling whose windows cannot overlap (stride >= kernel on both axes, the common 2x2/2 case):
// one thread per output writes every input pixel of its cell (its window and the gap up to the
// next one), the gradient at the winner and zeros elsewhere, so each input pixel is written
// once and needs no zero fill. Other backward passes gather, one thread per input pixel, from
// the outputs whose window holds it. Neither uses atomics, so results are deterministic. Index
// arithmetic runs in 32 bits when the tensors allow it: the integer work otherwise dominates
// these memory-bound kernels. Channels-last tensors (NHWC) take the same kernels with each
// plane's pixels read `channels` elements apart: neighbouring threads then read neighbouring
// channels.
#include <cstdint>
#include <limits>
#include <type_traits>

#include "loom/ops/cuda/channels_last.cuh"
#include "loom/ops/pool_backend.h"
#include "loom/tensor/cuda/check.h"
#include "loom/tensor/cuda/runtime.h"

namespace loom::detail {

namespace {

constexpr int kThreads = 256;

int64_t blocks_for(int64_t n) {
  return std::min<int64_t>((n + kThreads - 1) / kThreads, 65535LL * 32);
}

// Index type I loops over [0, n): n must fit in I, and so must i + the grid stride.
#define LOOM_GRID_LOOP(I, i, n) \
  for (I i = blockIdx.x * I(blockDim.x) + threadIdx.x; i < (n); i += I(gridDim.x) * I(blockDim.x))

bool fits_int32(int64_t n) {
  return n + 2 * 65535LL * 32 * kThreads < std::numeric_limits<int32_t>::max();
}

// Element k of an [N, C, size_y, size_x] tensor, NCHW or (kChannelsLast) NHWC: its pixel
// (y, x) and the plane it belongs to, whose pixel 0 plane_origin() finds in a tensor of the same
// N and C with `plane` pixels a plane, its pixels step() elements apart.
template <bool kChannelsLast, typename I>
struct PoolIndex {
  I y, x, image, c;  // NCHW: image counts planes (n * C + c) and c is unused
  __device__ PoolIndex(I k, I size_y, I size_x, I channels) {
    I pixels = k;
    c = 0;
    if (kChannelsLast) c = k % channels, pixels = k / channels;
    const I row = pixels / size_x;
    x = pixels - row * size_x;
    image = row / size_y;
    y = row - image * size_y;
  }
  __device__ I plane_origin(I plane, I channels) const {
    return kChannelsLast ? image * plane * channels + c : image * plane;
  }
};

// The plane of `data` starting at `origin`: a pointer (NCHW) or a StridedPlane (NHWC).
template <bool kChannelsLast, typename T, typename I>
__device__ auto plane_at(T* data, I origin, I channels) {
  if constexpr (kChannelsLast) {
    return StridedPlane<T, I>{data + origin, channels};
  } else {
    return data + origin;
  }
}

template <bool kCL, typename I, typename T, typename W>
__global__ void max_pool_kernel(const T* in, PoolGeometry g, T* out, W* offsets, I n) {
  const I out_x = static_cast<I>(g.x.out), out_y = static_cast<I>(g.y.out),
          channels = static_cast<I>(g.channels);
  const I in_plane = static_cast<I>(g.y.in * g.x.in);
  LOOM_GRID_LOOP(I, k, n) {
    const PoolIndex<kCL, I> at(k, out_y, out_x, channels);
    T best;
    offsets[k] = static_cast<W>(max_pool_at(
        plane_at<kCL>(in, at.plane_origin(in_plane, channels), channels), g, at.y, at.x, best));
    out[k] = best;
  }
}

template <bool kCL, typename I, typename T>
__global__ void avg_pool_kernel(const T* in, PoolGeometry g, bool include_pad, T* out, I n) {
  const I out_x = static_cast<I>(g.x.out), out_y = static_cast<I>(g.y.out),
          channels = static_cast<I>(g.channels);
  const I in_plane = static_cast<I>(g.y.in * g.x.in);
  LOOM_GRID_LOOP(I, k, n) {
    const PoolIndex<kCL, I> at(k, out_y, out_x, channels);
    out[k] = avg_pool_at(plane_at<kCL>(in, at.plane_origin(in_plane, channels), channels), g,
                         include_pad, at.y, at.x);
  }
}

template <bool kCL, typename I, typename T>
__global__ void avg_pool_backward_kernel(const T* grad, PoolGeometry g, bool include_pad,
                                         T* grad_input, I n) {
  const I in_x = static_cast<I>(g.x.in), in_y = static_cast<I>(g.y.in),
          channels = static_cast<I>(g.channels);
  const I out_plane = static_cast<I>(g.y.out * g.x.out);
  LOOM_GRID_LOOP(I, k, n) {
    const PoolIndex<kCL, I> at(k, in_y, in_x, channels);
    grad_input[k] =
        avg_pool_grad_at(plane_at<kCL>(grad, at.plane_origin(out_plane, channels), channels), g,
                         include_pad, at.y, at.x);
  }
}

// Max pooling with overlapping windows: input pixel k gathers from every output whose saved
// offset names it. n = number of inputs.
template <bool kCL, typename I, typename T, typename W>
__global__ void max_pool_gather_kernel(const T* grad, const W* offsets, PoolGeometry g,
                                       T* grad_input, I n) {
  const I in_x = static_cast<I>(g.x.in), in_y = static_cast<I>(g.y.in),
          channels = static_cast<I>(g.channels);
  const I out_plane = static_cast<I>(g.y.out * g.x.out);
  LOOM_GRID_LOOP(I, k, n) {
    const PoolIndex<kCL, I> at(k, in_y, in_x, channels);
    const I origin = at.plane_origin(out_plane, channels);
    grad_input[k] = max_pool_grad_at(plane_at<kCL>(grad, origin, channels),
                                     plane_at<kCL>(offsets, origin, channels), g, at.y, at.x);
  }
}

// Cell [begin, end) of output o along an axis whose windows cannot overlap: from its window's
// start to the next window's (to the input's end for the last output). The cells of an axis
// tile it, so every input pixel lies in exactly one.
template <typename I>
__device__ __forceinline__ void cell_of(const PoolAxis& a, I o, I& begin, I& end) {
  const I s = static_cast<I>(a.stride), pad = static_cast<I>(a.pad);
  begin = o * s - pad;
  if (begin < 0) begin = 0;
  end = o + 1 == static_cast<I>(a.out) ? static_cast<I>(a.in) : (o + 1) * s - pad;
}

// Max pooling without overlapping windows: output k writes every input pixel of its cell, its
// gradient at the winner and zeros elsewhere. n = number of outputs.
template <bool kCL, typename I, typename T, typename W>
__global__ void max_pool_cells_backward_kernel(const T* grad, const W* offsets, PoolGeometry g,
                                               T* grad_input, I n) {
  const I out_x = static_cast<I>(g.x.out), out_y = static_cast<I>(g.y.out),
          channels = static_cast<I>(g.channels);
  const I in_x = static_cast<I>(g.x.in), in_plane = static_cast<I>(g.y.in * g.x.in);
  LOOM_GRID_LOOP(I, k, n) {
    const PoolIndex<kCL, I> at(k, out_y, out_x, channels);
    const I winner = max_pool_corner(g, at.y, at.x) + max_pool_tap(g, static_cast<I>(offsets[k]));
    const T dy = grad[k];
    I y0, y1, x0, x1;
    cell_of(g.y, at.y, y0, y1);
    cell_of(g.x, at.x, x0, x1);
    auto plane = plane_at<kCL>(grad_input, at.plane_origin(in_plane, channels), channels);
    for (I y = y0; y < y1; ++y) {
      for (I x = x0; x < x1; ++x) {
        const I pixel = y * in_x + x;
        plane[pixel] = pixel == winner ? dy : T(0);
      }
    }
  }
}

bool windows_overlap(const PoolAxis& a) { return a.adaptive || a.stride < a.kernel; }

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

// A bound on every index max pooling's kernels form: positions in the padded input (window
// origins and offsets lie there) and outputs.
int64_t max_pool_index_bound(const PoolGeometry& g) {
  return g.planes * std::max((g.y.in + 2 * g.y.pad) * (g.x.in + 2 * g.x.pad), g.y.out * g.x.out);
}

}  // namespace

void cuda_max_pool2d(const Tensor& x, const PoolGeometry& g, const Tensor& out,
                     const Tensor& offsets) {
  cuda::DeviceGuard guard(x.device().index);
  const int64_t n = out.numel();
  LOOM_DISPATCH_FLOATING_AND_BF16(x.dtype(), "max_pool2d", [&] {
    with_offset_type(offsets.dtype(), [&](auto offset_type) {
      using W = decltype(offset_type);
      with_index_type(max_pool_index_bound(g), [&](auto index) {
        using I = decltype(index);
        with_channels_last(g.channels_last, [&](auto cl) {
          max_pool_kernel<decltype(cl)::value, I><<<blocks_for(n), kThreads, 0, stream_of(x)>>>(
              x.data_ptr<scalar_t>(), g, out.data_ptr<scalar_t>(), offsets.data_ptr<W>(),
              static_cast<I>(n));
          LOOM_CUDA_KERNEL_CHECK();
        });
      });
    });
  });
}

void cuda_max_pool2d_backward(const Tensor& grad, const Tensor& offsets, const PoolGeometry& g,
                              const Tensor& grad_input) {
  cuda::DeviceGuard guard(grad.device().index);
  cudaStream_t stream = stream_of(grad);
  const bool cells = !windows_overlap(g.y) && !windows_overlap(g.x);
  const int64_t n = cells ? grad.numel() : grad_input.numel();
  LOOM_DISPATCH_FLOATING_AND_BF16(grad.dtype(), "max_pool2d backward", [&] {
    with_offset_type(offsets.dtype(), [&](auto offset_type) {
      using W = decltype(offset_type);
      with_index_type(max_pool_index_bound(g), [&](auto index) {
        using I = decltype(index);
        const scalar_t* dy = grad.data_ptr<scalar_t>();
        const W* off = offsets.data_ptr<W>();
        scalar_t* dx = grad_input.data_ptr<scalar_t>();
        with_channels_last(g.channels_last, [&](auto cl) {
          constexpr bool kCL = decltype(cl)::value;
          if (cells) {
            max_pool_cells_backward_kernel<kCL, I>
                <<<blocks_for(n), kThreads, 0, stream>>>(dy, off, g, dx, static_cast<I>(n));
          } else {
            max_pool_gather_kernel<kCL, I>
                <<<blocks_for(n), kThreads, 0, stream>>>(dy, off, g, dx, static_cast<I>(n));
          }
          LOOM_CUDA_KERNEL_CHECK();
        });
      });
    });
  });
}

void cuda_avg_pool2d(const Tensor& x, const PoolGeometry& g, bool include_pad, const Tensor& out) {
  cuda::DeviceGuard guard(x.device().index);
  const int64_t n = out.numel();
  LOOM_DISPATCH_FLOATING_AND_BF16(x.dtype(), "avg_pool2d", [&] {
    with_index_type(std::max(n, x.numel()), [&](auto index) {
      using I = decltype(index);
      with_channels_last(g.channels_last, [&](auto cl) {
        avg_pool_kernel<decltype(cl)::value, I><<<blocks_for(n), kThreads, 0, stream_of(x)>>>(
            x.data_ptr<scalar_t>(), g, include_pad, out.data_ptr<scalar_t>(), static_cast<I>(n));
        LOOM_CUDA_KERNEL_CHECK();
      });
    });
  });
}

void cuda_avg_pool2d_backward(const Tensor& grad, const PoolGeometry& g, bool include_pad,
                              const Tensor& grad_input) {
  cuda::DeviceGuard guard(grad.device().index);
  const int64_t n = grad_input.numel();
  LOOM_DISPATCH_FLOATING_AND_BF16(grad.dtype(), "avg_pool2d backward", [&] {
    with_index_type(std::max(n, grad.numel()), [&](auto index) {
      using I = decltype(index);
      with_channels_last(g.channels_last, [&](auto cl) {
        avg_pool_backward_kernel<decltype(cl)::value, I>
            <<<blocks_for(n), kThreads, 0, stream_of(grad)>>>(
                grad.data_ptr<scalar_t>(), g, include_pad, grad_input.data_ptr<scalar_t>(),
                static_cast<I>(n));
        LOOM_CUDA_KERNEL_CHECK();
      });
    });
  });
}

}  // namespace loom::detail
