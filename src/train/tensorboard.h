// TensorBoardLogger: fit()'s metrics as TensorBoard event files laid out as Keras' TensorBoard
// callback lays them out (runs train/ and validation/ with the same tag names, so one chart
// draws both), written by train::EventFileWriter with no protobuf library. Point `tensorboard
// --logdir` at the folder; the files are flushed at each epoch end, so they can be read while
// training runs.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "loom/tensor/shape.h"
#include "loom/train/callback.h"
#include "loom/train/event_file.h"

namespace loom::train {

struct TensorBoardOptions {
  std::string dir;  // an existing folder; each fit() adds one events.out.tfevents.* file
  int64_t batch_every =
      0;  // also "batch_loss" every this many steps, step = global step (0: never)
  std::string
      model_summary;  // the text of "model_summary"; empty: Sequential::summary(input_shape)
  Shape input_shape;  // when the model is a Sequential (without the batch), else a parameter list
};

// Rank 0 writes two runs, as Keras does: <dir>/train and <dir>/validation (made when missing;
// validation/ at the first epoch with validation metrics). At step = the epoch counted from 1
// (as the console and the metrics logs count), each metric of the epoch becomes a scalar named
// as Keras names it: "epoch_" + the metric in train/ (epoch_loss, epoch_accuracy, ...), a
// "val_" metric without its prefix in validation/ (val_loss: validation/epoch_loss), the
// learning rate "epoch_learning_rate" and, in train/, "epoch_images_per_second" = (samples this
// rank trained on in the epoch * world_size) / (seconds from on_epoch_begin to the epoch's last
// on_batch_end, which waits for the device): training throughput, validation left out. At
// on_train_begin it opens train/'s file (a missing or unwritable `dir` throws there, naming
// the path) and writes the model summary as text at step 0, as a Markdown code block (lines
// indented by four spaces) so that TensorBoard shows it in a fixed-width font. "batch_loss"
// (train/, step = global step) reads this rank's last batch loss (one device sync per logged
// step).
class TensorBoardLogger : public Callback {
 public:
  explicit TensorBoardLogger(TensorBoardOptions options);
  explicit TensorBoardLogger(std::string dir);  // the default options, in `dir`

  void on_train_begin(TrainContext& ctx) override;
  void on_epoch_begin(TrainContext& ctx) override;
  void on_batch_end(TrainContext& ctx) override;
  void on_epoch_end(TrainContext& ctx, const EpochMetrics& metrics) override;
  void on_train_end(TrainContext& ctx) override;

  // The event files of the current (or last) fit in train/ and validation/; empty before the
  // first on_train_begin on rank 0 (validation: before the first epoch with validation metrics).
  const std::string& path() const { return path_; }
  const std::string& validation_path() const { return validation_path_; }

  // The run (train or validation) and tag a metric of History is written under.
  static std::pair<std::string, std::string> run_and_tag(const std::string& metric);

 private:
  using Clock = std::chrono::steady_clock;
  std::string summary_text(TrainContext& ctx) const;

  TensorBoardOptions options_;
  std::unique_ptr<EventFileWriter> writer_, validation_writer_;
  std::string path_, validation_path_;
  Clock::time_point epoch_start_, last_batch_end_;
  int64_t samples_at_epoch_start_ = 0;
};

}  // namespace loom::train
