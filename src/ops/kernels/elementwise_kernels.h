// The interface between the public elementwise ops (elementwise.cpp, activation.cpp) and the
// two backends (cpu/elementwise.cpp, cuda/elementwise.cu): an op is named by an enum and runs
// through run_elementwise, which validates devices and shapes, allocates and dispatches once.
#pragma once

#include <vector>

#include "ops/kernels/elementwise_functors.h"
#include "tensor/tensor.h"

namespace loom::detail {

// One entry per functor in elementwise_functors.h, operands in the functor's order.
// clang-format off
enum class ElementwiseOp {
  // (x)
  Neg, Exp, Log, Sqrt, Abs, Relu, LeakyRelu, Sigmoid, Tanh, Clamp, PowScalar,
  AddScalar, MulScalar, DivScalar, RDivScalar,
  EqScalar, LtScalar, LeScalar, GtScalar, GeScalar,
  // (a, b)
  Add, Sub, Mul, Div, Maximum, Minimum, Pow, BceWithLogits,
  Eq, Ne, Lt, Le, Gt, Ge,
  // (cond, a, b)
  Where,
  // (grad, saved)
  ReluBackward, LeakyReluBackward, SigmoidBackward, TanhBackward, AbsBackward, ClampBackward,
  // (grad, self, other)
  MaximumBackward, MinimumBackward, BceWithLogitsBackward,
};
// clang-format on

// Runs `op` over `inputs` broadcast together (NumPy rules) into a new contiguous tensor of
// `out_dtype` on the inputs' common device. `name` is the public op's name for error messages.
// The functor's element type is taken from the last input (the value operand for every op).
// Dtype rules are the caller's to check; devices and shapes are checked here.
Tensor run_elementwise(ElementwiseOp op, const char* name, const std::vector<Tensor>& inputs,
                       DType out_dtype, const OpParams& params = {});

// run_elementwise for maths: every input must share the first one's dtype, float32, float64 or
// bfloat16 (computed in float32), and the output has that dtype too.
Tensor run_floating(ElementwiseOp op, const char* name, const std::vector<Tensor>& inputs,
                    const OpParams& params = {});

// The backends: `out` is contiguous with the broadcast shape and at least one element.
void cpu_elementwise(ElementwiseOp op, const char* name, const Tensor& out,
                     const std::vector<Tensor>& inputs, const OpParams& params);
void cuda_elementwise(ElementwiseOp op, const char* name, const Tensor& out,
                      const std::vector<Tensor>& inputs, const OpParams& params);

}  // namespace loom::detail
