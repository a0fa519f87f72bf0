// FitOptions::validation_freq and validation_from (Keras' validation_freq): which epochs have
// "val_" metrics, the epoch lines, and the callbacks that monitor a validation metric passing
// over the epochs without one (the best model, early stopping's patience, a plateau schedule),
// on resume too; and the options' errors.
#include <filesystem>
#include <sstream>

#include "synthetic.h"
#include "testing.h"

namespace loom {
namespace {

struct Trainer {
  testing::HalvesDataset train_set{16, 1}, val_set{16, 2};
  std::shared_ptr<nn::Sequential> model = testing::tiny_model(3);
  // lr 0: every validated epoch has the same metrics, none improves on the first.
  optim::SGD optimizer{model->parameters(), optim::GroupOptions().with_lr(0.0)};
  data::DataLoader train_loader{train_set, testing::loader_options(8, true)};
  data::DataLoader val_loader{val_set, testing::loader_options(8, false)};

  train::History fit(train::FitOptions options) {
    return train::fit(*model, train::binary_cross_entropy_loss(), optimizer, train_loader,
                      &val_loader, options);
  }
};

// The 1-based epochs of `h` that have val_loss.
std::vector<int64_t> validated(const train::History& h) {
  std::vector<int64_t> out;
  for (size_t e = 0; e < h.epochs.size(); ++e) {
    if (h.epochs[e].count("val_loss")) out.push_back(static_cast<int64_t>(e) + 1);
  }
  return out;
}

TEST(ValidationSchedule, FromAnEpochEveryNthAndTheLast) {
  Trainer run;
  std::ostringstream lines;
  train::FitOptions fit;
  fit.out = &lines;
  fit.tty = false;
  fit.epochs = 6;
  fit.validation_from = 3;
  fit.validation_freq = 2;
  const train::History h = run.fit(fit);
  EXPECT_EQ(validated(h), (std::vector<int64_t>{3, 5, 6}));
  for (const train::EpochMetrics& m : h.epochs) {
    EXPECT_EQ(m.count("val_accuracy"), m.count("val_loss"));
    EXPECT_TRUE(m.count("loss") && m.count("accuracy"));
  }
  // The epoch lines say the same: val_accuracy on the validated epochs' lines only.
  std::istringstream in(lines.str());
  std::vector<int64_t> printed;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("Epoch ", 0) != 0 || line.find(" step ") != std::string::npos) continue;
    if (line.find("val_accuracy") != std::string::npos)
      printed.push_back(std::stoll(line.substr(6)));
  }
  EXPECT_EQ(printed, (std::vector<int64_t>{3, 5, 6}));
  fit.out = nullptr;
  fit.epochs = 4;
  fit.validation_from = 1;
  fit.validation_freq = 1;
  EXPECT_EQ(validated(run.fit(fit)), (std::vector<int64_t>{1, 2, 3, 4}));  // the default
  fit.validation_from = 9;  // past the end: the last epoch still validates
  EXPECT_EQ(validated(run.fit(fit)), (std::vector<int64_t>{4}));
}

TEST(ValidationSchedule, TheBestModelIsChosenFromTheValidatedEpochs) {
  Trainer run;
  const std::string dir = testing::temp_dir("loom_train", "valsched");
  train::CheckpointOptions options;
  options.best_model_path = dir + "/best.st";
  options.monitor = "val_accuracy";
  train::FitOptions fit;
  fit.out = nullptr;
  fit.epochs = 5;
  fit.validation_from = 3;
  fit.callbacks = {std::make_shared<train::ModelCheckpoint>(options)};
  run.fit(fit);
  const auto saved = train::saved_epoch(io::load_model(dir + "/best.st").metadata, "best.st");
  ASSERT_TRUE(saved.has_value());
  EXPECT_EQ(saved->epoch, 2);  // the first validated epoch (lr 0: all equal, the earliest kept)
  // A misspelt metric passes over the skipped epochs and is named at the first validated one.
  options.monitor = "val_acuracy";
  fit.callbacks = {std::make_shared<train::ModelCheckpoint>(options)};
  EXPECT_LOOM_ERROR(run.fit(fit), "\"val_acuracy\" is not among");
  std::filesystem::remove_all(dir);
}

