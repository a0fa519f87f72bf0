// Training checkpoints: everything needed to continue a run exactly where it stopped, in one
// safetensors file written atomically. Tensors: "model.<state name>", "optim.<state key>" and
// the partial epoch's device sums "train.loss_sum", "train.correct_sum". Metadata: the model
// description of model files (so load_model() reads a checkpoint too), the optimizer's type and
// scalars, and the TrainingState below as JSON ("loom.training").
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "loom/io/atomic_file.h"
#include "loom/io/model_file.h"
#include "loom/optim/optimizer.h"

namespace loom::io {

struct TrainingState {
  int64_t epoch = 0;          // the epoch in progress, counted from 0
  int64_t step_in_epoch = 0;  // batches of that epoch already trained on
  int64_t global_step = 0;    // batches trained on since the start
  // loom's default generator (dropout and any other op drawing without its own generator).
  uint64_t rng_seed = 0;
  uint64_t rng_offset = 0;
  // The training loader's shuffling and augmentation seeds: its order and draws are functions
  // of (seed, epoch), so these and `epoch` restore it.
  uint64_t loader_seed = 0;
  uint64_t augment_seed = 0;
  // The running sums of the epoch in progress (loss * batch size, correct predictions, and the
  // number of samples), so its metrics come out as in a run that never stopped.
  Tensor loss_sum;
  Tensor correct_sum;
  int64_t samples_seen = 0;
  std::string history_json = "[]";           // the metrics of the finished epochs
  std::map<std::string, std::string> extra;  // the application's own (e.g. its flags)
};

void save_checkpoint(const std::string& path, const nn::Module& model,
                     const optim::Optimizer& optimizer, const TrainingState& state,
                     const Preprocessing& preprocessing = {});
// The file save_checkpoint writes, not yet written: its bytes are made here, from the model's
// and the optimizer's state as they are now (device tensors copied to the host), so training
// may go on changing them while an io::BackgroundWriter writes it.
PreparedFile prepare_checkpoint(const std::string& path, const nn::Module& model,
                                const optim::Optimizer& optimizer, const TrainingState& state,
                                const Preprocessing& preprocessing = {});

struct Checkpoint {
  TensorFile file;
  TrainingState state;
  Preprocessing preprocessing;
};
// Reads and checks a checkpoint (its tensors on the CPU) without applying it: its JSON as
// untrusted (nn/untrusted_json.h), counters and seeds as integers in range, the history as
// parse_epoch_metrics reads it, and the running sums as floating-point scalars or vectors.
Checkpoint read_checkpoint(const std::string& path);
// Restores the model's weights, the optimizer's state and loom's default generator; returns the
// training state for the caller's loop. Errors name the file and what does not fit; tensors of
// another dtype than the model's are refused, not converted.
TrainingState load_checkpoint(const std::string& path, nn::Module& model,
                              optim::Optimizer& optimizer);

// The metrics of finished epochs as checkpoints store them, [{"epoch": 0, "loss": 0.5, ...}, ...]:
// a list of objects of finite numbers whose "epoch", where present, is the position. Anything
// else throws loom::Error "<source>: malformed history: ...". train::History reads it so too.
std::vector<std::map<std::string, double>> parse_epoch_metrics(const std::string& json,
                                                               const std::string& source);

// For tests of crash safety: when the environment variable LOOM_CHECKPOINT_PAUSE_MS is set and
// a checkpoint (save_checkpoint's, or prepare_checkpoint's when it is written) replaces an
// existing file, its write pauses that long halfway through the bytes (the temporary file then
// exists, the old checkpoint is untouched), after printing "loom: checkpoint write paused" to
// stderr. A first write never pauses, so a kill during the
// pause always has a complete checkpoint to fall back on.
inline constexpr const char* kCheckpointPauseEnv = "LOOM_CHECKPOINT_PAUSE_MS";

}  // namespace loom::io
