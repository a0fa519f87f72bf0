// Ops that assemble tensors: cat and stack (Tensor::expand is in expand.cpp: its backward is a
// reduction).
#pragma once

#include <vector>

#include "loom/tensor/tensor.h"

namespace loom {

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);

}  // namespace loom
