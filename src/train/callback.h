// The Callback interface of fit() (Keras' callbacks): hooks at the start and end of training,
// of each epoch and after each batch, all given the loop's TrainContext. The context is cheap to
// pass: its sums stay on the device, and a callback that reads them pays for the sync itself.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "data/data_loader.h"
#include "io/checkpoint.h"
#include "nn/module.h"
#include "optim/optimizer.h"
#include "train/history.h"

namespace loom::train {

struct TrainContext {
  TrainContext(nn::Module& m, optim::Optimizer& o, const data::DataLoader& l, History& h)
      : model(m), optimizer(o), train_loader(l), history(h) {}

  nn::Module& model;
  optim::Optimizer& optimizer;
  const data::DataLoader& train_loader;
  History& history;
  int64_t epochs = 0;           // the run's total
  int64_t epoch = 0;            // the epoch in progress (or just finished), from 0
  int64_t steps_per_epoch = 0;
  int64_t step_in_epoch = 0;    // batches of this epoch done
  int64_t global_step = 0;      // batches done since the run began
  bool epoch_finished = false;  // true in on_epoch_end and after
  Tensor batch_loss;            // the last batch's mean loss (device scalar, no history)
  Tensor loss_sum;              // this epoch: sum of loss * batch size (device scalar)
  Tensor correct_sum;           // this epoch: correct predictions (device scalar)
  int64_t samples_seen = 0;     // this epoch
  bool stop_training = false;   // a callback sets it to end the run after this epoch

  // The state a checkpoint must hold to continue from this point (syncs nothing).
  io::TrainingState capture_state() const;
};

class Callback {
 public:
  virtual ~Callback() = default;
  virtual void on_train_begin(TrainContext& /*ctx*/) {}
  virtual void on_epoch_begin(TrainContext& /*ctx*/) {}
  virtual void on_batch_end(TrainContext& /*ctx*/) {}
  // The epoch's metrics are already the last entry of ctx.history.
  virtual void on_epoch_end(TrainContext& /*ctx*/, const EpochMetrics& /*metrics*/) {}
  virtual void on_train_end(TrainContext& /*ctx*/) {}
};

using CallbackPtr = std::shared_ptr<Callback>;

}  // namespace loom::train
