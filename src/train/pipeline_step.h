// The step of a model that trains a batch its own way (an nn::BatchTrainer: dist::
// PipelineParallel's micro-batches over its stages): EagerStep's accumulation, hooks and
// optimizer step around the model's own forward and backward.
#pragma once

#include "loom/train/eager_step.h"

namespace loom::train {

class PipelineStep : public EagerStep {
 public:
  // `model.batch_trainer()` must not be null.
  PipelineStep(nn::Module& model, LossFn loss, optim::Optimizer& optimizer, Options options,
               StepHooks hooks);

 protected:
  Result forward_backward(const Tensor& inputs, const Tensor& labels, int64_t batches) override;

 private:
  nn::BatchTrainer& trainer_;
};

}  // namespace loom::train
