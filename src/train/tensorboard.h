// TensorBoardLogger: fit()'s metrics as TensorBoard event files (Keras' TensorBoard callback),
// written by train::EventFileWriter with no protobuf library. Point `tensorboard --logdir` at
// the folder; the file is flushed at each epoch end, so it can be read while training runs.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

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

// Rank 0 writes, at step = epoch (from 0), one scalar per metric of the epoch (loss, accuracy,
// val_loss, val_accuracy, lr, ...) and images_per_second = (samples this rank trained on in the
// epoch * world_size) / (seconds from on_epoch_begin to the epoch's last on_batch_end, which
// waits for the device): training throughput, validation left out. At on_train_begin it opens
// the file (a missing or unwritable folder throws there, naming the path) and writes the model
// summary as text at step 0, as a Markdown code block (lines indented by four spaces) so that
// TensorBoard shows it in a fixed-width font. batch_loss reads this rank's last batch loss
// (one device sync per logged step).
class TensorBoardLogger : public Callback {
 public:
  explicit TensorBoardLogger(TensorBoardOptions options);
  explicit TensorBoardLogger(std::string dir);  // the default options, in `dir`

  void on_train_begin(TrainContext& ctx) override;
  void on_epoch_begin(TrainContext& ctx) override;
  void on_batch_end(TrainContext& ctx) override;
  void on_epoch_end(TrainContext& ctx, const EpochMetrics& metrics) override;
  void on_train_end(TrainContext& ctx) override;

  // The event file of the current (or last) fit; empty before the first on_train_begin on rank 0.
  const std::string& path() const { return path_; }

 private:
  using Clock = std::chrono::steady_clock;
  std::string summary_text(TrainContext& ctx) const;

  TensorBoardOptions options_;
  std::unique_ptr<EventFileWriter> writer_;
  std::string path_;
  Clock::time_point epoch_start_, last_batch_end_;
  int64_t samples_at_epoch_start_ = 0;
};

}  // namespace loom::train
