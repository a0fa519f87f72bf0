// Dropout: zeroes each element with probability p and scales the rest by 1 / (1 - p) in
// training; the identity in eval. The mask comes from loom's counter-based generator, so the
// CPU and every GPU draw the same mask for the same seed.
#pragma once

#include "loom/tensor/random.h"
#include "loom/tensor/tensor.h"

namespace loom {

// p in [0, 1). gen: the generator to draw from (default_generator() when null); each call
// advances it by x.numel() counters.
Tensor dropout(const Tensor& x, double p, bool training, Generator* gen = nullptr);

}  // namespace loom
