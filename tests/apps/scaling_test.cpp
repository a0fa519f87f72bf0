// loom-scaling's measurement on CPU thread ranks: a plain baseline and a DDP row per world size
// whose figures are consistent with each other, zero differing ranks (and a hash that does see
// different ranks), strong scaling, and the clear errors for GPU counts the machine lacks and
// bad configurations.
#include "scaling/scaling.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "scaling/rank_run.h"
#include "scaling_small_run.h"
#include "testing.h"

namespace loom::testing {
namespace {

TEST(Scaling, EveryWorldSizeGetsADdpRowAgainstThePlainModel) {
  scaling::Config c = small_cpu_run();
  c.price_per_gpu_hour = 3.06;
  const scaling::Report report = scaling::run(c);
  EXPECT_TRUE(report.baseline.ran);
  EXPECT_EQ(report.baseline.note, "plain model");
  EXPECT_DOUBLE_EQ(report.baseline.speedup, 1.0);
  EXPECT_FALSE(report.baseline.comm_ms.has_value()) << "no all-reduce without DDP";
  ASSERT_EQ(report.rows.size(), 2u);
  for (const scaling::Row& r : report.rows) {
    SCOPED_TRACE(r.world_size);
    EXPECT_TRUE(r.ran);
    EXPECT_EQ(r.global_batch, 4 * r.world_size);
    EXPECT_GT(r.median_ms, 0.0);
    EXPECT_LE(r.p10_ms, r.median_ms);
    EXPECT_LE(r.median_ms, r.p90_ms);
    EXPECT_NEAR(r.images_per_s, r.global_batch / (r.median_ms / 1e3), 1e-6 * r.images_per_s);
    EXPECT_NEAR(r.speedup, r.images_per_s / report.baseline.images_per_s, 1e-12);
    EXPECT_NEAR(r.efficiency, r.speedup / r.world_size, 1e-12);
    ASSERT_TRUE(r.comm_ms.has_value());
    ASSERT_TRUE(r.exposed_comm_ms.has_value());
    EXPECT_GE(*r.exposed_comm_ms, 0.0);
    EXPECT_EQ(r.differing_ranks, 0);
    EXPECT_EQ(r.loader_wait_ms, 0.0) << "synthetic data waits for nothing";
    EXPECT_FALSE(r.usd_per_million_images.has_value()) << "CPU ranks use no GPU to price";
    EXPECT_EQ(r.step_mode, "eager") << "--graph auto on the CPU";
    EXPECT_EQ(r.exposed_measure, "stall");
    ASSERT_EQ(r.rank_median_ms.size(), static_cast<size_t>(r.world_size));
    EXPECT_EQ(r.rank_median_ms[0], r.median_ms) << "rank 0's median is the row's";
    ASSERT_TRUE(r.ddp_step.has_value()) << "an eager DDP row reports its bucket launches";
    EXPECT_EQ(r.ddp_step->buckets, 1);
    EXPECT_EQ(r.ddp_step->launched_during_backward + r.ddp_step->launched_at_end, 1);
    EXPECT_EQ(r.ddp_step->held_back, 0);
  }
  EXPECT_EQ(report.baseline.step_mode, "eager");
  EXPECT_EQ(report.baseline.launch, "in_process");
  EXPECT_EQ(report.rows[0].launch, "in_process") << "a world of one runs beside the plain model";
  EXPECT_EQ(report.rows[1].launch, "threads");
  EXPECT_EQ(report.config.launch, "threads") << "auto on the CPU";
  EXPECT_GT(*report.rows[1].comm_ms, 0.0) << "two ranks really all-reduce";
  EXPECT_EQ(report.rows[0].note, "timed alternating with the plain model");
  EXPECT_EQ(report.buckets.size(), 1u);  // seed_cnn's 1.6 MB of gradients: one bucket
  const std::string text = scaling::report_text(report);
  for (const char* part :
       {"# model seed_cnn (410753 parameters)", "weak scaling, batch 4 per rank",
        "CPU thread ranks", "# ranks   global  median_ms   slowest", " plain ", "differ",
        "# step mode (--graph auto)", "rows: plain eager, 1 eager, 2 eager",
        "rows: plain in_process, 1 in_process, 2 threads", "exp% = exposed / median_ms"}) {
    EXPECT_NE(text.find(part), std::string::npos) << part << " not in:\n" << text;
  }
  // The 1 -> 2 rank step explained: its parts add up to the growth of the step, in the JSON
  // exactly and in the text within its rounding.
  for (const char* part :
       {"# 1 -> 2 ranks: where the speedup went", "rank 0 ", "NOT a multi-device speedup"}) {
    EXPECT_NE(text.find(part), std::string::npos) << part << " not in:\n" << text;
  }
  const size_t parts_at = text.find("#   ", text.find("# 1 -> 2 ranks:"));
  double growth = 0, exposed = 0, straggler = 0, rest = 0;
  ASSERT_EQ(std::sscanf(text.c_str() + parts_at,
                        "#   %lf ms = exposed communication %lf + straggler %lf + unexplained %lf",
                        &growth, &exposed, &straggler, &rest),
            4)
      << text;
  EXPECT_NEAR(exposed + straggler + rest, growth, 0.0021) << "three parts rounded to 0.001";
  const nlohmann::json j = nlohmann::json::parse(scaling::report_json(report));
  const nlohmann::json& g = j.at("step_growth");
  EXPECT_EQ(g.at("to_world"), 2);
  EXPECT_EQ(g.at("from"), "world_of_one");
  EXPECT_EQ(g.at("multi_device"), false);
  EXPECT_DOUBLE_EQ(g.at("from_ms").get<double>(), report.rows[0].median_ms);
  EXPECT_DOUBLE_EQ(g.at("to_ms").get<double>(), report.rows[1].median_ms);
  EXPECT_NEAR(g.at("growth_ms").get<double>(),
              g.at("slowest_ms").get<double>() - g.at("ideal_ms").get<double>(), 1e-12);
  EXPECT_NEAR(g.at("exposed_growth_ms").get<double>(),
              *report.rows[1].exposed_comm_ms - *report.rows[0].exposed_comm_ms, 1e-12);
  EXPECT_NEAR(g.at("exposed_growth_ms").get<double>() + g.at("straggler_ms").get<double>() +
                  g.at("unexplained_ms").get<double>(),
              g.at("growth_ms").get<double>(), 1e-12);
  EXPECT_EQ(j.at("tool"), "loom");
  EXPECT_EQ(j.at("placement"), "cpu");
  EXPECT_EQ(j.at("gradient_bytes"), 410756 * 4);  // padded to 16 bytes in the arena
  EXPECT_EQ(j.at("rows").size(), 2u);
  EXPECT_EQ(j.at("rows")[1].at("differing_ranks"), 0);
  EXPECT_EQ(j.at("rows")[1].at("rank_images_per_s").size(), 2u);
  EXPECT_EQ(j.at("rows")[1].at("ddp_step").at("held_back"), 0);
  EXPECT_TRUE(j.at("baseline").at("ddp_step").is_null());
  const std::string csv = scaling::report_csv(report);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 4) << csv;
  EXPECT_EQ(csv.rfind("kind,world_size,ran,", 0), 0u);
}

// --channels-last feeds every rank's batch NHWC: the rows run, the ranks stay identical, and the
// report says which layout it measured.
TEST(Scaling, ChannelsLastRowsRunAndSayTheirLayout) {
  scaling::Config c = small_cpu_run();
  c.channels_last = true;
  const scaling::Report report = scaling::run(c);
  ASSERT_EQ(report.rows.size(), 2u);
  for (const scaling::Row& r : report.rows) {
    EXPECT_TRUE(r.ran);
    EXPECT_EQ(r.differing_ranks, 0);
  }
  EXPECT_NE(scaling::report_text(report).find("precision fp32 (the CPU path), channels-last"),
            std::string::npos)
      << scaling::report_text(report);
  EXPECT_EQ(nlohmann::json::parse(scaling::report_json(report)).at("channels_last"), true);
}

TEST(Scaling, TheParameterHashSeesRanksThatDiffer) {
  std::vector<int> counts(3, -1), same(3, -1);
  dist::spawn(3, kCPU, [&](dist::ProcessGroup& g) {
    Generator weights(g.rank() == 2 ? 7 : 1);  // rank 2 starts from other weights
    GeneratorGuard guard(weights);
    auto model = nn::seed_cnn();
    counts[static_cast<size_t>(g.rank())] = scaling::count_differing_ranks(g, *model);
    dist::DistributedDataParallel ddp(model, g.shared_from_this());  // sets every rank to rank 0's
    same[static_cast<size_t>(g.rank())] = scaling::count_differing_ranks(g, *model);
  });
  EXPECT_EQ(counts, (std::vector<int>{1, 1, 1}));
  EXPECT_EQ(same, (std::vector<int>{0, 0, 0}));
}

TEST(Scaling, ThePlainModelAndDdpAlternateInBlocksOfTheSameSteps) {
  scaling::Config c = small_cpu_run();
  c.steps = 7;  // six blocks: one of two steps, five of one
  std::pair<scaling::RankResult, scaling::RankResult> results;
  dist::spawn(1, kCPU, [&](dist::ProcessGroup& g) {
    results =
        scaling::run_rank_beside_plain(c, scaling::ImageSource{}, 4, kCPU, g.shared_from_this());
  });
  const auto& [plain, ddp] = results;
  EXPECT_EQ(plain.step_ms.size(), 7u);
  EXPECT_EQ(ddp.step_ms.size(), 7u);
  EXPECT_EQ(ddp.exposed_comm_ms.size(), 7u) << "every timed DDP step, no warm-up one";
  EXPECT_TRUE(plain.exposed_comm_ms.empty());
  EXPECT_FALSE(plain.comm_ms.has_value());
  EXPECT_TRUE(ddp.comm_ms.has_value());
  EXPECT_EQ(ddp.warmup_steps, 1);
  EXPECT_GE(plain.warmup_steps, 1);
}

TEST(Scaling, StrongScalingSplitsTheLargestWorldsGlobalBatch) {
  scaling::Config c = small_cpu_run();
  c.strong = true;
  const scaling::Report report = scaling::run(c);
  EXPECT_EQ(report.baseline.global_batch, 8);
  EXPECT_EQ(report.rows[0].global_batch, 8);
  EXPECT_EQ(report.rows[1].global_batch, 8);
  c.world_sizes = {3, 4};  // 16 images do not split over 3 ranks
  EXPECT_LOOM_ERROR(scaling::run(c), "does not split evenly over");
}

TEST(Scaling, MoreGpusThanTheMachineHasIsAnErrorUnlessSkipped) {
  if (cuda_device_count() >= 64) GTEST_SKIP() << "a machine with 64 GPUs";
  scaling::Config c = small_cpu_run();
  c.placement = scaling::Placement::Gpus;
  c.world_sizes = {64};
  if (!built_with_cuda()) {
    EXPECT_LOOM_ERROR(scaling::run(c), "built without CUDA");
    return;
  }
  EXPECT_LOOM_ERROR(scaling::run(c),
                    "--gpus 64: this machine has " + std::to_string(cuda_device_count()));
  if (!cuda_is_available()) return;  // the baseline itself needs a GPU
  c.skip_missing = true;
  const scaling::Report report = scaling::run(c);
  EXPECT_FALSE(report.rows[0].ran);
  EXPECT_NE(report.rows[0].note.find("not run: needs 64 GPUs"), std::string::npos);
}

TEST(Scaling, BadConfigurationsAreClearErrors) {
  scaling::Config c = small_cpu_run();
  c.precision = "fp16";
  EXPECT_LOOM_ERROR(scaling::run(c), "--precision: expected fp32, tf32 or bf16");
  c = small_cpu_run();
  c.precision = "bf16";
  c.pipeline_stages = {2};
  EXPECT_LOOM_ERROR(scaling::run(c), "--precision bf16 does not apply to --pipeline");
  c = small_cpu_run();
  c.world_sizes = {0};
  EXPECT_LOOM_ERROR(scaling::run(c), "at least 1, got 0");
  c = small_cpu_run();
  c.model = "vgg";
  EXPECT_LOOM_ERROR(scaling::run(c), "--model: expected seed_cnn");
  c = small_cpu_run();
  c.launch = "ssh";
  EXPECT_LOOM_ERROR(scaling::run(c), "--launch: expected auto, threads or processes, got 'ssh'");
  c = small_cpu_run();
  c.placement = scaling::Placement::OneGpu;
  c.launch = "processes";
  c.self_command = {"/bin/true"};
  EXPECT_LOOM_ERROR(scaling::run(c), "ranks sharing one GPU are threads");
  c = small_cpu_run();
  c.data = "/nonexistent/photos";
  EXPECT_LOOM_ERROR(scaling::run(c), "/nonexistent/photos");
  c = small_cpu_run();
  c.price_per_gpu_hour = -1.0;
  EXPECT_LOOM_ERROR(scaling::run(c), "--price-per-gpu-hour must be a positive number");
  c = small_cpu_run();
  c.world_sizes = {1, dist::max_thread_ranks() + 1};  // refused before the world of one runs
  EXPECT_LOOM_ERROR(scaling::run(c), "a world size of " +
                                         std::to_string(dist::max_thread_ranks() + 1) +
                                         " is more thread ranks than this machine can hold");
  c = small_cpu_run();
  c.dist_timeout = "0";
  EXPECT_LOOM_ERROR(scaling::run(c), "--dist-timeout must be a number of seconds");
}

// --dist-timeout, else LOOM_DIST_TIMEOUT, else 600 s: the timeout of every group the run makes
// (issue 38: it was compiled in).
TEST(Scaling, DistTimeoutIsEveryGroupsTimeout) {
  scaling::Config c = small_cpu_run();
  ::unsetenv("LOOM_DIST_TIMEOUT");
  EXPECT_EQ(scaling::group_options(c).timeout, std::chrono::minutes(10));
  ::setenv("LOOM_DIST_TIMEOUT", "30", 1);
  EXPECT_EQ(scaling::group_options(c).timeout, std::chrono::seconds(30));
  c.dist_timeout = "2.5";
  EXPECT_EQ(scaling::group_options(c).timeout, std::chrono::milliseconds(2500));
  ::setenv("LOOM_DIST_TIMEOUT", "never", 1);
  c.dist_timeout.clear();
  EXPECT_LOOM_ERROR(scaling::group_options(c), "LOOM_DIST_TIMEOUT must be a number of seconds");
  ::unsetenv("LOOM_DIST_TIMEOUT");
}

TEST(Scaling, RankResultsRoundTripAndMalformedOnesAreNamed) {
  scaling::RankResult r;
  r.step_ms = {1.5, 2.25};
  r.exposed_comm_ms = {0.5, 0.25};
  r.loader_wait_ms = {0.0, 0.125};
  r.comm_ms = 0.75;
  r.differing_ranks = 0;
  r.parameters = 17;
  r.buckets.push_back({kCPU, kFloat32, 0, 20, {"w", "b"}});
  r.step_mode = "graph";
  r.timed_eager_steps = 2;
  r.rank_median_ms = {1.5, 1.75};
  r.ddp_step = dist::DdpStepStats{4, 3, 1, 2};
  const scaling::RankResult back =
      scaling::rank_result_from_json(scaling::rank_result_json(r), "r.json");
  EXPECT_EQ(back.step_mode, "graph");
  EXPECT_EQ(back.timed_eager_steps, 2);
  EXPECT_EQ(back.rank_median_ms, r.rank_median_ms);
  ASSERT_TRUE(back.ddp_step.has_value());
  EXPECT_EQ(back.ddp_step->buckets, 4);
  EXPECT_EQ(back.ddp_step->launched_during_backward, 3);
  EXPECT_EQ(back.ddp_step->launched_at_end, 1);
  EXPECT_EQ(back.ddp_step->held_back, 2);
  EXPECT_EQ(back.step_ms, r.step_ms);
  EXPECT_EQ(back.exposed_comm_ms, r.exposed_comm_ms);
  EXPECT_EQ(back.loader_wait_ms, r.loader_wait_ms);
  EXPECT_EQ(back.comm_ms, r.comm_ms);
  EXPECT_EQ(back.parameters, 17);
  ASSERT_EQ(back.buckets.size(), 1u);
  EXPECT_EQ(back.buckets[0].numel, 20);
  EXPECT_EQ(back.buckets[0].parameters, (std::vector<std::string>{"w", "b"}));
  EXPECT_LOOM_ERROR(scaling::rank_result_from_json("{\"step_ms\": [1]}", "r.json"),
                    "the rank result r.json");
  EXPECT_LOOM_ERROR(scaling::rank_result_from_json("not json", "r.json"),
                    "is not what a rank process writes");
}

}  // namespace
}  // namespace loom::testing
