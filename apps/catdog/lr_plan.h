// The optimizer and learning-rate schedule of `loom-catdog train`: Adam (AdamW with a weight
// decay) at --lr, or with --scale-lr linear at world size times --lr (Goyal et al.'s linear
// scaling rule: the global batch is world size times --batch-size), reached by a linear warmup
// over --warmup-epochs, iteration by iteration; --lr-schedule cosine decays per epoch on top.
// Without that scaling, --lr-schedule cosine with --warmup-epochs W warms up linearly from 0
// over W epochs and decays over the rest, step by step (optim::CosineWithWarmup), and
// --reduce-lr-on-plateau cuts a constant rate when the validation loss stalls
// (optim::ReduceLROnPlateau).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "commands.h"

namespace loom::catdog {

struct LrPlan {
  std::unique_ptr<optim::Optimizer> optimizer;
  std::vector<std::unique_ptr<optim::LRScheduler>> schedules;  // the one stepped is last
  std::unique_ptr<optim::ReduceLROnPlateau> plateau;           // --reduce-lr-on-plateau's
  train::CallbackPtr stepper;  // steps it (null for a constant rate)
  double peak_lr = 0.0;        // the rate after any warmup, before any decay
};

// schedule: "constant" or "cosine"; steps_per_epoch: the steps of one rank's epoch.
LrPlan make_lr_plan(const TrainArgs& args, const std::string& schedule, int world_size,
                    int64_t steps_per_epoch, const std::vector<Tensor>& parameters);

// Whether the run takes CosineWithWarmup: --lr-schedule cosine, --warmup-epochs given (> 0),
// and no --scale-lr linear warmup (which has its own).
bool cosine_warmup(const TrainArgs& args, const std::string& schedule, int world_size);
// The warm-up and the plateau rule as the recipe and the header record them: "off", or
// "2 epochs" / "patience 3, factor 0.1".
std::string lr_warmup_of(const TrainArgs& args, const std::string& schedule, int world_size);
std::string plateau_of(const TrainArgs& args);

// --scale-lr as the recipe records it: "off", or "linear, warmup 5 epochs".
std::string lr_scaling_of(const TrainArgs& args);
// For the header line: "" without scaling, else ", lr 0.001 x 2 = 0.002 after a linear warmup
// over 5 epochs".
std::string lr_scaling_summary(const TrainArgs& args, int world_size);

}  // namespace loom::catdog
