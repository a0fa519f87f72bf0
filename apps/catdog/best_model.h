// Which epoch's model `loom-catdog train` keeps (--save best: the highest validation accuracy,
// the earliest of equals, through train::ModelCheckpoint; --save last) and when it stops
// (--early-stopping PATIENCE with --min-delta, through train::EarlyStopping), for the
// photographs and the Fashion-MNIST fallback alike. The model file's metadata records the epoch
// and its metrics (train::SavedEpoch).
#pragma once

#include <map>
#include <memory>
#include <string>

#include "commands.h"

namespace loom::catdog {

// The metric both decide by.
inline constexpr const char* kMonitor = "val_accuracy";

// Throws naming the flag: --save other than best or last, a negative --early-stopping, a
// --min-delta that is not a finite number in [0, 1] or is given without --early-stopping.
void check_save_args(const TrainArgs& a);

// With --save best: `o` writes --out at each epoch that improves on the validation accuracy and
// records --out's absolute path in the checkpoint's extra ("best_model"), so that a resume with
// another --out copies the best epoch from there; `resumed_extra` is the resumed checkpoint's
// extra (null for a fresh run). Nothing for --save last.
void set_best_model(const TrainArgs& a, const std::map<std::string, std::string>* resumed_extra,
                    train::CheckpointOptions& o);

// With --save best, before any data is read: refuses a --resume whose best finished epoch is
// in no file (see train::ModelCheckpoint), saying what to do.
void check_resume_best(const TrainArgs& a, const io::Checkpoint& checkpoint);

// The --early-stopping callback, or null when it is off.
std::shared_ptr<train::EarlyStopping> early_stopping(const TrainArgs& a);

// The epoch --out holds after `history` (from 0): the best one or the last one.
int64_t saved_epoch_of(const TrainArgs& a, const train::History& history);

// --save last: writes --out from the last epoch's weights, with its SavedEpoch.
void save_last(const TrainArgs& a, const nn::Module& model, const io::Preprocessing& prep,
               const train::History& history);

// " (best epoch 16 of 25, val_accuracy 0.7645)" for the final line (epochs counted from 1, of
// those trained).
std::string saved_summary(const TrainArgs& a, const train::History& history);

// "loom-catdog: early stopping after epoch 20 of 25: val_accuracy has not improved on epoch
// 16's 0.7645 for 4 epochs" (" by more than 0.01" with --min-delta; "4 validated epochs" when
// some epochs between skipped validation), or "" when the run did not stop early;
// `stopped_epoch` is the EarlyStopping's (-1: it did not stop), `epochs` the run's.
std::string early_stop_line(const TrainArgs& a, int64_t epochs, const train::History& history,
                            int64_t stopped_epoch);

}  // namespace loom::catdog
