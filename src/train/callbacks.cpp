// ModelCheckpoint, EarlyStopping, LRSchedulerStep and the metrics loggers.
#include "loom/train/callbacks.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <utility>

#include "loom/io/atomic_file.h"
#include "loom/nn/untrusted_json.h"

namespace loom::train {

BestTracker::BestTracker(std::string monitor, Mode mode, double min_delta)
    : monitor_(std::move(monitor)), min_delta_(min_delta) {
  LOOM_CHECK(min_delta >= 0.0, "BestTracker(", monitor_, "): min_delta must be >= 0, got ",
             min_delta);
  maximize_ =
      mode == Mode::Max || (mode == Mode::Auto && monitor_.find("acc") != std::string::npos);
}

bool BestTracker::update(double value) {
  const bool better =
      !has_best_ || (maximize_ ? value > best_ + min_delta_ : value < best_ - min_delta_);
  if (better) {
    best_ = value;
    has_best_ = true;
  }
  return better;
}

void BestTracker::reset() { has_best_ = false; }

int64_t BestTracker::replay(const History& history) {
  reset();
  int64_t best_epoch = -1;
  for (size_t e = 0; e < history.epochs.size(); ++e) {
    const auto it = history.epochs[e].find(monitor_);
    if (it != history.epochs[e].end() && update(it->second)) best_epoch = static_cast<int64_t>(e);
  }
  return best_epoch;
}

std::optional<double> BestTracker::value_at_epoch_end(const TrainContext& ctx,
                                                      const EpochMetrics& metrics) const {
  if (ctx.validation_skipped && !metrics.count(monitor_)) return std::nullopt;
  return value_in(metrics);
}

double BestTracker::value_in(const EpochMetrics& metrics) const {
  const auto it = metrics.find(monitor_);
  if (it != metrics.end()) return it->second;
  std::string present;
  for (const auto& [name, value] : metrics) present += (present.empty() ? "" : ", ") + name;
  throw Error("callback: monitored metric \"" + monitor_ + "\" is not among the epoch's metrics (" +
              present + "); is there a validation loader?");
}

io::PreparedFile prepare_epoch_model(const std::string& path, const nn::Module& model,
                                     const io::Preprocessing& preprocessing,
                                     const SavedEpoch& saved) {
  return io::prepare_model_file(path, model, preprocessing,
                                {{kSavedEpochKey, std::to_string(saved.epoch + 1)},
                                 {kSavedEpochBaseKey, "1"},
                                 {kSavedMetricsKey, nlohmann::json(saved.metrics).dump()}});
}

void save_epoch_model(const std::string& path, const nn::Module& model,
                      const io::Preprocessing& preprocessing, const SavedEpoch& saved) {
  io::write_file_atomically(prepare_epoch_model(path, model, preprocessing, saved));
}

std::optional<SavedEpoch> saved_epoch(const io::Metadata& metadata, const std::string& source) {
  const auto epoch = metadata.find(kSavedEpochKey);
  const auto metrics = metadata.find(kSavedMetricsKey);
  if (epoch == metadata.end() && metrics == metadata.end()) return std::nullopt;
  LOOM_CHECK(epoch != metadata.end() && metrics != metadata.end(), source, ": the metadata has \"",
             epoch != metadata.end() ? kSavedEpochKey : kSavedMetricsKey, "\" without \"",
             epoch != metadata.end() ? kSavedMetricsKey : kSavedEpochKey, "\"");
  SavedEpoch saved;
  const std::string epoch_where = source + ": \"" + kSavedEpochKey + "\"";
  int64_t base = 0;  // a file written before epochs were counted from 1 has no base
  const auto base_entry = metadata.find(kSavedEpochBaseKey);
  if (base_entry != metadata.end()) {
    const std::string base_where = source + ": \"" + kSavedEpochBaseKey + "\"";
    base = nn::json_integer(nn::parse_untrusted_json(base_entry->second, base_where), 0, 1,
                            base_where);
  }
  saved.epoch = nn::json_integer(nn::parse_untrusted_json(epoch->second, epoch_where), base,
                                 std::numeric_limits<int32_t>::max(), epoch_where) -
                base;
  const std::string where = source + ": \"" + kSavedMetricsKey + "\"";
  const nlohmann::json object = nn::parse_untrusted_json(metrics->second, where);
  LOOM_CHECK(object.is_object(), where, " must be a JSON object of metrics, got ",
             nn::json_excerpt(object));
  LOOM_CHECK(object.size() <= 256, where, " holds ", object.size(), " metrics (at most 256)");
  for (const auto& [name, value] : object.items()) {
    saved.metrics[name] = nn::json_number(value, where + " \"" + nn::excerpt(name) + "\"");
  }
  return saved;
}

ModelCheckpoint::ModelCheckpoint(CheckpointOptions options)
    : options_(std::move(options)), best_(options_.monitor, options_.mode) {
  LOOM_CHECK(options_.every_steps >= 0, "ModelCheckpoint: every_steps must be >= 0, got ",
             options_.every_steps);
  LOOM_CHECK(options_.every_steps == 0 || !options_.path.empty(),
             "ModelCheckpoint: every_steps needs a checkpoint path");
}

namespace {

// Empty when the model file at `path` holds epoch `epoch` with `metrics`; else what it holds.
std::string holds_epoch(const std::string& path, int64_t epoch, const EpochMetrics& metrics) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return "does not exist";
  std::optional<SavedEpoch> saved;
  try {
    saved = saved_epoch(io::load_safetensors(path).metadata, path);
  } catch (const Error& e) {
    return std::string("cannot be read: ") + nn::excerpt(e.what(), 4 * nn::kMaxExcerpt);
  }
  if (!saved) return "records no epoch";
  if (saved->epoch != epoch) return "holds epoch " + std::to_string(saved->epoch + 1);
  if (saved->metrics != metrics)
    return "holds an epoch " + std::to_string(epoch + 1) + " of other metrics";
  return "";
}

}  // namespace

