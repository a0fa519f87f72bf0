// Mixed precision's switch, as PyTorch's torch.autocast("cuda", torch.bfloat16): while an
// Autocast scope is open on a thread, the ops that gain most from tensor cores (conv2d,
// conv2d_relu, matmul, bmm, linear) run float32 CUDA operands in bfloat16: each operand is cast
// (a differentiable cast, so float32 parameters receive float32 gradients: the master weights
// stay float32), cuDNN and cuBLAS multiply bfloat16 with float32 accumulation, and the result is
// bfloat16. What follows runs in the dtype it is given: activations, pooling and additions in
// bfloat16, batch norm on bfloat16 data with float32 statistics and parameters; losses widen
// bfloat16 predictions to float32 (nn/loss.h). CPU tensors and float64 are left alone.
//
// Open the scope around the forward pass and the loss, not around backward (backward never
// consults it: the engine closes it while it runs) nor the optimizer step, which updates
// float32 parameters from float32 gradients. train::FitOptions::autocast does this for fit.
#pragma once

#include "loom/tensor/tensor.h"

namespace loom {

class Autocast {
 public:
  // enabled = false opens a scope in which autocast is off (inside an enabled one, say). dtype:
  // bfloat16, the one lower precision loom computes in.
  explicit Autocast(bool enabled = true, DType dtype = kBFloat16);
  ~Autocast();
  Autocast(const Autocast&) = delete;
  Autocast& operator=(const Autocast&) = delete;

 private:
  bool previous_;
};

// Whether an Autocast scope is open, and enabled, on this thread.
bool autocast_enabled();

namespace detail {

// `t` cast to bfloat16 when autocast is enabled on this thread and t is a defined float32 CUDA
// tensor; otherwise `t` itself.
Tensor autocast_operand(const Tensor& t);

}  // namespace detail

}  // namespace loom
