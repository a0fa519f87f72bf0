// one_hot: class indices to rows of zeros with a 1 at each index.
#pragma once

#include "loom/tensor/tensor.h"

namespace loom {

// indices (int64/int32, values in [0, num_classes)) -> [..., num_classes] of `dtype`.
Tensor one_hot(const Tensor& indices, int64_t num_classes, DType dtype = kFloat32);

}  // namespace loom
