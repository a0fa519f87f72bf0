// predict(): inference for the zoo's heads, like Keras' model.predict. Runs in eval mode
// without recording gradients (each module's mode is restored afterwards) and turns logits
// into probabilities: sigmoid for a binary head [N, 1], softmax over classes for [N, K].
#pragma once

#include "loom/nn/module.h"

namespace loom::nn {

Tensor predict(Module& model, const Tensor& x);

}  // namespace loom::nn
