// Internal: dropout's backend entry points, called by dropout.cpp and implemented by
// cpu/dropout.cpp and cuda/dropout.cu.
#pragma once

#include "loom/ops/dropout_math.h"
#include "loom/tensor/tensor.h"

namespace loom::detail {

// out = dropout_at(src, u) elementwise; all contiguous, one shape, dtype and device. Used for
// the forward (src = x) and the backward (src = grad), which share the mask.
void cpu_dropout_apply(const Tensor& src, const Tensor& u, double p, const Tensor& out);
void cuda_dropout_apply(const Tensor& src, const Tensor& u, double p, const Tensor& out);

}  // namespace loom::detail
