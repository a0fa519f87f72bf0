// Pooling on the CPU: one thread per group of planes, each output (or input, for backward)
// computed by the shared rules in pool_kernels.h.
#include <algorithm>

#include "ops/pool_kernels.h"
#include "tensor/parallel.h"

namespace loom::detail {

namespace {

// Runs body(plane, row, col) over every cell of a [planes, rows, cols] grid.
template <typename Body>
void for_each_cell(int64_t planes, int64_t rows, int64_t cols, Body body) {
  const int64_t cells = rows * cols;
  parallel_for(planes, [&](int64_t p) {
    for (int64_t i = 0; i < cells; ++i) body(p, i / cols, i % cols);
  }, /*grain=*/std::max<int64_t>(1, kParallelGrain / cells));
}

}  // namespace

void cpu_max_pool2d(const Tensor& x, const PoolGeometry& g, const Tensor& out, const Tensor& indices) {
  LOOM_DISPATCH_FLOATING(x.dtype(), "max_pool2d", [&] {
    const scalar_t* in = x.data_ptr<scalar_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    int64_t* idx = indices.data_ptr<int64_t>();
    const int64_t in_plane = g.y.in * g.x.in, out_plane = g.y.out * g.x.out;
    for_each_cell(g.planes, g.y.out, g.x.out, [&](int64_t p, int64_t oy, int64_t ox) {
      const int64_t k = p * out_plane + oy * g.x.out + ox;
      max_pool_at(in + p * in_plane, g, oy, ox, o[k], idx[k]);
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
    const int64_t* idx = indices.defined() ? indices.data_ptr<int64_t>() : nullptr;
    scalar_t* dx = grad_input.data_ptr<scalar_t>();
    const int64_t in_plane = g.y.in * g.x.in, out_plane = g.y.out * g.x.out;
    for_each_cell(g.planes, g.y.in, g.x.in, [&](int64_t p, int64_t iy, int64_t ix) {
      dx[p * in_plane + iy * g.x.in + ix] =
          pool_grad_at(dy + p * out_plane, idx ? idx + p * out_plane : nullptr, g, include_pad, iy, ix);
    });
  });
}

}  // namespace loom::detail
