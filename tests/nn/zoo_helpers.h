// Helpers shared by the CPU and GPU zoo tests: generated data and the memorisation loop.
#pragma once

#include "loom/optim/adam.h"
#include "testing.h"

namespace loom::nn::testing_zoo {

// 64x64 RGB noise images with random 0/1 labels [N, 1]: nothing to learn but the data itself.
struct Batch {
  Tensor images;
  Tensor labels;
};

inline Batch random_images(int64_t n, Device device, uint64_t seed) {
  Generator gen(seed);
  const TensorOptions options = TensorOptions(kFloat32).device(device);
  return {rand({n, 3, 64, 64}, options, &gen),
          randint(0, 2, {n, 1}, TensorOptions(kInt64).device(device), &gen).to(kFloat32)};
}

// Fraction of predictions (sigmoid > 0.5) that match the labels.
inline double accuracy(Module& model, const Batch& batch) {
  const auto p = predict(model, batch.images).to_vector<float>();
  const auto y = batch.labels.to_vector<float>();
  int correct = 0;
  for (size_t i = 0; i < p.size(); ++i) correct += (p[i] > 0.5f) == (y[i] > 0.5f);
  return static_cast<double>(correct) / p.size();
}

// Full-batch Adam on BCE-with-logits until every training image is classified right; returns
// the number of steps taken, or -1 when max_steps did not suffice.
inline int memorise(Module& model, const Batch& batch, int max_steps) {
  optim::Adam adam(model.parameters(), optim::GroupOptions().with_lr(1e-3));
  for (int step = 1; step <= max_steps; ++step) {
    adam.zero_grad();
    binary_cross_entropy_with_logits(model.forward(batch.images), batch.labels).backward();
    adam.step();
    if (step % 5 == 0 && accuracy(model, batch) == 1.0) return step;
  }
  return -1;
}

}  // namespace loom::nn::testing_zoo
