// Internal: pooling windows and the per-element rules shared by the CPU loops and the CUDA
// kernels (so both backends compute each output the same way), and the backend entry points.
// Backward passes gather from the outputs whose window holds an input pixel: no atomics, so
// the GPU result is deterministic (the CPU's max pooling scatters through the argmax instead,
// one thread per plane).
#pragma once

#include <cstdint>

#include "tensor/strided_index.h"
#include "tensor/tensor.h"

namespace loom::detail {

// One axis of a pooling window: fixed (kernel, stride, padding) or adaptive.
struct PoolAxis {
  int64_t in = 0, out = 0, kernel = 1, stride = 1, pad = 0;
  bool adaptive = false;

  // Input range [start, end) of output o, clipped to the input, and the divisor this axis
  // contributes to an average (the window size including padding when include_pad).
  LOOM_HOST_DEVICE void window(int64_t o, bool include_pad, int64_t& start, int64_t& end,
                               int64_t& count) const {
    if (adaptive) {
      start = o * in / out;
      end = ((o + 1) * in + out - 1) / out;
      count = end - start;
      return;
    }
    start = o * stride - pad;
    end = start + kernel < in + pad ? start + kernel : in + pad;
    count = end - start;
    if (start < 0) start = 0;
    if (end > in) end = in;
    if (!include_pad) count = end - start;
  }

  // Outputs [first, last) whose windows may hold input i (a superset; callers test membership).
  LOOM_HOST_DEVICE void outputs_of(int64_t i, int64_t& first, int64_t& last) const {
    if (adaptive) {
      first = i * out / in;
      last = ((i + 1) * out + in - 1) / in;
    } else {
      first = i + pad < kernel ? 0 : (i + pad - kernel) / stride + 1;
      last = (i + pad) / stride + 1;
    }
    if (last > out) last = out;
  }
};

struct PoolGeometry {
  int64_t planes = 0;  // N * C
  PoolAxis y, x;
};

// out = max of rows [y0, y1) x columns [x0, x1) of `plane` (rows of in_x); index = its flat
// position. The first maximum in row-major order wins; a NaN only when it comes first.
template <typename T>
LOOM_HOST_DEVICE void max_of_window(const T* plane, int64_t in_x, int64_t y0, int64_t y1,
                                    int64_t x0, int64_t x1, T& out, int64_t& index) {
  index = y0 * in_x + x0;
  out = plane[index];
  for (int64_t y = y0; y < y1; ++y) {
    for (int64_t x = x0; x < x1; ++x) {
      const T v = plane[y * in_x + x];
      if (v > out) out = v, index = y * in_x + x;
    }
  }
}

// out = max of the window of (oy, ox) in `plane` [in_y, in_x]; index = its flat position.
template <typename T>
LOOM_HOST_DEVICE void max_pool_at(const T* plane, const PoolGeometry& g, int64_t oy, int64_t ox,
                                  T& out, int64_t& index) {
  int64_t y0, y1, x0, x1, unused;
  g.y.window(oy, false, y0, y1, unused);
  g.x.window(ox, false, x0, x1, unused);
  max_of_window(plane, g.x.in, y0, y1, x0, x1, out, index);
}

template <typename T>
LOOM_HOST_DEVICE T avg_pool_at(const T* plane, const PoolGeometry& g, bool include_pad,
                               int64_t oy, int64_t ox) {
  int64_t y0, y1, x0, x1, cy, cx;
  g.y.window(oy, include_pad, y0, y1, cy);
  g.x.window(ox, include_pad, x0, x1, cx);
  double s = 0.0;
  for (int64_t y = y0; y < y1; ++y) {
    for (int64_t x = x0; x < x1; ++x) s += plane[y * g.x.in + x];
  }
  return static_cast<T>(s / static_cast<double>(cy * cx));
}

// Gradient of input (iy, ix) of one plane: grad [out_y, out_x] of the outputs, indices their
// argmax (max pooling) or null (average pooling).
template <typename T>
LOOM_HOST_DEVICE T pool_grad_at(const T* grad, const int64_t* indices, const PoolGeometry& g,
                                bool include_pad, int64_t iy, int64_t ix) {
  int64_t oy0, oy1, ox0, ox1;
  g.y.outputs_of(iy, oy0, oy1);
  g.x.outputs_of(ix, ox0, ox1);
  const int64_t self = iy * g.x.in + ix;
  double s = 0.0;
  for (int64_t oy = oy0; oy < oy1; ++oy) {
    int64_t y0, y1, cy;
    g.y.window(oy, include_pad, y0, y1, cy);
    if (iy < y0 || iy >= y1) continue;
    for (int64_t ox = ox0; ox < ox1; ++ox) {
      const int64_t o = oy * g.x.out + ox;
      if (indices) {
        if (indices[o] == self) s += grad[o];
        continue;
      }
      int64_t x0, x1, cx;
      g.x.window(ox, include_pad, x0, x1, cx);
      if (ix >= x0 && ix < x1) s += grad[o] / static_cast<double>(cy * cx);
    }
  }
  return static_cast<T>(s);
}

// Contiguous [planes, y.in, x.in] in, [planes, y.out, x.out] out. indices: int64 argmax.
void cpu_max_pool2d(const Tensor& x, const PoolGeometry& g, const Tensor& out, const Tensor& indices);
void cpu_avg_pool2d(const Tensor& x, const PoolGeometry& g, bool include_pad, const Tensor& out);
// indices undefined: average pooling's backward.
void cpu_pool2d_backward(const Tensor& grad, const Tensor& indices, const PoolGeometry& g,
                         bool include_pad, const Tensor& grad_input);

void cuda_max_pool2d(const Tensor& x, const PoolGeometry& g, const Tensor& out, const Tensor& indices);
void cuda_avg_pool2d(const Tensor& x, const PoolGeometry& g, bool include_pad, const Tensor& out);
void cuda_pool2d_backward(const Tensor& grad, const Tensor& indices, const PoolGeometry& g,
                          bool include_pad, const Tensor& grad_input);

}  // namespace loom::detail
