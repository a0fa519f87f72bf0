// flip: a tensor with the order of its elements reversed along some dimensions (torch.flip,
// numpy.flip), in one pass over the data.
#pragma once

#include <vector>

#include "loom/tensor/tensor.h"

namespace loom {

// A new contiguous tensor: out[..., i, ...] = x[..., n - 1 - i, ...] along each of `dims`
// (negative counts from the end; each at most once). Any dtype; the gradient is flipped back.
Tensor flip(const Tensor& x, const std::vector<int64_t>& dims);

}  // namespace loom