TEST(ValidationSchedule, EarlyStoppingCountsValidatedEpochsOnlyAndResumesSo) {
  Trainer run;
  auto stopper = std::make_shared<train::EarlyStopping>("val_loss", 2);
  train::FitOptions fit;
  fit.out = nullptr;
  fit.epochs = 10;
  fit.validation_from = 2;
  fit.validation_freq = 2;
  fit.callbacks = {stopper};
  // Validated: 2 (the best), 4 and 6 (no improvement, the second ends the run).
  const train::History h = run.fit(fit);
  EXPECT_EQ(h.epochs.size(), 6u);
  EXPECT_EQ(stopper->best_epoch(), 1);
  EXPECT_EQ(stopper->stopped_epoch(), 5);
  // Resumed after epoch 4 (validated 2 and 4): one validated epoch without an improvement so
  // far, so epoch 6 ends it again; epoch 5 counts for nothing.
  io::TrainingState state;
  state.epoch = 4;
  state.global_step = 8;
  state.loader_seed = run.train_loader.options().seed;
  state.augment_seed = run.train_loader.options().augment.seed;
  state.rng_seed = default_generator().seed();
  state.history_json = train::History{{h.epochs.begin(), h.epochs.begin() + 4}}.to_json();
  fit.resume = state;
  EXPECT_EQ(run.fit(fit).epochs.size(), 6u);
  EXPECT_EQ(stopper->stopped_epoch(), 5);
}

TEST(ValidationSchedule, APlateauScheduleStepsOnValidatedEpochsOnly) {
  Trainer run;
  run.optimizer.set_lr(0.4);
  // patience 0: every validated epoch that does not improve halves the rate.
  optim::ReduceLROnPlateau plateau(run.optimizer, optim::ReduceLROnPlateau::Mode::Min, 0.5, 0, 0.0);
  train::History history;
  train::TrainContext ctx(*run.model, run.optimizer, run.train_loader, history);
  train::ReduceLROnPlateauStep step(plateau, "val_loss");
  step.on_train_begin(ctx);
  const auto end_epoch = [&](train::EpochMetrics m, bool skipped) {
    ctx.validation_skipped = skipped;
    history.epochs.push_back(m);
    step.on_epoch_end(ctx, history.epochs.back());
  };
  end_epoch({{"loss", 0.9}, {"val_loss", 1.0}}, false);  // the best
  end_epoch({{"loss", 0.8}}, true);                      // skipped: no step
  EXPECT_DOUBLE_EQ(run.optimizer.lr(), 0.4);
  end_epoch({{"loss", 0.7}, {"val_loss", 1.0}}, false);  // no improvement: halved
  EXPECT_DOUBLE_EQ(run.optimizer.lr(), 0.2);
  // On resume it starts from the base rate and replays the validated epochs only, to the same.
  train::ReduceLROnPlateauStep resumed(plateau, "val_loss");
  resumed.on_train_begin(ctx);
  EXPECT_DOUBLE_EQ(run.optimizer.lr(), 0.2);
  // An epoch that validated but lacks the metric is still an error.
  ctx.validation_skipped = false;
  EXPECT_LOOM_ERROR(step.on_epoch_end(ctx, {{"loss", 1.0}}), "\"val_loss\" is not among");
}

TEST(ValidationSchedule, OptionsOutOfRangeAreErrors) {
  Trainer run;
  train::FitOptions fit;
  fit.out = nullptr;
  fit.validation_freq = 0;
  EXPECT_LOOM_ERROR(run.fit(fit), "fit: validation_freq must be >= 1, got 0");
  fit.validation_freq = 1;
  fit.validation_from = 0;
  EXPECT_LOOM_ERROR(run.fit(fit), "fit: validation_from must be >= 1");
}

}  // namespace
}  // namespace loom
