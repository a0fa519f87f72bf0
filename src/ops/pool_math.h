// Internal: pooling windows and the per-element rules, compiled into both the CPU loops
// (cpu/pool.cpp) and the CUDA kernels (cuda/pool.cu), so both backends compute each output the
// same way. Max pooling saves each winner as its offset inside the kernel window (uint8 for
// windows of up to 255 taps); backward turns the offset back into an input position. Average
// pooling's backward gathers from the outputs whose window holds an input pixel.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

#include "loom/tensor/dtype.h"
#include "loom/tensor/error.h"
#include "loom/tensor/host_device.h"

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
  // CUDA only: input and output stored NHWC, so a plane's pixels lie `channels` elements apart.
  bool channels_last = false;
  int64_t channels = 0;
};

// A channel's plane in an NHWC tensor: pixel `at` (y * x.in + x) is data[at * step], step being
// the channel count. The rules below take it or, for NCHW planes, a plain pointer.
template <typename T, typename I>
struct StridedPlane {
  T* data;
  I step;
  LOOM_HOST_DEVICE T& operator[](I at) const { return data[at * step]; }
};

// The element type a plane (pointer or StridedPlane) holds.
template <typename Plane>
using plane_value_t = std::remove_cv_t<std::remove_reference_t<decltype(std::declval<Plane>()[0])>>;

// Max pooling's windows along a fixed axis, in the kernels' index type I. Window o begins at
// origin = o * stride - pad (in the padding when negative) and covers input [start, end), the
// kernel's taps clipped to the input; never empty, as padding is at most half the kernel.
template <typename I>
struct MaxWindow {
  I origin, start, end;
  LOOM_HOST_DEVICE MaxWindow(const PoolAxis& a, I o) {
    origin = o * static_cast<I>(a.stride) - static_cast<I>(a.pad);
    start = origin < 0 ? I(0) : origin;
    const I stop = origin + static_cast<I>(a.kernel);
    end = stop < static_cast<I>(a.in) ? stop : static_cast<I>(a.in);
  }
};

// The saved argmax of a max-pool output: the winner's offset (y - y.origin) * kernel_w +
// (x - x.origin) in its kernel window, in [0, kernel_h * kernel_w). One byte while the window
// has at most 255 taps, else int64 (a kernel that large is rare; the meaning stays the same).
inline DType max_pool_offset_dtype(const PoolGeometry& g) {
  return g.y.kernel * g.x.kernel <= 255 ? kUInt8 : kInt64;
}

// Calls f(W{}) with W the C++ type of max-pool offsets of dtype `dtype` (uint8_t or int64_t).
template <typename F>
void with_offset_type(DType dtype, F&& f) {
  if (dtype == kUInt8) {
    f(uint8_t{});
  } else {
    LOOM_ASSERT(dtype == kInt64);
    f(int64_t{});
  }
}

// out = max of rows [wy.start, wy.end) x columns [wx.start, wx.end) of `plane` (rows of in_x);
// returns the winner's window offset. The first maximum in row-major order wins; a NaN only
// when it comes first (a comparison with NaN is false). Selects rather than branches (the
// winner is data-dependent) into locals, as `out` may alias `plane` and would be re-read.
template <typename Plane, typename T, typename I>
LOOM_HOST_DEVICE I max_of_window(const Plane& plane, I in_x, I kernel_w, const MaxWindow<I>& wy,
                                 const MaxWindow<I>& wx, T& out) {
  I row = wy.start * in_x;
  T best = plane[row + wx.start];
  I at = (wy.start - wy.origin) * kernel_w + (wx.start - wx.origin);
  for (I y = wy.start; y < wy.end; ++y, row += in_x) {
    const I tap_row = (y - wy.origin) * kernel_w - wx.origin;
    for (I x = wx.start; x < wx.end; ++x) {
      const T v = plane[row + x];
      const bool wins = v > best;
      best = wins ? v : best;
      at = wins ? tap_row + x : at;
    }
  }
  out = best;
  return at;
}

// out = max of the window of (oy, ox) in `plane` [y.in, x.in]; returns its window offset.
template <typename Plane, typename T, typename I>
LOOM_HOST_DEVICE I max_pool_at(const Plane& plane, const PoolGeometry& g, I oy, I ox, T& out) {
  return max_of_window(plane, static_cast<I>(g.x.in), static_cast<I>(g.x.kernel),
                       MaxWindow<I>(g.y, oy), MaxWindow<I>(g.x, ox), out);
}

