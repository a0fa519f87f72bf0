// Batch normalisation over the channel dim (1) of x [N, C, ...]: batch statistics in training
// (updating the running averages in place), running statistics in eval.
#pragma once

#include "loom/tensor/tensor.h"

namespace loom {

// y = (x - mean_c) / sqrt(var_c + eps) * weight_c + bias_c.
// training: mean/var are the batch's (biased var); running_mean and running_var, when defined,
//   become (1 - momentum) * running + momentum * batch, with the unbiased variance
//   var * m / (m - 1), m = N * H * W, as PyTorch does.
// eval: mean/var are running_mean/running_var (both required).
// weight/bias undefined: 1 and 0. Gradients flow to x, weight and bias, never to running stats.
// Bfloat16 x (mixed precision, tensor/autocast.h) takes float32 weight, bias and running
// statistics, computes in float32 as float32 input does, and returns bfloat16.
Tensor batch_norm(const Tensor& x, const Tensor& weight, const Tensor& bias,
                  const Tensor& running_mean, const Tensor& running_var, bool training,
                  double momentum = 0.1, double eps = 1e-5);

// relu(batch_norm(...)) in one pass each way: the output is never stored before the relu, and
// the backward recomputes relu's mask from x instead of a pass of its own. The same values and
// gradients as the two ops (relu_backward's rule: the gradient passes where the output > 0).
Tensor batch_norm_relu(const Tensor& x, const Tensor& weight, const Tensor& bias,
                       const Tensor& running_mean, const Tensor& running_var, bool training,
                       double momentum = 0.1, double eps = 1e-5);

}  // namespace loom
