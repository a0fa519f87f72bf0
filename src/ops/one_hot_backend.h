// Internal: one_hot's backend entry points, called by one_hot.cpp and implemented by
// cpu/one_hot.cpp and cuda/one_hot.cu: out (contiguous, zero-filled, [n, classes]) gets a 1 at
// (i, indices[i]) for each of the n indices (contiguous int64 or int32).
#pragma once

#include <cstdint>

#include "loom/tensor/tensor.h"

namespace loom::detail {

// Both throw loom::Error naming the first out-of-range value they find.
void cpu_one_hot(const Tensor& indices, const Tensor& out, int64_t classes);
void cuda_one_hot(const Tensor& indices, const Tensor& out, int64_t classes);

}  // namespace loom::detail
