// The README's main job on a machine without cat/dog photographs: the same library (DataLoader,
// fit, callbacks, model file) trains a small CNN on Fashion-MNIST from its Debian package.
#pragma once

#include "commands.h"

namespace loom::catdog {

// Uses args' epochs, batch size, lr, device, seed, workers, limit and out. On the CPU with the
// default 25 epochs it trains 2 epochs on 8,000 images so that it finishes in minutes.
int train_fashion_fallback(const TrainArgs& args);

}  // namespace loom::catdog
