// Internal: dropout's per-element rule, shared by the CPU loop and the CUDA kernel, and the
// backend entry points. u holds the uniform draws in [0, 1) that decide the mask.
#pragma once

#include "tensor/strided_index.h"
#include "tensor/tensor.h"

namespace loom::detail {

// An element is kept when its draw is at least p; kept elements are scaled by 1 / (1 - p).
template <typename T>
LOOM_HOST_DEVICE T dropout_at(T value, T u, double p, double scale) {
  return static_cast<double>(u) >= p ? static_cast<T>(value * scale) : T(0);
}

// out = dropout_at(src, u) elementwise; all contiguous, one shape, dtype and device. Used for
// the forward (src = x) and the backward (src = grad), which share the mask.
void cpu_dropout_apply(const Tensor& src, const Tensor& u, double p, const Tensor& out);
void cuda_dropout_apply(const Tensor& src, const Tensor& u, double p, const Tensor& out);

}  // namespace loom::detail
