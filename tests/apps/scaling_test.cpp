// loom-scaling's measurement on CPU thread ranks: every world size gets a row against the plain
// model, the figures are consistent with each other, and GPU counts the machine lacks are an
// error naming both numbers, or "not run" rows when asked.
#include <gtest/gtest.h>

#include "scaling.h"
#include "testing.h"

namespace loom::testing {
namespace {

scaling::Config small_cpu_run() {
  scaling::Config c;
  c.device = kCPU;
  c.world_sizes = {1, 2};
  c.batch_per_rank = 4;
  c.steps = 3;
  c.warmup = 1;
  return c;
}

TEST(Scaling, EveryWorldSizeGetsARowAgainstThePlainModel) {
  const scaling::Report report = scaling::run(small_cpu_run());
  ASSERT_EQ(report.rows.size(), 2u);
  EXPECT_EQ(report.rows[0].note, "plain model");
  EXPECT_DOUBLE_EQ(report.rows[0].speedup, 1.0);
  const scaling::Row& two = report.rows[1];
  EXPECT_TRUE(two.ran);
  EXPECT_EQ(two.global_batch, 8);
  EXPECT_GT(two.median_ms, 0.0);
  EXPECT_LE(two.p10_ms, two.median_ms);
  EXPECT_LE(two.median_ms, two.p90_ms);
  EXPECT_NEAR(two.images_per_s, 8 / (two.median_ms / 1e3), 1e-6 * two.images_per_s);
  EXPECT_NEAR(two.speedup, two.images_per_s / report.rows[0].images_per_s, 1e-12);
  EXPECT_NEAR(two.efficiency, two.speedup / 2, 1e-12);
  EXPECT_EQ(report.buckets.size(), 1u);  // seed_cnn's 1.6 MB of gradients: one bucket
  const std::string text = scaling::report_text(report);
  for (const char* part : {"# model seed_cnn (410753 parameters)", "weak scaling, batch 4 per rank",
                           "# ranks    global   median_ms"}) {
    EXPECT_NE(text.find(part), std::string::npos) << part << " not in:\n" << text;
  }
  EXPECT_NE(scaling::report_json(report).find("\"world_size\": 2"), std::string::npos);
}

TEST(Scaling, StrongScalingSplitsTheLargestWorldsGlobalBatch) {
  scaling::Config c = small_cpu_run();
  c.strong = true;
  const scaling::Report report = scaling::run(c);
  EXPECT_EQ(report.rows[0].global_batch, 8);
  EXPECT_EQ(report.rows[1].global_batch, 8);
  c.world_sizes = {3, 4};  // 16 images do not split over 3 ranks
  EXPECT_LOOM_ERROR(scaling::run(c), "does not split evenly over");
}

TEST(Scaling, MoreGpusThanTheMachineHasIsAnErrorUnlessSkipped) {
  if (cuda_device_count() >= 64) GTEST_SKIP() << "a machine with 64 GPUs";
  scaling::Config c = small_cpu_run();
  c.device = kCUDA;
  c.world_sizes = {64};
  EXPECT_LOOM_ERROR(scaling::run(c), "--gpus 64: this machine has " + std::to_string(cuda_device_count()));
  if (!cuda_is_available()) return;  // the baseline itself needs a GPU
  c.skip_missing = true;
  const scaling::Report report = scaling::run(c);
  EXPECT_FALSE(report.rows[0].ran);
  EXPECT_NE(report.rows[0].note.find("not run"), std::string::npos);
}

TEST(Scaling, BadConfigurationsAreClearErrors) {
  scaling::Config c = small_cpu_run();
  c.precision = "bf16";
  EXPECT_LOOM_ERROR(scaling::run(c), "--precision: expected fp32 or tf32");
  c = small_cpu_run();
  c.world_sizes = {0};
  EXPECT_LOOM_ERROR(scaling::run(c), "at least 1, got 0");
  c = small_cpu_run();
  c.model = "vgg";
  EXPECT_LOOM_ERROR(scaling::run(c), "--model: expected seed_cnn");
}

}  // namespace
}  // namespace loom::testing
