// Learning-rate schedules that drive an Optimizer's per-group lr: StepLR, CosineAnnealingLR,
// LinearWarmup (Goyal et al. 2017, for large global batches), and the linear scaling rule.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "loom/optim/optimizer.h"

namespace loom::optim {

// Remembers each group's lr at construction as its base and, on every step(), sets
// lr = lr_at(step, base). Schedules are closed forms of the step count, so resuming from a
// checkpoint is set_step(saved). Construction sets the lr of step 0. Call step() once per
// scheduling period (an epoch or an iteration, as the schedule's sizes mean it), after
// optimizer.step().
class LRScheduler {
 public:
  explicit LRScheduler(Optimizer& optimizer);
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;

  void step();
  void set_step(int64_t step);
  int64_t last_step() const { return step_; }
  const std::vector<double>& base_lrs() const { return base_lrs_; }
  const Optimizer& optimizer() const { return optimizer_; }

  // The learning rate at `step` of a group whose base learning rate is base_lr.
  virtual double lr_at(int64_t step, double base_lr) const = 0;

 protected:
  // Sets the lrs of step 0; concrete schedules call it at the end of their constructors.
  void apply();
  void set_base_lrs(std::vector<double> base_lrs) { base_lrs_ = std::move(base_lrs); }

 private:
  Optimizer& optimizer_;
  std::vector<double> base_lrs_;
  int64_t step_ = 0;
};

// lr = base * gamma^floor(step / step_size).
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);
  double lr_at(int64_t step, double base_lr) const override;

 private:
  int64_t step_size_;
  double gamma_;
};

// lr = eta_min + (base - eta_min) * (1 + cos(pi * step / t_max)) / 2 for step <= t_max, and
// eta_min afterwards (no restart).
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t t_max, double eta_min = 0.0);
  double lr_at(int64_t step, double base_lr) const override;

 private:
  int64_t t_max_;
  double eta_min_;
};

// Gradual warmup: a factor ramping linearly from start_factor at step 0 to 1 at step
// warmup_steps, multiplying `after` (a schedule evaluated at the same, absolute step, as
// Goyal et al. keep their decay epochs) or the constant base lr without one.
class LinearWarmup : public LRScheduler {
 public:
  LinearWarmup(Optimizer& optimizer, int64_t warmup_steps, double start_factor,
               std::unique_ptr<LRScheduler> after = nullptr);
  double lr_at(int64_t step, double base_lr) const override;

 private:
  int64_t warmup_steps_;
  double start_factor_;
  std::unique_ptr<LRScheduler> after_;
};

// Goyal et al.'s linear scaling rule: base_lr * global_batch / base_batch.
double linear_scaling_rule(double base_lr, int64_t base_batch, int64_t global_batch);

}  // namespace loom::optim
