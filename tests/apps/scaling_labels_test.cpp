// loom-scaling labels what it measured: a CPU run's chart title names the precision it computed
// in (fp32, not the --precision meant for CUDA) and says "not a multi-GPU speedup", as do ranks
// sharing one GPU, and neither draws the ideal line or the seed's published GPU points; every
// CPU row of more than one rank says it (report.json's precision is fp32 too); the warm-up line
// speaks of the device that ran.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "scaling/outputs.h"
#include "scaling/scaling.h"
#include "scaling_small_run.h"
#include "testing.h"

namespace loom::testing {
namespace {

// A report of one row of 2 ranks at 1.6x, placed as `placement`.
scaling::Report two_rank_report(scaling::Placement placement) {
  scaling::Report report;
  report.config.placement = placement;
  report.config.precision = "tf32";
  report.rows.resize(1);
  report.rows[0].world_size = 2;
  report.rows[0].ran = true;
  report.rows[0].speedup = 1.6;
  return report;
}

bool has_series(const scaling::ChartSpec& spec, const std::string& label_start) {
  for (const scaling::ChartSeries& s : spec.series) {
    if (s.label.rfind(label_start, 0) == 0) return true;
  }
  return false;
}

TEST(ScalingLabels, OnlyGpuRowsAreDrawnBesideTheGpuReferences) {
  const scaling::ChartSpec gpus =
      scaling::speedup_chart(two_rank_report(scaling::Placement::Gpus), std::nullopt);
  EXPECT_NE(gpus.title.find("tf32: speedup against GPU count"), std::string::npos) << gpus.title;
  EXPECT_TRUE(has_series(gpus, "ideal"));
  EXPECT_TRUE(has_series(gpus, "Krizhevsky et al."));

  const scaling::ChartSpec cpu =
      scaling::speedup_chart(two_rank_report(scaling::Placement::Cpu), std::nullopt);
  EXPECT_NE(cpu.title.find("fp32 on the CPU"), std::string::npos) << cpu.title;
  EXPECT_EQ(cpu.title.find("tf32"), std::string::npos) << cpu.title;
  EXPECT_NE(cpu.title.find("not a multi-GPU speedup"), std::string::npos) << cpu.title;
  EXPECT_EQ(cpu.title.find("GPU count"), std::string::npos) << cpu.title;
  EXPECT_FALSE(has_series(cpu, "ideal"));
  EXPECT_FALSE(has_series(cpu, "Krizhevsky et al."));
  EXPECT_TRUE(has_series(cpu, "loom DDP, CPU thread ranks"));
  EXPECT_EQ(cpu.x_label, "ranks");

  const scaling::ChartSpec shared =
      scaling::speedup_chart(two_rank_report(scaling::Placement::OneGpu), std::nullopt);
  EXPECT_NE(shared.title.find("tf32, ranks sharing one GPU: not a multi-GPU speedup"),
            std::string::npos)
      << shared.title;
  EXPECT_FALSE(has_series(shared, "ideal"));
  EXPECT_FALSE(has_series(shared, "Krizhevsky et al."));
}

TEST(ScalingLabels, CpuRowsAndTheWarmUpLineSayWhatRan) {
  scaling::Config c = small_cpu_run();
  c.precision = "tf32";  // the default, meant for CUDA
  const scaling::Report report = scaling::run(c);
  ASSERT_EQ(report.rows.size(), 2u);
  EXPECT_EQ(report.rows[1].note.find("not a multi-GPU speedup") != std::string::npos, true)
      << report.rows[1].note;
  const std::string text = scaling::report_text(report);
  EXPECT_NE(text.find("precision fp32 (the CPU path)"), std::string::npos) << text;
  EXPECT_NE(text.find("so the CPU's caches and allocator are warm"), std::string::npos) << text;
  EXPECT_EQ(text.find("GPU is at its clocks"), std::string::npos) << text;
  EXPECT_NE(text.find("CPU thread ranks share its cores: not a multi-GPU speedup"),
            std::string::npos)
      << text;
  EXPECT_EQ(nlohmann::json::parse(scaling::report_json(report)).at("precision"), "fp32");
  const scaling::Report gpu_text_report = two_rank_report(scaling::Placement::Gpus);
  EXPECT_NE(scaling::report_text(gpu_text_report).find("so the GPU is at its clocks"),
            std::string::npos);
}

}  // namespace
}  // namespace loom::testing
