// make_train_step: which TrainStep a fit runs, and the combinations of options that cannot be.
#include "loom/train/train_step.h"

#include <cmath>
#include <utility>

#include "loom/train/captured_step.h"
#include "loom/train/eager_step.h"
#include "loom/train/fit.h"
#include "loom/train/pipeline_step.h"

namespace loom::train {

std::unique_ptr<TrainStep> make_train_step(nn::Module& model, const LossFn& loss,
                                           optim::Optimizer& optimizer, const FitOptions& options,
                                           StepHooks hooks) {
  LOOM_CHECK(options.accumulate_steps >= 1, "fit: accumulate_steps must be at least 1, got ",
             options.accumulate_steps);
  LOOM_CHECK(!options.clip_grad_norm ||
                 (std::isfinite(*options.clip_grad_norm) && *options.clip_grad_norm > 0.0),
             "fit: clip_grad_norm must be a finite number > 0, got ",
             options.clip_grad_norm.value_or(0.0));
  // A model that trains its batches itself (a pipeline's stages, op by op on their own streams)
  // has no single forward to capture or to run under one Autocast.
  const bool trains_itself = model.batch_trainer() != nullptr;
  LOOM_CHECK(!trains_itself || !options.capture,
             "fit: capture does not apply to a model that trains its "
             "batches itself (dist::PipelineParallel: its stages run op by op on their own "
             "streams); turn it off");
  LOOM_CHECK(!trains_itself || !options.autocast,
             "fit: autocast does not apply to a model that trains its "
             "batches itself (dist::PipelineParallel: its hand-overs between stages are float32); "
             "turn it off");
  // A graph is the whole step: no host code can run between its backward and its update, and
  // it has one backward per update.
  LOOM_CHECK(!options.capture || (options.accumulate_steps == 1 && !options.after_backward),
             "fit: capture takes the whole step as one graph, so it cannot accumulate gradients "
             "over batches "
             "(accumulate_steps ",
             options.accumulate_steps, ") or call after_backward on the host; turn one off");

  // CUDA graphs exist on CUDA devices only: elsewhere `capture` means nothing (as documented).
  if (options.capture && model.device().is_cuda()) {
    CapturedStep::Options o;
    o.before_update = std::move(hooks.before_update);  // captured with the step
    o.after_step = std::move(hooks.after_step);        // inside the graph, with the step
    o.autocast = options.autocast;
    o.group = options.group;  // every rank captures and replays at the same steps
    return std::make_unique<CapturedStep>(model, loss, optimizer, std::move(o));
  }
  EagerStep::Options o;
  o.autocast = options.autocast;
  o.accumulate_steps = options.accumulate_steps;
  o.after_backward = options.after_backward;
  if (trains_itself)
    return std::make_unique<PipelineStep>(model, loss, optimizer, std::move(o), std::move(hooks));
  return std::make_unique<EagerStep>(model, loss, optimizer, std::move(o), std::move(hooks));
}

}  // namespace loom::train
