// relu, add_relu, leaky_relu, sigmoid and tanh: one forward kernel each and a backward helper
// kernel that reads the saved output (relu, add_relu, sigmoid, tanh) or input (leaky_relu).
#include "loom/ops/activation.h"

#include "loom/ops/elementwise_backend.h"
#include "loom/ops/reduction.h"
#include "loom/tensor/autograd.h"

namespace loom {

namespace {

using detail::OpParams;
using detail::run_floating;
using Op = detail::ElementwiseOp;

// An activation whose backward is backward_op(grad, saved[, params]).
Tensor activation(Op forward_op, Op backward_op, const char* name, const char* backward_name,
                  const Tensor& x, bool save_output, const OpParams& params = {}) {
  Tensor out = run_floating(forward_op, name, {x}, params);
  const Tensor saved = save_output ? out.detach() : x.detach();
  return record(
      name, out, {x},
      [backward_op, backward_name, saved, params](const Tensor& g) -> std::vector<Tensor> {
        return {run_floating(backward_op, backward_name, {g, saved}, params)};
      });
}

}  // namespace

// The gradient passes where relu(x) > 0 (0 at x = 0, as in PyTorch).
Tensor relu(const Tensor& x) {
  return activation(Op::Relu, Op::ReluBackward, "relu", "relu_backward", x, /*save_output=*/true);
}

Tensor add_relu(const Tensor& a, const Tensor& b) {
  Tensor out = run_floating(Op::AddRelu, "add_relu", {a, b});
  return record("add_relu", out, {a, b},
                [saved = out.detach(), sa = a.shape(),
                 sb = b.shape()](const Tensor& g) -> std::vector<Tensor> {
                  const Tensor grad = run_floating(Op::ReluBackward, "relu_backward", {g, saved});
                  auto to = [&](const Shape& s) {
                    return grad.shape() == s ? grad : sum_to(grad, s);
                  };
                  return {to(sa), to(sb)};
                });
}

// The input is saved, not the output: with a negative slope the output's sign says nothing.
Tensor leaky_relu(const Tensor& x, double negative_slope) {
  return activation(Op::LeakyRelu, Op::LeakyReluBackward, "leaky_relu", "leaky_relu_backward", x,
                    /*save_output=*/false, OpParams{negative_slope});
}

// sigmoid(x) = 1 / (1 + e^-x), computed without overflow for large |x|; d/dx = y (1 - y).
Tensor sigmoid(const Tensor& x) {
  return activation(Op::Sigmoid, Op::SigmoidBackward, "sigmoid", "sigmoid_backward", x,
                    /*save_output=*/true);
}

// d tanh(x)/dx = 1 - y^2.
Tensor tanh(const Tensor& x) {
  return activation(Op::Tanh, Op::TanhBackward, "tanh", "tanh_backward", x, /*save_output=*/true);
}

}  // namespace loom
