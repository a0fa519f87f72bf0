// EagerStep: one batch op by op, with gradient accumulation over a group of batches.
#include "loom/train/eager_step.h"

#include <algorithm>
#include <utility>

#include "loom/ops/ops.h"
#include "loom/train/callback.h"
#include "loom/train/precision.h"

namespace loom::train {
namespace {

// Backward keeps the gradients on this rank while it lives, when `local` (the model's gradient
// sync off), and restores the model's setting after, even when the step throws.
class LocalGradients {
 public:
  LocalGradients(nn::Module& model, bool local) : model_(model), local_(local) {
    if (local_) previous_ = model_.set_gradient_sync(false);
  }
  ~LocalGradients() {
    if (local_) model_.set_gradient_sync(previous_);
  }
  LocalGradients(const LocalGradients&) = delete;
  LocalGradients& operator=(const LocalGradients&) = delete;

 private:
  nn::Module& model_;
  bool local_;
  bool previous_ = true;
};

}  // namespace

EagerStep::EagerStep(nn::Module& model, LossFn loss, optim::Optimizer& optimizer, Options options,
                     StepHooks hooks)
    : model_(model),
      loss_(std::move(loss)),
      optimizer_(optimizer),
      options_(std::move(options)),
      hooks_(std::move(hooks)) {
  LOOM_CHECK(options_.accumulate_steps >= 1, "fit: accumulate_steps must be at least 1, got ",
             options_.accumulate_steps);
}

TrainStep::Result EagerStep::run(const Tensor& inputs, const Tensor& labels, TrainContext& ctx) {
  // This batch's accumulation group: the batches [first, first + size) of the epoch share one
  // optimizer step on their mean gradient (the epoch's last group may be shorter).
  const int64_t k = options_.accumulate_steps;
  const int64_t first = ctx.step_in_epoch / k * k;
  const int64_t size = std::max<int64_t>(1, std::min(k, ctx.steps_per_epoch - first));
  const bool steps_now = ctx.step_in_epoch + 1 >= first + size;
  if (ctx.step_in_epoch == first) optimizer_.zero_grad();
  Result r;
  {
    LocalGradients local_only(model_, !steps_now);
    r = forward_backward(inputs, labels, size);
  }
  step_pending_ = !steps_now;
  if (options_.after_backward) options_.after_backward(ctx);
  if (steps_now) update();
  if (hooks_.after_step) hooks_.after_step(r.loss, r.outputs, labels);
  return r;
}

void EagerStep::finish_epoch() {
  // The loader ended before the group's last batch (bad samples skipped).
  if (step_pending_) update();
}

TrainStep::Result EagerStep::forward_backward(const Tensor& inputs, const Tensor& labels,
                                              int64_t batches) {
  const Tensor outputs = forward(model_, inputs, options_.autocast);
  const Tensor loss = loss_(outputs, labels);
  // Alone, the loss is not scaled at all: bit for bit the step without accumulation.
  (batches == 1 ? loss : loss * (1.0 / static_cast<double>(batches))).backward();
  return {loss.detach(), outputs.detach()};
}

void EagerStep::update() {
  if (hooks_.before_update) hooks_.before_update();
  optimizer_.step();
  step_pending_ = false;
}

}  // namespace loom::train
