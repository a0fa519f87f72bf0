// sum, mean, max, min, argmax and sum_to. The reduced dims are permuted last and the input made
// contiguous, so one row kernel per device (reduction_backend.h) serves every case. Gradients are
// compositions: sum and mean expand the gradient back, max and min route it through a one_hot
// of the winning index (the first extreme, as the kernels report it).
#include "loom/ops/reduction.h"

#include <numeric>

#include "loom/ops/dispatch.h"
#include "loom/ops/elementwise.h"
#include "loom/ops/one_hot.h"
#include "loom/ops/reduction_backend.h"
#include "loom/tensor/autograd.h"

namespace loom {

namespace {

using detail::ReduceKind;

// mask[d]: whether dim d is reduced. An empty dims list reduces every dim.
std::vector<bool> reduced_mask(const Tensor& x, const std::vector<int64_t>& dims, const char* op) {
  LOOM_CHECK(x.defined(), op, ": the input tensor is undefined");
  std::vector<bool> mask(static_cast<size_t>(x.dim()), dims.empty());
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, x.dim(), op);
    LOOM_CHECK(!mask[w], op, ": dim ", d, " appears more than once in the dims list");
    mask[w] = true;
  }
  return mask;
}

// x's shape with the reduced dims removed, or set to 1 when keepdim.
Shape reduced_shape(const Shape& shape, const std::vector<bool>& mask, bool keepdim) {
  Shape out;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!mask[d])
      out.push_back(shape[d]);
    else if (keepdim)
      out.push_back(1);
  }
  return out;
}

struct Reduced {
  Tensor values;
  Tensor indices;
};

// Runs the row kernel of x's device. want_values / want_indices say which outputs to make.
Reduced reduce(const Tensor& x, const std::vector<bool>& mask, bool keepdim, ReduceKind kind,
               double scale, bool want_values, bool want_indices, const char* op) {
  std::vector<int64_t> order;
  int64_t length = 1;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (!mask[d]) order.push_back(d);
  }
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (mask[d]) order.push_back(d), length *= x.size(d);
  }
  LOOM_CHECK(kind == ReduceKind::Sum || length > 0, op,
             ": cannot reduce over zero elements "
             "(the input of shape ",
             shape_str(x.shape()), " is empty along the reduced dims)");
  const Shape out_shape = reduced_shape(x.shape(), mask, keepdim);
  const int64_t rows = numel_of(out_shape);
  const Tensor rows_in = x.detach().permute(order).contiguous();

  detail::RowReduction r;
  r.kind = kind;
  r.scale = scale;
  DType value_dtype = x.dtype();
  if (kind == ReduceKind::Sum && !is_floating(x.dtype())) value_dtype = kInt64;
  if (want_values) r.values = empty(out_shape, TensorOptions(value_dtype).device(x.device()));
  if (want_indices) r.indices = empty(out_shape, TensorOptions(kInt64).device(x.device()));
  if (rows > 0) {
    if (x.is_cuda()) {
      LOOM_CUDA_DISPATCH(op, detail::cuda_reduce_rows(rows_in, rows, length, r));
    } else {
      detail::cpu_reduce_rows(rows_in, rows, length, r);
    }
  }
  return {r.values, r.indices};
}

// The gradient of a sum over `mask`, broadcast back to the input's shape.
Tensor expand_back(const Tensor& g, const Shape& in_shape, const std::vector<bool>& mask) {
  return g.reshape(reduced_shape(in_shape, mask, /*keepdim=*/true)).expand(in_shape);
}

// The gradient of max/min along d: g at the winning index, zero elsewhere. one_hot puts the
// classes last; they are moved back to position d.
Tensor route_to_index(const Tensor& g, const Tensor& indices, const Shape& in_shape, int64_t d,
                      bool keepdim) {
  const Tensor gd = keepdim ? g.squeeze(d) : g;
  const Tensor idx = keepdim ? indices.squeeze(d) : indices;
  const Tensor routed = one_hot(idx, in_shape[d], g.dtype()) * gd.unsqueeze(-1);
  std::vector<int64_t> order;
  const int64_t n = static_cast<int64_t>(in_shape.size());
  for (int64_t i = 0; i < d; ++i) order.push_back(i);
  order.push_back(n - 1);
  for (int64_t i = d; i < n - 1; ++i) order.push_back(i);
  return routed.permute(order);
}

Tensor extreme_all(const Tensor& x, ReduceKind kind, const char* op) {
  LOOM_CHECK(x.defined(), op, ": the input tensor is undefined");
  const Tensor flat = x.reshape({x.numel()});
  const Reduced r = reduce(flat, {true}, false, kind, 1.0, true, true, op);
  const Shape in_shape = x.shape();
  const Tensor idx = r.indices;
  return record(op, r.values, {x}, [in_shape, idx](const Tensor& g) {
    return std::vector<Tensor>{(one_hot(idx, numel_of(in_shape), g.dtype()) * g).reshape(in_shape)};
  });
}

