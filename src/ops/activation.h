// Activations: elementwise ops with their own functors (elementwise_math.h).
#pragma once

#include "loom/tensor/tensor.h"

namespace loom {

Tensor relu(const Tensor& x);
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
Tensor sigmoid(const Tensor& x);
Tensor tanh(const Tensor& x);

}  // namespace loom
