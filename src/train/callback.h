// The Callback interface of fit() (Keras' callbacks): hooks at the start and end of training,
// of each epoch and after each batch, all given the loop's TrainContext. The context is cheap to
// pass: its sums stay on the device, and a callback that reads them pays for the sync itself.
// On N ranks every rank runs every callback at the same points, so a callback may take part in
// a collective; only rank 0 prints or writes files (TrainContext::write_file writes them off the
// training thread).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "loom/data/data_loader.h"
#include "loom/io/background_writer.h"
#include "loom/io/checkpoint.h"
#include "loom/nn/module.h"
#include "loom/optim/optimizer.h"
#include "loom/train/history.h"
#include "loom/train/ranks.h"

namespace loom::train {

struct TrainContext {
  TrainContext(nn::Module& m, optim::Optimizer& o, const data::DataLoader& l, History& h)
      : model(m), optimizer(o), train_loader(l), history(h) {}

  nn::Module& model;
  optim::Optimizer& optimizer;
  const data::DataLoader& train_loader;
  History& history;
  int64_t epochs = 0;  // the run's total
  int64_t epoch = 0;   // the epoch in progress (or just finished), from 0
  int64_t steps_per_epoch = 0;
  int64_t step_in_epoch = 0;    // batches of this epoch done
  int64_t global_step = 0;      // batches done since the run began
  bool epoch_finished = false;  // true in on_epoch_end and after
  // This epoch has no "val_" metrics although fit has a validation loader: FitOptions'
  // validation_freq and validation_from left it out (set before on_epoch_end).
  bool validation_skipped = false;
  Tensor batch_loss;           // the last batch's mean loss (device scalar, no history; under
                               // FitOptions::capture the next step overwrites it)
  Tensor loss_sum;             // this epoch: sum of loss * batch size (device scalar, in place)
  Tensor correct_sum;          // this epoch: correct predictions (device scalar, in place)
  int64_t samples_seen = 0;    // this epoch
  int64_t batch_size = 0;      // samples in the last batch
  bool stop_training = false;  // a callback sets it to end the run after this epoch (the same
                               // on every rank: decide from the metrics, which all ranks share)
  // The ranks training together (FitOptions::group); null for one rank. The sums and counts
  // above are this rank's own; the metrics in `history` are those of all ranks.
  dist::ProcessGroup* group = nullptr;
  int rank = 0;
  int world_size = 1;

  // Where the callbacks' files go: fit's writer, whose worker thread writes them in the order
  // they were given while training goes on; null outside fit (a context made by hand), where
  // write_file writes at once.
  io::BackgroundWriter* writer = nullptr;

  // The model whose weights a checkpoint or model file saves (a DDP's wrapped module:
  // nn::Module::unwrapped).
  nn::Module& saved_model() const { return model.unwrapped(); }

  // The state a checkpoint must hold to continue from this point. One rank: syncs nothing.
  // N ranks, mid-epoch: a collective (every rank must call it at the same step) that gathers
  // each rank's running sums: loss_sum and correct_sum become [N] (rank r's at r) and
  // samples_seen the count over all ranks.
  io::TrainingState capture_state() const;
  // capture_state's inverse, as fit resumes: the counters, the running sums (this rank's own)
  // and the history from `state`, each rank's generator at its own seed, after checking that
  // the training loader and the number of ranks are those the checkpoint was taken with.
  void restore_state(const io::TrainingState& state);

  // Writes `file` through `writer` (returning once it is queued; a failed earlier write is
  // thrown here), or at once without one. Files queued so are on disk when fit returns, or
  // after flush_writes(): call that before reading one back during the run.
  void write_file(io::PreparedFile file) const;
  // Waits until every file given to write_file is on disk; throws a failed write's error.
  void flush_writes() const;
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
  // fit stops at this step boundary for a preemption (FitOptions::stop_on_preemption), on every
  // rank at the same step; on_train_end is not called (training has not ended). ModelCheckpoint
  // writes its checkpoint here.
  virtual void on_preempted(TrainContext& /*ctx*/) {}
};

using CallbackPtr = std::shared_ptr<Callback>;

}  // namespace loom::train
