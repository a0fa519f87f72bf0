// loom-scaling's derived row figures in closed form (the straggler columns, a captured row's
// exposed time and its share of the step, each rank's images/s, the note of a graph row that
// fell back, the 1 -> 2 rank step explained), and the choices made before measuring: --launch auto
// and --graph, with the errors that name a bad value.
#include <gtest/gtest.h>

#include "scaling/row_figures.h"
#include "scaling/trainee.h"
#include "scaling_small_run.h"
#include "testing.h"

namespace loom::testing {
namespace {

TEST(ScalingFigures, TheStragglerIsTheSlowestRanksMedianBesideRankZeros) {
  EXPECT_FALSE(scaling::rank_spread({}).has_value()) << "a plain row has no ranks";
  const auto one = scaling::rank_spread({2.5});
  ASSERT_TRUE(one.has_value());
  EXPECT_EQ(one->rank0_ms, 2.5);
  EXPECT_EQ(one->slowest_ms, 2.5);
  EXPECT_EQ(one->slowest_rank, 0);
  const auto four = scaling::rank_spread({1.0, 1.25, 3.0, 0.5});
  EXPECT_EQ(four->rank0_ms, 1.0);
  EXPECT_EQ(four->slowest_ms, 3.0);
  EXPECT_EQ(four->slowest_rank, 2);
  EXPECT_EQ(scaling::rank_spread({2.0, 2.0, 1.0})->slowest_rank, 0) << "rank 0 on a tie";
}

TEST(ScalingFigures, AGraphRowsExposedTimeIsItsStepMinusThePlainStep) {
  scaling::Row plain, ddp;
  plain.ran = ddp.ran = true;
  plain.median_ms = 0.125;
  ddp.median_ms = 0.15625;
  scaling::set_exposed_from_plain(ddp, plain);
  ASSERT_TRUE(ddp.exposed_comm_ms.has_value());
  EXPECT_DOUBLE_EQ(*ddp.exposed_comm_ms, 0.03125);
  EXPECT_EQ(ddp.exposed_measure, "ddp_minus_plain");
  EXPECT_DOUBLE_EQ(*scaling::exposed_share(ddp), 0.2);  // 0.03125 / 0.15625
  ddp.median_ms = 0.12;  // noise below the plain step stays visible, signed
  scaling::set_exposed_from_plain(ddp, plain);
  EXPECT_LT(*ddp.exposed_comm_ms, 0.0);
}

TEST(ScalingFigures, TheExposedShareNeedsAnExposedTimeAndAStepThatRan) {
  scaling::Row r;
  r.ran = true;
  r.median_ms = 2.0;
  EXPECT_FALSE(scaling::exposed_share(r).has_value()) << "a plain row";
  r.exposed_comm_ms = 0.5;
  EXPECT_DOUBLE_EQ(*scaling::exposed_share(r), 0.25);
  r.ran = false;
  EXPECT_FALSE(scaling::exposed_share(r).has_value());
}

TEST(ScalingFigures, EachRanksImagesPerSecondIsItsBatchOverItsMedian) {
  scaling::Row r;
  r.world_size = 4;
  r.global_batch = 128;  // 32 a rank
  r.rank_median_ms = {1.0, 2.0, 0.5, 4.0};
  EXPECT_EQ(scaling::rank_images_per_s(r),
            (std::vector<double>{32000.0, 16000.0, 64000.0, 8000.0}));
  r.rank_median_ms.clear();
  EXPECT_TRUE(scaling::rank_images_per_s(r).empty());
}

// Binary fractions, so the parts add up exactly.
TEST(ScalingFigures, TheStepFromOneRankToTwoSplitsIntoExposedStragglerAndTheRest) {
  scaling::Report report;
  report.config.placement = scaling::Placement::Gpus;
  scaling::Row& plain = report.baseline;
  plain.ran = true;
  plain.global_batch = 32;
  plain.median_ms = 1.0;
  plain.images_per_s = 32000;
  EXPECT_FALSE(scaling::step_growth(report).has_value()) << "no larger world";
  scaling::Row one = plain, two = plain;
  one.median_ms = 1.125;
  one.exposed_comm_ms = 0.125;
  one.images_per_s = 32 / 1.125e-3;
  two.world_size = 2;
  two.global_batch = 64;
  two.median_ms = 1.5;
  two.images_per_s = 64 / 1.5e-3;
  two.rank_median_ms = {1.5, 1.625};
  two.comm_ms = 0.5;
  two.exposed_comm_ms = 0.25;
  scaling::Row not_run;
  not_run.world_size = 4;
  report.rows = {not_run, one, two};
  const auto g = scaling::step_growth(report);
  ASSERT_TRUE(g.has_value());
  EXPECT_FALSE(g->from_plain);
  EXPECT_EQ(g->to_world, 2);
  EXPECT_EQ(g->ideal_ms, 1.125) << "weak scaling: the same step";
  EXPECT_EQ(g->slowest_ms, 1.625);
  EXPECT_EQ(g->slowest_rank, 1);
  EXPECT_EQ(g->growth_ms, 0.5);
  EXPECT_EQ(g->exposed_growth_ms, 0.125);
  EXPECT_EQ(g->straggler_ms, 0.125);
  EXPECT_EQ(g->unexplained_ms, 0.25);
  EXPECT_DOUBLE_EQ(g->speedup, 1.5);  // 2 x 1.125 / 1.5
  EXPECT_EQ(*g->comm_ms, 0.5);

  report.rows = {two};  // no world of one: the plain step, which exposes nothing
  const auto from_plain = scaling::step_growth(report);
  EXPECT_TRUE(from_plain->from_plain);
  EXPECT_EQ(from_plain->growth_ms, 0.625);
  EXPECT_EQ(from_plain->exposed_growth_ms, 0.25);
  EXPECT_EQ(from_plain->unexplained_ms, 0.25);

  report.config.strong = true;  // each rank's batch halves: the ideal step halves with it
  two.global_batch = 32;
  report.rows = {one, two};
  EXPECT_EQ(scaling::step_growth(report)->ideal_ms, 0.5625);
  EXPECT_EQ(scaling::step_growth(report)->growth_ms, 1.0625);
}

TEST(ScalingFigures, FillRowCarriesTheModeTheRanksAndTheBucketLaunches) {
  scaling::RankResult result;
  result.step_ms = {3.0, 1.0, 2.0};
  result.exposed_comm_ms = {0.25, 0.5, 0.75};
  result.loader_wait_ms = {0, 0, 0};
  result.step_mode = "graph";
  result.timed_eager_steps = 1;
  result.rank_median_ms = {2.0, 2.5};
  result.ddp_step = dist::DdpStepStats{3, 2, 1, 1};
  scaling::Row row;
  row.world_size = 2;
  row.global_batch = 8;
  scaling::fill_row(row, result, small_cpu_run());
  EXPECT_TRUE(row.ran);
  EXPECT_EQ(row.median_ms, 2.0);
  EXPECT_EQ(row.images_per_s, 4000.0);
  EXPECT_EQ(*row.exposed_comm_ms, 0.5);
  EXPECT_EQ(row.exposed_measure, "stall");
  EXPECT_EQ(row.step_mode, "graph");
  EXPECT_EQ(row.rank_median_ms, result.rank_median_ms);
  ASSERT_TRUE(row.ddp_step.has_value());
  EXPECT_EQ(row.ddp_step->held_back, 1);
  EXPECT_EQ(row.note, "1 of 3 timed steps ran eagerly");
}

TEST(ScalingLaunch, AutoStartsProcessesForSeveralGpusAndThreadsOtherwise) {
  scaling::Config c = small_cpu_run();
  EXPECT_EQ(scaling::launch_for(c), "threads") << "CPU ranks";
  c.placement = scaling::Placement::Gpus;
  EXPECT_EQ(scaling::launch_for(c), "processes") << "worlds 1 and 2, one rank per GPU";
  c.world_sizes = {1};
  EXPECT_EQ(scaling::launch_for(c), "threads") << "one GPU: nothing to launch";
  c.world_sizes = {1, 2};
  c.launch = "threads";
  EXPECT_EQ(scaling::launch_for(c), "threads") << "as asked";
  c.launch = "auto";
  c.placement = scaling::Placement::OneGpu;
  EXPECT_EQ(scaling::launch_for(c), "threads") << "ranks sharing cuda:0 are threads";
}

TEST(ScalingGraph, StepsAreCapturedOnlyWhereAGraphCanHoldThem) {
  scaling::Config c = small_cpu_run();
  EXPECT_FALSE(scaling::captures_steps(c, kCPU, nullptr)) << "auto on the CPU: eager";
  c.graph = "off";
  EXPECT_FALSE(scaling::captures_steps(c, kCPU, nullptr));
  c.graph = "on";
  EXPECT_LOOM_ERROR(scaling::captures_steps(c, kCPU, nullptr),
                    "--graph on: a CUDA graph needs a CUDA device");
  const dist::GroupPtr threads = dist::make_threads_groups(1, kCPU)[0];
  EXPECT_LOOM_ERROR(scaling::captures_steps(c, kCPU, threads), "on cpu over threads");
}

TEST(ScalingGraph, BadGraphAndLaunchValuesAreNamedBeforeMeasuring) {
  scaling::Config c = small_cpu_run();
  c.graph = "maybe";
  EXPECT_LOOM_ERROR(scaling::run(c), "--graph: expected auto, on or off, got 'maybe'");
  c.graph = "on";
  EXPECT_LOOM_ERROR(scaling::run(c), "--graph on: CUDA graphs need --device cuda");
  c.placement = scaling::Placement::OneGpu;
  EXPECT_LOOM_ERROR(scaling::run(c),
                    "ranks sharing cuda:0 (--world-sizes) all-reduce over the threads backend");
  c.placement = scaling::Placement::Gpus;
  c.world_sizes = {1};
  c.pipeline_stages = {2};
  EXPECT_LOOM_ERROR(scaling::run(c), "--graph on and --pipeline");
  c = small_cpu_run();
  c.placement = scaling::Placement::Gpus;
  c.world_sizes = {1, 2};
  c.skip_missing = true;  // the launch is checked whatever the machine has
  if (built_with_cuda())
    EXPECT_LOOM_ERROR(scaling::run(c), "--launch processes: no program to start the ranks with");
}

}  // namespace
}  // namespace loom::testing
