// One rank's share of `loom-catdog train`, the same for the photographs and the Fashion-MNIST
// fallback: where the rank runs, the model fit trains (a DistributedDataParallel over N ranks),
// and the per-step loss lines of --print-losses.
#pragma once

#include <memory>
#include <string>

#include "commands.h"
#include "launch_plan.h"

namespace loom::catdog {

struct RankSetup {
  dist::GroupPtr group;  // null alone
  int rank = 0;
  int world_size = 1;
  Device device = kCPU;  // this rank's
  data::Shard shard() const { return {rank, world_size}; }
};
RankSetup rank_setup(const LaunchPlan& plan, const dist::GroupPtr& group);

// The module fit trains: a DDP over the group (which sets every rank to rank 0's weights) for
// N ranks, `model` itself alone. Save `model`, never the wrapper.
std::shared_ptr<nn::Module> trained_module(const std::shared_ptr<nn::Module>& model,
                                           const RankSetup& rank);

// --pipeline N (N > 1): the model cut into N stages, moved to their devices (before the
// optimizer is made, so its state lives there too); null otherwise. Refused with several ranks.
std::shared_ptr<dist::PipelineParallel> pipeline_model(const TrainArgs& args,
                                                       const std::shared_ptr<nn::Module>& model,
                                                       const RankSetup& rank);

// "step <global step> loss <hex float>" after each step, from rank 0: the step's loss over all
// ranks' samples (one collective per step on N ranks: for tests and debugging only).
train::CallbackPtr loss_printer();

// ", world size 2 (threads, threads), batch 4 per rank, 8 global", for the header lines.
std::string ranks_summary(const LaunchPlan& plan, int64_t batch_size);

}  // namespace loom::catdog
