// Pooling on the CPU: one thread per group of planes. Forward outputs use the shared rules in
// pool_math.h (max pooling with its windows tabulated per call); max pooling's backward
// scatters each output's gradient to the pixel its saved offset names (one pass over the
// outputs), average pooling's gathers by the shared rule.
#include <algorithm>
#include <vector>

#include "loom/ops/pool_backend.h"
#include "loom/tensor/parallel.h"

namespace loom::detail {

namespace {

// Runs body(plane, row, col) over every cell of a [planes, rows, cols] grid; nested loops, so
// no division per cell.
template <typename Body>
void for_each_cell(int64_t planes, int64_t rows, int64_t cols, Body body) {
  const int64_t cells = std::max<int64_t>(1, rows * cols);
  parallel_for(
      planes,
      [&](int64_t p) {
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t c = 0; c < cols; ++c) body(p, r, c);
        }
      },
      /*grain=*/std::max<int64_t>(1, kParallelGrain / cells));
}

// An axis's max-pool windows, found once per call rather than once per output.
std::vector<MaxWindow<int64_t>> windows_of(const PoolAxis& axis) {
  std::vector<MaxWindow<int64_t>> w;
  w.reserve(axis.out);
  for (int64_t o = 0; o < axis.out; ++o) w.emplace_back(axis, o);
  return w;
}

}  // namespace

// max_pool_at with the windows looked up instead of recomputed for every output.
void cpu_max_pool2d(const Tensor& x, const PoolGeometry& g, const Tensor& out,
                    const Tensor& offsets) {
  const std::vector<MaxWindow<int64_t>> wy = windows_of(g.y), wx = windows_of(g.x);
  const int64_t in_plane = g.y.in * g.x.in, out_plane = g.y.out * g.x.out;
  LOOM_DISPATCH_FLOATING_AND_BF16(x.dtype(), "max_pool2d", [&] {
    with_offset_type(offsets.dtype(), [&](auto offset_type) {
      using W = decltype(offset_type);
      const scalar_t* in = x.data_ptr<scalar_t>();
      scalar_t* o = out.data_ptr<scalar_t>();
      W* off = offsets.data_ptr<W>();
      for_each_cell(g.planes, g.y.out, g.x.out, [&](int64_t p, int64_t oy, int64_t ox) {
        const int64_t k = p * out_plane + oy * g.x.out + ox;
        off[k] = static_cast<W>(
            max_of_window(in + p * in_plane, g.x.in, g.x.kernel, wy[oy], wx[ox], o[k]));
      });
    });
  });
}

// Each output adds its gradient at its window's corner plus its offset's tap (tabulated, no
// division per output). A plane belongs to one thread and its outputs are added in order, so
// the sums (of overlapping windows) do not depend on the thread count.
void cpu_max_pool2d_backward(const Tensor& grad, const Tensor& offsets, const PoolGeometry& g,
                             const Tensor& grad_input) {
  if (grad.dtype() == kBFloat16) {
    // Overlapping windows add several gradients into one pixel: in float32, rounded once (as
    // CUDA's gather sums in double), not rounded to bfloat16 after every addition.
    const Tensor wide = empty(grad_input.shape(), grad_input.options().dtype(kFloat32));
    cpu_max_pool2d_backward(grad.to(kFloat32), offsets, g, wide);
    Tensor(grad_input).copy_(wide);  // a handle to the same storage
    return;
  }
  const int64_t in_plane = g.y.in * g.x.in, out_plane = g.y.out * g.x.out;
  std::vector<int64_t> taps(g.y.kernel * g.x.kernel);
  for (int64_t t = 0; t < g.y.kernel * g.x.kernel; ++t) taps[t] = max_pool_tap(g, t);
  LOOM_DISPATCH_FLOATING(grad.dtype(), "max_pool2d backward", [&] {
    with_offset_type(offsets.dtype(), [&](auto offset_type) {
      using W = decltype(offset_type);
      const scalar_t* dy = grad.data_ptr<scalar_t>();
      const W* off = offsets.data_ptr<W>();
      scalar_t* dx = grad_input.data_ptr<scalar_t>();
      parallel_for(
          g.planes,
          [&](int64_t p) {
            scalar_t* plane = dx + p * in_plane;
            std::fill(plane, plane + in_plane, scalar_t(0));
            for (int64_t oy = 0, o = p * out_plane; oy < g.y.out; ++oy) {
              const int64_t row = max_pool_corner<int64_t>(g, oy, 0);
              for (int64_t ox = 0; ox < g.x.out; ++ox, ++o) {
                plane[row + ox * g.x.stride + taps[off[o]]] += dy[o];
              }
            }
          },
          /*grain=*/std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, in_plane)));
    });
  });
}

void cpu_avg_pool2d(const Tensor& x, const PoolGeometry& g, bool include_pad, const Tensor& out) {
  LOOM_DISPATCH_FLOATING_AND_BF16(x.dtype(), "avg_pool2d", [&] {
    const scalar_t* in = x.data_ptr<scalar_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    const int64_t in_plane = g.y.in * g.x.in, out_plane = g.y.out * g.x.out;
    for_each_cell(g.planes, g.y.out, g.x.out, [&](int64_t p, int64_t oy, int64_t ox) {
      o[p * out_plane + oy * g.x.out + ox] = avg_pool_at(in + p * in_plane, g, include_pad, oy, ox);
    });
  });
}

void cpu_avg_pool2d_backward(const Tensor& grad, const PoolGeometry& g, bool include_pad,
                             const Tensor& grad_input) {
  LOOM_DISPATCH_FLOATING_AND_BF16(grad.dtype(), "avg_pool2d backward", [&] {
    const scalar_t* dy = grad.data_ptr<scalar_t>();
    scalar_t* dx = grad_input.data_ptr<scalar_t>();
    const int64_t in_plane = g.y.in * g.x.in, out_plane = g.y.out * g.x.out;
    for_each_cell(g.planes, g.y.in, g.x.in, [&](int64_t p, int64_t iy, int64_t ix) {
      dx[p * in_plane + iy * g.x.in + ix] =
          avg_pool_grad_at(dy + p * out_plane, g, include_pad, iy, ix);
    });
  });
}

}  // namespace loom::detail
