// The training loop, evaluation and prediction over DataLoaders.
#include "loom/train/fit.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <iostream>
#include <memory>
#include <optional>
#include <utility>

#include "loom/distributed/ddp.h"
#include "loom/distributed/launch.h"
#include "loom/distributed/pipeline.h"
#include "loom/nn/loss.h"
#include "loom/nn/models/predict.h"
#include "loom/optim/clip_grad.h"
#include "loom/ops/ops.h"
#include "loom/tensor/autograd.h"
#include "loom/tensor/random.h"
#include "loom/train/captured_step.h"
#include "loom/train/precision.h"
#include "loom/train/progress.h"
#include "loom/train/ranks.h"

namespace loom::train {

LossFn binary_cross_entropy_loss() {
  return [](const Tensor& outputs, const Tensor& labels) {
    LOOM_CHECK(outputs.dim() == 2 && outputs.size(1) == 1, "binary_cross_entropy_loss: expected "
               "outputs [B, 1] of logits, got ", shape_str(outputs.shape()));
    return nn::binary_cross_entropy_with_logits(outputs, labels.to(kFloat32).reshape({labels.numel(), 1}));
  };
}

LossFn cross_entropy_loss() {
  return [](const Tensor& outputs, const Tensor& labels) { return nn::cross_entropy(outputs, labels); };
}

Tensor count_correct(const Tensor& outputs, const Tensor& labels) {
  LOOM_CHECK(outputs.dim() == 2 && outputs.size(0) == labels.numel(), "count_correct: outputs ",
             shape_str(outputs.shape()), " do not match labels ", shape_str(labels.shape()));
  return sum(eq(predicted_classes(outputs), labels.reshape({labels.numel()})).to(kFloat32));
}

io::TrainingState TrainContext::capture_state() const {
  io::TrainingState s;
  s.epoch = epoch_finished ? epoch + 1 : epoch;
  s.step_in_epoch = epoch_finished ? 0 : step_in_epoch;
  s.global_step = global_step;
  s.rng_seed = default_generator().seed();
  s.rng_offset = default_generator().offset();
  s.loader_seed = train_loader.options().seed;
  s.augment_seed = train_loader.options().augment.seed;
  if (!epoch_finished && group == nullptr) {
    s.loss_sum = loss_sum.clone();  // the running sums go on changing in place
    s.correct_sum = correct_sum.clone();
    s.samples_seen = samples_seen;
  } else if (!epoch_finished) {
    // Every rank's own float sums, so that each resumed rank goes on adding to exactly the
    // value it had (a sum over ranks, re-split, would round differently).
    const std::vector<double> all = all_gather_values(
        *group, {loss_sum.item<double>(), correct_sum.item<double>(), static_cast<double>(samples_seen)});
    std::vector<float> losses, corrects;
    for (int r = 0; r < world_size; ++r) {
      losses.push_back(static_cast<float>(all[3 * r]));
      corrects.push_back(static_cast<float>(all[3 * r + 1]));
      s.samples_seen += static_cast<int64_t>(all[3 * r + 2]);
    }
    s.loss_sum = from_vector(losses);
    s.correct_sum = from_vector(corrects);
  }
  s.history_json = history.to_json();
  return s;
}

void TrainContext::write_file(io::PreparedFile file) const {
  if (writer != nullptr) {
    writer->submit(std::move(file));
  } else {
    io::write_file_atomically(file);
  }
}

void TrainContext::flush_writes() const {
  if (writer != nullptr) writer->flush();
}

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Restores the loop's counters from a checkpoint's state, after checking that the loader is the
// one the checkpoint was taken with.
void apply_resume(TrainContext& ctx, const io::TrainingState& s) {
  const data::DataLoaderOptions& o = ctx.train_loader.options();
  LOOM_CHECK(s.loader_seed == o.seed && s.augment_seed == o.augment.seed, "fit: cannot resume: the "
             "checkpoint's loader seeds (shuffle ", s.loader_seed, ", augment ", s.augment_seed,
             ") differ from the training loader's (", o.seed, ", ", o.augment.seed, ")");
  ctx.history = History::from_json(s.history_json, "checkpoint");
  LOOM_CHECK(static_cast<int64_t>(ctx.history.epochs.size()) == s.epoch, "fit: cannot resume: the "
             "checkpoint is in epoch ", s.epoch, " but holds the history of ", ctx.history.epochs.size(), " epochs");
  ctx.epoch = s.epoch;
  ctx.step_in_epoch = s.step_in_epoch;
  ctx.global_step = s.global_step;
  if (s.step_in_epoch > 0) {
    LOOM_CHECK(s.loss_sum.defined() && s.correct_sum.defined(), "fit: cannot resume mid-epoch: the "
               "checkpoint lacks the epoch's running sums");
    // One rank saves scalars, N ranks one sum per rank (capture_state).
    const int64_t saved_ranks = s.loss_sum.dim() == 0 ? 1 : s.loss_sum.numel();
    LOOM_CHECK(saved_ranks == ctx.world_size && s.correct_sum.numel() == saved_ranks, "fit: cannot resume "
               "mid-epoch on ", ctx.world_size, " ranks: the checkpoint was taken mid-epoch on ", saved_ranks,
               " (each rank's shard of the epoch depends on the number of ranks; resume on ", saved_ranks,
               " or from a checkpoint at an epoch's end)");
    if (ctx.world_size == 1) {
      ctx.loss_sum.copy_(s.loss_sum);
      ctx.correct_sum.copy_(s.correct_sum);
      ctx.samples_seen = s.samples_seen;
    } else {
      ctx.loss_sum.copy_(s.loss_sum.select(0, ctx.rank));
      ctx.correct_sum.copy_(s.correct_sum.select(0, ctx.rank));
      // Only the total divides the metrics; split evenly it is each rank's own count whenever
      // the shards are equal (DistributedSampler's).
      ctx.samples_seen = s.samples_seen / ctx.world_size + (ctx.rank < s.samples_seen % ctx.world_size ? 1 : 0);
    }
  }
  // load_checkpoint gave every rank rank 0's generator; each rank draws from its own.
  if (ctx.world_size > 1) default_generator().set_state(dist::rank_seed(s.rng_seed, ctx.rank), s.rng_offset);
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
  Sums s{ctx.loss_sum.item<double>(), ctx.correct_sum.item<double>(), static_cast<double>(ctx.samples_seen)};
  if (ctx.group == nullptr) return s;
  const std::vector<double> all = all_reduce_values(*ctx.group, {s.loss, s.correct, s.samples});
  return {all[0], all[1], all[2]};
}

// The images as the model is fed them: channels-last when asked and they are 4-D.
Tensor model_input(const Tensor& images, bool channels_last) {
  return channels_last && images.dim() == 4 ? images.contiguous(MemoryFormat::ChannelsLast) : images;
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
    apply_resume(ctx, *options.resume);
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
  // A pipeline runs its own forward and backward over micro-batches, op by op from the host.
  auto* pipeline = dynamic_cast<dist::PipelineParallel*>(&model);
  LOOM_CHECK(pipeline == nullptr || !options.capture, "fit: capture does not apply to a "
             "dist::PipelineParallel model (its stages run op by op on their own streams); turn it off");
  LOOM_CHECK(pipeline == nullptr || !options.autocast, "fit: autocast does not apply to a "
             "dist::PipelineParallel model yet (its hand-overs between stages are float32); turn it off");
  LOOM_CHECK(options.accumulate_steps >= 1, "fit: accumulate_steps must be at least 1, got ", options.accumulate_steps);
  LOOM_CHECK(!options.clip_grad_norm || (std::isfinite(*options.clip_grad_norm) && *options.clip_grad_norm > 0.0),
             "fit: clip_grad_norm must be a finite number > 0, got ", options.clip_grad_norm.value_or(0.0));
  LOOM_CHECK(!options.capture || (options.accumulate_steps == 1 && !options.after_backward),
             "fit: capture takes the whole step as one graph, so it cannot accumulate gradients over batches "
             "(accumulate_steps ", options.accumulate_steps, ") or call after_backward on the host; turn one off");
  auto* ddp = dynamic_cast<dist::DistributedDataParallel*>(&model);
  const auto clip = [&] {
    if (options.clip_grad_norm) optim::clip_grad_norm_on_device(model.parameters(), *options.clip_grad_norm);
  };
  std::unique_ptr<CapturedStep> captured;
  if (options.capture && device.is_cuda()) {
    CapturedStep::Options capture_options;
    capture_options.before_update = clip;      // on the device, captured with the step
    capture_options.after_step = add_to_sums;  // inside the graph, with the step
    capture_options.autocast = options.autocast;
    capture_options.group = options.group;  // every rank captures and replays at the same steps
    captured = std::make_unique<CapturedStep>(model, loss_fn, optimizer, capture_options);
  }
  for (const CallbackPtr& cb : options.callbacks) cb->on_train_begin(ctx);

  for (; ctx.epoch < options.epochs && !ctx.stop_training; ++ctx.epoch) {
    const auto epoch_start = Clock::now();
    ctx.epoch_finished = false;
    model.train();
    // A run resumed mid-epoch starts the loader at the first batch it has not trained on.
    const bool mid_epoch = resuming && ctx.step_in_epoch > 0;
    train_loader.start_epoch(ctx.epoch, mid_epoch ? ctx.step_in_epoch : 0);
    ctx.steps_per_epoch = train_loader.num_batches();
    if (ctx.group != nullptr) ctx.steps_per_epoch = all_reduce_value(*ctx.group, ctx.steps_per_epoch, dist::ReduceOp::Min);
    if (!mid_epoch) {
      ctx.step_in_epoch = 0;
      ctx.loss_sum.zero_();
      ctx.correct_sum.zero_();
      ctx.samples_seen = 0;
    }
    resuming = false;
    for (const CallbackPtr& cb : options.callbacks) cb->on_epoch_begin(ctx);
    ProgressBar bar(out, tty, ctx.epoch, options.epochs, ctx.steps_per_epoch, ctx.step_in_epoch, lockstep);
    const int64_t samples_before = ctx.samples_seen;  // a resumed epoch's bar times its own part

    for (const MetricPtr& m : options.metrics) m->reset();
    bool step_pending = false;  // gradients accumulated that no optimizer step has used yet
    while (std::optional<data::Batch> batch = next_batch(ctx, train_loader)) {
      Tensor outputs, loss;
      const Tensor images = model_input(batch->images, options.channels_last);
      if (captured) {
        CapturedStep::Result r = captured->run(images, batch->labels);
        outputs = r.outputs;
        loss = r.loss;
      } else {
        // This batch's accumulation group: the batches [first, first + size) of the epoch share
        // one optimizer step on their mean gradient.
        const int64_t k = options.accumulate_steps;
        const int64_t first = ctx.step_in_epoch / k * k;
        const int64_t size = std::max<int64_t>(1, std::min(k, ctx.steps_per_epoch - first));
        const bool steps_now = ctx.step_in_epoch + 1 >= first + size;
        if (ctx.step_in_epoch == first) optimizer.zero_grad();
        const double share = 1.0 / static_cast<double>(size);
        {
          std::optional<dist::DistributedDataParallel::NoSync> local_only;
          if (ddp != nullptr && !steps_now) local_only.emplace(*ddp);
          if (pipeline != nullptr) {
            const LossFn scaled = [&](const Tensor& out, const Tensor& labels) { return loss_fn(out, labels) * share; };
            dist::PipelineStepResult r = pipeline->train_step(images, batch->labels, size == 1 ? loss_fn : scaled);
            outputs = r.outputs;
            loss = size == 1 ? r.loss : r.loss * static_cast<double>(size);
          } else {
            outputs = forward(model, images, options.autocast);
            loss = loss_fn(outputs, batch->labels);
            (size == 1 ? loss : loss * share).backward();
          }
        }
        step_pending = !steps_now;
        if (options.after_backward) options.after_backward(ctx);
        if (steps_now) {
          clip();
          optimizer.step();
        }
        add_to_sums(loss.detach(), outputs.detach(), batch->labels);
      }
      for (const MetricPtr& m : options.metrics) m->update(outputs.detach(), batch->labels);
      const int64_t n = batch->labels.numel();
      ctx.batch_loss = loss.detach();
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
    }
    if (step_pending) {  // the loader ended before the group's last batch (bad samples skipped)
      clip();
      optimizer.step();
    }
    // A rank whose loader ran dry early would leave the others waiting in a collective.
    LOOM_CHECK(ctx.group == nullptr || ctx.step_in_epoch == ctx.steps_per_epoch, "fit: the training loader of ",
               ctx.group->who(), " ended after ", ctx.step_in_epoch, " of the ", ctx.steps_per_epoch,
               " steps the ranks agreed on for epoch ", ctx.epoch, " (were whole batches of bad samples skipped?)");

    EpochMetrics metrics;
    const Sums sums = epoch_sums(ctx);
    if (sums.samples > 0) {
      metrics["loss"] = sums.loss / sums.samples;
      metrics["accuracy"] = sums.correct / sums.samples;
    }
    for (const MetricPtr& m : options.metrics) metrics[m->name()] = m->result(ctx.group);
    if (val_loader != nullptr) {
      const EvalResult val = evaluate(ctx.saved_model(), loss_fn, *val_loader, ctx.group, options.metrics,
                                      [&bar](int64_t done, int64_t total) { bar.validating(done, total); },
                                      options.autocast, options.channels_last);
      metrics["val_loss"] = val.loss;
      metrics["val_accuracy"] = val.accuracy;
      for (const auto& [name, value] : val.metrics) metrics["val_" + name] = value;
    }
    metrics["lr"] = optimizer.lr();
    history.epochs.push_back(metrics);
    ctx.epoch_finished = true;
    const double seconds = seconds_since(epoch_start);
    bar.finish(metrics, seconds);
    for (const CallbackPtr& cb : options.callbacks) cb->on_epoch_end(ctx, metrics);
  }
  for (const CallbackPtr& cb : options.callbacks) cb->on_train_end(ctx);
  return history;
}

}  // namespace

