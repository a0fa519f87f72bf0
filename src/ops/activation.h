// Activations: elementwise ops with their own functors (elementwise_math.h).
#pragma once

#include "loom/tensor/tensor.h"

namespace loom {

Tensor relu(const Tensor& x);
// relu(a + b) (broadcasting) in one pass: a residual block's end. The gradient of both is relu's.
Tensor add_relu(const Tensor& a, const Tensor& b);
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
Tensor sigmoid(const Tensor& x);
Tensor tanh(const Tensor& x);

}  // namespace loom
