// The standard callbacks of fit(): checkpoints (every epoch, every N steps, best model by a
// monitored metric), early stopping, a learning-rate schedule step per epoch, and metrics logs
// (CSV and JSON lines). Each one that keeps "best so far" state recomputes it from the History
// at on_train_begin, so it is right after a resume too. On N ranks they run on every rank (the
// metrics they decide from are the same everywhere) and write files only on rank 0.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "loom/io/model_file.h"
#include "loom/nn/named_tensors.h"
#include "loom/optim/lr_scheduler.h"
#include "loom/train/callback.h"

namespace loom::train {

// "min" metrics improve downwards (losses), "max" upwards (accuracies); Auto picks max for names
// containing "acc".
enum class Mode { Auto, Min, Max };

// Keeps the best value of a metric over epochs.
class BestTracker {
 public:
  BestTracker(std::string monitor, Mode mode, double min_delta = 0.0);
  // True when `value` improves on the best by more than min_delta (then it becomes the best).
  bool update(double value);
  void reset();
  bool has_best() const { return has_best_; }
  double best() const { return best_; }
  const std::string& monitor() const { return monitor_; }
  // reset(), then update() with every epoch of `history` in order that has the metric (an epoch
  // that skipped validation has no "val_" one): the epoch of the best (the earliest of equals),
  // or -1 when none has it.
  int64_t replay(const History& history);
  // The metric in an epoch's metrics; throws naming the metric and those present when absent.
  double value_in(const EpochMetrics& metrics) const;
  // At an epoch end: nothing when the epoch skipped validation (ctx.validation_skipped) and has
  // no such metric, as Keras' callbacks pass over it; else value_in(metrics).
  std::optional<double> value_at_epoch_end(const TrainContext& ctx,
                                           const EpochMetrics& metrics) const;

 private:
  std::string monitor_;
  bool maximize_;
  double min_delta_;
  bool has_best_ = false;
  double best_ = 0.0;
};

// The epoch whose weights a model file holds, in its metadata beside io::save_model's
// description: "loom.saved_epoch" (counted from 1, as the console, the metrics logs and
// TensorBoard count for people: docs/ARCHITECTURE.md, "Epoch numbers"), "loom.saved_epoch_base"
// ("1": files written before it counted from 0 and have no such key) and "loom.saved_metrics"
// (that epoch's metrics as one JSON object, {"accuracy": 0.81, ...}). In code SavedEpoch::epoch
// is History's index, from 0.
struct SavedEpoch {
  int64_t epoch = 0;  // from 0: history.epochs[epoch]
  EpochMetrics metrics;
};
inline constexpr const char* kSavedEpochKey = "loom.saved_epoch";
inline constexpr const char* kSavedEpochBaseKey = "loom.saved_epoch_base";
inline constexpr const char* kSavedMetricsKey = "loom.saved_metrics";

// io::save_model, with `saved` in the metadata.
void save_epoch_model(const std::string& path, const nn::Module& model,
                      const io::Preprocessing& preprocessing, const SavedEpoch& saved);
// The file save_epoch_model writes, its bytes made now (io::prepare_model_file).
io::PreparedFile prepare_epoch_model(const std::string& path, const nn::Module& model,
                                     const io::Preprocessing& preprocessing,
                                     const SavedEpoch& saved);
// The SavedEpoch of a model file's metadata, or nothing when it has neither key. The file may be
// a download: its JSON is read as untrusted (nn/untrusted_json.h), the epoch must be an integer
// in [base, 2^31) (base 1, or 0 for a file without "loom.saved_epoch_base"), the metrics an
// object of at most 256 finite numbers; errors name `source`.
std::optional<SavedEpoch> saved_epoch(const io::Metadata& metadata, const std::string& source);

struct CheckpointOptions {
  std::string path;         // the full-state checkpoint, rewritten at each epoch end (empty: none)
  int64_t every_steps = 0;  // also rewrite it every this many steps mid-epoch (0: never)
  // A model file of the best epoch (empty: none), rewritten (save_epoch_model) at each epoch end
  // that improves on the monitored metric by more than 0; of equal epochs, the earliest.
  std::string best_model_path;
  std::string monitor = "val_loss";
  Mode mode = Mode::Auto;
  io::Preprocessing preprocessing;           // stored in both files
  std::map<std::string, std::string> extra;  // the application's own, into TrainingState::extra
  // On resume: another model file that may hold the best finished epoch, where the interrupted
  // run wrote its best model when that was not best_model_path (see ModelCheckpoint).
  std::string resumed_best_model_path;
};

// Saves ctx.saved_model() (a DDP's wrapped module) from rank 0; on N ranks every rank takes
// part in capturing a mid-epoch state (TrainContext::capture_state), so every rank must hold
// the callback with the same options. At an epoch end the checkpoint is written before the
// best model file. Both go through TrainContext::write_file: their bytes are taken at once,
// and fit's writer puts them on disk in that order while training goes on.
//
// On resume (a history of finished epochs), on_train_begin makes best_model_path hold the best
// finished epoch, so that the run ends with the file an uninterrupted run would write: it holds
// it already (its SavedEpoch is that epoch with those metrics), or the resumed weights are that
// epoch's (the checkpoint was written at its end, also when a crash came before the model
// file), or resumed_best_model_path holds it (copied). Otherwise it throws, on every rank. It
// reads and writes those files itself, at once, after the writes queued before it
// (TrainContext::flush_writes), so that a failure stops every rank together.
class ModelCheckpoint : public Callback {
 public:
  explicit ModelCheckpoint(CheckpointOptions options);
  void on_train_begin(TrainContext& ctx) override;
  void on_batch_end(TrainContext& ctx) override;
  void on_epoch_end(TrainContext& ctx, const EpochMetrics& metrics) override;
  // Mid-epoch, the checkpoint of this step (at an epoch's end on_epoch_end has written it).
  void on_preempted(TrainContext& ctx) override;

