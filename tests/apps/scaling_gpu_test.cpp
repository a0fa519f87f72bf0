// loom-scaling on a GPU: the plain baseline and DDP over NCCL with one rank (the honest 1-GPU
// rows), captured by default and eager with --graph off, bf16 channels-last captured, two
// thread ranks sharing the GPU (labelled as not a speedup, eager: their backend cannot be
// captured), all timed with CUDA events, and the photographs through each rank's loader when
// they are present.
#include <gtest/gtest.h>

#include <filesystem>

#include "scaling/scaling.h"
#include "testing.h"

namespace loom::testing {
namespace {

scaling::Config small_gpu_run(scaling::Placement placement, std::vector<int> worlds) {
  scaling::Config c;
  c.placement = placement;
  c.world_sizes = std::move(worlds);
  c.batch_per_rank = 8;
  c.steps = 5;
  c.warmup = 2;
  c.warmup_seconds = 0.5;
  return c;
}

// An eager row's exposed time is a stall inside its step; a graph row's is its step minus the
// plain one's.
void expect_timed_ddp_row(const scaling::Row& r, const scaling::Row& plain) {
  SCOPED_TRACE(r.world_size);
  EXPECT_TRUE(r.ran);
  EXPECT_GT(r.median_ms, 0.0);
  EXPECT_LE(r.p10_ms, r.median_ms);
  EXPECT_LE(r.median_ms, r.p90_ms);
  ASSERT_TRUE(r.comm_ms.has_value());
  ASSERT_TRUE(r.exposed_comm_ms.has_value());
  if (r.step_mode == "graph") {
    EXPECT_EQ(r.exposed_measure, "ddp_minus_plain");
    EXPECT_DOUBLE_EQ(*r.exposed_comm_ms, r.median_ms - plain.median_ms);
    EXPECT_FALSE(r.ddp_step.has_value()) << "a replay runs no hooks to count";
  } else {
    EXPECT_EQ(r.exposed_measure, "stall");
    EXPECT_GE(*r.exposed_comm_ms, 0.0);
    EXPECT_LT(*r.exposed_comm_ms, r.median_ms)
        << "a stall inside the step cannot be longer than the step";
    ASSERT_TRUE(r.ddp_step.has_value());
    EXPECT_EQ(r.ddp_step->held_back, 0);
  }
  EXPECT_EQ(r.rank_median_ms.size(), static_cast<size_t>(r.world_size));
  EXPECT_EQ(r.differing_ranks, 0);
}

TEST(ScalingGpu, OneGpuRowsArePlainAndDdpOverNccl) {
  if (!cuda_is_available()) GTEST_SKIP() << "no GPU";
  scaling::Config c = small_gpu_run(scaling::Placement::Gpus, {1});
  c.price_per_gpu_hour = 3.06;
  const scaling::Report report = scaling::run(c);
  EXPECT_TRUE(report.baseline.ran);
  ASSERT_EQ(report.rows.size(), 1u);
  EXPECT_EQ(report.baseline.step_mode, "graph") << "--graph auto on CUDA";
  EXPECT_EQ(report.rows[0].step_mode, "graph");
  EXPECT_EQ(report.rows[0].note, "timed alternating with the plain model");
  expect_timed_ddp_row(report.rows[0], report.baseline);
  ASSERT_TRUE(report.rows[0].usd_per_million_images.has_value());
  EXPECT_NEAR(*report.rows[0].usd_per_million_images,
              3.06 / 3600.0 * 1e6 / report.rows[0].images_per_s, 1e-9);
  const std::string text = scaling::report_text(report);
  EXPECT_NE(text.find("CUDA events on rank 0's compute stream"), std::string::npos) << text;
  EXPECT_NE(text.find("cuDNN"), std::string::npos) << text;
  EXPECT_NE(text.find("rows: plain graph, 1 graph"), std::string::npos) << text;
}

TEST(ScalingGpu, GraphOffTimesEagerStepsWithTheirStalls) {
  if (!cuda_is_available()) GTEST_SKIP() << "no GPU";
  scaling::Config c = small_gpu_run(scaling::Placement::Gpus, {1});
  c.graph = "off";
  const scaling::Report report = scaling::run(c);
  EXPECT_EQ(report.baseline.step_mode, "eager");
  ASSERT_EQ(report.rows.size(), 1u);
  EXPECT_EQ(report.rows[0].step_mode, "eager");
  expect_timed_ddp_row(report.rows[0], report.baseline);
}

TEST(ScalingGpu, Bf16ChannelsLastStepsAreCapturedToo) {
  if (!cuda_is_available()) GTEST_SKIP() << "no GPU";
  scaling::Config c = small_gpu_run(scaling::Placement::Gpus, {1});
  c.graph = "on";
  c.precision = "bf16";
  c.channels_last = true;
  c.model = "resnet18";
  const scaling::Report report = scaling::run(c);
  EXPECT_EQ(report.rows[0].step_mode, "graph");
  expect_timed_ddp_row(report.rows[0], report.baseline);
}

TEST(ScalingGpu, RanksSharingTheGpuAreLabelledNotASpeedup) {
  if (!cuda_is_available()) GTEST_SKIP() << "no GPU";
  const scaling::Report report = scaling::run(small_gpu_run(scaling::Placement::OneGpu, {1, 2}));
  ASSERT_EQ(report.rows.size(), 2u);
  for (const scaling::Row& r : report.rows) expect_timed_ddp_row(r, report.baseline);
  EXPECT_EQ(report.rows[0].step_mode, "graph") << "a world of one runs over NCCL";
  EXPECT_EQ(report.rows[1].step_mode, "eager")
      << "the threads backend's collectives cannot be captured";
  EXPECT_GT(*report.rows[1].comm_ms, 0.0);
  EXPECT_NE(report.rows[1].note.find("not a multi-GPU speedup"), std::string::npos);
  EXPECT_NE(scaling::report_text(report).find("NOT a multi-GPU speedup"), std::string::npos);
  EXPECT_EQ(scaling::gpus_used(report.config, 2), 1);
}

TEST(ScalingGpu, PhotographsComeThroughEachRanksLoader) {
  if (!cuda_is_available()) GTEST_SKIP() << "no GPU";
  std::string data;
  for (const char* dir : {"../shared/data/cats_dogs", "../../shared/data/cats_dogs",
                          ".data/cats_dogs", "../.data/cats_dogs"}) {
    if (std::filesystem::is_directory(std::filesystem::path(dir) / "train"))
      data = std::filesystem::absolute(dir).string();
  }
  if (data.empty()) GTEST_SKIP() << "no cats_dogs photographs here";
  scaling::Config c = small_gpu_run(scaling::Placement::OneGpu, {2});
  c.data = data;
  const scaling::Report report = scaling::run(c);
  expect_timed_ddp_row(report.rows[0], report.baseline);
  EXPECT_GE(report.rows[0].loader_wait_ms, 0.0);
  EXPECT_NE(scaling::report_text(report).find("photographs from " + data), std::string::npos);
}

}  // namespace
}  // namespace loom::testing
