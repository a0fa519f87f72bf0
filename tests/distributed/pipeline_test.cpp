// PipelineParallel on the CPU: the plan (cuts against brute force, schedules valid and as
// short as theory says), the unsplit model's training reproduced for 2, 3 and 4 stages under
// both schedules, BatchNorm's per-micro-batch statistics stated exactly, and bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <tuple>

#include "pipeline_cases.h"

namespace loom::testing {
namespace {

using dist::PipelineOp;
using dist::PipelineSchedule;

// The costliest stage of the best partition, found by trying every set of cuts.
double brute_force_max(const std::vector<double>& costs, int stages) {
  const int n = static_cast<int>(costs.size());
  double best = 1e300;
  std::function<void(int, int, double)> go = [&](int begin, int left, double worst) {
    if (left == 1) {
      double c = 0;
      for (int i = begin; i < n; ++i) c += costs[i];
      best = std::min(best, std::max(worst, c));
      return;
    }
    double c = 0;
    for (int end = begin + 1; end <= n - (left - 1); ++end) {
      c += costs[end - 1];
      go(end, left - 1, std::max(worst, c));
    }
  };
  go(0, stages, 0.0);
  return best;
}

double max_stage(const std::vector<double>& costs, std::vector<int64_t> cuts) {
  cuts.insert(cuts.begin(), 0);
  cuts.push_back(static_cast<int64_t>(costs.size()));
  double worst = 0;
  for (size_t k = 0; k + 1 < cuts.size(); ++k) {
    EXPECT_LT(cuts[k], cuts[k + 1]) << "an empty stage";
    double c = 0;
    for (int64_t i = cuts[k]; i < cuts[k + 1]; ++i) c += costs[i];
    worst = std::max(worst, c);
  }
  return worst;
}

TEST(PipelinePlan, BalancedCutsAreOptimalAgainstBruteForce) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> length(1, 9), cost(0, 1000);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<double> costs(length(rng));
    for (double& c : costs) c = cost(rng) < 300 ? 0.0 : cost(rng);  // layers without parameters too
    for (int stages = 1; stages <= std::min<int>(4, costs.size()); ++stages) {
      const std::vector<int64_t> cuts = dist::balanced_cuts(costs, stages);
      ASSERT_EQ(cuts.size(), static_cast<size_t>(stages - 1));
      EXPECT_DOUBLE_EQ(max_stage(costs, cuts), brute_force_max(costs, stages))
          << "trial " << trial << ", " << stages << " stages";
    }
  }
}

TEST(PipelinePlan, TiesSpreadTheLayersEvenly) {
  EXPECT_EQ(dist::balanced_cuts({0, 0, 0, 0, 0, 0}, 3), (std::vector<int64_t>{2, 4}));
  // ddp_model's parameter counts: the big Linear and the last one decide the maximum, the layers
  // without parameters go where they even out the layer counts (4 + 5).
  EXPECT_EQ(dist::balanced_cuts({168, 0, 0, 440, 0, 0, 2064, 0, 17}, 2), (std::vector<int64_t>{4}));
  EXPECT_EQ(dist::balanced_cuts({5, 0, 0, 0, 0, 0, 0, 5}, 2), (std::vector<int64_t>{4}));
}

TEST(PipelinePlan, BadStagesAndCutsAreErrors) {
  EXPECT_LOOM_ERROR(dist::balanced_cuts({1, 2}, 3), "3 stages for a model of 2 layers");
  EXPECT_LOOM_ERROR(dist::balanced_cuts({1, 2}, 0), "at least 1");
  EXPECT_LOOM_ERROR(dist::check_cuts({2, 2}, 5, 3), "rise strictly");
  EXPECT_LOOM_ERROR(dist::check_cuts({0}, 5, 2), "rise strictly");
  EXPECT_LOOM_ERROR(dist::check_cuts({5}, 5, 2), "rise strictly");
  EXPECT_LOOM_ERROR(dist::check_cuts({1}, 5, 3), "3 stages need 2 cut points, got 1");
}

