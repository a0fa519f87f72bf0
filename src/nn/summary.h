// A Keras-like summary of any module: a Sequential's layer by layer (Sequential::summary, with
// each layer's output shape from one forward pass); any other module's children with their
// parameter counts, and the model's output shape from one forward pass of a random sample.
#pragma once

#include <string>

#include "loom/nn/module.h"

namespace loom::nn {

// input_shape without the batch dimension, e.g. {3, 64, 64}. Runs in eval mode without
// recording gradients; each module's mode is restored afterwards.
std::string summary(Module& model, const Shape& input_shape);

}  // namespace loom::nn
