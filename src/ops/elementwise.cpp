// Elementwise arithmetic, unary maths, comparisons and where(): each forward runs one kernel
// through run_elementwise (defined first: the family's one dispatch point, which activation.cpp
// uses too) and records its backward. Backward passes are compositions of these same ops (abs,
// clamp, maximum and minimum have helper kernels); a gradient that was broadcast is summed back
// to its input's shape.
#include "loom/ops/elementwise.h"

#include "loom/ops/dispatch.h"
#include "loom/ops/elementwise_backend.h"
#include "loom/ops/reduction.h"
#include "loom/tensor/autograd.h"

namespace loom::detail {

namespace {

// The output's layout: that of the first input of the output's own shape which is dense, NCHW
// or channels-last (a broadcast or sliced input has no say), so that relu and the residual sum
// of a channels-last network stay channels-last.
MemoryFormat output_format(const std::vector<Tensor>& inputs, const Shape& shape) {
  if (shape.size() != 4) return MemoryFormat::Contiguous;
  for (const Tensor& t : inputs) {
    if (t.shape() != shape) continue;
    if (t.is_contiguous()) return MemoryFormat::Contiguous;
    if (t.is_contiguous(MemoryFormat::ChannelsLast)) return MemoryFormat::ChannelsLast;
  }
  return MemoryFormat::Contiguous;
}

// `t` broadcast to the 4-D `shape` [N, C, H, W] and viewed as [N, H, W, C] (no autograd): a
// channels-last tensor of that shape becomes a contiguous one.
Tensor nhwc_view(const Tensor& t, const Shape& shape) {
  Shape strides(4, 0);  // broadcast dims read one element
  const int64_t lead = 4 - t.dim();
  for (int64_t d = 0; d < t.dim(); ++d) strides[lead + d] = t.size(d) == 1 ? 0 : t.stride(d);
  return t.as_strided({shape[0], shape[2], shape[3], shape[1]},
                      {strides[0], strides[2], strides[3], strides[1]}, t.offset());
}

}  // namespace

// The one place an elementwise op checks devices and broadcast shapes, allocates its output and
// picks the CPU or CUDA backend.
Tensor run_elementwise(ElementwiseOp op, const char* name, const std::vector<Tensor>& inputs,
                       DType out_dtype, const OpParams& params) {
  LOOM_ASSERT(!inputs.empty());
  for (const Tensor& t : inputs) LOOM_CHECK(t.defined(), name, ": an input tensor is undefined");
  const Device device = inputs.front().device();
  Shape shape = inputs.front().shape();
  for (size_t i = 1; i < inputs.size(); ++i) {
    LOOM_CHECK(inputs[i].device() == device, name, ": tensors are on different devices (", device,
               " and ", inputs[i].device(), ")");
    shape = broadcast_shapes(shape, inputs[i].shape(), name);
  }
  const MemoryFormat format = output_format(inputs, shape);
  Tensor out = empty(shape, TensorOptions(out_dtype).device(device), format);
  if (out.numel() == 0) return out;
  // The backends see a contiguous output: a channels-last one as its [N, H, W, C] view, with
  // every input viewed alike (dense again when it is channels-last too).
  const Tensor out_view = format == MemoryFormat::ChannelsLast ? nhwc_view(out, shape) : out;
  std::vector<Tensor> views;
  if (format == MemoryFormat::ChannelsLast) {
    views.reserve(inputs.size());
    for (const Tensor& t : inputs) views.push_back(nhwc_view(t, shape));
  }
  const std::vector<Tensor>& operands = format == MemoryFormat::ChannelsLast ? views : inputs;
  if (device.is_cuda()) {
    LOOM_CUDA_DISPATCH(name, cuda_elementwise(op, name, out_view, operands, params));
  } else {
    cpu_elementwise(op, name, out_view, operands, params);
  }
  return out;
}

Tensor run_floating(ElementwiseOp op, const char* name, const std::vector<Tensor>& inputs,
                    const OpParams& params) {
  LOOM_ASSERT(!inputs.empty());
  const Tensor& first = inputs.front();
  for (size_t i = 1; i < inputs.size(); ++i) {
    LOOM_CHECK(inputs[i].dtype() == first.dtype(), name, ": dtypes differ (", first.dtype(), " ",
               shape_str(first.shape()), " and ", inputs[i].dtype(), " ",
               shape_str(inputs[i].shape()), ")");
  }
  LOOM_CHECK(is_floating(first.dtype()), name,
             ": expected float32, float64 or bfloat16 tensors, got ", first.dtype(), " of shape ",
             shape_str(first.shape()));
  return run_elementwise(op, name, inputs, first.dtype(), params);
}

}  // namespace loom::detail

