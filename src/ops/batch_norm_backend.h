// Internal: batch norm's backend entry points, called by batch_norm.cpp and implemented by
// cpu/batch_norm.cpp and cuda/batch_norm.cu (geometry and per-element rules: batch_norm_math.h).
#pragma once

#include "loom/ops/batch_norm_math.h"
#include "loom/tensor/tensor.h"

namespace loom::detail {

// Fills mean/invstd (and updates the running stats) from the batch.
void cpu_batch_norm_stats(const Tensor& x, const BnGeometry& g, const Tensor& mean,
                          const Tensor& invstd, const Tensor& running_mean,
                          const Tensor& running_var, double momentum, double eps);
// mean = running_mean, invstd = 1 / sqrt(running_var + eps).
void cpu_batch_norm_eval_stats(const Tensor& running_mean, const Tensor& running_var, double eps,
                               const Tensor& mean, const Tensor& invstd);
void cpu_batch_norm_apply(const Tensor& x, const BnGeometry& g, const Tensor& mean,
                          const Tensor& invstd, const Tensor& weight, const Tensor& bias, bool relu,
                          const Tensor& out);
// relu: the fused batch_norm_relu (bias, when defined, is needed to recompute relu's mask).
// Fills whichever of grad_input, grad_weight, grad_bias is defined.
void cpu_batch_norm_backward(const Tensor& dy, const Tensor& x, const BnGeometry& g,
                             const Tensor& mean, const Tensor& invstd, const Tensor& weight,
                             const Tensor& bias, bool relu, bool training, const Tensor& grad_input,
                             const Tensor& grad_weight, const Tensor& grad_bias);

void cuda_batch_norm_stats(const Tensor& x, const BnGeometry& g, const Tensor& mean,
                           const Tensor& invstd, const Tensor& running_mean,
                           const Tensor& running_var, double momentum, double eps);
void cuda_batch_norm_eval_stats(const Tensor& running_mean, const Tensor& running_var, double eps,
                                const Tensor& mean, const Tensor& invstd);
void cuda_batch_norm_apply(const Tensor& x, const BnGeometry& g, const Tensor& mean,
                           const Tensor& invstd, const Tensor& weight, const Tensor& bias,
                           bool relu, const Tensor& out);
void cuda_batch_norm_backward(const Tensor& dy, const Tensor& x, const BnGeometry& g,
                              const Tensor& mean, const Tensor& invstd, const Tensor& weight,
                              const Tensor& bias, bool relu, bool training,
                              const Tensor& grad_input, const Tensor& grad_weight,
                              const Tensor& grad_bias);

}  // namespace loom::detail