  // Where on_train_begin finds the best finished epoch of `history` (resumed at step
  // `step_in_epoch` of the next epoch): Nowhere only when there is no best model file to keep or
  // no finished epoch. Throws, naming the files and what each holds, when it is in none of them.
  // An application may call it before it loads any data, to refuse a resume early.
  enum class BestSource { Nowhere, BestModelFile, ResumedWeights, ResumedBestModelFile };
  BestSource find_best_on_resume(const History& history, int64_t step_in_epoch) const;

 private:
  void save(const TrainContext& ctx) const;
  CheckpointOptions options_;
  BestTracker best_;
};

// Keras' EarlyStopping: ends the run at the end of the `patience`-th epoch in a row without an
// improvement above min_delta on the best so far (patience 0 ends it at the first one).
class EarlyStopping : public Callback {
 public:
  // restore_best puts back the weights of the best epoch seen in this process when it stops or
  // training ends.
  EarlyStopping(std::string monitor = "val_loss", int64_t patience = 5, double min_delta = 0.0,
                Mode mode = Mode::Auto, bool restore_best = false);
  // On resume, counts the epochs since the best in the history (those that validated, when the
  // metric is a validation one); a run that had already stopped (as many as `patience` of them)
  // stops again before its next epoch. Epochs that skipped validation count for nothing.
  void on_train_begin(TrainContext& ctx) override;
  void on_epoch_end(TrainContext& ctx, const EpochMetrics& metrics) override;
  void on_train_end(TrainContext& ctx) override;
  int64_t stopped_epoch() const {
    return stopped_epoch_;
  }  // the last epoch trained; -1 when it never stopped
  int64_t best_epoch() const { return best_epoch_; }  // -1 before any epoch

 private:
  BestTracker best_;
  int64_t patience_;
  bool restore_best_;
  int64_t wait_ = 0;
  int64_t stopped_epoch_ = -1;
  int64_t best_epoch_ = -1;
  nn::NamedTensors best_weights_;
};

// Steps an LR schedule at each epoch end (Period::Epoch) or after each batch (Period::Batch,
// for warmups measured in iterations), and sets it at the start to the run's epoch or global
// step, so that a resumed run continues the schedule.
class LRSchedulerStep : public Callback {
 public:
  enum class Period { Epoch, Batch };
  explicit LRSchedulerStep(optim::LRScheduler& scheduler, Period period = Period::Epoch)
      : scheduler_(scheduler), period_(period) {}
  void on_train_begin(TrainContext& ctx) override;
  void on_batch_end(TrainContext& ctx) override;
  void on_epoch_end(TrainContext& ctx, const EpochMetrics& metrics) override;

 private:
  optim::LRScheduler& scheduler_;
  Period period_;
};

// Steps an optim::ReduceLROnPlateau with each epoch's `monitor` metric (Keras: val_loss; an epoch
// that skipped validation does not step it). At
// on_train_begin it resets it and steps it with the finished epochs of the History, so that a
// resumed run reaches the rate the uninterrupted run had. Every rank steps it alike (the
// metrics are the same on every rank).
class ReduceLROnPlateauStep : public Callback {
 public:
  ReduceLROnPlateauStep(optim::ReduceLROnPlateau& scheduler, std::string monitor = "val_loss")
      : scheduler_(scheduler), monitor_(std::move(monitor), Mode::Auto) {}
  void on_train_begin(TrainContext& ctx) override;
  void on_epoch_end(TrainContext& ctx, const EpochMetrics& metrics) override;

 private:
  optim::ReduceLROnPlateau& scheduler_;
  BestTracker monitor_;  // only for value_in: the metric, or an error naming those present
};

// Rewrites the whole log from the History at each epoch end (atomically, through
// TrainContext::write_file), so a resumed run's file is the same as an uninterrupted run's.
class CsvLogger : public Callback {
 public:
  explicit CsvLogger(std::string path) : path_(std::move(path)) {}
  void on_epoch_end(TrainContext& ctx, const EpochMetrics& metrics) override;

 private:
  std::string path_;
};

class JsonLinesLogger : public Callback {
 public:
  explicit JsonLinesLogger(std::string path) : path_(std::move(path)) {}
  void on_epoch_end(TrainContext& ctx, const EpochMetrics& metrics) override;

 private:
  std::string path_;
};

// The CSV text of a history: "epoch,<metrics sorted by name>" then one row per epoch, epochs
// counted from 1 (JsonLinesLogger's lines too).
std::string history_csv(const History& history);

}  // namespace loom::train
