// The standard callbacks of fit(): checkpoints (every epoch, every N steps, best model by a
// monitored metric), early stopping, a learning-rate schedule step per epoch, and metrics logs
// (CSV and JSON lines). Each one that keeps "best so far" state recomputes it from the History
// at on_train_begin, so it is right after a resume too. On N ranks they run on every rank (the
// metrics they decide from are the same everywhere) and write files only on rank 0.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "io/model_file.h"
#include "nn/named_tensors.h"
#include "optim/lr_scheduler.h"
#include "train/callback.h"

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
  // The metric in an epoch's metrics; throws naming the metric and those present when absent.
  double value_in(const EpochMetrics& metrics) const;

 private:
  std::string monitor_;
  bool maximize_;
  double min_delta_;
  bool has_best_ = false;
  double best_ = 0.0;
};

struct CheckpointOptions {
  std::string path;             // the full-state checkpoint, rewritten at each epoch end (empty: none)
  int64_t every_steps = 0;      // also rewrite it every this many steps mid-epoch (0: never)
  std::string best_model_path;  // a model file (io::save_model) of the best epoch (empty: none)
  std::string monitor = "val_loss";
  Mode mode = Mode::Auto;
  io::Preprocessing preprocessing;  // stored in both files
  std::map<std::string, std::string> extra;  // the application's own, into TrainingState::extra
};

// Saves ctx.saved_model() (a DDP's wrapped module) from rank 0; on N ranks every rank takes
// part in capturing a mid-epoch state (TrainContext::capture_state), so every rank must hold
// the callback with the same options.
class ModelCheckpoint : public Callback {
 public:
  explicit ModelCheckpoint(CheckpointOptions options);
  void on_train_begin(TrainContext& ctx) override;
  void on_batch_end(TrainContext& ctx) override;
  void on_epoch_end(TrainContext& ctx, const EpochMetrics& metrics) override;

 private:
  void save(const TrainContext& ctx) const;
  CheckpointOptions options_;
  BestTracker best_;
};

class EarlyStopping : public Callback {
 public:
  // Stops after `patience` epochs without an improvement above min_delta; restore_best puts
  // back the weights of the best epoch seen in this process when it stops or training ends.
  EarlyStopping(std::string monitor = "val_loss", int64_t patience = 5, double min_delta = 0.0,
                Mode mode = Mode::Auto, bool restore_best = false);
  void on_train_begin(TrainContext& ctx) override;
  void on_epoch_end(TrainContext& ctx, const EpochMetrics& metrics) override;
  void on_train_end(TrainContext& ctx) override;
  int64_t stopped_epoch() const { return stopped_epoch_; }  // -1 when it never stopped

 private:
  BestTracker best_;
  int64_t patience_;
  bool restore_best_;
  int64_t wait_ = 0;
  int64_t stopped_epoch_ = -1;
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

// Rewrites the whole log from the History at each epoch end (atomically), so a resumed run's
// file is the same as an uninterrupted run's.
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

// The CSV text of a history: "epoch,<metrics sorted by name>" then one row per epoch.
std::string history_csv(const History& history);

}  // namespace loom::train
