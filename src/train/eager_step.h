// The eager training step: forward, loss and backward op by op from the host, then the
// optimizer step, or one step every `accumulate_steps` batches on their mean gradient.
#pragma once

#include <cstdint>
#include <functional>

#include "loom/train/train_step.h"

namespace loom::train {

class EagerStep : public TrainStep {
 public:
  struct Options {
    bool autocast = false;  // the forward in bf16 mixed precision (train::forward)
    // The optimizer steps once every accumulate_steps batches (and after an epoch's last
    // batch), on the mean gradient of those batches: each batch's loss is divided by their
    // number. The backwards before a step run with the model's gradient sync off
    // (nn::Module::set_gradient_sync), so a DDP's gradients cross ranks once per step.
    int64_t accumulate_steps = 1;
    // After every backward, before the hooks' before_update and the step.
    std::function<void(TrainContext&)> after_backward;
  };
  EagerStep(nn::Module& model, LossFn loss, optim::Optimizer& optimizer, Options options,
            StepHooks hooks);

  Result run(const Tensor& inputs, const Tensor& labels, TrainContext& ctx) override;
  void finish_epoch() override;

 protected:
  // Forward and backward of one batch of a group of `batches` that one optimizer step takes
  // the mean gradient of: the loss divided by `batches` for the backward only; gradients
  // accumulate into .grad. Returns the batch's own mean loss and the outputs.
  virtual Result forward_backward(const Tensor& inputs, const Tensor& labels, int64_t batches);

  nn::Module& model_;
  LossFn loss_;

 private:
  void update();

  optim::Optimizer& optimizer_;
  Options options_;
  StepHooks hooks_;
  bool step_pending_ = false;  // gradients accumulated that no optimizer step has used yet
};

}  // namespace loom::train
