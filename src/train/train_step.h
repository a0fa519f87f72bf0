// The step of fit's loop: one batch in; forward, loss, backward and, when due, the optimizer
// step; the batch's loss and outputs out. fit chooses one TrainStep before its first epoch
// (make_train_step) and calls it for every batch without asking which kind it holds, as Keras'
// fit calls Model.train_step. The kinds, each its own class:
//   EagerStep     op by op from the host, with gradient accumulation (train/eager_step.h);
//   PipelineStep  an EagerStep whose forward and backward are the model's own micro-batches
//                 (a model with an nn::BatchTrainer, dist::PipelineParallel;
//                 train/pipeline_step.h);
//   CapturedStep  the whole step replayed from a CUDA graph (train/captured_step.h).
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include "loom/nn/module.h"
#include "loom/optim/optimizer.h"
#include "loom/tensor/tensor.h"

namespace loom::train {

struct TrainContext;
struct FitOptions;
// outputs of the model and int64 labels [B] of the batch -> a scalar mean loss.
using LossFn = std::function<Tensor(const Tensor& outputs, const Tensor& labels)>;

class TrainStep {
 public:
  virtual ~TrainStep() = default;

  struct Result {
    Tensor loss;     // the batch's mean loss, a device scalar without history
    Tensor outputs;  // the model's outputs, without history
  };
  // One batch of the epoch ctx is in (ctx.step_in_epoch of ctx.steps_per_epoch: an
  // accumulating step needs to know where its group of batches ends).
  virtual Result run(const Tensor& inputs, const Tensor& labels, TrainContext& ctx) = 0;
  // The epoch's loader has ended: a step that holds gradients no optimizer step has used yet
  // steps on them now.
  virtual void finish_epoch() {}
};

// What every kind of step does besides forward, backward and the optimizer step.
struct StepHooks {
  // Between backward and the optimizer step: device work on the gradients only (clipping).
  std::function<void()> before_update;
  // After the optimizer step, given the step's loss, outputs and labels without history
  // (fit's running sums: in place, so that a captured step's graph updates them too).
  std::function<void(const Tensor& loss, const Tensor& outputs, const Tensor& labels)> after_step;
};

// The step `options` ask for, or a loom::Error naming the combination that cannot be. The
// rules, in one place (train_step.cpp states why):
//   - capture applies on a CUDA device only (the CPU steps eagerly), to a model without an
//     nn::BatchTrainer, with accumulate_steps 1 and without after_backward;
//   - autocast does not apply to a model with an nn::BatchTrainer;
//   - accumulate_steps >= 1; clip_grad_norm, when set, finite and > 0.
std::unique_ptr<TrainStep> make_train_step(nn::Module& model, const LossFn& loss,
                                           optim::Optimizer& optimizer, const FitOptions& options,
                                           StepHooks hooks);

}  // namespace loom::train
