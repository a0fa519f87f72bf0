// Learning-rate schedules: their lr sequences against values worked out by hand, several
// groups, wrapping a schedule in a warmup, resuming, the linear scaling rule, and the errors.
#include <cmath>

#include "loom/optim/optim.h"
#include "testing.h"

namespace loom {
namespace {

using optim::GroupOptions;

Tensor leaf(double value) {
  Tensor t = from_vector<double>({value});
  t.requires_grad_();
  return t;
}

// lr of group `group` after construction, then after each of `steps` scheduler steps.
std::vector<double> lr_sequence(optim::Optimizer& opt, optim::LRScheduler& sched, int steps,
                                size_t group = 0) {
  std::vector<double> lrs = {opt.lr(group)};
  for (int s = 0; s < steps; ++s) {
    sched.step();
    lrs.push_back(opt.lr(group));
  }
  return lrs;
}

void expect_sequence(const std::vector<double>& got, const std::vector<double>& expected) {
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], 1e-12) << "step " << i;
}

TEST(StepLR, DecaysEveryStepSize) {
  optim::SGD opt({leaf(1.0)}, GroupOptions().with_lr(0.1));
  optim::StepLR sched(opt, 2, 0.5);
  expect_sequence(lr_sequence(opt, sched, 5), {0.1, 0.1, 0.05, 0.05, 0.025, 0.025});
  EXPECT_EQ(sched.last_step(), 5);
}

TEST(CosineAnnealingLR, FollowsHalfACosineThenStays) {
  optim::Adam opt({leaf(1.0)}, GroupOptions().with_lr(0.1));
  optim::CosineAnnealingLR sched(opt, 4, 0.01);
  const double r = std::sqrt(0.5);  // cos(pi / 4)
  expect_sequence(lr_sequence(opt, sched, 5),
                  {0.1, 0.01 + 0.09 * (1 + r) / 2, 0.055, 0.01 + 0.09 * (1 - r) / 2, 0.01, 0.01});
}

TEST(LinearWarmup, RampsFromStartFactor) {
  optim::SGD opt({leaf(1.0)}, GroupOptions().with_lr(0.4));
  optim::LinearWarmup sched(opt, 4, 0.25);
  expect_sequence(lr_sequence(opt, sched, 5), {0.1, 0.175, 0.25, 0.325, 0.4, 0.4});
}

TEST(LinearWarmup, WrapsAScheduleAtAbsoluteSteps) {
  optim::SGD opt({leaf(1.0)}, GroupOptions().with_lr(1.0));
  auto decay = std::make_unique<optim::StepLR>(opt, 3, 0.1);
  optim::LinearWarmup sched(opt, 2, 0.5, std::move(decay));
  expect_sequence(lr_sequence(opt, sched, 6), {0.5, 0.75, 1.0, 0.1, 0.1, 0.1, 0.01});
}

TEST(LRScheduler, ScalesEachGroupFromItsOwnBaseAndResumes) {
  optim::SGD opt({optim::ParamGroup{{leaf(1.0)}, std::nullopt},
                  optim::ParamGroup{{leaf(2.0)}, GroupOptions().with_lr(0.02)}},
                 GroupOptions().with_lr(0.2));
  optim::StepLR sched(opt, 1, 0.5);
  EXPECT_EQ(sched.base_lrs(), (std::vector<double>{0.2, 0.02}));
  sched.step();
  EXPECT_NEAR(opt.lr(0), 0.1, 1e-15);
  EXPECT_NEAR(opt.lr(1), 0.01, 1e-15);
  sched.set_step(3);
  EXPECT_NEAR(opt.lr(0), 0.025, 1e-15);
  EXPECT_NEAR(opt.lr(1), 0.0025, 1e-15);
  EXPECT_EQ(sched.last_step(), 3);
}

TEST(LRScheduler, LinearScalingRule) {
  EXPECT_NEAR(optim::linear_scaling_rule(0.1, 256, 8192), 3.2, 1e-12);
  EXPECT_NEAR(optim::linear_scaling_rule(0.001, 32, 16), 0.0005, 1e-15);
  EXPECT_LOOM_ERROR(optim::linear_scaling_rule(0.1, 0, 256),
                    "batch sizes must be positive, got 0 and 256");
  EXPECT_LOOM_ERROR(optim::linear_scaling_rule(0.1, 32, -1), "got 32 and -1");
}

TEST(LRScheduler, RejectsBadArguments) {
  optim::SGD opt({leaf(1.0)}, GroupOptions().with_lr(0.1));
  EXPECT_LOOM_ERROR(optim::StepLR(opt, 0), "StepLR: step_size must be positive, got 0");
  EXPECT_LOOM_ERROR(optim::StepLR(opt, 2, -0.5), "StepLR: gamma must be positive, got -0.5");
  EXPECT_LOOM_ERROR(optim::CosineAnnealingLR(opt, 0),
                    "CosineAnnealingLR: t_max must be positive, got 0");
  EXPECT_LOOM_ERROR(optim::CosineAnnealingLR(opt, 5, -1.0), "eta_min must be non-negative, got -1");
  EXPECT_LOOM_ERROR(optim::LinearWarmup(opt, -1, 0.5), "warmup_steps must be non-negative, got -1");
  EXPECT_LOOM_ERROR(optim::LinearWarmup(opt, 5, 0.0), "start_factor must lie in (0, 1], got 0");
  EXPECT_LOOM_ERROR(optim::LinearWarmup(opt, 5, 1.5), "got 1.5");
  optim::SGD other({leaf(2.0)}, GroupOptions().with_lr(0.1));
  EXPECT_LOOM_ERROR(optim::LinearWarmup(opt, 5, 0.5, std::make_unique<optim::StepLR>(other, 3)),
                    "drives another optimizer");
  optim::StepLR sched(opt, 2);
  EXPECT_LOOM_ERROR(sched.set_step(-1), "step -1 is negative");
}

}  // namespace
}  // namespace loom
