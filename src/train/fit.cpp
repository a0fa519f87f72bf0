// fit: the Keras-like loop over epochs and batches. Which step each batch takes (eager,
// accumulating, pipelined, captured) is make_train_step's choice, made once (train_step.h).
#include "loom/train/fit.h"

#include <chrono>
#include <exception>
#include <iostream>
#include <memory>
#include <optional>
#include <utility>

#include "loom/ops/ops.h"
#include "loom/optim/clip_grad.h"
#include "loom/tensor/autograd.h"
#include "loom/train/precision.h"
#include "loom/train/preemption_stop.h"
#include "loom/train/progress.h"
#include "loom/train/ranks.h"

namespace loom::train {

namespace {

using Clock = std::chrono::steady_clock;

// Whether epoch `epoch` (from 0) validates: FitOptions::validation_freq and validation_from.
bool validates(const FitOptions& options, int64_t epoch) {
  const int64_t e = epoch + 1;
  return e == options.epochs || (e >= options.validation_from &&
                                 (e - options.validation_from) % options.validation_freq == 0);
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Makes ctx one rank of `group` (nothing for one rank), after checking the loaders' shards.
void join_group(TrainContext& ctx, dist::ProcessGroup* group, const data::DataLoader& train_loader,
                const data::DataLoader* val_loader) {
  if (group == nullptr || group->size() == 1) return;
  check_loader_shard(train_loader, *group, "training");
  if (val_loader != nullptr) check_loader_shard(*val_loader, *group, "validation");
  ctx.group = group;
  ctx.rank = group->rank();
  ctx.world_size = group->size();
}

// Loss * count, correct predictions and samples of the epoch so far, over all ranks (one
// collective on N ranks; the device sums are read in any case).
struct Sums {
  double loss = 0, correct = 0, samples = 0;
};
Sums epoch_sums(const TrainContext& ctx) {
  Sums s{ctx.loss_sum.item<double>(), ctx.correct_sum.item<double>(),
         static_cast<double>(ctx.samples_seen)};
  if (ctx.group == nullptr) return s;
  const std::vector<double> all = all_reduce_values(*ctx.group, {s.loss, s.correct, s.samples});
  return {all[0], all[1], all[2]};
}

// The next batch; on N ranks none past the steps the ranks agreed on.
std::optional<data::Batch> next_batch(const TrainContext& ctx, data::DataLoader& loader) {
  if (ctx.group != nullptr && ctx.step_in_epoch >= ctx.steps_per_epoch) return std::nullopt;
  return loader.next();
}

// fit, its callbacks' files written by `writer`.
History fit_writing_through(io::BackgroundWriter& writer, nn::Module& model, const LossFn& loss_fn,
                            optim::Optimizer& optimizer, data::DataLoader& train_loader,
                            data::DataLoader* val_loader, const FitOptions& options) {
  LOOM_CHECK(options.epochs >= 0, "fit: epochs must be >= 0, got ", options.epochs);
  LOOM_CHECK(options.validation_freq >= 1, "fit: validation_freq must be >= 1, got ",
             options.validation_freq);
  LOOM_CHECK(options.validation_from >= 1,
             "fit: validation_from must be >= 1 (epochs count from 1), got ",
             options.validation_from);
  const Device device = model.device();
  LOOM_CHECK(train_loader.options().device == device, "fit: the training loader delivers to ",
             train_loader.options().device.str(), " but the model is on ", device.str());
  History history;
  TrainContext ctx(model, optimizer, train_loader, history);
  ctx.epochs = options.epochs;
  ctx.writer = &writer;
  join_group(ctx, options.group.get(), train_loader, val_loader);
  // The epoch's running sums are two device scalars updated in place for the whole run, so that
  // a captured step's graph can add to them itself.
  ctx.loss_sum = zeros({}, device);
  ctx.correct_sum = zeros({}, device);
  bool resuming = false;
  if (options.resume) {
    ctx.restore_state(*options.resume);
    resuming = true;
  }
  std::ostream* out = ctx.rank == 0 ? options.out : nullptr;
  const bool tty = options.tty.value_or(is_terminal(out));
  // On N ranks a line is due at steps every rank can tell (not on a clock), because drawing one
  // sums the ranks' metrics; options.out, the same on every rank, says whether lines are drawn.
  const bool lockstep = ctx.group != nullptr && options.out != nullptr;
  const auto add_to_sums = [&ctx](const Tensor& loss, const Tensor& outputs, const Tensor& labels) {
    NoGradGuard no_grad;
    ctx.loss_sum.add_(loss * static_cast<double>(labels.numel()));
    ctx.correct_sum.add_(count_correct(outputs, labels));
  };
  StepHooks hooks;
  if (options.clip_grad_norm) {
    hooks.before_update = [&model, norm = *options.clip_grad_norm] {
      optim::clip_grad_norm_on_device(model.parameters(), norm);
    };
  }
  hooks.after_step = add_to_sums;
  const std::unique_ptr<TrainStep> step =
      make_train_step(model, loss_fn, optimizer, options, std::move(hooks));
  for (const CallbackPtr& cb : options.callbacks) cb->on_train_begin(ctx);

  for (; ctx.epoch < options.epochs && !ctx.stop_training; ++ctx.epoch) {
    const auto epoch_start = Clock::now();
    ctx.epoch_finished = false;
    model.train();
    // A run resumed mid-epoch starts the loader at the first batch it has not trained on.
    const bool mid_epoch = resuming && ctx.step_in_epoch > 0;
    train_loader.start_epoch(ctx.epoch, mid_epoch ? ctx.step_in_epoch : 0);
    ctx.steps_per_epoch = train_loader.num_batches();
    if (ctx.group != nullptr)
      ctx.steps_per_epoch = all_reduce_value(*ctx.group, ctx.steps_per_epoch, dist::ReduceOp::Min);
    if (!mid_epoch) {
      ctx.step_in_epoch = 0;
      ctx.loss_sum.zero_();
      ctx.correct_sum.zero_();
      ctx.samples_seen = 0;
    }
    resuming = false;
    for (const CallbackPtr& cb : options.callbacks) cb->on_epoch_begin(ctx);
    ProgressBar bar(out, tty, ctx.epoch, options.epochs, ctx.steps_per_epoch, ctx.step_in_epoch,
                    lockstep);
    const int64_t samples_before = ctx.samples_seen;  // a resumed epoch's bar times its own part

    for (const MetricPtr& m : options.metrics) m->reset();
    while (std::optional<data::Batch> batch = next_batch(ctx, train_loader)) {
      const TrainStep::Result r =
          step->run(model_input(batch->images, options.channels_last), batch->labels, ctx);
      for (const MetricPtr& m : options.metrics) m->update(r.outputs, batch->labels);
      const int64_t n = batch->labels.numel();
      ctx.batch_loss = r.loss;
      ctx.batch_size = n;
      ctx.samples_seen += n;
      ++ctx.step_in_epoch;
      ++ctx.global_step;
      if (bar.due(ctx.step_in_epoch)) {
        const Sums sums = epoch_sums(ctx);
        // images/s over all ranks (their shards are equal).
        bar.draw(ctx.step_in_epoch, sums.loss / sums.samples, sums.correct / sums.samples,
                 (ctx.samples_seen - samples_before) * ctx.world_size);
      }
      for (const CallbackPtr& cb : options.callbacks) cb->on_batch_end(ctx);
      if (preempted_here(ctx, options)) return stop_for_preemption(ctx, options);
    }
    step->finish_epoch();
    // A rank whose loader ran dry early would leave the others waiting in a collective.
    LOOM_CHECK(ctx.group == nullptr || ctx.step_in_epoch == ctx.steps_per_epoch,
               "fit: the training loader of ", ctx.group->who(), " ended after ", ctx.step_in_epoch,
               " of the ", ctx.steps_per_epoch, " steps the ranks agreed on for epoch ", ctx.epoch,
               " (were whole batches of bad samples skipped?)");

    EpochMetrics metrics;
    const Sums sums = epoch_sums(ctx);  // waits for the device: the training steps are done
    const double train_seconds = seconds_since(epoch_start);
    if (sums.samples > 0) {
      metrics["loss"] = sums.loss / sums.samples;
      metrics["accuracy"] = sums.correct / sums.samples;
    }
    for (const MetricPtr& m : options.metrics) metrics[m->name()] = m->result(ctx.group);
    ctx.validation_skipped = val_loader != nullptr && !validates(options, ctx.epoch);
    if (val_loader != nullptr && !ctx.validation_skipped) {
      const EvalResult val = evaluate(
          ctx.saved_model(), loss_fn, *val_loader, ctx.group, options.metrics,
          [&bar](int64_t done, int64_t total) { bar.validating(done, total); }, options.autocast,
          options.channels_last, options.flip_tta);
      metrics["val_loss"] = val.loss;
      metrics["val_accuracy"] = val.accuracy;
      for (const auto& [name, value] : val.metrics) metrics["val_" + name] = value;
    }
    metrics["lr"] = optimizer.lr();
    history.epochs.push_back(metrics);
    ctx.epoch_finished = true;
    const double seconds = seconds_since(epoch_start);
    bar.finish(metrics, seconds, train_seconds,
               (ctx.samples_seen - samples_before) * ctx.world_size);
    for (const CallbackPtr& cb : options.callbacks) cb->on_epoch_end(ctx, metrics);
    if (ctx.epoch + 1 < options.epochs && !ctx.stop_training && preempted_here(ctx, options)) {
      ++ctx.epoch;  // as the loop's header would: the next epoch is the one to resume
      return stop_for_preemption(ctx, options);
    }
  }
  for (const CallbackPtr& cb : options.callbacks) cb->on_train_end(ctx);
  return history;
}

}  // namespace

History fit(nn::Module& model, const LossFn& loss_fn, optim::Optimizer& optimizer,
            data::DataLoader& train_loader, data::DataLoader* val_loader,
            const FitOptions& options) {
  // The callbacks' checkpoints, model files and logs reach the disk on this writer's thread
  // while training goes on; all of them are there before fit returns or throws.
  io::BackgroundWriter writer;
  History history;
  try {
    history =
        fit_writing_through(writer, model, loss_fn, optimizer, train_loader, val_loader, options);
  } catch (...) {
    // Training's own error goes on; a write's failure is printed rather than put in its place.
    try {
      writer.flush();
    } catch (const std::exception& e) {
      std::cerr << "loom: fit: " << e.what() << "\n";
    }
    throw;
  }
  writer.flush();  // a failed write fails the run that queued it
  return history;
}

}  // namespace loom::train