// Runs the host order with forward 1 and backward 2 time units, each stage doing its ops in
// turn and each op waiting for what it needs; returns the bubble 1 - busy / makespan.
double simulated_bubble(PipelineSchedule schedule, int stages, int micro) {
  std::vector<double> free_at(stages, 0.0);
  std::map<std::tuple<int, int, int>, double> done;  // (kind, stage, micro-batch) -> finish
  for (const PipelineOp& op : dist::issue_order(schedule, stages, micro)) {
    const int s = op.stage, m = op.micro_batch;
    double ready = free_at[s];
    if (op.kind == PipelineOp::Forward && s > 0) ready = std::max(ready, done.at({0, s - 1, m}));
    if (op.kind == PipelineOp::Backward) {
      ready = std::max(ready, done.at({0, s, m}));
      if (s < stages - 1) ready = std::max(ready, done.at({1, s + 1, m}));
    }
    const double finish = ready + (op.kind == PipelineOp::Forward ? 1.0 : 2.0);
    done[{op.kind == PipelineOp::Forward ? 0 : 1, s, m}] = finish;
    free_at[s] = finish;
  }
  const double makespan = *std::max_element(free_at.begin(), free_at.end());
  return 1.0 - 3.0 * micro / makespan;
}

TEST(PipelinePlan, SchedulesAreValidBoundedAndAsShortAsTheorySays) {
  for (PipelineSchedule schedule : {PipelineSchedule::GPipe, PipelineSchedule::OneFOneB}) {
    for (int stages = 1; stages <= 4; ++stages) {
      for (int micro = 1; micro <= 8; ++micro) {
        const std::string what = std::string(dist::schedule_name(schedule)) + " " +
                                 std::to_string(stages) + " stages, " + std::to_string(micro) +
                                 " micro-batches";
        const auto per_stage = dist::stage_orders(schedule, stages, micro);
        const auto order = dist::issue_order(schedule, stages, micro);
        ASSERT_EQ(order.size(), 2u * stages * micro) << what;
        // Each stage's ops appear in its own order; each op after what it needs.
        std::vector<size_t> seen(stages, 0);
        std::set<std::tuple<int, int, int>> issued;
        std::vector<int> in_flight(stages, 0), most(stages, 0);
        for (const PipelineOp& op : order) {
          const int s = op.stage, m = op.micro_batch;
          ASSERT_LT(seen[s], per_stage[s].size()) << what;
          EXPECT_TRUE(per_stage[s][seen[s]++] == op)
              << what << ": " << dist::op_str(op) << " out of order";
          if (op.kind == PipelineOp::Forward) {
            if (s > 0) EXPECT_TRUE(issued.count({0, s - 1, m})) << what << ": " << dist::op_str(op);
            most[s] = std::max(most[s], ++in_flight[s]);
          } else {
            EXPECT_TRUE(issued.count({0, s, m})) << what << ": " << dist::op_str(op);
            if (s < stages - 1)
              EXPECT_TRUE(issued.count({1, s + 1, m})) << what << ": " << dist::op_str(op);
            --in_flight[s];
          }
          EXPECT_TRUE(issued.insert({op.kind == PipelineOp::Forward ? 0 : 1, s, m}).second) << what;
        }
        for (int s = 0; s < stages; ++s) {
          // GPipe keeps every micro-batch's activations; 1F1B at most (stages - s) of them.
          EXPECT_EQ(most[s],
                    schedule == PipelineSchedule::GPipe ? micro : std::min(micro, stages - s))
              << what << ", stage " << s;
        }
        EXPECT_NEAR(simulated_bubble(schedule, stages, micro),
                    dist::theoretical_bubble(stages, micro), 1e-12)
            << what;
      }
    }
  }
}

struct Case {
  int stages;
  int micro_batches;
  PipelineSchedule schedule;
};

class PipelineEquivalence : public ::testing::TestWithParam<Case> {};

TEST_P(PipelineEquivalence, EqualsTheUnsplitModelOnTheCpu) {
  const Case c = GetParam();
  const int64_t batch = 10;  // 3 and 4 micro-batches are uneven: 4+3+3, 3+3+2+2
  const EquivalenceData data = equivalence_data(batch * 10, 21);
  const TrainedRun whole = train_single(data, batch, 10, kCPU);
  dist::PipelineOptions options;
  options.micro_batches = c.micro_batches;
  options.schedule = c.schedule;
  const PipelineRun pipe = train_pipeline(data, batch, 10, kCPU, c.stages, options);
  ASSERT_EQ(pipe.stages.size(), static_cast<size_t>(c.stages));
  expect_same_training(pipe.trained, whole, 1e-5,
                       std::to_string(c.stages) + " stages, " + std::to_string(c.micro_batches) +
                           " micro-batches, " + dist::schedule_name(c.schedule));
}

