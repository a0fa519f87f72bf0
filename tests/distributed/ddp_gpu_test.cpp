// DistributedDataParallel on the one GPU: over NCCL with one rank it is exactly the plain
// model; over the threads backend with 2 ranks sharing the GPU it is the N = 2 equivalence;
// its first bucket's all-reduce starts while backward still runs.
#include <gtest/gtest.h>

#include "ddp_cases.h"

namespace loom::testing {
namespace {

TEST(DdpGpu, OverNcclWithOneRankItIsExactlyThePlainModel) {
  LOOM_REQUIRE_CUDA();
  DeterministicAlgorithmsGuard deterministic_guard;
  const EquivalenceData data = equivalence_data(16 * 10, 11);
  const TrainedRun plain = train_single(data, 16, 10, kCUDA);
  dist::GroupPtr g = dist::make_nccl_group(dist::nccl_unique_id(), 0, 1, 0);
  const TrainedRun wrapped = train_rank(*g, data, 16, 10);
  EXPECT_EQ(wrapped.losses, plain.losses);
  EXPECT_EQ(wrapped.gradients, plain.gradients);
  EXPECT_EQ(wrapped.parameters, plain.parameters);
}

TEST(DdpGpu, TwoRanksSharingTheGpuEqualOneRankWithTheirBatch) {
  LOOM_REQUIRE_CUDA();
  DeterministicAlgorithmsGuard deterministic_guard;
  const EquivalenceData data = equivalence_data(8 * 10, 12);
  const TrainedRun single = train_single(data, 8, 10, kCUDA);
  std::vector<TrainedRun> ranks(2);
  dist::SpawnOptions options;
  options.backend = dist::Backend::Threads;
  dist::spawn(
      2, kCUDA,
      [&](dist::ProcessGroup& g) {
        ranks[static_cast<size_t>(g.rank())] = train_rank(g, data, 8, 10);
      },
      options);
  EXPECT_LE(worst_relative(ranks[0].gradients, single.gradients), 1e-5);
  EXPECT_LE(worst_relative(ranks[0].parameters, single.parameters), 1e-5);
  for (int s = 0; s < 10; ++s)
    EXPECT_NEAR(ranks[0].losses[s], single.losses[s], 1e-5 * std::abs(single.losses[s]));
  EXPECT_EQ(ranks[1].parameters, ranks[0].parameters);
}

TEST(DdpGpu, TheFirstBucketIsReducedWhileBackwardStillRuns) {
  LOOM_REQUIRE_CUDA();
  dist::GroupPtr g = dist::make_nccl_group(dist::nccl_unique_id(), 0, 1, 0);
  auto model = ddp_model(5);
  model->to(kCUDA);
  dist::DdpOptions options;
  options.single_bucket_bytes = 0;
  options.first_bucket_bytes = 100;
  options.bucket_bytes = 2000;
  dist::DistributedDataParallel ddp(model, g, options);
  ASSERT_GE(ddp.buckets().size(), 3u);
  // The first layer's gradient is backward's last: the earlier buckets' all-reduces must have
  // been issued to NCCL by then, from the hooks, not after backward.
  uint64_t issued_before_first_layer = 0;
  const uint64_t before = g->next_sequence_number();
  model->named_parameters().at("0.weight").register_post_accumulate_hook([&](Tensor&) {
    issued_before_first_layer = g->next_sequence_number() - before;
  });
  nn::binary_cross_entropy_with_logits(ddp.forward(randn({4, 3, 8, 8}, kCUDA)), ones({4, 1}, kCUDA))
      .backward();
  EXPECT_GE(issued_before_first_layer, ddp.buckets().size() - 1);
  EXPECT_EQ(ddp.last_step().launched_during_backward, static_cast<int>(ddp.buckets().size()));
}

TEST(DdpGpu, AModuleOnAnotherDeviceThanTheGroupIsAnError) {
  LOOM_REQUIRE_CUDA();
  dist::GroupPtr g = dist::make_nccl_group(dist::nccl_unique_id(), 0, 1, 0);
  EXPECT_LOOM_ERROR(dist::DistributedDataParallel(ddp_model(1), g),
                    "is on cpu but the group's collectives run on cuda:0");
}

}  // namespace
}  // namespace loom::testing
