// Rank setup, the DDP wrapper and the loss lines of rank_training.h.
#include "rank_training.h"

#include <cinttypes>
#include <cstdio>
#include <iostream>

namespace loom::catdog {

namespace {

// "step <global step> loss <hex float>", through train::print_line so that a line printed while
// the progress bar is drawn in place starts a line of its own (under a terminal, or mpirun's and
// srun's pseudo-terminals) rather than being glued to the bar.
class LossPrinter : public train::Callback {
 public:
  void on_batch_end(train::TrainContext& ctx) override {
    double loss = 0.0;
    if (ctx.group == nullptr) {
      loss = ctx.batch_loss.item<double>();
    } else {
      // Weighted by each rank's batch, so that it is the mean over the global batch.
      const std::vector<double> sums = train::all_reduce_values(
          *ctx.group, {ctx.batch_loss.item<double>() * static_cast<double>(ctx.batch_size),
                       static_cast<double>(ctx.batch_size)});
      if (ctx.rank != 0) return;
      loss = sums[0] / sums[1];
    }
    char line[96];
    std::snprintf(line, sizeof line, "step %" PRId64 " loss %a", ctx.global_step, loss);
    train::print_line(std::cout, line);
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

std::shared_ptr<dist::PipelineParallel> pipeline_model(const TrainArgs& args,
                                                       const std::shared_ptr<nn::Module>& model,
                                                       const RankSetup& rank) {
  if (args.pipeline <= 1) return nullptr;
  LOOM_CHECK(rank.world_size == 1, "--pipeline ", args.pipeline,
             ": a pipeline over several ranks (data "
             "parallelism over pipelines) is not supported; this run has ",
             rank.world_size, " ranks");
  LOOM_CHECK(args.graph != "on",
             "--pipeline and --graph on: a pipeline's stages run op by op on their own "
             "streams and are not captured; use --graph auto or off");
  auto sequential = std::dynamic_pointer_cast<nn::Sequential>(model);
  LOOM_ASSERT(sequential != nullptr);  // build_model's models are all Sequential
  // One GPU per stage when there are enough, else every stage on the run's device.
  std::vector<Device> devices(static_cast<size_t>(args.pipeline), rank.device);
  if (rank.device.is_cuda() && cuda_device_count() >= args.pipeline) {
    for (int s = 0; s < args.pipeline; ++s) devices[static_cast<size_t>(s)] = cuda_device(s);
  }
  dist::PipelineOptions options;
  options.micro_batches = pipeline_micro_batches(args);
  options.schedule = args.pipeline_schedule == "1f1b" ? dist::PipelineSchedule::OneFOneB
                                                      : dist::PipelineSchedule::GPipe;
  auto pipeline = std::make_shared<dist::PipelineParallel>(sequential, devices, options);
  if (rank.rank == 0) {
    std::cout << "loom-catdog: pipeline of " << args.pipeline << " stages ("
              << args.pipeline_schedule << ", " << pipeline_micro_batches(args)
              << " micro-batches):";
    for (const dist::PipelineStage& s : pipeline->stages()) {
      std::cout << " layers " << s.first_layer << "-" << s.end_layer - 1 << " on " << s.device.str()
                << " (" << s.parameters << " parameters)"
                << (&s == &pipeline->stages().back() ? "\n" : ";");
    }
  }
  return pipeline;
}

train::CallbackPtr loss_printer() { return std::make_shared<LossPrinter>(); }

std::string ranks_summary(const LaunchPlan& plan, int64_t batch_size) {
  return ", " + plan.describe() + ", batch " + std::to_string(batch_size) + " per rank, " +
         std::to_string(batch_size * plan.world_size) + " global";
}

}  // namespace loom::catdog
