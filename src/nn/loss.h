// Loss functions, built by composing differentiable ops (so their gradients come for free).
// Reduction::Mean averages over every element (over the batch for class-index losses),
// Sum adds them, None returns the per-element (per-sample) losses. Bfloat16 predictions (mixed
// precision's outputs) are widened to float32 first: every loss computes, and returns, float32.
#pragma once

#include "loom/tensor/tensor.h"

namespace loom::nn {

enum class Reduction { Mean, Sum, None };

// logits and targets of one shape; targets in [0, 1] (integer labels are converted).
// loss = max(x, 0) - x * y + log(1 + exp(-|x|)), stable for any x.
Tensor binary_cross_entropy_with_logits(const Tensor& logits, const Tensor& targets,
                                        Reduction reduction = Reduction::Mean);

// probs in [0, 1], targets of the same shape. As Keras does, probabilities are clamped to
// [eps, 1 - eps] (Keras' epsilon 1e-7) before the log, so a saturated prediction gives a large
// finite loss, and no gradient flows through the clamped ones:
// loss = -(y log(p) + (1 - y) log(1 - p)).
Tensor binary_cross_entropy(const Tensor& probs, const Tensor& targets,
                            Reduction reduction = Reduction::Mean, double eps = 1e-7);

// log_probs [N, C], targets [N] of class indices (int64 or int32, in [0, C)):
// loss_i = -log_probs[i, targets_i].
Tensor nll_loss(const Tensor& log_probs, const Tensor& targets,
                Reduction reduction = Reduction::Mean);

// logits [N, C], targets [N] of class indices. With label smoothing s (PyTorch's definition):
// loss_i = (1 - s) * (-log p[i, y_i]) + s / C * sum_c (-log p[i, c]), p = softmax(logits).
Tensor cross_entropy(const Tensor& logits, const Tensor& targets,
                     Reduction reduction = Reduction::Mean, double label_smoothing = 0.0);

// (input - target)^2 elementwise; shapes must match.
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);

}  // namespace loom::nn