History fit(nn::Module& model, const LossFn& loss_fn, optim::Optimizer& optimizer,
            data::DataLoader& train_loader, data::DataLoader* val_loader, const FitOptions& options) {
  // The callbacks' checkpoints, model files and logs reach the disk on this writer's thread
  // while training goes on; all of them are there before fit returns or throws.
  io::BackgroundWriter writer;
  History history;
  try {
    history = fit_writing_through(writer, model, loss_fn, optimizer, train_loader, val_loader, options);
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

namespace {
// Turns one rank's evaluation sums into the result over all ranks: the counts summed, the
// confusion matrix too (a rank without samples contributes zeros of the agreed size).
EvalResult sum_over_ranks(dist::ProcessGroup& group, const Tensor& loss_sum, const Tensor& correct,
                          const Tensor& confusion, int64_t samples) {
  const std::vector<double> sums =
      all_reduce_values(group, {loss_sum.item<double>(), correct.item<double>(), static_cast<double>(samples)});
  const int64_t k = all_reduce_value(group, confusion.defined() ? confusion.size(0) : 0, dist::ReduceOp::Max);
  Tensor counts = (confusion.defined() ? confusion.to(kInt64) : zeros({k, k}, TensorOptions(kInt64)))
                      .to(group.device()).contiguous();
  group.all_reduce(counts)->wait();
  EvalResult result;
  result.samples = static_cast<int64_t>(sums[2]);
  if (result.samples > 0) {
    result.loss = sums[0] / sums[2];
    result.accuracy = sums[1] / sums[2];
    result.confusion = counts.cpu();
  }
  return result;
}
}  // namespace

EvalResult evaluate(nn::Module& model, const LossFn& loss_fn, data::DataLoader& loader,
                    dist::ProcessGroup* group, const std::vector<MetricPtr>& metrics,
                    const std::function<void(int64_t done, int64_t total)>& progress, bool autocast,
                    bool channels_last) {
  nn::EvalModeGuard eval_mode(model);
  NoGradGuard no_grad;
  const Device device = model.device();
  Tensor loss_sum = zeros({}, device), correct = zeros({}, device), confusion;
  EvalResult result;
  for (const MetricPtr& m : metrics) m->reset();
  int64_t batches = 0;
  loader.start_epoch(0);
  while (std::optional<data::Batch> batch = loader.next()) {
    const Tensor outputs = forward(model, model_input(batch->images, channels_last), autocast);
    const int64_t n = batch->labels.numel();
    loss_sum = loss_sum + loss_fn(outputs, batch->labels) * static_cast<double>(n);
    correct = correct + count_correct(outputs, batch->labels);
    // confusion[t, p] += 1 for each sample: one_hot(true)^T [K, n] x one_hot(pred) [n, K].
    const int64_t k = outputs.size(1) == 1 ? 2 : outputs.size(1);
    const Tensor counts = matmul(one_hot(batch->labels.reshape({n}), k).t(), one_hot(predicted_classes(outputs), k));
    confusion = confusion.defined() ? confusion + counts : counts;
    for (const MetricPtr& m : metrics) m->update(outputs, batch->labels);
    result.samples += n;
    if (progress) progress(++batches, loader.num_batches());
  }
  std::map<std::string, double> metric_values;
  for (const MetricPtr& m : metrics) metric_values[m->name()] = m->result(group);
  if (group != nullptr && group->size() > 1) {
    EvalResult summed = sum_over_ranks(*group, loss_sum, correct, confusion, result.samples);
    summed.metrics = std::move(metric_values);
    return summed;
  }
  result.metrics = std::move(metric_values);
  if (result.samples > 0) {
    result.loss = loss_sum.item<double>() / result.samples;
    result.accuracy = correct.item<double>() / result.samples;
    result.confusion = confusion.cpu().to(kInt64);
  }
  return result;
}

Tensor predict(nn::Module& model, data::DataLoader& loader) {
  std::vector<Tensor> parts;
  loader.start_epoch(0);
  while (std::optional<data::Batch> batch = loader.next()) parts.push_back(nn::predict(model, batch->images).cpu());
  LOOM_CHECK(!parts.empty(), "predict: the loader delivered no batch");
  return cat(parts, 0);
}

}  // namespace loom::train
