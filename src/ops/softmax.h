// softmax and log_softmax along a dim, computed stably (the row maximum is subtracted first).
#pragma once

#include "loom/tensor/tensor.h"

namespace loom {

Tensor softmax(const Tensor& x, int64_t dim);
Tensor log_softmax(const Tensor& x, int64_t dim);

}  // namespace loom