// Where in its plane (y * x.in + x) the corner of output (oy, ox)'s kernel window lies, at
// (y.origin, x.origin): outside the plane when that corner is in the padding.
template <typename I>
LOOM_HOST_DEVICE I max_pool_corner(const PoolGeometry& g, I oy, I ox) {
  const I y = oy * static_cast<I>(g.y.stride) - static_cast<I>(g.y.pad);
  const I x = ox * static_cast<I>(g.x.stride) - static_cast<I>(g.x.pad);
  return y * static_cast<I>(g.x.in) + x;
}

// How far past its window's corner, in plane positions, window offset t lies.
template <typename I>
LOOM_HOST_DEVICE I max_pool_tap(const PoolGeometry& g, I t) {
  const I kernel_w = static_cast<I>(g.x.kernel), ty = t / kernel_w;
  return ty * static_cast<I>(g.x.in) + (t - ty * kernel_w);
}

// Outputs [first, last) along a fixed axis whose windows hold input i: o * stride - pad <= i
// < o * stride - pad + kernel.
template <typename I>
LOOM_HOST_DEVICE void max_pool_outputs_of(const PoolAxis& a, I i, I& first, I& last) {
  const I k = static_cast<I>(a.kernel), s = static_cast<I>(a.stride),
          shifted = i + static_cast<I>(a.pad);
  first = shifted < k ? I(0) : (shifted - k) / s + 1;
  last = shifted / s + 1;
  if (last > static_cast<I>(a.out)) last = static_cast<I>(a.out);
}

// Gradient of input (iy, ix) of one plane under max pooling: grad [y.out, x.out] summed over
// the outputs whose saved offset names this pixel, in output order, in double.
template <typename GradPlane, typename OffsetPlane, typename I,
          typename T = plane_value_t<GradPlane>>
LOOM_HOST_DEVICE T max_pool_grad_at(const GradPlane& grad, const OffsetPlane& offsets,
                                    const PoolGeometry& g, I iy, I ix) {
  I oy0, oy1, ox0, ox1;
  max_pool_outputs_of(g.y, iy, oy0, oy1);
  max_pool_outputs_of(g.x, ix, ox0, ox1);
  const I out_x = static_cast<I>(g.x.out), kernel_w = static_cast<I>(g.x.kernel);
  double s = 0.0;
  for (I oy = oy0; oy < oy1; ++oy) {
    const I ty = iy - (oy * static_cast<I>(g.y.stride) - static_cast<I>(g.y.pad));
    for (I ox = ox0; ox < ox1; ++ox) {
      const I tx = ix - (ox * static_cast<I>(g.x.stride) - static_cast<I>(g.x.pad));
      const I o = oy * out_x + ox;
      if (static_cast<I>(offsets[o]) == ty * kernel_w + tx) s += grad[o];
    }
  }
  return static_cast<T>(s);
}

template <typename Plane, typename T = plane_value_t<Plane>>
LOOM_HOST_DEVICE T avg_pool_at(const Plane& plane, const PoolGeometry& g, bool include_pad,
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

// Gradient of input (iy, ix) of one plane under average pooling: grad [out_y, out_x] of the
// outputs whose window holds it, each divided by its window's divisor.
template <typename Plane, typename T = plane_value_t<Plane>>
LOOM_HOST_DEVICE T avg_pool_grad_at(const Plane& grad, const PoolGeometry& g, bool include_pad,
                                    int64_t iy, int64_t ix) {
  int64_t oy0, oy1, ox0, ox1;
  g.y.outputs_of(iy, oy0, oy1);
  g.x.outputs_of(ix, ox0, ox1);
  double s = 0.0;
  for (int64_t oy = oy0; oy < oy1; ++oy) {
    int64_t y0, y1, cy;
    g.y.window(oy, include_pad, y0, y1, cy);
    if (iy < y0 || iy >= y1) continue;
    for (int64_t ox = ox0; ox < ox1; ++ox) {
      int64_t x0, x1, cx;
      g.x.window(ox, include_pad, x0, x1, cx);
      if (ix >= x0 && ix < x1) s += grad[oy * g.x.out + ox] / static_cast<double>(cy * cx);
    }
  }
  return static_cast<T>(s);
}

}  // namespace loom::detail
