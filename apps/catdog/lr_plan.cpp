// The optimizer, the linear scaling rule with its warmup, and the epoch-wise schedules.
#include "lr_plan.h"

#include <sstream>

namespace loom::catdog {

namespace {

// An epoch-wise schedule read at iteration steps (lr at step s = its lr at epoch s / steps per
// epoch), so that a warmup counted in iterations multiplies the same per-epoch cosine that a
// run without warmup follows.
class EpochwiseAtSteps : public optim::LRScheduler {
 public:
  EpochwiseAtSteps(optim::Optimizer& optimizer, const optim::LRScheduler& per_epoch,
                   int64_t steps_per_epoch)
      : LRScheduler(optimizer), per_epoch_(per_epoch), steps_per_epoch_(steps_per_epoch) {
    apply();
  }
  double lr_at(int64_t step, double base_lr) const override {
    return per_epoch_.lr_at(step / steps_per_epoch_, base_lr);
  }

 private:
  const optim::LRScheduler& per_epoch_;
  int64_t steps_per_epoch_;
};

}  // namespace

bool cosine_warmup(const TrainArgs& a, const std::string& schedule, int world_size) {
  const bool scaled_warmup = a.scale_lr == "linear" && a.warmup_epochs > 0 && world_size > 1;
  return schedule == "cosine" && a.warmup_given && a.warmup_epochs > 0 && !scaled_warmup;
}

std::string lr_warmup_of(const TrainArgs& a, const std::string& schedule, int world_size) {
  if (!cosine_warmup(a, schedule, world_size)) return "off";
  return std::to_string(a.warmup_epochs) + " epoch" + (a.warmup_epochs == 1 ? "" : "s");
}

std::string plateau_of(const TrainArgs& a) {
  if (!a.reduce_lr_on_plateau) return "off";
  std::ostringstream text;
  text << "patience " << a.plateau_patience << ", factor " << a.plateau_factor;
  return text.str();
}

std::string lr_scaling_of(const TrainArgs& a) {
  if (a.scale_lr == "off") return "off";
  return a.scale_lr + ", warmup " + std::to_string(a.warmup_epochs) + " epochs";
}

std::string lr_scaling_summary(const TrainArgs& a, int world_size) {
  if (a.scale_lr == "off") return "";
  std::ostringstream text;
  text << ", lr " << a.lr << " x " << world_size << " = " << a.lr * world_size;
  if (a.warmup_epochs > 0 && world_size > 1)
    text << " after a linear warmup over " << a.warmup_epochs << " epochs";
  return text.str();
}

LrPlan make_lr_plan(const TrainArgs& a, const std::string& schedule, int world_size,
                    int64_t steps_per_epoch, const std::vector<Tensor>& parameters) {
  LOOM_CHECK(a.scale_lr == "off" || a.scale_lr == "linear",
             "--scale-lr: expected off or linear, got \"", a.scale_lr, "\"");
  LOOM_CHECK(a.warmup_epochs >= 0, "--warmup-epochs must be >= 0, got ", a.warmup_epochs);
  LrPlan plan;
  const bool scaled = a.scale_lr == "linear";
  plan.peak_lr =
      scaled ? optim::linear_scaling_rule(a.lr, a.batch_size, a.batch_size * world_size) : a.lr;
  // Plain Adam unless a weight decay is asked for; then AdamW's decoupled decay, whose
  // strength does not depend on the gradients' scale as Adam's L2 term would.
  const optim::GroupOptions options =
      optim::GroupOptions().with_lr(plan.peak_lr).with_weight_decay(a.weight_decay);
  if (a.weight_decay > 0.0) {
    plan.optimizer = std::make_unique<optim::AdamW>(parameters, options);
  } else {
    plan.optimizer = std::make_unique<optim::Adam>(parameters, options);
  }
  optim::Optimizer& o = *plan.optimizer;
  using Period = train::LRSchedulerStep::Period;
  const bool scaled_warmup = scaled && a.warmup_epochs > 0 && world_size > 1;
  LOOM_CHECK(!a.warmup_given || a.warmup_epochs == 0 || scaled || schedule == "cosine",
             "--warmup-epochs ", a.warmup_epochs,
             ": a warm-up leads into --lr-schedule cosine (or a --scale-lr linear run's "
             "scaled rate); this run's schedule is ",
             schedule);
  if (a.reduce_lr_on_plateau) {
    LOOM_CHECK(schedule == "constant" && !scaled_warmup,
               "--reduce-lr-on-plateau sets the rate from the validation loss, so it takes "
               "--lr-schedule constant and no --scale-lr warmup; this run has --lr-schedule ",
               schedule, scaled_warmup ? " and a --scale-lr linear warmup" : "");
    plan.plateau = std::make_unique<optim::ReduceLROnPlateau>(
        o, optim::ReduceLROnPlateau::Mode::Min, a.plateau_factor, a.plateau_patience, 0.0);
    plan.stepper = std::make_shared<train::ReduceLROnPlateauStep>(*plan.plateau, "val_loss");
    return plan;
  }
  if (cosine_warmup(a, schedule, world_size)) {  // step by step: warm-up, then the cosine
    LOOM_CHECK(a.warmup_epochs < a.epochs, "--warmup-epochs ", a.warmup_epochs,
               " must be fewer than --epochs (", a.epochs, "): the cosine decays after it");
    LOOM_CHECK(steps_per_epoch > 0, "--warmup-epochs: an epoch of ", steps_per_epoch,
               " steps cannot be warmed up over");
    plan.schedules.push_back(std::make_unique<optim::CosineWithWarmup>(
        o, a.warmup_epochs * steps_per_epoch, a.epochs * steps_per_epoch));
    plan.stepper = std::make_shared<train::LRSchedulerStep>(*plan.schedules.back(), Period::Batch);
    return plan;
  }
  if (schedule == "cosine") {  // a cosine decay over the run, stepped per epoch
    plan.schedules.push_back(std::make_unique<optim::CosineAnnealingLR>(o, a.epochs));
  }
  const bool warmup = scaled && a.warmup_epochs > 0 && world_size > 1;
  if (!warmup) {
    if (!plan.schedules.empty())
      plan.stepper = std::make_shared<train::LRSchedulerStep>(*plan.schedules.back());
    return plan;
  }
  LOOM_CHECK(steps_per_epoch > 0, "--scale-lr linear: an epoch of ", steps_per_epoch,
             " steps cannot be warmed up over");
  std::unique_ptr<optim::LRScheduler> after;
  if (!plan.schedules.empty())
    after = std::make_unique<EpochwiseAtSteps>(o, *plan.schedules.back(), steps_per_epoch);
  plan.schedules.push_back(std::make_unique<optim::LinearWarmup>(
      o, a.warmup_epochs * steps_per_epoch, 1.0 / world_size, std::move(after)));
  plan.stepper = std::make_shared<train::LRSchedulerStep>(*plan.schedules.back(), Period::Batch);
  return plan;
}

}  // namespace loom::catdog