INSTANTIATE_TEST_SUITE_P(StagesMicroBatchesSchedules, PipelineEquivalence,
                         ::testing::Values(Case{2, 1, PipelineSchedule::GPipe},
                                           Case{2, 3, PipelineSchedule::GPipe},
                                           Case{3, 4, PipelineSchedule::GPipe},
                                           Case{4, 4, PipelineSchedule::GPipe},
                                           Case{2, 3, PipelineSchedule::OneFOneB},
                                           Case{3, 4, PipelineSchedule::OneFOneB},
                                           Case{4, 10, PipelineSchedule::OneFOneB}));

TEST(Pipeline, BalancesByParametersAndTakesExplicitCuts) {
  auto model = ddp_model(1);
  dist::PipelineParallel balanced(model, {kCPU, kCPU});
  ASSERT_EQ(balanced.stages().size(), 2u);
  EXPECT_EQ(balanced.stages()[0].end_layer, 4);
  EXPECT_EQ(balanced.stages()[0].parameters, 168 + 440);
  EXPECT_EQ(balanced.stages()[1].parameters, 2064 + 17);

  // Stages of layers without parameters (ReLU, MaxPool) pass gradients through all the same.
  const EquivalenceData data = equivalence_data(8 * 5, 22);
  const TrainedRun whole = train_single(data, 8, 5, kCPU);
  dist::PipelineOptions options;
  options.cut_points = {1, 3, 8};
  options.micro_batches = 2;
  const PipelineRun pipe = train_pipeline(data, 8, 5, kCPU, 4, options);
  EXPECT_EQ(pipe.stages[1].parameters, 0);
  EXPECT_EQ(pipe.stages[3].first_layer, 8);
  expect_same_training(pipe.trained, whole, 1e-5, "cuts 1, 3, 8");
}

TEST(Pipeline, BalancesByMeasuredTime) {
  dist::PipelineOptions options;
  options.balance = dist::PipelineBalance::Time;
  options.sample_input = {4, 3, 8, 8};
  dist::PipelineParallel pipe(ddp_model(1), {kCPU, kCPU, kCPU}, options);
  ASSERT_EQ(pipe.stages().size(), 3u);
  for (const dist::PipelineStage& s : pipe.stages()) EXPECT_LT(s.first_layer, s.end_layer);
  options.sample_input = {};
  EXPECT_LOOM_ERROR(dist::PipelineParallel(ddp_model(1), {kCPU, kCPU}, options), "sample_input");
}

TEST(Pipeline, ForwardIsTheModelsForward) {
  auto model = ddp_model(3);
  const Tensor x = equivalence_data(6, 23).images;
  const Tensor expected = model->forward(x);
  dist::PipelineParallel pipe(model, {kCPU, kCPU, kCPU});
  EXPECT_EQ(compare(pipe.forward(x), expected, 0, 0), "");
}

// With BatchNorm, a micro-batch is normalised by its own statistics and updates the running
// ones: the step is exactly gradient accumulation over the micro-batches, one after another.
TEST(Pipeline, WithBatchNormMicroBatchesAreGradientAccumulation) {
  const auto bn_model = [] {
    Generator gen(5);
    auto m = std::make_shared<nn::Sequential>();
    // No bias before BatchNorm: its true gradient is zero, and Adam would turn the rounding
    // noise standing in for it into full-size steps of either sign.
    m->add(std::make_shared<nn::Conv2d>(3, 4, 3, Conv2dOptions().padding(1), false,
                                        nn::Init::PyTorch, &gen));
    m->add(std::make_shared<nn::BatchNorm2d>(4));
    m->add(std::make_shared<nn::ReLU>());
    m->add(std::make_shared<nn::Flatten>());
    m->add(std::make_shared<nn::Linear>(4 * 8 * 8, 1, true, nn::Init::PyTorch, &gen));
    return m;
  };
  const EquivalenceData data = equivalence_data(12 * 3, 24);
  const auto loss = [](const Tensor& out, const Tensor& target) {
    return nn::binary_cross_entropy_with_logits(out, target);
  };
  // Reference: micro-batches of 4 samples accumulated by hand on the unsplit model.
  auto reference = bn_model();
  optim::Adam ref_adam(reference->parameters(), optim::GroupOptions().with_lr(1e-3));
  auto split = bn_model();
  dist::PipelineOptions options;
  options.micro_batches = 3;
  dist::PipelineParallel pipe(split, {kCPU, kCPU}, options);
  optim::Adam adam(pipe.parameters(), optim::GroupOptions().with_lr(1e-3));
  for (int step = 0; step < 3; ++step) {
    const Tensor x = data.images.narrow(0, step * 12, 12), y = data.labels.narrow(0, step * 12, 12);
    ref_adam.zero_grad();
    for (int m = 0; m < 3; ++m) {
      (loss(reference->forward(x.narrow(0, 4 * m, 4)), y.narrow(0, 4 * m, 4)) * (1.0 / 3.0))
          .backward();
    }
    ref_adam.step();
    adam.zero_grad();
    pipe.train_step(x, y, loss);
    adam.step();
  }
  EXPECT_LE(worst_relative(flat_parameters(*split), flat_parameters(*reference)), 1e-5);
  for (const std::string name : {"1.running_mean", "1.running_var"}) {
    const Tensor a = split->state_dict().at(name), b = reference->state_dict().at(name);
    EXPECT_EQ(compare(a, b, 1e-6, 1e-5), "") << name;
  }
}

