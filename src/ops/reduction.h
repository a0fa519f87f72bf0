// Reductions over all elements or over given dims (keepdim keeps them as size 1).
#pragma once

#include <vector>

#include "loom/tensor/tensor.h"

namespace loom {

Tensor sum(const Tensor& x);
Tensor sum(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim = false);
Tensor mean(const Tensor& x);
Tensor mean(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim = false);
// Gradient flows to the first position holding the extreme value.
Tensor max(const Tensor& x);
Tensor max(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor min(const Tensor& x);
Tensor min(const Tensor& x, int64_t dim, bool keepdim = false);
// Index (int64) of the first maximum, over all elements flattened or along dim.
Tensor argmax(const Tensor& x);
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim = false);

// Sums a broadcast gradient back to `shape` (the inverse of broadcasting to x's shape).
Tensor sum_to(const Tensor& x, const Shape& shape);

}  // namespace loom
