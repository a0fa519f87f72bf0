// The interface of a model that trains a batch its own way instead of forward, loss and
// backward: dist::PipelineParallel runs micro-batches through its stages' streams. The training
// loop finds it through nn::Module::batch_trainer(), never by the model's class.
#pragma once

#include <functional>

#include "loom/tensor/tensor.h"

namespace loom::nn {

class BatchTrainer {
 public:
  virtual ~BatchTrainer() = default;

  // A loss over (part of) a batch, a mean over its samples (nn's losses' default reduction).
  using Loss = std::function<Tensor(const Tensor& outputs, const Tensor& targets)>;
  struct Result {
    Tensor loss;     // the batch's mean loss, a scalar without history
    Tensor outputs;  // the model's outputs for the whole batch, without history
  };
  // Forward and backward of one batch, its gradients accumulated into the parameters' .grad.
  virtual Result train_batch(const Tensor& inputs, const Tensor& targets, const Loss& loss) = 0;
};

}  // namespace loom::nn
