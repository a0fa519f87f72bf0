// Activations, and softmax / log_softmax computed stably (the row maximum is subtracted first).
#pragma once

#include "tensor/tensor.h"

namespace loom {

Tensor relu(const Tensor& x);
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
Tensor sigmoid(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor softmax(const Tensor& x, int64_t dim);
Tensor log_softmax(const Tensor& x, int64_t dim);

}  // namespace loom
