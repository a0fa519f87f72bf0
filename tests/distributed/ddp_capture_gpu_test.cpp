// DistributedDataParallel inside a captured training step (train::CapturedStep): over NCCL the
// bucket all-reduces are nodes of the graph, and with one rank the replayed steps are bit for bit
// the plain model's, with eager collectives on the same communicator between the replays; a
// host-driven backend's collectives are refused with an error, not captured wrong.
#include <gtest/gtest.h>

#include "ddp_cases.h"

namespace loom::testing {
namespace {

const train::LossFn kLoss = [](const Tensor& outputs, const Tensor& labels) {
  return nn::binary_cross_entropy_with_logits(outputs, labels);
};

TEST(DdpCapture, OverNcclTheReplayedStepsAreThePlainModelsSteps) {
  LOOM_REQUIRE_CUDA();
  DeterministicAlgorithmsGuard deterministic_guard;
  const int steps = 8;
  const EquivalenceData data = equivalence_data(16 * steps, 21);
  const TrainedRun plain = train_single(data, 16, steps, kCUDA);

  dist::GroupPtr g = dist::make_nccl_group(dist::nccl_unique_id(), 0, 1, 0);
  auto model = ddp_model(42);
  model->to(kCUDA);
  auto ddp = std::make_shared<dist::DistributedDataParallel>(model, g);
  optim::Adam adam(ddp->parameters(), optim::GroupOptions().with_lr(1e-3));
  train::CapturedStep step(*ddp, kLoss, adam);
  std::vector<float> losses;
  for (int s = 0; s < steps; ++s) {
    const Tensor x = data.images.narrow(0, s * 16, 16).to(kCUDA);
    const Tensor y = data.labels.narrow(0, s * 16, 16).to(kCUDA);
    const train::CapturedStep::Result r = step.run(x, y);
    // An eager collective on the same communicator between two replays.
    Tensor mean = r.loss.reshape({1}).contiguous().clone();
    g->all_reduce(mean, dist::ReduceOp::Avg)->wait();
    losses.push_back(mean.item<float>());
  }
  EXPECT_EQ(step.replays(), steps - 1);
  EXPECT_EQ(losses, plain.losses);
  EXPECT_EQ(flat_parameters(*model), plain.parameters);
}

TEST(DdpCapture, AHostDrivenBackendIsRefused) {
  LOOM_REQUIRE_CUDA();
  dist::GroupPtr g = dist::make_threads_groups(1, kCUDA)[0];
  auto model = ddp_model(43);
  model->to(kCUDA);
  auto ddp = std::make_shared<dist::DistributedDataParallel>(model, g);
  optim::Adam adam(ddp->parameters());
  train::CapturedStep step(*ddp, kLoss, adam);
  const EquivalenceData data = equivalence_data(8, 22);
  const Tensor x = data.images.to(kCUDA), y = data.labels.to(kCUDA);
  step.run(x, y);  // eager
  EXPECT_LOOM_ERROR(step.run(x, y), "the threads backend runs its collectives from the host");
  // The group still works eagerly afterwards.
  Tensor t = ones({4}, kCUDA);
  g->all_reduce(t)->wait();
  EXPECT_EQ(t.cpu().to_vector<float>(), std::vector<float>(4, 1.0f));
}

}  // namespace
}  // namespace loom::testing
