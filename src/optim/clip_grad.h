// Gradient clipping by global norm, as torch.nn.utils.clip_grad_norm_.
#pragma once

#include <vector>

#include "loom/tensor/tensor.h"

namespace loom::optim {

// total = sqrt(sum of g^2 over the grads of all params); when total > max_norm every grad is
// scaled in place by max_norm / (total + 1e-6). Returns total, measured before clipping.
// Parameters without a grad are ignored (total 0 when none has one). The squares are summed on
// each device by one fused pass per dtype, without a host sync per tensor; reading the sum is
// the one sync per device, and grads are rescaled only when clipping is needed. A non-finite
// total propagates into the grads (as in PyTorch without error_if_nonfinite).
double clip_grad_norm_(const std::vector<Tensor>& params, double max_norm);

}  // namespace loom::optim