ModelCheckpoint::BestSource ModelCheckpoint::find_best_on_resume(const History& history,
                                                                 int64_t step_in_epoch) const {
  if (options_.best_model_path.empty() || history.epochs.empty()) return BestSource::Nowhere;
  BestTracker tracker(options_.monitor, options_.mode);
  const int64_t best = tracker.replay(history);
  const int64_t last = static_cast<int64_t>(history.epochs.size()) - 1;
  const EpochMetrics& metrics = history.epochs[static_cast<size_t>(best)];
  const std::string in_file = holds_epoch(options_.best_model_path, best, metrics);
  if (in_file.empty()) return BestSource::BestModelFile;
  if (best == last && step_in_epoch == 0) return BestSource::ResumedWeights;
  std::string problems = options_.best_model_path + " " + in_file;
  if (!options_.resumed_best_model_path.empty()) {
    const std::string in_other = holds_epoch(options_.resumed_best_model_path, best, metrics);
    if (in_other.empty()) return BestSource::ResumedBestModelFile;
    problems += ", " + nn::excerpt(options_.resumed_best_model_path) + " " + in_other;
  }
  char value[32];
  std::snprintf(value, sizeof value, "%.6g", tracker.best());
  LOOM_FAIL("ModelCheckpoint: resuming after epoch ", last + 1, ", whose best ", options_.monitor,
            " so far (", value, ") is epoch ", best + 1,
            "'s, but no file holds that epoch's weights: ", problems);
}

void ModelCheckpoint::on_train_begin(TrainContext& ctx) {
  best_.reset();
  if (options_.best_model_path.empty() || ctx.history.epochs.empty()) return;
  best_.replay(ctx.history);
  // Rank 0 reads and writes the files; every rank learns whether it could, so that all of them
  // stop together rather than leave the others waiting in the first epoch's collectives.
  std::string problem;
  if (ctx.rank == 0) {
    try {
      ctx.flush_writes();  // what it reads and writes below may have been queued already
      const BestSource source = find_best_on_resume(ctx.history, ctx.step_in_epoch);
      const int64_t last = static_cast<int64_t>(ctx.history.epochs.size()) - 1;
      if (source == BestSource::ResumedWeights) {
        save_epoch_model(options_.best_model_path, ctx.saved_model(), options_.preprocessing,
                         {last, ctx.history.epochs.back()});
      } else if (source == BestSource::ResumedBestModelFile) {
        const io::TensorFile file = io::load_safetensors(options_.resumed_best_model_path);
        io::save_safetensors(options_.best_model_path, file.tensors, file.metadata);
      }
    } catch (const Error& e) {
      problem = e.what();
    }
  }
  const bool failed = ctx.group == nullptr ? !problem.empty()
                                           : all_reduce_value(*ctx.group, problem.empty() ? 0 : 1,
                                                              dist::ReduceOp::Max) != 0;
  if (!failed) return;
  if (ctx.rank == 0) throw Error(problem);
  throw Error(
      "ModelCheckpoint: rank 0 could not find the best epoch's weights to resume with (its error "
      "says why)");
}

