// The schedules loom-catdog's flags drive: CosineWithWarmup's closed form, ReduceLROnPlateau's
// rule (Keras' patience, cooldown, min_lr), ReduceLROnPlateauStep as fit runs it (a resumed run
// replays the finished epochs to the same rate); the losses' label smoothing is Keras' (two
// classes) and PyTorch's (K classes).
#include <loom/loom.h>

#include <cmath>

#include "synthetic.h"
#include "testing.h"

namespace loom {
namespace {

// An optimizer over one parameter, for the schedules to drive.
struct OneParameter {
  Tensor w = zeros({1}).requires_grad_(true);
  optim::SGD optimizer{{w}, optim::GroupOptions().with_lr(0.1)};
};

TEST(LrCallbacks, CosineWithWarmupClosedForm) {
  OneParameter p;
  optim::CosineWithWarmup schedule(p.optimizer, 4, 12, 0.0);
  EXPECT_DOUBLE_EQ(p.optimizer.lr(), 0.0);  // construction sets step 0's rate
  const double pi = std::acos(-1.0);
  for (int64_t step = 0; step <= 14; ++step) {
    const double expected =
        step < 4 ? 0.1 * step / 4.0
                 : (step >= 12 ? 0.0 : 0.1 * (1 + std::cos(pi * (step - 4) / 8.0)) / 2.0);
    EXPECT_NEAR(schedule.lr_at(step, 0.1), expected, 1e-15) << step;
  }
  schedule.set_step(8);  // half-way through the decay
  EXPECT_NEAR(p.optimizer.lr(), 0.05, 1e-15);
  optim::CosineWithWarmup from_a_tenth(p.optimizer, 4, 12, 0.1);
  EXPECT_NEAR(from_a_tenth.lr_at(0, 1.0), 0.1, 1e-15);
  EXPECT_NEAR(from_a_tenth.lr_at(2, 1.0), 0.55, 1e-15);
  EXPECT_LOOM_ERROR(optim::CosineWithWarmup(p.optimizer, 12, 12), "warmup_steps must lie in");
  EXPECT_LOOM_ERROR(optim::CosineWithWarmup(p.optimizer, 2, 12, 1.5), "start_factor");
}

TEST(LrCallbacks, PlateauRuleCooldownAndFloor) {
  OneParameter p;
  // Max mode, patience 1, cooldown 1, floor 0.02: a cut at every epoch that does not beat the
  // best by more than 0.01, except the one after a cut.
  optim::ReduceLROnPlateau rule(p.optimizer, optim::ReduceLROnPlateau::Mode::Max, 0.5, 1, 0.01, 1,
                                0.02);
  const std::vector<std::pair<double, double>> steps = {
      {0.50, 0.1},    // the first is the best
      {0.505, 0.05},  // not better by more than 0.01: cut
      {0.40, 0.05},   // cooldown
      {0.40, 0.025},  // cut
      {0.40, 0.025},  // cooldown
      {0.40, 0.02},   // cut, to the floor
      {0.60, 0.02}};  // better
  for (const auto& [metric, lr] : steps) {
    rule.step(metric);
    EXPECT_DOUBLE_EQ(p.optimizer.lr(), lr) << metric;
  }
  EXPECT_EQ(rule.reductions(), 3);
  rule.reset();
  EXPECT_DOUBLE_EQ(p.optimizer.lr(), 0.1);
  EXPECT_LOOM_ERROR(optim::ReduceLROnPlateau(p.optimizer, optim::ReduceLROnPlateau::Mode::Min, 1.0),
                    "factor must lie in (0, 1)");
  EXPECT_LOOM_ERROR(
      optim::ReduceLROnPlateau(p.optimizer, optim::ReduceLROnPlateau::Mode::Min, 0.5, -1),
      "patience must be >= 0");
}

TEST(LrCallbacks, PlateauStepReplaysTheHistoryOnResume) {
  OneParameter p;
  optim::ReduceLROnPlateau plateau(p.optimizer, optim::ReduceLROnPlateau::Mode::Min, 0.5, 2, 0.0);
  train::ReduceLROnPlateauStep step(plateau, "val_loss");
  testing::HalvesDataset set(8, 1);
  data::DataLoader loader(set, testing::loader_options(8, false));
  train::History history;
  const auto model = testing::tiny_model(2);
  train::TrainContext ctx(*model, p.optimizer, loader, history);
  // val_loss 1.0 (best), 1.0, 1.0 (the second bad epoch in a row: halved), 0.5 (best), 0.6.
  const std::vector<double> losses = {1.0, 1.0, 1.0, 0.5, 0.6};
  step.on_train_begin(ctx);
  std::vector<double> lrs;
  for (double l : losses) {
    history.epochs.push_back({{"val_loss", l}});
    step.on_epoch_end(ctx, history.epochs.back());
    lrs.push_back(p.optimizer.lr());
  }
  EXPECT_EQ(lrs, (std::vector<double>{0.1, 0.1, 0.05, 0.05, 0.05}));
  // A resumed run starts from the base rate and replays the five epochs to the same state: the
  // next stalled epoch is the second in a row, so it halves again.
  p.optimizer.set_lr(0, 0.1);
  train::ReduceLROnPlateauStep resumed(plateau, "val_loss");
  resumed.on_train_begin(ctx);
  EXPECT_DOUBLE_EQ(p.optimizer.lr(), 0.05);
  history.epochs.push_back({{"val_loss", 0.7}});
  resumed.on_epoch_end(ctx, history.epochs.back());
  EXPECT_DOUBLE_EQ(p.optimizer.lr(), 0.025);
  // A metric the epoch does not have is named.
  EXPECT_LOOM_ERROR(step.on_epoch_end(ctx, {{"loss", 1.0}}), "\"val_loss\" is not among");
}

TEST(LrCallbacks, LabelSmoothingMovesTheTargets) {
  const Tensor logits = from_vector(std::vector<float>{2.0f, -1.0f}, {2, 1});
  const Tensor labels = from_vector(std::vector<int64_t>{1, 0}, {2});
  const double s = 0.2;
  // Keras: targets 1 - s/2 = 0.9 and s/2 = 0.1; loss = mean(max(x,0) - x y + log(1 + e^-|x|)).
  const auto bce = [](double x, double y) {
    return std::max(x, 0.0) - x * y + std::log1p(std::exp(-std::fabs(x)));
  };
  const double expected = (bce(2.0, 0.9) + bce(-1.0, 0.1)) / 2.0;
  EXPECT_NEAR(train::binary_cross_entropy_loss(s)(logits, labels).item<double>(), expected, 1e-6);
  EXPECT_NEAR(train::binary_cross_entropy_loss()(logits, labels).item<double>(),
              (bce(2.0, 1.0) + bce(-1.0, 0.0)) / 2.0, 1e-6);
  // K classes: nn::cross_entropy's own smoothing.
  const Tensor class_logits = from_vector(std::vector<float>{1, 2, 3, 0, 0, 1}, {2, 3});
  const Tensor classes = from_vector(std::vector<int64_t>{2, 0}, {2});
  EXPECT_NEAR(train::cross_entropy_loss(s)(class_logits, classes).item<double>(),
              nn::cross_entropy(class_logits, classes, nn::Reduction::Mean, s).item<double>(),
              1e-7);
  EXPECT_GT(train::cross_entropy_loss(s)(class_logits, classes).item<double>(),
            train::cross_entropy_loss()(class_logits, classes).item<double>());
  EXPECT_LOOM_ERROR(train::binary_cross_entropy_loss(1.0), "label_smoothing must lie in [0, 1)");
  EXPECT_LOOM_ERROR(train::cross_entropy_loss(-0.1), "label_smoothing must lie in [0, 1)");
}

}  // namespace
}  // namespace loom
