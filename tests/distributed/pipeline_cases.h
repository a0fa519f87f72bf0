// The proof that PipelineParallel is right: the model cut into stages, each batch cut into
// micro-batches, sees step by step the same losses and first gradients, and ends with the same
// parameters, as the unsplit model on the whole batch (ddp_cases.h's model and data, which have
// no BatchNorm or dropout), on any device, for any number of stages and either schedule.
#pragma once

#include <gtest/gtest.h>
#include <loom/loom.h>

#include "ddp_cases.h"

namespace loom::testing {

struct PipelineRun {
  TrainedRun trained;
  std::vector<dist::PipelineStage> stages;
};

inline PipelineRun train_pipeline(const EquivalenceData& data, int64_t batch, int steps,
                                  Device device, int stages, dist::PipelineOptions options) {
  auto model = ddp_model(42);
  auto pipe =
      std::make_shared<dist::PipelineParallel>(model, std::vector<Device>(stages, device), options);
  optim::Adam adam(pipe->parameters(), optim::GroupOptions().with_lr(1e-3));
  PipelineRun run;
  run.stages = pipe->stages();
  for (int s = 0; s < steps; ++s) {
    adam.zero_grad();
    const Tensor x = data.images.narrow(0, s * batch, batch).to(device);
    const Tensor y = data.labels.narrow(0, s * batch, batch).to(device);
    const dist::PipelineStepResult r =
        pipe->train_step(x, y, [](const Tensor& out, const Tensor& target) {
          return nn::binary_cross_entropy_with_logits(out, target);
        });
    EXPECT_EQ(r.outputs.shape(), (Shape{batch, 1}));
    EXPECT_EQ(r.outputs.device(), device);
    if (s == 0) run.trained.gradients = flat_gradients(*model);
    adam.step();
    run.trained.losses.push_back(r.loss.item<float>());
  }
  run.trained.parameters = flat_parameters(*model);
  return run;
}

// The pipeline's run against the unsplit one: losses, first gradients and final parameters
// within `tolerance` relative (float32 sums in another order).
inline void expect_same_training(const TrainedRun& pipeline, const TrainedRun& whole,
                                 double tolerance, const std::string& what) {
  ASSERT_EQ(pipeline.losses.size(), whole.losses.size()) << what;
  for (size_t s = 0; s < whole.losses.size(); ++s) {
    EXPECT_NEAR(pipeline.losses[s], whole.losses[s], tolerance * std::abs(whole.losses[s]))
        << what << ", step " << s;
  }
  EXPECT_LE(worst_relative(pipeline.gradients, whole.gradients), tolerance) << what;
  EXPECT_LE(worst_relative(pipeline.parameters, whole.parameters), tolerance) << what;
}

}  // namespace loom::testing
