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

// The same clipping without reading the norm on the host: the factor min(1, max_norm / (total +
// 1e-6)) is computed on the device and every grad multiplied by it, so a training step neither
// waits for the device nor branches on the norm, and can be captured in a CUDA graph (one
// device). Returns total as a float64 device scalar (on the first grad's device; its sums from
// other devices are copied there). Grads are always rescaled (by exactly 1 when within the norm).
Tensor clip_grad_norm_on_device(const std::vector<Tensor>& params, double max_norm);

}  // namespace loom::optim