TEST(Pipeline, StagesAreTimedOnTheCpu) {
  dist::PipelineOptions options;
  options.micro_batches = 4;
  options.time_stages = true;
  dist::PipelineParallel pipe(ddp_model(4), {kCPU, kCPU}, options);
  const EquivalenceData data = equivalence_data(16, 25);
  pipe.train_step(data.images, data.labels, [](const Tensor& out, const Tensor& target) {
    return nn::binary_cross_entropy_with_logits(out, target);
  });
  const dist::PipelineTiming& t = pipe.last_timing();
  ASSERT_EQ(t.busy_ms.size(), 2u);
  for (size_t s = 0; s < 2; ++s) {
    EXPECT_GT(t.forward_ms[s], 0.0);
    EXPECT_GT(t.backward_ms[s], 0.0);
    EXPECT_NEAR(t.busy_ms[s], t.forward_ms[s] + t.backward_ms[s], 1e-9);
    EXPECT_LE(t.busy_ms[s], t.step_ms * 1.0001);
  }
  // On the CPU one thread runs every stage in turn: each waits while the other works.
  EXPECT_GT(t.bubble(), 0.0);
  EXPECT_LT(t.bubble(), 1.0);
}

TEST(Pipeline, BadInputIsAClearError) {
  const auto loss = [](const Tensor& out, const Tensor& target) {
    return nn::binary_cross_entropy_with_logits(out, target);
  };
  EXPECT_LOOM_ERROR(dist::PipelineParallel(ddp_model(1), std::vector<Device>(10, kCPU)),
                    "10 stages for a model of 9 layers");
  EXPECT_LOOM_ERROR(dist::PipelineParallel(ddp_model(1), {}), "no devices");
  EXPECT_LOOM_ERROR(dist::PipelineParallel(nullptr, {kCPU}), "model is null");
  EXPECT_LOOM_ERROR(dist::PipelineParallel(std::make_shared<nn::Sequential>(), {kCPU}),
                    "no layers");
  const Device missing = cuda_device(cuda_device_count() + 3);
  EXPECT_LOOM_ERROR(dist::PipelineParallel(ddp_model(1), {kCPU, missing}),
                    "stage 1 is on " + missing.str());
  dist::PipelineOptions zero;
  zero.micro_batches = 0;
  EXPECT_LOOM_ERROR(dist::PipelineParallel(ddp_model(1), {kCPU}, zero),
                    "micro_batches must be at least 1");
  dist::PipelineOptions cuts;
  cuts.cut_points = {4, 2};
  EXPECT_LOOM_ERROR(dist::PipelineParallel(ddp_model(1), {kCPU, kCPU, kCPU}, cuts),
                    "rise strictly");

  dist::PipelineOptions eight;
  eight.micro_batches = 8;
  dist::PipelineParallel pipe(ddp_model(1), {kCPU, kCPU}, eight);
  const EquivalenceData data = equivalence_data(6, 26);
  EXPECT_LOOM_ERROR(pipe.train_step(data.images, data.labels, loss),
                    "8 micro-batches for a batch of 6");
  dist::PipelineParallel two(ddp_model(1), {kCPU, kCPU});
  EXPECT_LOOM_ERROR(two.train_step(data.images, data.labels.narrow(0, 0, 5), loss),
                    "the input has 6 samples but the target 5");
  EXPECT_LOOM_ERROR(two.train_step(data.images, data.labels,
                                   [](const Tensor& out, const Tensor&) { return out; }),
                    "must return a scalar");
  EXPECT_LOOM_ERROR(two.train_step(data.images, data.labels, dist::PipelineLoss()),
                    "loss function is empty");
  // The model is untouched by the refused steps: no gradient was accumulated.
  for (const Tensor& p : two.parameters()) EXPECT_FALSE(p.grad().defined());
}

}  // namespace
}  // namespace loom::testing