namespace loom {

namespace {

using detail::OpParams;
using detail::run_elementwise;
using detail::run_floating;
using Op = detail::ElementwiseOp;

// The gradient for an input of `shape` from a gradient of the broadcast output.
Tensor reduce_to(const Tensor& grad, const Shape& shape) {
  return grad.shape() == shape ? grad : sum_to(grad, shape);
}

// A gradient is only computed for inputs that take one; the engine ignores the rest.
template <typename F>
Tensor grad_if(bool needed, F compute) {
  return needed ? compute() : Tensor();
}

// maximum and minimum: the winner takes the gradient, a tie splits it equally.
Tensor extremum(Op forward, Op backward, const char* name, const Tensor& a, const Tensor& b) {
  Tensor out = run_floating(forward, name, {a, b});
  return record(
      name, out, {a, b},
      [backward, a = a.detach(), b = b.detach(), na = a.requires_grad(),
       nb = b.requires_grad()](const Tensor& g) -> std::vector<Tensor> {
        return {
            grad_if(na,
                    [&] {
                      return reduce_to(run_floating(backward, "extremum_backward", {g, a, b}),
                                       a.shape());
                    }),
            grad_if(nb, [&] {
              return reduce_to(run_floating(backward, "extremum_backward", {g, b, a}), b.shape());
            })};
      });
}

Tensor compare(Op op, const char* name, const Tensor& a, const Tensor& b) {
  LOOM_CHECK(a.dtype() == b.dtype(), name, ": dtypes differ (", a.dtype(), " ",
             shape_str(a.shape()), " and ", b.dtype(), " ", shape_str(b.shape()), ")");
  return run_elementwise(op, name, {a, b}, kUInt8);
}

Tensor compare(Op op, const char* name, const Tensor& a, double b) {
  return run_elementwise(op, name, {a}, kUInt8, OpParams{b});
}

}  // namespace

// ---- binary arithmetic ------------------------------------------------------------------------

Tensor add(const Tensor& a, const Tensor& b) {
  Tensor out = run_floating(Op::Add, "add", {a, b});
  return record("add", out, {a, b},
                [sa = a.shape(), sb = b.shape()](const Tensor& g) -> std::vector<Tensor> {
                  return {reduce_to(g, sa), reduce_to(g, sb)};
                });
}

Tensor sub(const Tensor& a, const Tensor& b) {
  Tensor out = run_floating(Op::Sub, "sub", {a, b});
  return record("sub", out, {a, b},
                [sa = a.shape(), sb = b.shape(),
                 nb = b.requires_grad()](const Tensor& g) -> std::vector<Tensor> {
                  return {reduce_to(g, sa), grad_if(nb, [&] { return reduce_to(neg(g), sb); })};
                });
}

// d(ab)/da = b, d(ab)/db = a.
Tensor mul(const Tensor& a, const Tensor& b) {
  Tensor out = run_floating(Op::Mul, "mul", {a, b});
  return record("mul", out, {a, b},
                [a = a.detach(), b = b.detach(), na = a.requires_grad(),
                 nb = b.requires_grad()](const Tensor& g) -> std::vector<Tensor> {
                  return {grad_if(na, [&] { return reduce_to(mul(g, b), a.shape()); }),
                          grad_if(nb, [&] { return reduce_to(mul(g, a), b.shape()); })};
                });
}

// d(a/b)/da = 1/b, d(a/b)/db = -a/b^2 = -(1/b)(a/b).
Tensor div(const Tensor& a, const Tensor& b) {
  Tensor out = run_floating(Op::Div, "div", {a, b});
  return record("div", out, {a, b},
                [b = b.detach(), y = out.detach(), sa = a.shape(), na = a.requires_grad(),
                 nb = b.requires_grad()](const Tensor& g) -> std::vector<Tensor> {
                  const Tensor g_over_b = div(g, b);
                  return {grad_if(na, [&] { return reduce_to(g_over_b, sa); }),
                          grad_if(nb, [&] { return reduce_to(neg(mul(g_over_b, y)), b.shape()); })};
                });
}

Tensor maximum(const Tensor& a, const Tensor& b) {
  return extremum(Op::Maximum, Op::MaximumBackward, "maximum", a, b);
}

Tensor minimum(const Tensor& a, const Tensor& b) {
  return extremum(Op::Minimum, Op::MinimumBackward, "minimum", a, b);
}

// d(a^b)/da = b a^(b-1); d(a^b)/db = a^b log(a), taken as 0 where a == 0 (where a^b is 0 or 1
// and log(a) is -inf).
Tensor pow(const Tensor& base, const Tensor& exponent) {
  Tensor out = run_floating(Op::Pow, "pow", {base, exponent});
  return record(
      "pow", out, {base, exponent},
      [a = base.detach(), b = exponent.detach(), y = out.detach(), na = base.requires_grad(),
       nb = exponent.requires_grad()](const Tensor& g) -> std::vector<Tensor> {
        return {
            grad_if(na, [&] { return reduce_to(mul(g, mul(b, pow(a, sub(b, 1.0)))), a.shape()); }),
            grad_if(nb, [&] {
              const Tensor zero = zeros({}, g.options());
              const Tensor gy_log_a = where(eq(a, 0.0), zero, mul(g, mul(y, log(a))));
              return reduce_to(gy_log_a, b.shape());
            })};
      });
}

Tensor bce_with_logits_terms(const Tensor& logits, const Tensor& targets) {
  Tensor out =
      run_floating(Op::BceWithLogits, "binary_cross_entropy_with_logits", {logits, targets});
  return record("binary_cross_entropy_with_logits", out, {logits, targets},
                [x = logits.detach(), y = targets.detach(), nx = logits.requires_grad(),
                 ny = targets.requires_grad()](const Tensor& g) -> std::vector<Tensor> {
                  return {grad_if(nx,
                                  [&] {
                                    return reduce_to(
                                        run_floating(Op::BceWithLogitsBackward,
                                                     "binary_cross_entropy_with_logits", {g, x, y}),
                                        x.shape());
                                  }),
                          grad_if(ny, [&] { return reduce_to(neg(mul(g, x)), y.shape()); })};
                });
}

// ---- with a number ------------------------------------------------------------------------

Tensor add(const Tensor& a, double b) {
  Tensor out = run_floating(Op::AddScalar, "add", {a}, OpParams{b});
  return record("add", out, {a}, [](const Tensor& g) -> std::vector<Tensor> { return {g}; });
}

Tensor sub(const Tensor& a, double b) { return add(a, -b); }

Tensor mul(const Tensor& a, double b) {
  Tensor out = run_floating(Op::MulScalar, "mul", {a}, OpParams{b});
  return record("mul", out, {a},
                [b](const Tensor& g) -> std::vector<Tensor> { return {mul(g, b)}; });
}

Tensor div(const Tensor& a, double b) {
  Tensor out = run_floating(Op::DivScalar, "div", {a}, OpParams{b});
  return record("div", out, {a},
                [b](const Tensor& g) -> std::vector<Tensor> { return {div(g, b)}; });
}

// d(s/x)/dx = -s/x^2 = -(s/x)/x.
Tensor operator/(double a, const Tensor& b) {
  Tensor out = run_floating(Op::RDivScalar, "div", {b}, OpParams{a});
  return record("div", out, {b},
                [x = b.detach(), y = out.detach()](const Tensor& g) -> std::vector<Tensor> {
                  return {neg(mul(g, div(y, x)))};
                });
}

// d(x^e)/dx = e x^(e-1); exactly 0 for e == 0, where x^(e-1) may be inf at x == 0.
Tensor pow(const Tensor& base, double exponent) {
  Tensor out = run_floating(Op::PowScalar, "pow", {base}, OpParams{exponent});
  return record("pow", out, {base},
                [x = base.detach(), exponent](const Tensor& g) -> std::vector<Tensor> {
                  if (exponent == 0.0) return {zeros_like(g)};
                  return {mul(g, mul(pow(x, exponent - 1.0), exponent))};
                });
}

// ---- unary ----------------------------------------------------------------------------------

Tensor neg(const Tensor& x) {
  Tensor out = run_floating(Op::Neg, "neg", {x});
  return record("neg", out, {x}, [](const Tensor& g) -> std::vector<Tensor> { return {neg(g)}; });
}

Tensor exp(const Tensor& x) {
  Tensor out = run_floating(Op::Exp, "exp", {x});
  return record("exp", out, {x},
                [y = out.detach()](const Tensor& g) -> std::vector<Tensor> { return {mul(g, y)}; });
}

Tensor log(const Tensor& x) {
  Tensor out = run_floating(Op::Log, "log", {x});
  return record("log", out, {x},
                [x = x.detach()](const Tensor& g) -> std::vector<Tensor> { return {div(g, x)}; });
}

// d sqrt(x)/dx = 1 / (2 sqrt(x)).
Tensor sqrt(const Tensor& x) {
  Tensor out = run_floating(Op::Sqrt, "sqrt", {x});
  return record("sqrt", out, {x}, [y = out.detach()](const Tensor& g) -> std::vector<Tensor> {
    return {div(g, mul(y, 2.0))};
  });
}

Tensor abs(const Tensor& x) {
  Tensor out = run_floating(Op::Abs, "abs", {x});
  return record("abs", out, {x}, [x = x.detach()](const Tensor& g) -> std::vector<Tensor> {
    return {run_floating(Op::AbsBackward, "abs_backward", {g, x})};
  });
}

Tensor clamp(const Tensor& x, double min, double max) {
  LOOM_CHECK(min <= max, "clamp: min (", min, ") is greater than max (", max, ")");
  const OpParams bounds{min, max};
  Tensor out = run_floating(Op::Clamp, "clamp", {x}, bounds);
  return record("clamp", out, {x},
                [x = x.detach(), bounds](const Tensor& g) -> std::vector<Tensor> {
                  return {run_floating(Op::ClampBackward, "clamp_backward", {g, x}, bounds)};
                });
}

// ---- comparisons and where ------------------------------------------------------------------

Tensor eq(const Tensor& a, const Tensor& b) { return compare(Op::Eq, "eq", a, b); }
Tensor ne(const Tensor& a, const Tensor& b) { return compare(Op::Ne, "ne", a, b); }
Tensor lt(const Tensor& a, const Tensor& b) { return compare(Op::Lt, "lt", a, b); }
Tensor le(const Tensor& a, const Tensor& b) { return compare(Op::Le, "le", a, b); }
Tensor gt(const Tensor& a, const Tensor& b) { return compare(Op::Gt, "gt", a, b); }
Tensor ge(const Tensor& a, const Tensor& b) { return compare(Op::Ge, "ge", a, b); }
Tensor gt(const Tensor& a, double b) { return compare(Op::GtScalar, "gt", a, b); }
Tensor lt(const Tensor& a, double b) { return compare(Op::LtScalar, "lt", a, b); }
Tensor ge(const Tensor& a, double b) { return compare(Op::GeScalar, "ge", a, b); }
Tensor le(const Tensor& a, double b) { return compare(Op::LeScalar, "le", a, b); }
Tensor eq(const Tensor& a, double b) { return compare(Op::EqScalar, "eq", a, b); }

// The gradient goes to a where cond holds and to b elsewhere.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  LOOM_CHECK(cond.dtype() == kUInt8, "where: the condition must be uint8, got ", cond.dtype(),
             " of shape ", shape_str(cond.shape()));
  LOOM_CHECK(a.dtype() == b.dtype(), "where: dtypes differ (", a.dtype(), " ", shape_str(a.shape()),
             " and ", b.dtype(), " ", shape_str(b.shape()), ")");
  Tensor out = run_elementwise(Op::Where, "where", {cond, a, b}, a.dtype());
  return record("where", out, {a, b},
                [cond, sa = a.shape(), sb = b.shape(), na = a.requires_grad(),
                 nb = b.requires_grad()](const Tensor& g) -> std::vector<Tensor> {
                  const Tensor zero = zeros({}, g.options());
                  return {grad_if(na, [&] { return reduce_to(where(cond, g, zero), sa); }),
                          grad_if(nb, [&] { return reduce_to(where(cond, zero, g), sb); })};
                });
}

}  // namespace loom
