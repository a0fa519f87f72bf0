// Ops that assemble tensors: cat, stack, one_hot (Tensor::expand is defined beside them).
#pragma once

#include <vector>

#include "tensor/tensor.h"

namespace loom {

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
// indices (int64/int32, values in [0, num_classes)) -> [..., num_classes] of `dtype`.
Tensor one_hot(const Tensor& indices, int64_t num_classes, DType dtype = kFloat32);

}  // namespace loom
