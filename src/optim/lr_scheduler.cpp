// The closed forms of the learning-rate schedules and the scheduler that applies them.
#include "loom/optim/lr_scheduler.h"

#include <algorithm>
#include <cmath>

namespace loom::optim {

LRScheduler::LRScheduler(Optimizer& optimizer) : optimizer_(optimizer) {
  for (size_t g = 0; g < optimizer.param_groups().size(); ++g) base_lrs_.push_back(optimizer.lr(g));
}

void LRScheduler::apply() {
  for (size_t g = 0; g < base_lrs_.size(); ++g) optimizer_.set_lr(g, lr_at(step_, base_lrs_[g]));
}

void LRScheduler::step() {
  ++step_;
  apply();
}

void LRScheduler::set_step(int64_t step) {
  LOOM_CHECK(step >= 0, "LRScheduler.set_step: step ", step, " is negative");
  step_ = step;
  apply();
}

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
  LOOM_CHECK(step_size > 0, "StepLR: step_size must be positive, got ", step_size);
  LOOM_CHECK(gamma > 0.0, "StepLR: gamma must be positive, got ", gamma);
  apply();
}

double StepLR::lr_at(int64_t step, double base_lr) const {
  return base_lr * std::pow(gamma_, static_cast<double>(step / step_size_));
}

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t t_max, double eta_min)
    : LRScheduler(optimizer), t_max_(t_max), eta_min_(eta_min) {
  LOOM_CHECK(t_max > 0, "CosineAnnealingLR: t_max must be positive, got ", t_max);
  LOOM_CHECK(eta_min >= 0.0, "CosineAnnealingLR: eta_min must be non-negative, got ", eta_min);
  apply();
}

double CosineAnnealingLR::lr_at(int64_t step, double base_lr) const {
  if (step >= t_max_) return eta_min_;
  const double pi = std::acos(-1.0);
  return eta_min_ +
         (base_lr - eta_min_) * (1.0 + std::cos(pi * static_cast<double>(step) / t_max_)) / 2.0;
}

LinearWarmup::LinearWarmup(Optimizer& optimizer, int64_t warmup_steps, double start_factor,
                           std::unique_ptr<LRScheduler> after)
    : LRScheduler(optimizer),
      warmup_steps_(warmup_steps),
      start_factor_(start_factor),
      after_(std::move(after)) {
  LOOM_CHECK(warmup_steps >= 0, "LinearWarmup: warmup_steps must be non-negative, got ",
             warmup_steps);
  LOOM_CHECK(start_factor > 0.0 && start_factor <= 1.0,
             "LinearWarmup: start_factor must lie in (0, 1], got ", start_factor);
  // `after` was built on the same optimizer first and may have moved the lrs already: the
  // bases are the ones it recorded.
  if (after_) {
    LOOM_CHECK(&after_->optimizer() == &optimizer,
               "LinearWarmup: the wrapped schedule drives another optimizer");
    set_base_lrs(after_->base_lrs());
  }
  apply();
}

double LinearWarmup::lr_at(int64_t step, double base_lr) const {
  const double factor =
      step >= warmup_steps_
          ? 1.0
          : start_factor_ + (1.0 - start_factor_) * static_cast<double>(step) / warmup_steps_;
  return factor * (after_ ? after_->lr_at(step, base_lr) : base_lr);
}

CosineWithWarmup::CosineWithWarmup(Optimizer& optimizer, int64_t warmup_steps, int64_t total_steps,
                                   double start_factor, double eta_min)
    : LRScheduler(optimizer),
      warmup_steps_(warmup_steps),
      total_steps_(total_steps),
      start_factor_(start_factor),
      eta_min_(eta_min) {
  LOOM_CHECK(warmup_steps >= 0 && warmup_steps < total_steps,
             "CosineWithWarmup: warmup_steps must lie in [0, total_steps), got ", warmup_steps,
             " of ", total_steps);
  LOOM_CHECK(start_factor >= 0.0 && start_factor <= 1.0,
             "CosineWithWarmup: start_factor must lie in [0, 1], got ", start_factor);
  LOOM_CHECK(eta_min >= 0.0, "CosineWithWarmup: eta_min must be non-negative, got ", eta_min);
  apply();
}

