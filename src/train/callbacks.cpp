// ModelCheckpoint, EarlyStopping, LRSchedulerStep and the metrics loggers.
#include "train/callbacks.h"

#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

#include "io/atomic_file.h"

namespace loom::train {

BestTracker::BestTracker(std::string monitor, Mode mode, double min_delta)
    : monitor_(std::move(monitor)), min_delta_(min_delta) {
  LOOM_CHECK(min_delta >= 0.0, "BestTracker(", monitor_, "): min_delta must be >= 0, got ", min_delta);
  maximize_ = mode == Mode::Max || (mode == Mode::Auto && monitor_.find("acc") != std::string::npos);
}

bool BestTracker::update(double value) {
  const bool better = !has_best_ || (maximize_ ? value > best_ + min_delta_ : value < best_ - min_delta_);
  if (better) {
    best_ = value;
    has_best_ = true;
  }
  return better;
}

void BestTracker::reset() { has_best_ = false; }

double BestTracker::value_in(const EpochMetrics& metrics) const {
  const auto it = metrics.find(monitor_);
  if (it != metrics.end()) return it->second;
  std::string present;
  for (const auto& [name, value] : metrics) present += (present.empty() ? "" : ", ") + name;
  throw Error("callback: monitored metric \"" + monitor_ + "\" is not among the epoch's metrics (" +
              present + "); is there a validation loader?");
}

ModelCheckpoint::ModelCheckpoint(CheckpointOptions options)
    : options_(std::move(options)), best_(options_.monitor, options_.mode) {
  LOOM_CHECK(options_.every_steps >= 0, "ModelCheckpoint: every_steps must be >= 0, got ", options_.every_steps);
  LOOM_CHECK(options_.every_steps == 0 || !options_.path.empty(),
             "ModelCheckpoint: every_steps needs a checkpoint path");
}

void ModelCheckpoint::on_train_begin(TrainContext& ctx) {
  best_.reset();
  if (options_.best_model_path.empty()) return;
  for (const EpochMetrics& m : ctx.history.epochs) best_.update(best_.value_in(m));
}

void ModelCheckpoint::save(const TrainContext& ctx) const {
  io::TrainingState state = ctx.capture_state();  // on every rank: mid-epoch it is a collective
  if (ctx.rank != 0) return;
  state.extra = options_.extra;
  io::save_checkpoint(options_.path, ctx.saved_model(), ctx.optimizer, state, options_.preprocessing);
}

void ModelCheckpoint::on_batch_end(TrainContext& ctx) {
  if (options_.every_steps > 0 && ctx.global_step % options_.every_steps == 0 &&
      ctx.step_in_epoch < ctx.steps_per_epoch) {
    save(ctx);  // the epoch's last step is saved by on_epoch_end, with its metrics
  }
}

void ModelCheckpoint::on_epoch_end(TrainContext& ctx, const EpochMetrics& metrics) {
  // Every rank tracks the best, so that all of them agree on it.
  if (!options_.best_model_path.empty() && best_.update(best_.value_in(metrics)) && ctx.rank == 0) {
    io::save_model(options_.best_model_path, ctx.saved_model(), options_.preprocessing);
  }
  if (!options_.path.empty()) save(ctx);
}

EarlyStopping::EarlyStopping(std::string monitor, int64_t patience, double min_delta, Mode mode,
                             bool restore_best)
    : best_(std::move(monitor), mode, min_delta), patience_(patience), restore_best_(restore_best) {
  LOOM_CHECK(patience >= 0, "EarlyStopping: patience must be >= 0, got ", patience);
}

void EarlyStopping::on_train_begin(TrainContext& ctx) {
  best_.reset();
  wait_ = 0;
  stopped_epoch_ = -1;
  for (const EpochMetrics& m : ctx.history.epochs) wait_ = best_.update(best_.value_in(m)) ? 0 : wait_ + 1;
}

void EarlyStopping::on_epoch_end(TrainContext& ctx, const EpochMetrics& metrics) {
  if (best_.update(best_.value_in(metrics))) {
    wait_ = 0;
    if (restore_best_) {
      best_weights_ = nn::NamedTensors();
      for (const auto& [name, t] : ctx.saved_model().state_dict()) best_weights_.insert(name, t.clone());
    }
    return;
  }
  if (++wait_ > patience_) {
    ctx.stop_training = true;
    stopped_epoch_ = ctx.epoch;
  }
}

void EarlyStopping::on_train_end(TrainContext& ctx) {
  if (restore_best_ && !best_weights_.empty()) ctx.saved_model().load_state_dict(best_weights_);
}

void LRSchedulerStep::on_train_begin(TrainContext& ctx) {
  scheduler_.set_step(period_ == Period::Epoch ? ctx.epoch : ctx.global_step);
}

void LRSchedulerStep::on_batch_end(TrainContext& /*ctx*/) {
  if (period_ == Period::Batch) scheduler_.step();
}

void LRSchedulerStep::on_epoch_end(TrainContext& /*ctx*/, const EpochMetrics& /*metrics*/) {
  if (period_ == Period::Epoch) scheduler_.step();
}

std::string history_csv(const History& history) {
  std::set<std::string> names;
  for (const EpochMetrics& m : history.epochs) {
    for (const auto& [name, value] : m) names.insert(name);
  }
  std::ostringstream out;
  out << "epoch";
  for (const std::string& name : names) out << "," << name;
  out << "\n";
  for (size_t e = 0; e < history.epochs.size(); ++e) {
    out << e;
    for (const std::string& name : names) {
      out << ",";
      const auto it = history.epochs[e].find(name);
      if (it != history.epochs[e].end()) {
        char value[32];
        std::snprintf(value, sizeof value, "%.9g", it->second);
        out << value;
      }
    }
    out << "\n";
  }
  return out.str();
}

namespace {
void write_text(const std::string& path, const std::string& text) {
  io::write_file_atomically(path, [&](const io::ByteSink& sink) { sink(text.data(), text.size()); });
}
}  // namespace

void CsvLogger::on_epoch_end(TrainContext& ctx, const EpochMetrics& /*metrics*/) {
  if (ctx.rank != 0) return;
  write_text(path_, history_csv(ctx.history));
}

void JsonLinesLogger::on_epoch_end(TrainContext& ctx, const EpochMetrics& /*metrics*/) {
  if (ctx.rank != 0) return;
  std::string text;
  for (size_t e = 0; e < ctx.history.epochs.size(); ++e) {
    text += metrics_json(static_cast<int64_t>(e), ctx.history.epochs[e]) + "\n";
  }
  write_text(path_, text);
}

}  // namespace loom::train
