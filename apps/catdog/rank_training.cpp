// Rank setup, the DDP wrapper and the loss lines of rank_training.h.
#include "rank_training.h"

#include <cinttypes>
#include <cstdio>

namespace loom::catdog {

namespace {

class LossPrinter : public train::Callback {
 public:
  void on_batch_end(train::TrainContext& ctx) override {
    if (ctx.group == nullptr) {
      std::printf("step %" PRId64 " loss %a\n", ctx.global_step, ctx.batch_loss.item<double>());
    } else {
      // Weighted by each rank's batch, so that it is the mean over the global batch.
      const std::vector<double> sums = train::all_reduce_values(
          *ctx.group, {ctx.batch_loss.item<double>() * static_cast<double>(ctx.batch_size),
                       static_cast<double>(ctx.batch_size)});
      if (ctx.rank != 0) return;
      std::printf("step %" PRId64 " loss %a\n", ctx.global_step, sums[0] / sums[1]);
    }
    std::fflush(stdout);
  }
};

}  // namespace

RankSetup rank_setup(const LaunchPlan& plan, const dist::GroupPtr& group) {
  RankSetup r;
  r.group = group;
  r.device = group ? group->device() : plan.device;
  r.rank = group ? group->rank() : 0;
  r.world_size = group ? group->size() : 1;
  return r;
}

std::shared_ptr<nn::Module> trained_module(const std::shared_ptr<nn::Module>& model,
                                           const RankSetup& rank) {
  if (rank.world_size == 1) return model;
  return std::make_shared<dist::DistributedDataParallel>(model, rank.group);
}

train::CallbackPtr loss_printer() { return std::make_shared<LossPrinter>(); }

std::string ranks_summary(const LaunchPlan& plan, int64_t batch_size) {
  return ", " + plan.describe() + ", batch " + std::to_string(batch_size) + " per rank, " +
         std::to_string(batch_size * plan.world_size) + " global";
}

}  // namespace loom::catdog
