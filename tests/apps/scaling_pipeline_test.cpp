// loom-scaling's pipeline rows on the CPU: one per stage count at the global batch of the DDP
// row of as many ranks, its times, bubble and stages consistent with each other, in the text,
// JSON, CSV and chart; and the clear errors for bad stage, micro-batch and GPU counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "scaling/outputs.h"
#include "scaling/scaling.h"
#include "scaling_small_run.h"
#include "testing.h"

namespace loom::testing {
namespace {

constexpr int64_t kSeedCnnLayers = 7, kSeedCnnParameters = 410753;

scaling::Config small_pipeline_run() {
  scaling::Config c = small_cpu_run();
  c.pipeline_stages = {2, 3};
  return c;
}

TEST(ScalingPipeline, EachStageCountGetsARowAtTheGlobalBatchOfTheDdpRow) {
  const scaling::Report report = scaling::run(small_pipeline_run());
  ASSERT_EQ(report.rows.size(), 2u);
  ASSERT_EQ(report.pipeline_rows.size(), 2u);
  EXPECT_EQ(report.pipeline_rows[0].row.global_batch, report.rows[1].global_batch)
      << "2 stages and 2 ranks: equal work";
  for (const scaling::PipelineRow& p : report.pipeline_rows) {
    SCOPED_TRACE(p.stages);
    const scaling::Row& r = p.row;
    ASSERT_TRUE(r.ran) << r.note;
    EXPECT_EQ(r.world_size, p.stages);
    EXPECT_EQ(r.global_batch, 4 * p.stages);
    EXPECT_EQ(p.micro_batches, 2 * p.stages) << "the default";
    EXPECT_EQ(p.schedule, "gpipe");
    EXPECT_GT(r.median_ms, 0.0);
    EXPECT_LE(r.p10_ms, r.median_ms);
    EXPECT_LE(r.median_ms, r.p90_ms);
    EXPECT_GT(r.images_per_s, 0.0);
    EXPECT_NEAR(r.images_per_s, r.global_batch / (r.median_ms / 1e3), 1e-6 * r.images_per_s);
    EXPECT_NEAR(r.speedup, r.images_per_s / report.baseline.images_per_s, 1e-12);
    EXPECT_NEAR(r.efficiency, r.speedup / p.stages, 1e-12);
    EXPECT_FALSE(r.comm_ms.has_value()) << "a pipeline all-reduces nothing";
    EXPECT_FALSE(r.exposed_comm_ms.has_value());
    EXPECT_EQ(r.differing_ranks, 0);
    EXPECT_EQ(r.note, "");
    EXPECT_GE(p.bubble, 0.0);
    EXPECT_LT(p.bubble, 1.0);
    // On the CPU the stages run one after another on one thread, so the busy times sum to at
    // most the step: the mean idle share is at least 1 - 1/stages.
    EXPECT_GE(p.bubble, 1.0 - 1.0 / p.stages - 1e-9);
    EXPECT_DOUBLE_EQ(p.theoretical_bubble, (p.stages - 1.0) / (p.micro_batches + p.stages - 1.0));
    ASSERT_EQ(p.layout.size(), static_cast<size_t>(p.stages));
    ASSERT_EQ(p.stage_busy_ms.size(), static_cast<size_t>(p.stages));
    int64_t next = 0, parameters = 0;
    for (size_t s = 0; s < p.layout.size(); ++s) {
      EXPECT_EQ(p.layout[s].first_layer, next) << "stage " << s << " follows the one before";
      EXPECT_GT(p.layout[s].end_layer, p.layout[s].first_layer);
      EXPECT_EQ(p.layout[s].device, kCPU);
      EXPECT_GT(p.stage_busy_ms[s], 0.0);
      next = p.layout[s].end_layer;
      parameters += p.layout[s].parameters;
    }
    EXPECT_EQ(next, kSeedCnnLayers);
    EXPECT_EQ(parameters, kSeedCnnParameters);
  }

  const std::string text = scaling::report_text(report);
  for (const char* part :
       {"# pipeline rows (model parallelism", "# stages   global  median_ms",
        "pipeline 2 stages, 4 micro-batches, gpipe", "pipeline 3 stages, 6 micro-batches, gpipe",
        "#         layers 0-", "# stages on the CPU, taking turns on one thread"}) {
    EXPECT_NE(text.find(part), std::string::npos) << part << " not in:\n" << text;
  }
  EXPECT_LT(text.find("# ranks   global"), text.find("# pipeline rows"))
      << "the pipeline block follows the DDP rows";

  const nlohmann::json j = nlohmann::json::parse(scaling::report_json(report));
  ASSERT_EQ(j.at("pipeline_rows").size(), 2u);
  EXPECT_EQ(j.at("rows").size(), 2u) << "the DDP rows stay as they were";
  for (const auto& row : j.at("pipeline_rows")) {
    for (const char* key : {"world_size",
                            "ran",
                            "note",
                            "global_batch",
                            "median_ms",
                            "p10_ms",
                            "p90_ms",
                            "images_per_s",
                            "speedup",
                            "efficiency",
                            "comm_ms",
                            "exposed_comm_ms",
                            "loader_wait_ms",
                            "differing_ranks",
                            "usd_per_million_images",
                            "stages",
                            "micro_batches",
                            "schedule",
                            "bubble",
                            "theoretical_bubble",
                            "stage_layout"}) {
      EXPECT_TRUE(row.contains(key)) << key;
    }
    EXPECT_TRUE(row.at("comm_ms").is_null());
    EXPECT_TRUE(row.at("bubble").is_number());
    ASSERT_EQ(row.at("stage_layout").size(), row.at("stages").get<size_t>());
    for (const auto& stage : row.at("stage_layout")) {
      for (const char* key : {"first_layer", "end_layer", "device", "parameters", "busy_ms"}) {
        EXPECT_TRUE(stage.contains(key)) << key;
      }
      EXPECT_EQ(stage.at("device"), "cpu");
    }
  }
  EXPECT_EQ(j.at("pipeline_rows")[0].at("global_batch"), j.at("rows")[1].at("global_batch"));

  const std::string csv = scaling::report_csv(report);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 6)
      << csv;  // header, plain, 2 DDP, 2 pipeline
  EXPECT_NE(
      csv.find(",micro_batches,schedule,bubble,theoretical_bubble,stage_layout,step_mode,launch,"
               "slowest_rank_ms,exposed_share,note\n"),
      std::string::npos)
      << csv;
  EXPECT_NE(csv.find("\npipeline,2,1,8,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",4,gpipe,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",0.200000,layers 0-"), std::string::npos)
      << "2 stages, 4 micro-batches: theory 1/5\n"
      << csv;
}

TEST(ScalingPipeline, OneFOneBWithMicroBatchesThatSplitTheBatchUnevenly) {
  scaling::Config c = small_pipeline_run();
  c.world_sizes = {2};
  c.pipeline_stages = {2};
  c.micro_batches = 3;  // 8 images: micro-batches of 3, 3 and 2
  c.pipeline_schedule = "1f1b";
  const scaling::Report report = scaling::run(c);
  ASSERT_EQ(report.pipeline_rows.size(), 1u);
  const scaling::PipelineRow& p = report.pipeline_rows[0];
  ASSERT_TRUE(p.row.ran);
  EXPECT_EQ(p.micro_batches, 3);
  EXPECT_EQ(p.schedule, "1f1b");
  EXPECT_DOUBLE_EQ(p.theoretical_bubble, 0.25);
  EXPECT_EQ(p.row.global_batch, 8);
  EXPECT_NE(scaling::report_text(report).find("pipeline 2 stages, 3 micro-batches, 1f1b"),
            std::string::npos);
}

TEST(ScalingPipeline, TheChartDrawsThePipelineRowsAsASeriesOfTheirOwn) {
  scaling::Report report;
  report.config.placement = scaling::Placement::Gpus;
  report.config.pipeline_stages = {2, 4};
  report.rows.resize(1);
  report.rows[0].world_size = 2;
  report.rows[0].ran = true;
  report.rows[0].speedup = 1.8;
  for (int n : {2, 4}) {
    scaling::PipelineRow p;
    p.stages = n;
    p.schedule = "gpipe";
    p.row.world_size = n;
    p.row.ran = n == 2;  // 4 stages not run: no point
    p.row.speedup = 1.3;
    report.pipeline_rows.push_back(p);
  }
  const scaling::ChartSpec spec = scaling::speedup_chart(report, std::nullopt);
  const auto pipeline =
      std::find_if(spec.series.begin(), spec.series.end(), [](const scaling::ChartSeries& s) {
        return s.label.find("loom pipeline (gpipe, 2 x stages micro-batches)") == 0;
      });
  ASSERT_NE(pipeline, spec.series.end());
  EXPECT_EQ(pipeline->points, (std::vector<std::pair<double, double>>{{2, 1.3}}));
  report.pipeline_rows.clear();
  for (const scaling::ChartSeries& s : scaling::speedup_chart(report, std::nullopt).series) {
    EXPECT_EQ(s.label.find("loom pipeline"), std::string::npos) << "no pipeline rows, no series";
  }
}

TEST(ScalingPipeline, BadStageAndMicroBatchCountsAreClearErrors) {
  scaling::Config c = small_pipeline_run();
  for (int n : {0, 1}) {
    c.pipeline_stages = {n};
    EXPECT_LOOM_ERROR(scaling::run(c),
                      "--pipeline " + std::to_string(n) + ": a pipeline needs at least 2 stages");
  }
  c.pipeline_stages = {8};
  EXPECT_LOOM_ERROR(scaling::run(c),
                    "--pipeline 8: seed_cnn has 7 layers and each stage needs at least one");
  c.pipeline_stages = {2};
  c.micro_batches = 9;
  EXPECT_LOOM_ERROR(scaling::run(c),
                    "--pipeline 2: 9 micro-batches for a global batch of 8 images");
  c.micro_batches = 0;
  EXPECT_LOOM_ERROR(scaling::run(c), "--micro-batches must be at least 1, got 0");
  c.micro_batches.reset();
  c.batch_per_rank = 1;  // 2 images, 4 micro-batches by default
  EXPECT_LOOM_ERROR(
      scaling::run(c),
      "--pipeline 2: 4 micro-batches (the default, 2 x stages) for a global batch of 2");
  c = small_pipeline_run();
  c.pipeline_schedule = "zero-bubble";
  EXPECT_LOOM_ERROR(scaling::run(c),
                    "--pipeline-schedule: expected gpipe or 1f1b, got 'zero-bubble'");
}

TEST(ScalingPipeline, MoreStagesThanGpusIsAnErrorUnlessSkipped) {
  const int gpus = cuda_device_count();
  if (gpus + 1 > kSeedCnnLayers) GTEST_SKIP() << "a machine with " << gpus << " GPUs";
  const int stages = std::max(2, gpus + 1);
  scaling::Config c = small_pipeline_run();
  c.placement = scaling::Placement::Gpus;
  c.world_sizes = {1};
  c.pipeline_stages = {stages};
  if (!built_with_cuda()) {
    EXPECT_LOOM_ERROR(scaling::run(c), "built without CUDA");
    return;
  }
  const std::string n = std::to_string(stages);
  if (!cuda_is_available()) {  // the baseline's own GPU is missing first
    EXPECT_LOOM_ERROR(scaling::run(c), "this machine has 0 GPUs");
    return;
  }
  EXPECT_LOOM_ERROR(scaling::run(c), "--pipeline " + n + ": " + n + " stages need " + n +
                                         " GPUs, this machine has " + std::to_string(gpus));
  c.skip_missing = true;
  const scaling::Report report = scaling::run(c);
  ASSERT_EQ(report.pipeline_rows.size(), 1u);
  EXPECT_FALSE(report.pipeline_rows[0].row.ran);
  EXPECT_NE(report.pipeline_rows[0].row.note.find("not run: needs " + n + " GPUs"),
            std::string::npos);
}

}  // namespace
}  // namespace loom::testing
