// Pooling on the CPU: one thread per group of planes. Forward outputs use the shared rules in
// pool_kernels.h (max pooling with its windows tabulated per call); max pooling's backward scatters each output's gradient to its recorded argmax
// (one pass over the outputs) instead of gathering for every input pixel, and average pooling's
// backward gathers with the shared rule.
#include <algorithm>
#include <vector>

#include "ops/pool_kernels.h"
#include "tensor/parallel.h"

namespace loom::detail {

namespace {

// Runs body(plane, row, col) over every cell of a [planes, rows, cols] grid; nested loops, so
// no division per cell.
template <typename Body>
void for_each_cell(int64_t planes, int64_t rows, int64_t cols, Body body) {
  const int64_t cells = std::max<int64_t>(1, rows * cols);
  parallel_for(planes, [&](int64_t p) {
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) body(p, r, c);
    }
  }, /*grain=*/std::max<int64_t>(1, kParallelGrain / cells));
}

}  // namespace

// Each axis's windows, found once per call rather than once per output: [start, end) of
// output o in starts[o], ends[o] (the shared PoolAxis::window rule).
struct AxisWindows {
  std::vector<int64_t> starts, ends;
  explicit AxisWindows(const PoolAxis& axis) : starts(axis.out), ends(axis.out) {
    int64_t unused;
    for (int64_t o = 0; o < axis.out; ++o) axis.window(o, false, starts[o], ends[o], unused);
  }
};

// One output row of max pooling whose windows stay inside the row (no padding or clipping
// along x): every output's window is visited tap by tap in max_of_window's order, so the
// results are the same, but the inner loop runs across the outputs with no window arithmetic.
template <typename T>
void max_pool_row(const T* plane, int64_t in_x, int64_t y0, int64_t y1, const PoolAxis& ax,
                  T* out, int64_t* idx) {
  const int64_t sx = ax.stride;
  for (int64_t ox = 0; ox < ax.out; ++ox) {
    idx[ox] = y0 * in_x + ox * sx;
    out[ox] = plane[idx[ox]];
  }
  for (int64_t y = y0; y < y1; ++y) {
    for (int64_t t = 0; t < ax.kernel; ++t) {
      const T* src = plane + y * in_x + t;
      for (int64_t ox = 0; ox < ax.out; ++ox) {
        const T v = src[ox * sx];
        if (v > out[ox]) out[ox] = v, idx[ox] = y * in_x + ox * sx + t;
      }
    }
  }
}

// max_pool_at with the windows looked up instead of recomputed for every output, and whole
// rows at a time where the windows allow it.
void cpu_max_pool2d(const Tensor& x, const PoolGeometry& g, const Tensor& out, const Tensor& indices) {
  const AxisWindows wy(g.y), wx(g.x);
  const bool rows_inside = !g.x.adaptive && g.x.pad == 0 && (g.x.out - 1) * g.x.stride + g.x.kernel <= g.x.in;
  LOOM_DISPATCH_FLOATING(x.dtype(), "max_pool2d", [&] {
    const scalar_t* in = x.data_ptr<scalar_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    int64_t* idx = indices.data_ptr<int64_t>();
    const int64_t in_plane = g.y.in * g.x.in, out_plane = g.y.out * g.x.out;
    if (rows_inside) {
      parallel_for(g.planes, [&](int64_t p) {
        for (int64_t oy = 0; oy < g.y.out; ++oy) {
          const int64_t k = p * out_plane + oy * g.x.out;
          max_pool_row(in + p * in_plane, g.x.in, wy.starts[oy], wy.ends[oy], g.x, o + k, idx + k);
        }
      }, /*grain=*/std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, out_plane)));
      return;
    }
    for_each_cell(g.planes, g.y.out, g.x.out, [&](int64_t p, int64_t oy, int64_t ox) {
      const int64_t k = p * out_plane + oy * g.x.out + ox;
      max_of_window(in + p * in_plane, g.x.in, wy.starts[oy], wy.ends[oy], wx.starts[ox],
                    wx.ends[ox], o[k], idx[k]);
    });
  });
}

void cpu_avg_pool2d(const Tensor& x, const PoolGeometry& g, bool include_pad, const Tensor& out) {
  LOOM_DISPATCH_FLOATING(x.dtype(), "avg_pool2d", [&] {
    const scalar_t* in = x.data_ptr<scalar_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    const int64_t in_plane = g.y.in * g.x.in, out_plane = g.y.out * g.x.out;
    for_each_cell(g.planes, g.y.out, g.x.out, [&](int64_t p, int64_t oy, int64_t ox) {
      o[p * out_plane + oy * g.x.out + ox] = avg_pool_at(in + p * in_plane, g, include_pad, oy, ox);
    });
  });
}

void cpu_pool2d_backward(const Tensor& grad, const Tensor& indices, const PoolGeometry& g,
                         bool include_pad, const Tensor& grad_input) {
  LOOM_DISPATCH_FLOATING(grad.dtype(), "pool2d backward", [&] {
    const scalar_t* dy = grad.data_ptr<scalar_t>();
    scalar_t* dx = grad_input.data_ptr<scalar_t>();
    const int64_t in_plane = g.y.in * g.x.in, out_plane = g.y.out * g.x.out;
    if (indices.defined()) {
      // A plane belongs to one thread and its outputs are added in order, so the sums (of
      // overlapping windows) do not depend on the thread count.
      const int64_t* idx = indices.data_ptr<int64_t>();
      parallel_for(g.planes, [&](int64_t p) {
        scalar_t* plane = dx + p * in_plane;
        std::fill(plane, plane + in_plane, scalar_t(0));
        for (int64_t o = p * out_plane; o < (p + 1) * out_plane; ++o) plane[idx[o]] += dy[o];
      }, /*grain=*/std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, in_plane)));
      return;
    }
    for_each_cell(g.planes, g.y.in, g.x.in, [&](int64_t p, int64_t iy, int64_t ix) {
      dx[p * in_plane + iy * g.x.in + ix] =
          pool_grad_at(dy + p * out_plane, nullptr, g, include_pad, iy, ix);
    });
  });
}

}  // namespace loom::detail
