// Learning-rate schedules that drive an Optimizer's per-group lr: StepLR, CosineAnnealingLR,
// LinearWarmup (Goyal et al. 2017, for large global batches), CosineWithWarmup (a linear warm-up
// then a cosine decay over the rest), the linear scaling rule, and ReduceLROnPlateau (driven by
// a metric rather than the step count).
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

// A linear warm-up from start_factor * base at step 0 to base at step warmup_steps, then a
// cosine decay to eta_min at step total_steps, held there (Hugging Face's
// get_cosine_schedule_with_warmup, with a start factor):
//   step < w:       base * (f + (1 - f) * step / w)
//   w <= step < T:  eta_min + (base - eta_min) * (1 + cos(pi * (step - w) / (T - w))) / 2
//   step >= T:      eta_min
class CosineWithWarmup : public LRScheduler {
 public:
  CosineWithWarmup(Optimizer& optimizer, int64_t warmup_steps, int64_t total_steps,
                   double start_factor = 0.0, double eta_min = 0.0);
  double lr_at(int64_t step, double base_lr) const override;

 private:
  int64_t warmup_steps_, total_steps_;
  double start_factor_, eta_min_;
};

// Keras' ReduceLROnPlateau: at the `patience`-th epoch in a row whose metric does not improve
// on the best by more than `min_delta` (absolute: below best - min_delta in Min mode, above
// best + min_delta in Max mode), every group's lr is multiplied by `factor` (not below min_lr),
// and `cooldown` epochs pass before the count starts again. (PyTorch's reduces one epoch later
// for the same patience: at the (patience + 1)-th.) Unlike LRScheduler it is
// driven by the metric, so it is not a closed form of the step; its state is a function of the
// metrics seen, so a resumed run calls reset() and step()s the finished epochs' metrics again
// (train::ReduceLROnPlateauStep does). The rate it sets is base * factor^reductions, from the
// lrs at construction, so that replaying reaches the same rates whatever the optimizer holds.
class ReduceLROnPlateau {
 public:
  enum class Mode { Min, Max };
  ReduceLROnPlateau(Optimizer& optimizer, Mode mode = Mode::Min, double factor = 0.1,
                    int64_t patience = 10, double min_delta = 1e-4, int64_t cooldown = 0,
                    double min_lr = 0.0);
  // One epoch's metric; returns true when it reduced the rates.
  bool step(double metric);
  // Back to the state at construction (the base rates set again).
  void reset();
  int64_t reductions() const { return reductions_; }
  double scale() const;  // factor^reductions

 private:
  void apply();
  Optimizer& optimizer_;
  std::vector<double> base_lrs_;
  Mode mode_;
  double factor_, min_delta_, min_lr_;
  int64_t patience_, cooldown_;
  bool has_best_ = false;
  double best_ = 0.0;
  int64_t bad_epochs_ = 0, cooldown_left_ = 0, reductions_ = 0;
};

// Goyal et al.'s linear scaling rule: base_lr * global_batch / base_batch.
double linear_scaling_rule(double base_lr, int64_t base_batch, int64_t global_batch);

}  // namespace loom::optim