void ModelCheckpoint::save(const TrainContext& ctx) const {
  io::TrainingState state = ctx.capture_state();  // on every rank: mid-epoch it is a collective
  if (ctx.rank != 0) return;
  state.extra = options_.extra;
  ctx.write_file(io::prepare_checkpoint(options_.path, ctx.saved_model(), ctx.optimizer, state,
                                        options_.preprocessing));
}

void ModelCheckpoint::on_batch_end(TrainContext& ctx) {
  if (options_.every_steps > 0 && ctx.global_step % options_.every_steps == 0 &&
      ctx.step_in_epoch < ctx.steps_per_epoch) {
    save(ctx);  // the epoch's last step is saved by on_epoch_end, with its metrics
  }
}

void ModelCheckpoint::on_preempted(TrainContext& ctx) {
  if (!options_.path.empty() && !ctx.epoch_finished) save(ctx);
}

void ModelCheckpoint::on_epoch_end(TrainContext& ctx, const EpochMetrics& metrics) {
  // The checkpoint first: a crash before the model file is written leaves a checkpoint whose
  // weights are that epoch's, which on_train_begin saves on resume.
  if (!options_.path.empty()) save(ctx);
  // Every rank tracks the best, so that all of them agree on it.
  if (options_.best_model_path.empty()) return;
  const std::optional<double> value = best_.value_at_epoch_end(ctx, metrics);
  if (value && best_.update(*value) && ctx.rank == 0) {
    ctx.write_file(prepare_epoch_model(options_.best_model_path, ctx.saved_model(),
                                       options_.preprocessing, {ctx.epoch, metrics}));
  }
}

EarlyStopping::EarlyStopping(std::string monitor, int64_t patience, double min_delta, Mode mode,
                             bool restore_best)
    : best_(std::move(monitor), mode, min_delta), patience_(patience), restore_best_(restore_best) {
  LOOM_CHECK(patience >= 0, "EarlyStopping: patience must be >= 0, got ", patience);
}

void EarlyStopping::on_train_begin(TrainContext& ctx) {
  stopped_epoch_ = -1;
  best_epoch_ = best_.replay(ctx.history);
  wait_ = 0;
  for (size_t e = static_cast<size_t>(best_epoch_ + 1); e < ctx.history.epochs.size(); ++e)
    wait_ += ctx.history.epochs[e].count(best_.monitor()) ? 1 : 0;
  if (wait_ > 0 && wait_ >= patience_) {  // the interrupted run had stopped here
    ctx.stop_training = true;
    stopped_epoch_ = static_cast<int64_t>(ctx.history.epochs.size()) - 1;
  }
}

void EarlyStopping::on_epoch_end(TrainContext& ctx, const EpochMetrics& metrics) {
  const std::optional<double> value = best_.value_at_epoch_end(ctx, metrics);
  if (!value) return;
  if (best_.update(*value)) {
    wait_ = 0;
    best_epoch_ = ctx.epoch;
    if (restore_best_) {
      best_weights_ = nn::NamedTensors();
      for (const auto& [name, t] : ctx.saved_model().state_dict())
        best_weights_.insert(name, t.clone());
    }
    return;
  }
  if (++wait_ >= patience_) {
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

void ReduceLROnPlateauStep::on_train_begin(TrainContext& ctx) {
  scheduler_.reset();
  for (const EpochMetrics& m : ctx.history.epochs) {
    if (m.count(monitor_.monitor())) scheduler_.step(m.at(monitor_.monitor()));
  }
}

void ReduceLROnPlateauStep::on_epoch_end(TrainContext& ctx, const EpochMetrics& metrics) {
  if (const std::optional<double> value = monitor_.value_at_epoch_end(ctx, metrics))
    scheduler_.step(*value);
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
    out << e + 1;
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

void CsvLogger::on_epoch_end(TrainContext& ctx, const EpochMetrics& /*metrics*/) {
  if (ctx.rank != 0) return;
  ctx.write_file(io::PreparedFile(path_, history_csv(ctx.history)));
}

void JsonLinesLogger::on_epoch_end(TrainContext& ctx, const EpochMetrics& /*metrics*/) {
  if (ctx.rank != 0) return;
  std::string text;
  for (size_t e = 0; e < ctx.history.epochs.size(); ++e) {
    text += metrics_json(static_cast<int64_t>(e) + 1, ctx.history.epochs[e]) + "\n";
  }
  ctx.write_file(io::PreparedFile(path_, std::move(text)));
}

}  // namespace loom::train
