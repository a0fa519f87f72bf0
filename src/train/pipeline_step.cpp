// PipelineStep: the model's own forward and backward (nn::BatchTrainer) inside EagerStep.
#include "loom/train/pipeline_step.h"

#include <utility>

#include "loom/ops/ops.h"

namespace loom::train {
namespace {
nn::BatchTrainer& trainer_of(nn::Module& model) {
  nn::BatchTrainer* trainer = model.batch_trainer();
  LOOM_ASSERT(trainer != nullptr);
  return *trainer;
}
}  // namespace

PipelineStep::PipelineStep(nn::Module& model, LossFn loss, optim::Optimizer& optimizer,
                           Options options, StepHooks hooks)
    : EagerStep(model, std::move(loss), optimizer, std::move(options), std::move(hooks)),
      trainer_(trainer_of(model)) {}

TrainStep::Result PipelineStep::forward_backward(const Tensor& inputs, const Tensor& labels,
                                                 int64_t batches) {
  if (batches == 1) {
    nn::BatchTrainer::Result r = trainer_.train_batch(inputs, labels, loss_);
    return {r.loss, r.outputs};
  }
  // The trainer backpropagates the loss it is given: scale that, and report the unscaled mean.
  const double share = 1.0 / static_cast<double>(batches);
  const nn::BatchTrainer::Loss scaled = [&](const Tensor& out, const Tensor& target) {
    return loss_(out, target) * share;
  };
  nn::BatchTrainer::Result r = trainer_.train_batch(inputs, labels, scaled);
  return {r.loss * static_cast<double>(batches), r.outputs};
}

}  // namespace loom::train
