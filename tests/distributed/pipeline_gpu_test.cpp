// PipelineParallel on the one GPU: every stage on cuda:0, each on its own stream, activations and
// gradients handed over by device copies ordered by events (the peer-copy path as a same-device
// copy). The unsplit model's training is reproduced; stages are timed; 1F1B holds fewer
// activations than GPipe; a CPU stage feeding a GPU stage works too.
#include <gtest/gtest.h>

#include "pipeline_cases.h"

namespace loom::testing {
namespace {

using dist::PipelineSchedule;

const auto kBce = [](const Tensor& out, const Tensor& target) {
  return nn::binary_cross_entropy_with_logits(out, target);
};

TEST(PipelineGpu, EqualsTheUnsplitModelWithEveryStageOnTheGpu) {
  LOOM_REQUIRE_CUDA();
  DeterministicAlgorithmsGuard deterministic_guard;
  ConvTf32Scope full_float32(false);  // micro-batches may pick other algorithms: no TF32 rounding
  const int64_t batch = 18;           // 4 micro-batches: 5 + 5 + 4 + 4
  const EquivalenceData data = equivalence_data(batch * 10, 31);
  const TrainedRun whole = train_single(data, batch, 10, kCUDA);
  for (int stages : {2, 3, 4}) {
    for (PipelineSchedule schedule : {PipelineSchedule::GPipe, PipelineSchedule::OneFOneB}) {
      dist::PipelineOptions options;
      options.micro_batches = 4;
      options.schedule = schedule;
      const PipelineRun pipe = train_pipeline(data, batch, 10, kCUDA, stages, options);
      expect_same_training(pipe.trained, whole, 1e-5,
                           std::to_string(stages) + " stages, " + dist::schedule_name(schedule));
    }
  }
}

TEST(PipelineGpu, ACpuStageFeedsAGpuStage) {
  LOOM_REQUIRE_CUDA();
  DeterministicAlgorithmsGuard deterministic_guard;
  ConvTf32Scope full_float32(false);
  const EquivalenceData data = equivalence_data(8 * 5, 32);
  const TrainedRun whole = train_single(data, 8, 5, kCPU);
  auto model = ddp_model(42);
  dist::PipelineOptions options;
  options.micro_batches = 2;
  dist::PipelineParallel pipe(model, {kCPU, kCUDA}, options);
  EXPECT_EQ(pipe.stages()[1].device, kCUDA);
  optim::Adam adam(pipe.parameters(), optim::GroupOptions().with_lr(1e-3));
  TrainedRun run;
  for (int s = 0; s < 5; ++s) {
    adam.zero_grad();
    const dist::PipelineStepResult r =
        pipe.train_step(data.images.narrow(0, s * 8, 8), data.labels.narrow(0, s * 8, 8), kBce);
    EXPECT_EQ(r.loss.device(), kCPU);  // the input's device
    if (s == 0) run.gradients = flat_gradients(*model);
    adam.step();
    run.losses.push_back(r.loss.item<float>());
  }
  run.parameters = flat_parameters(*model);
  // The CPU's and cuDNN's convolutions differ in the last bits; Adam carries that a little.
  expect_same_training(run, whole, 1e-4, "a CPU stage, then a GPU stage");
}

TEST(PipelineGpu, StagesAreTimedOnTheirStreams) {
  LOOM_REQUIRE_CUDA();
  dist::PipelineOptions options;
  options.micro_batches = 8;
  options.time_stages = true;
  dist::PipelineParallel pipe(ddp_model(4), {kCUDA, kCUDA}, options);
  const EquivalenceData data = equivalence_data(64, 33);
  const Tensor x = data.images.to(kCUDA), y = data.labels.to(kCUDA);
  for (int warm = 0; warm < 2; ++warm) pipe.train_step(x, y, kBce);
  const dist::PipelineTiming& t = pipe.last_timing();
  ASSERT_EQ(t.busy_ms.size(), 2u);
  EXPECT_GT(t.step_ms, 0.0);
  for (size_t s = 0; s < 2; ++s) {
    EXPECT_GT(t.forward_ms[s], 0.0);
    EXPECT_GT(t.backward_ms[s], 0.0);
    EXPECT_LE(t.busy_ms[s], t.step_ms * 1.01);
  }
  EXPECT_GE(t.bubble(), 0.0);
  EXPECT_LT(t.bubble(), 1.0);
}

// GPipe keeps every micro-batch's activations until its backward; 1F1B at most `stages` of
// them on a stage.
TEST(PipelineGpu, OneFOneBHoldsFewerActivationsThanGPipe) {
  LOOM_REQUIRE_CUDA();
  const EquivalenceData data = equivalence_data(1024, 34);
  const Tensor x = data.images.to(kCUDA), y = data.labels.to(kCUDA);
  std::map<PipelineSchedule, int64_t> peak;
  for (PipelineSchedule schedule : {PipelineSchedule::GPipe, PipelineSchedule::OneFOneB}) {
    dist::PipelineOptions options;
    options.micro_batches = 16;
    options.schedule = schedule;
    options.cut_points = {3, 6};
    dist::PipelineParallel pipe(ddp_model(5), {kCUDA, kCUDA, kCUDA}, options);
    pipe.train_step(x, y, kBce);  // warm-up: gradients and workspaces exist before measuring
    cuda::synchronize(0);
    cuda::reset_peak_stats(0);
    const int64_t before = cuda::allocator_stats(0).allocated_bytes;
    pipe.train_step(x, y, kBce);
    cuda::synchronize(0);
    peak[schedule] = cuda::allocator_stats(0).peak_allocated_bytes - before;
  }
  EXPECT_LT(peak[PipelineSchedule::OneFOneB] * 2, peak[PipelineSchedule::GPipe])
      << "1F1B " << peak[PipelineSchedule::OneFOneB] << " B, GPipe "
      << peak[PipelineSchedule::GPipe] << " B";
}

}  // namespace
}  // namespace loom::testing