Tensor extreme_dim(const Tensor& x, int64_t dim, bool keepdim, ReduceKind kind, const char* op) {
  LOOM_CHECK(x.defined(), op, ": the input tensor is undefined");
  if (x.dim() == 0) {  // a scalar is its own extreme along dim 0 (or -1)
    wrap_dim(dim, 1, op);
    return extreme_dim(x.reshape({1}), 0, false, kind, op).reshape({});
  }
  const int64_t d = wrap_dim(dim, x.dim(), op);
  std::vector<bool> mask(static_cast<size_t>(x.dim()), false);
  mask[d] = true;
  const Reduced r = reduce(x, mask, keepdim, kind, 1.0, true, true, op);
  const Shape in_shape = x.shape();
  const Tensor idx = r.indices;
  return record(op, r.values, {x}, [in_shape, idx, d, keepdim](const Tensor& g) {
    return std::vector<Tensor>{route_to_index(g, idx, in_shape, d, keepdim)};
  });
}

}  // namespace

Tensor sum(const Tensor& x) { return sum(x, {}, false); }

Tensor sum(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  const std::vector<bool> mask = reduced_mask(x, dims, "sum");
  const Tensor out = reduce(x, mask, keepdim, ReduceKind::Sum, 1.0, true, false, "sum").values;
  const Shape in_shape = x.shape();
  return record("sum", out, {x}, [in_shape, mask](const Tensor& g) {
    return std::vector<Tensor>{expand_back(g, in_shape, mask)};
  });
}

Tensor mean(const Tensor& x) { return mean(x, {}, false); }

Tensor mean(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  const std::vector<bool> mask = reduced_mask(x, dims, "mean");
  LOOM_CHECK(is_floating(x.dtype()), "mean: needs a floating-point tensor, got ",
             dtype_name(x.dtype()), " (convert with .to(kFloat32) first)");
  int64_t count = 1;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (mask[d]) count *= x.size(d);
  }
  // 1/0 = inf turns the empty sum 0 into NaN, as PyTorch's mean of nothing.
  const double scale = 1.0 / static_cast<double>(count);
  const Tensor out = reduce(x, mask, keepdim, ReduceKind::Sum, scale, true, false, "mean").values;
  const Shape in_shape = x.shape();
  return record("mean", out, {x}, [in_shape, mask, scale](const Tensor& g) {
    return std::vector<Tensor>{expand_back(g * scale, in_shape, mask)};
  });
}

Tensor max(const Tensor& x) { return extreme_all(x, ReduceKind::Max, "max"); }
Tensor min(const Tensor& x) { return extreme_all(x, ReduceKind::Min, "min"); }
Tensor max(const Tensor& x, int64_t dim, bool keepdim) {
  return extreme_dim(x, dim, keepdim, ReduceKind::Max, "max");
}
Tensor min(const Tensor& x, int64_t dim, bool keepdim) {
  return extreme_dim(x, dim, keepdim, ReduceKind::Min, "min");
}

Tensor argmax(const Tensor& x) {
  LOOM_CHECK(x.defined(), "argmax: the input tensor is undefined");
  return reduce(x.reshape({x.numel()}), {true}, false, ReduceKind::Max, 1.0, false, true, "argmax")
      .indices;
}

Tensor argmax(const Tensor& x, int64_t dim, bool keepdim) {
  LOOM_CHECK(x.defined(), "argmax: the input tensor is undefined");
  if (x.dim() == 0) {
    wrap_dim(dim, 1, "argmax");
    return zeros({}, TensorOptions(kInt64).device(x.device()));
  }
  std::vector<bool> mask(static_cast<size_t>(x.dim()), false);
  mask[wrap_dim(dim, x.dim(), "argmax")] = true;
  return reduce(x, mask, keepdim, ReduceKind::Max, 1.0, false, true, "argmax").indices;
}

Tensor sum_to(const Tensor& x, const Shape& shape) {
  LOOM_CHECK(x.defined(), "sum_to: the input tensor is undefined");
  const int64_t lead = x.dim() - static_cast<int64_t>(shape.size());
  LOOM_CHECK(lead >= 0, "sum_to: cannot sum a tensor of shape ", shape_str(x.shape()),
             " to the larger rank shape ", shape_str(shape));
  std::vector<int64_t> dims(static_cast<size_t>(lead));
  std::iota(dims.begin(), dims.end(), 0);
  for (size_t i = 0; i < shape.size(); ++i) {
    const int64_t have = x.size(lead + static_cast<int64_t>(i));
    if (shape[i] == have) continue;
    LOOM_CHECK(shape[i] == 1, "sum_to: cannot sum a tensor of shape ", shape_str(x.shape()),
               " to shape ", shape_str(shape), " (dimension ", i, ": ", have, " vs ", shape[i],
               ")");
    dims.push_back(lead + static_cast<int64_t>(i));
  }
  if (dims.empty()) return x;
  return sum(x, dims, /*keepdim=*/true).reshape(shape);
}

}  // namespace loom