double CosineWithWarmup::lr_at(int64_t step, double base_lr) const {
  if (step < warmup_steps_) {
    return base_lr * (start_factor_ + (1.0 - start_factor_) * static_cast<double>(step) /
                                          static_cast<double>(warmup_steps_));
  }
  if (step >= total_steps_) return eta_min_;
  const double pi = std::acos(-1.0);
  const double progress =
      static_cast<double>(step - warmup_steps_) / static_cast<double>(total_steps_ - warmup_steps_);
  return eta_min_ + (base_lr - eta_min_) * (1.0 + std::cos(pi * progress)) / 2.0;
}

ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& optimizer, Mode mode, double factor,
                                     int64_t patience, double min_delta, int64_t cooldown,
                                     double min_lr)
    : optimizer_(optimizer),
      mode_(mode),
      factor_(factor),
      min_delta_(min_delta),
      min_lr_(min_lr),
      patience_(patience),
      cooldown_(cooldown) {
  LOOM_CHECK(factor > 0.0 && factor < 1.0, "ReduceLROnPlateau: factor must lie in (0, 1), got ",
             factor);
  LOOM_CHECK(patience >= 0, "ReduceLROnPlateau: patience must be >= 0, got ", patience);
  LOOM_CHECK(min_delta >= 0.0, "ReduceLROnPlateau: min_delta must be >= 0, got ", min_delta);
  LOOM_CHECK(cooldown >= 0, "ReduceLROnPlateau: cooldown must be >= 0, got ", cooldown);
  LOOM_CHECK(min_lr >= 0.0, "ReduceLROnPlateau: min_lr must be >= 0, got ", min_lr);
  for (size_t g = 0; g < optimizer.param_groups().size(); ++g) base_lrs_.push_back(optimizer.lr(g));
}

double ReduceLROnPlateau::scale() const {
  return std::pow(factor_, static_cast<double>(reductions_));
}

void ReduceLROnPlateau::apply() {
  for (size_t g = 0; g < base_lrs_.size(); ++g)
    optimizer_.set_lr(g, std::max(min_lr_, base_lrs_[g] * scale()));
}

void ReduceLROnPlateau::reset() {
  has_best_ = false;
  bad_epochs_ = cooldown_left_ = reductions_ = 0;
  apply();
}

bool ReduceLROnPlateau::step(double metric) {
  // Keras' order: a cooldown epoch clears the count; an improvement sets the best; otherwise,
  // outside a cooldown, the count grows and reaching the patience reduces.
  const bool in_cooldown = cooldown_left_ > 0;
  if (in_cooldown) {
    --cooldown_left_;
    bad_epochs_ = 0;
  }
  const bool better = !has_best_ || (mode_ == Mode::Min ? metric < best_ - min_delta_
                                                        : metric > best_ + min_delta_);
  if (better) {
    best_ = metric;
    has_best_ = true;
    bad_epochs_ = 0;
    return false;
  }
  if (in_cooldown || ++bad_epochs_ < patience_) return false;
  ++reductions_;
  apply();
  cooldown_left_ = cooldown_;
  bad_epochs_ = 0;
  return true;
}

double linear_scaling_rule(double base_lr, int64_t base_batch, int64_t global_batch) {
  LOOM_CHECK(base_batch > 0 && global_batch > 0,
             "linear_scaling_rule: batch sizes must be positive, got ", base_batch, " and ",
             global_batch);
  return base_lr * static_cast<double>(global_batch) / static_cast<double>(base_batch);
}

}  // namespace loom::optim
