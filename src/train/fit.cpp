// The training loop, evaluation and prediction over DataLoaders.
#include "train/fit.h"

#include <chrono>

#include "nn/loss.h"
#include "nn/models/predict.h"
#include "ops/ops.h"
#include "tensor/autograd.h"
#include "tensor/random.h"
#include "train/progress.h"

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

namespace {

// The predicted class of each row of outputs [B, K], int64 [B]: for a binary head (K = 1),
// class 1 when the logit is >= 0 (p >= 0.5, as predict decides); else the argmax.
Tensor predicted_classes(const Tensor& outputs) {
  return outputs.size(1) == 1 ? ge(outputs.reshape({outputs.size(0)}), 0.0).to(kInt64) : argmax(outputs, 1);
}

}  // namespace

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
  if (!epoch_finished) {
    s.loss_sum = loss_sum;
    s.correct_sum = correct_sum;
    s.samples_seen = samples_seen;
  }
  s.history_json = history.to_json();
  return s;
}

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Restores the loop's counters from a checkpoint's state, after checking that the loader is the
// one the checkpoint was taken with.
void apply_resume(TrainContext& ctx, const io::TrainingState& s, Device device) {
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
    ctx.loss_sum = s.loss_sum.to(device);
    ctx.correct_sum = s.correct_sum.to(device);
    ctx.samples_seen = s.samples_seen;
  }
}

}  // namespace

History fit(nn::Module& model, const LossFn& loss_fn, optim::Optimizer& optimizer,
            data::DataLoader& train_loader, data::DataLoader* val_loader, const FitOptions& options) {
  LOOM_CHECK(options.epochs >= 0, "fit: epochs must be >= 0, got ", options.epochs);
  const Device device = model.device();
  LOOM_CHECK(train_loader.options().device == device, "fit: the training loader delivers to ",
             train_loader.options().device.str(), " but the model is on ", device.str());
  History history;
  TrainContext ctx(model, optimizer, train_loader, history);
  ctx.epochs = options.epochs;
  bool resuming = false;
  if (options.resume) {
    apply_resume(ctx, *options.resume, device);
    resuming = true;
  }
  const bool tty = options.tty.value_or(is_terminal(options.out));
  for (const CallbackPtr& cb : options.callbacks) cb->on_train_begin(ctx);

  for (; ctx.epoch < options.epochs && !ctx.stop_training; ++ctx.epoch) {
    const auto epoch_start = Clock::now();
    ctx.epoch_finished = false;
    model.train();
    // A run resumed mid-epoch starts the loader at the first batch it has not trained on.
    const bool mid_epoch = resuming && ctx.step_in_epoch > 0;
    train_loader.start_epoch(ctx.epoch, mid_epoch ? ctx.step_in_epoch : 0);
    ctx.steps_per_epoch = train_loader.num_batches();
    if (!mid_epoch) {
      ctx.step_in_epoch = 0;
      ctx.loss_sum = zeros({}, device);
      ctx.correct_sum = zeros({}, device);
      ctx.samples_seen = 0;
    }
    resuming = false;
    for (const CallbackPtr& cb : options.callbacks) cb->on_epoch_begin(ctx);
    ProgressBar bar(options.out, tty, ctx.epoch, options.epochs, ctx.steps_per_epoch, ctx.step_in_epoch);

    while (std::optional<data::Batch> batch = train_loader.next()) {
      const Tensor outputs = model.forward(batch->images);
      const Tensor loss = loss_fn(outputs, batch->labels);
      optimizer.zero_grad();
      loss.backward();
      optimizer.step();
      const int64_t n = batch->labels.numel();
      ctx.batch_loss = loss.detach();
      {
        NoGradGuard no_grad;
        ctx.loss_sum = ctx.loss_sum + ctx.batch_loss * static_cast<double>(n);
        ctx.correct_sum = ctx.correct_sum + count_correct(outputs.detach(), batch->labels);
      }
      ctx.samples_seen += n;
      ++ctx.step_in_epoch;
      ++ctx.global_step;
      if (bar.due(ctx.step_in_epoch)) {
        const double seen = static_cast<double>(ctx.samples_seen);
        bar.draw(ctx.step_in_epoch, ctx.loss_sum.item<double>() / seen, ctx.correct_sum.item<double>() / seen);
      }
      for (const CallbackPtr& cb : options.callbacks) cb->on_batch_end(ctx);
    }

    EpochMetrics metrics;
    if (ctx.samples_seen > 0) {
      metrics["loss"] = ctx.loss_sum.item<double>() / ctx.samples_seen;
      metrics["accuracy"] = ctx.correct_sum.item<double>() / ctx.samples_seen;
    }
    if (val_loader != nullptr) {
      const EvalResult val = evaluate(model, loss_fn, *val_loader);
      metrics["val_loss"] = val.loss;
      metrics["val_accuracy"] = val.accuracy;
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

EvalResult evaluate(nn::Module& model, const LossFn& loss_fn, data::DataLoader& loader) {
  nn::EvalModeGuard eval_mode(model);
  NoGradGuard no_grad;
  const Device device = model.device();
  Tensor loss_sum = zeros({}, device), correct = zeros({}, device), confusion;
  EvalResult result;
  loader.start_epoch(0);
  while (std::optional<data::Batch> batch = loader.next()) {
    const Tensor outputs = model.forward(batch->images);
    const int64_t n = batch->labels.numel();
    loss_sum = loss_sum + loss_fn(outputs, batch->labels) * static_cast<double>(n);
    correct = correct + count_correct(outputs, batch->labels);
    // confusion[t, p] += 1 for each sample: one_hot(true)^T [K, n] x one_hot(pred) [n, K].
    const int64_t k = outputs.size(1) == 1 ? 2 : outputs.size(1);
    const Tensor counts = matmul(one_hot(batch->labels.reshape({n}), k).t(), one_hot(predicted_classes(outputs), k));
    confusion = confusion.defined() ? confusion + counts : counts;
    result.samples += n;
  }
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
