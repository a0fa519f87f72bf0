// fit / evaluate / predict, the callbacks and History: values against loops written here, and
// the Keras-like behaviours (early stopping, LR steps, logs).
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "synthetic.h"
#include "testing.h"

namespace loom {
namespace {

namespace fs = std::filesystem;

TEST(CountCorrect, MatchesALoopForBinaryAndMultiClassHeads) {
  Generator gen(5);
  const Tensor logits = randn({9, 1}, kFloat32, &gen);
  const Tensor labels = randint(0, 2, {9}, kInt64, &gen);
  const auto l = logits.to_vector<float>();
  const auto y = labels.to_vector<int64_t>();
  double expected = 0;
  for (int i = 0; i < 9; ++i) expected += ((l[i] > 0) == (y[i] == 1));
  EXPECT_EQ(train::count_correct(logits, labels).item<double>(), expected);

  const Tensor multi = randn({7, 4}, kFloat32, &gen);
  const Tensor classes = randint(0, 4, {7}, kInt64, &gen);
  const auto m = multi.to_vector<float>();
  const auto c = classes.to_vector<int64_t>();
  expected = 0;
  for (int i = 0; i < 7; ++i) {
    int best = 0;
    for (int k = 1; k < 4; ++k) best = m[i * 4 + k] > m[i * 4 + best] ? k : best;
    expected += best == c[i];
  }
  EXPECT_EQ(train::count_correct(multi, classes).item<double>(), expected);
  EXPECT_LOOM_ERROR(train::count_correct(multi, randint(0, 4, {3}, kInt64, &gen)), "count_correct");
}

TEST(Evaluate, LossAccuracyAndConfusionMatchALoop) {
  testing::HalvesDataset dataset(21, 7);
  auto model = testing::tiny_model(1);
  data::DataLoader loader(dataset, testing::loader_options(4, false));
  const train::EvalResult r = train::evaluate(*model, train::binary_cross_entropy_loss(), loader);
  ASSERT_EQ(r.samples, 21);
  // The same in one batch, by hand: BCE with logits and counts per (true, predicted).
  std::vector<Tensor> images;
  for (int64_t i = 0; i < 21; ++i) {
    images.push_back(dataset.get(i).image.to(kFloat32).permute({2, 0, 1}) * (1.0 / 255.0));
  }
  nn::EvalModeGuard eval(*model);
  const auto logits = model->forward(stack(images)).to_vector<float>();
  double loss = 0;
  int64_t confusion[2][2] = {{0, 0}, {0, 0}};
  for (int64_t i = 0; i < 21; ++i) {
    const double x = logits[i];
    const int64_t y = dataset.get(i).label;
    loss += std::max(x, 0.0) - x * double(y) + std::log1p(std::exp(-std::abs(x)));
    confusion[y][x > 0 ? 1 : 0] += 1;
  }
  EXPECT_NEAR(r.loss, loss / 21, 1e-5);
  EXPECT_NEAR(r.accuracy, double(confusion[0][0] + confusion[1][1]) / 21, 1e-12);
  EXPECT_EQ(
      r.confusion.to_vector<int64_t>(),
      (std::vector<int64_t>{confusion[0][0], confusion[0][1], confusion[1][0], confusion[1][1]}));
  const Tensor probs = train::predict(*model, loader);
  ASSERT_EQ(probs.shape(), (Shape{21, 1}));
  EXPECT_NEAR(probs.to_vector<float>()[3], 1.0 / (1.0 + std::exp(-logits[3])), 1e-6);
}

// HalvesDataset with one sample's label replaced.
class OneLabelChanged : public data::Dataset {
 public:
  OneLabelChanged(const data::Dataset& base, int64_t index, int64_t label)
      : base_(base), index_(index), label_(label) {}
  int64_t size() const override { return base_.size(); }
  data::Example get(int64_t index) const override {
    data::Example e = base_.get(index);
    if (index == index_) e.label = label_;
    return e;
  }

 private:
  const data::Dataset& base_;
  int64_t index_, label_;
};

// The pass reads nothing back per batch, so a label outside the model's classes is reported
// once the pass is over, naming how many.
TEST(Evaluate, LabelsOutsideTheClassesAreAnErrorAtTheEnd) {
  testing::HalvesDataset halves(21, 7);
  auto model = testing::tiny_model(1);
  for (const int64_t label : {2, -1}) {
    OneLabelChanged dataset(halves, 9, label);
    data::DataLoader loader(dataset, testing::loader_options(4, false));
    EXPECT_LOOM_ERROR(train::evaluate(*model, train::binary_cross_entropy_loss(), loader),
                      "evaluate: 1 of the 21 labels are outside [0, 2), the model's classes");
  }
}

TEST(Fit, LearnsTheTaskAndRecordsHistoryAndLogs) {
  manual_seed(11);
  testing::HalvesDataset train_set(64, 1), val_set(32, 2);
  auto model = testing::tiny_model(2);
  optim::Adam optimizer(model->parameters(), optim::GroupOptions().with_lr(1e-2));
  data::DataLoader train_loader(train_set, testing::loader_options(8, true));
  data::DataLoader val_loader(val_set, testing::loader_options(16, false));
  const std::string dir = testing::temp_dir("loom_train", "logs");
  std::ostringstream progress;
  train::FitOptions fit;
  fit.epochs = 6;
  fit.out = &progress;
  fit.callbacks = {std::make_shared<train::CsvLogger>(dir + "/m.csv"),
                   std::make_shared<train::JsonLinesLogger>(dir + "/m.jsonl")};
  const train::History h = train::fit(*model, train::binary_cross_entropy_loss(), optimizer,
                                      train_loader, &val_loader, fit);
  ASSERT_EQ(h.epochs.size(), 6u);
  EXPECT_LT(h.epochs.back().at("loss"), h.epochs.front().at("loss"));
  EXPECT_GT(h.epochs.back().at("val_accuracy"), 0.8);
  EXPECT_EQ(h.epochs.back().at("lr"), 1e-2);
  // Plain lines (not a terminal): every tenth of an epoch of 8 steps, then the epoch's line.
  EXPECT_NE(progress.str().find("Epoch 1/6 step 4/8"), std::string::npos) << progress.str();
  EXPECT_NE(progress.str().find("Epoch 6/6 8/8"), std::string::npos);
  EXPECT_EQ(progress.str().find('\r'), std::string::npos);

  std::ifstream csv(dir + "/m.csv");
  std::string header, row;
  std::getline(csv, header);
  EXPECT_EQ(header, "epoch,accuracy,loss,lr,val_accuracy,val_loss");
  int rows = 0;
  while (std::getline(csv, row)) ++rows;
  EXPECT_EQ(rows, 6);
  std::ifstream jsonl(dir + "/m.jsonl");
  std::getline(jsonl, row);
  EXPECT_EQ(row.rfind("{\"epoch\":1,", 0), 0u) << row;  // epochs counted from 1 in the logs
  EXPECT_EQ(train::History::from_json(h.to_json(), "t").epochs, h.epochs);
  fs::remove_all(dir);
}

// Counts the layouts of the batches it is fed, then runs `inner`.
class LayoutProbe : public nn::Module {
 public:
  explicit LayoutProbe(std::shared_ptr<nn::Module> inner) {
    inner_ = register_module("inner", std::move(inner));
  }
  Tensor forward(const Tensor& x) override {
    ++(x.suggest_memory_format() == MemoryFormat::ChannelsLast ? channels_last : nchw);
    return inner_->forward(x);
  }
  std::string type_name() const override { return "LayoutProbe"; }
  int channels_last = 0, nchw = 0;

 private:
  std::shared_ptr<nn::Module> inner_;
};

// FitOptions::channels_last feeds every training and validation batch NHWC, and (the CPU's ops
// reading it back as NCHW) trains exactly as NCHW batches do.
TEST(Fit, ChannelsLastFeedsNhwcBatchesAndTrainsAlike) {
  testing::HalvesDataset train_set(32, 1), val_set(16, 2);
  std::vector<train::History> histories;
  for (bool channels_last : {false, true}) {
    SCOPED_TRACE(channels_last ? "channels-last" : "NCHW");
    LayoutProbe model(testing::tiny_model(3, 8, /*dropout=*/false));
    optim::Adam optimizer(model.parameters(), optim::GroupOptions().with_lr(1e-2));
    data::DataLoader train_loader(train_set, testing::loader_options(8, true));
    data::DataLoader val_loader(val_set, testing::loader_options(8, false));
    train::FitOptions fit;
    fit.epochs = 2;
    fit.channels_last = channels_last;
    histories.push_back(train::fit(model, train::binary_cross_entropy_loss(), optimizer,
                                   train_loader, &val_loader, fit));
    const int batches = 2 * (4 + 2);  // two epochs of 4 training and 2 validation batches
    EXPECT_EQ(model.channels_last, channels_last ? batches : 0);
    EXPECT_EQ(model.nchw, channels_last ? 0 : batches);
  }
  EXPECT_EQ(histories[1].epochs, histories[0].epochs);
}

TEST(Fit, TerminalProgressRedrawsOneLine) {
  testing::HalvesDataset train_set(16, 1);
  auto model = testing::tiny_model(2);
  optim::SGD optimizer(model->parameters(), optim::GroupOptions().with_lr(1e-2));
  data::DataLoader loader(train_set, testing::loader_options(8, true));
  std::ostringstream out;
  train::FitOptions fit;
  fit.out = &out;
  fit.tty = true;
  train::fit(*model, train::binary_cross_entropy_loss(), optimizer, loader, nullptr, fit);
  EXPECT_NE(out.str().find("\rEpoch 1/1     2/2 ["), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("ETA"), std::string::npos);
}

TEST(Fit, EarlyStoppingStopsAndRestoresTheBestWeights) {
  testing::HalvesDataset train_set(16, 1), val_set(16, 2);
  auto model = testing::tiny_model(3);
  optim::SGD optimizer(model->parameters(), optim::GroupOptions().with_lr(0.0));
  data::DataLoader train_loader(train_set, testing::loader_options(8, true));
  data::DataLoader val_loader(val_set, testing::loader_options(8, false));
  auto stopper =
      std::make_shared<train::EarlyStopping>("val_loss", 1, 0.0, train::Mode::Auto, true);
  train::FitOptions fit;
  fit.epochs = 10;
  fit.out = nullptr;
  fit.callbacks = {stopper};
  // lr 0: nothing changes, so no epoch after the first improves; patience 1 stops after the
  // first epoch without an improvement, the second (Keras' count).
  const train::History h = train::fit(*model, train::binary_cross_entropy_loss(), optimizer,
                                      train_loader, &val_loader, fit);
  EXPECT_EQ(h.epochs.size(), 2u);
  EXPECT_EQ(stopper->stopped_epoch(), 1);
  EXPECT_EQ(stopper->best_epoch(), 0);
  EXPECT_LOOM_ERROR(train::EarlyStopping("val_loss", -1), "patience");
}

TEST(Fit, EarlyStoppingCountsPatienceEpochsAndResumesWhereItStood) {
  // Epochs of lr 0 do not improve: patience 3 ends the run after 1 + 3 epochs.
  testing::HalvesDataset train_set(16, 1), val_set(16, 2);
  auto model = testing::tiny_model(3);
  optim::SGD optimizer(model->parameters(), optim::GroupOptions().with_lr(0.0));
  data::DataLoader train_loader(train_set, testing::loader_options(8, true));
  data::DataLoader val_loader(val_set, testing::loader_options(8, false));
  auto stopper = std::make_shared<train::EarlyStopping>("val_accuracy", 3);
  const std::string dir = testing::temp_dir("loom_train", "early");
  train::CheckpointOptions checkpoint;
  checkpoint.path = dir + "/run.ckpt";
  train::FitOptions fit;
  fit.epochs = 10;
  fit.out = nullptr;
  fit.callbacks = {stopper, std::make_shared<train::ModelCheckpoint>(checkpoint)};
  const train::History h = train::fit(*model, train::binary_cross_entropy_loss(), optimizer,
                                      train_loader, &val_loader, fit);
  EXPECT_EQ(h.epochs.size(), 4u);
  EXPECT_EQ(stopper->stopped_epoch(), 3);
  // Resumed after two epochs without an improvement: one more ends it.
  io::TrainingState state = io::read_checkpoint(checkpoint.path).state;
  fit.callbacks = {stopper};
  state.epoch = 3;
  state.global_step = 6;
  state.history_json = train::History{{h.epochs[0], h.epochs[1], h.epochs[2]}}.to_json();
  fit.resume = state;
  EXPECT_EQ(train::fit(*model, train::binary_cross_entropy_loss(), optimizer, train_loader,
                       &val_loader, fit)
                .epochs.size(),
            4u);
  EXPECT_EQ(stopper->stopped_epoch(), 3);
  // Resumed after a run that had stopped: no further epoch.
  state.epoch = 4;
  state.history_json = h.to_json();
  fit.resume = state;
  EXPECT_EQ(train::fit(*model, train::binary_cross_entropy_loss(), optimizer, train_loader,
                       &val_loader, fit)
                .epochs.size(),
            4u);
  EXPECT_EQ(stopper->stopped_epoch(), 3);
  // A min_delta above any change: the first epoch is the only improvement.
  train::BestTracker tracker("val_accuracy", train::Mode::Auto, 0.1);
  const auto accuracies = [](std::vector<double> values) {
    train::History h;
    for (double v : values) h.epochs.push_back({{"val_accuracy", v}});
    return h;
  };
  EXPECT_EQ(tracker.replay(accuracies({0.5, 0.55, 0.61})), 2);
  EXPECT_EQ(tracker.replay(accuracies({0.5, 0.6, 0.6})), 0);
  EXPECT_EQ(tracker.replay(train::History{}), -1);
  fs::remove_all(dir);
}

TEST(Fit, ModelCheckpointKeepsTheBestEpochAcrossAResume) {
  // The model file holds the best epoch (the earliest of equals) and says which; a resume whose
  // best model file is elsewhere or missing finds the best epoch's weights, or refuses.
  const std::string dir = testing::temp_dir("loom_train", "best");
  testing::HalvesDataset train_set(16, 1), val_set(16, 2);
  auto model = testing::tiny_model(3);
  optim::SGD optimizer(model->parameters(), optim::GroupOptions().with_lr(0.0));
  data::DataLoader train_loader(train_set, testing::loader_options(8, true));
  data::DataLoader val_loader(val_set, testing::loader_options(8, false));
  train::CheckpointOptions options;
  options.path = dir + "/run.ckpt";
  options.best_model_path = dir + "/best.st";
  options.monitor = "val_accuracy";
  train::FitOptions fit;
  fit.epochs = 3;
  fit.out = nullptr;
  fit.callbacks = {std::make_shared<train::ModelCheckpoint>(options)};
  const train::History h = train::fit(*model, train::binary_cross_entropy_loss(), optimizer,
                                      train_loader, &val_loader, fit);
  const io::LoadedModel best = io::load_model(dir + "/best.st");
  const std::optional<train::SavedEpoch> saved = train::saved_epoch(best.metadata, "best.st");
  ASSERT_TRUE(saved.has_value());
  EXPECT_EQ(saved->epoch, 0);  // lr 0: three equal epochs
  EXPECT_EQ(saved->metrics, h.epochs[0]);
  // Counted from 1 in the file, as people read it; SavedEpoch::epoch is History's index.
  EXPECT_EQ(best.metadata.at(train::kSavedEpochKey), "1");
  EXPECT_EQ(best.metadata.at(train::kSavedEpochBaseKey), "1");

  // Resumed after epoch 3 with another best model file: epoch 1's is copied from the first.
  const io::Checkpoint ckpt = io::read_checkpoint(dir + "/run.ckpt");
  options.best_model_path = dir + "/other.st";
  options.resumed_best_model_path = dir + "/best.st";
  train::ModelCheckpoint resumed(options);
  const train::History finished = train::History::from_json(ckpt.state.history_json, "ckpt");
  EXPECT_EQ(resumed.find_best_on_resume(finished, 0),
            train::ModelCheckpoint::BestSource::ResumedBestModelFile);
  fit.callbacks = {std::make_shared<train::ModelCheckpoint>(options)};
  fit.resume = io::load_checkpoint(dir + "/run.ckpt", *model, optimizer);
  train::fit(*model, train::binary_cross_entropy_loss(), optimizer, train_loader, &val_loader, fit);
  EXPECT_EQ(train::saved_epoch(io::load_model(dir + "/other.st").metadata, "other.st")->epoch, 0);
  // With neither file: refused, naming both and what they hold.
  options.best_model_path = dir + "/none.st";
  options.resumed_best_model_path = dir + "/missing.st";
  EXPECT_LOOM_ERROR(train::ModelCheckpoint(options).find_best_on_resume(finished, 0),
                    "epoch 1's, but no file holds that epoch's weights: " + dir +
                        "/none.st does not exist, " + dir + "/missing.st does not exist");
  // When the best epoch is the checkpoint's own, the resumed weights are it.
  const train::History first{{finished.epochs[0]}};
  EXPECT_EQ(train::ModelCheckpoint(options).find_best_on_resume(first, 0),
            train::ModelCheckpoint::BestSource::ResumedWeights);
  EXPECT_LOOM_ERROR(train::ModelCheckpoint(options).find_best_on_resume(first, 1),
                    "none.st does not exist");
  fs::remove_all(dir);
}

TEST(Fit, SavedEpochMetadataIsReadAsUntrusted) {
  const auto read = [](const std::string& epoch, const std::string& metrics) {
    return train::saved_epoch({{train::kSavedEpochKey, epoch}, {train::kSavedMetricsKey, metrics}},
                              "f.st");
  };
  EXPECT_EQ(read("4", "{\"val_accuracy\": 0.75}")->metrics.at("val_accuracy"), 0.75);
  EXPECT_FALSE(train::saved_epoch({}, "f.st").has_value());
  EXPECT_LOOM_ERROR(read("-1", "{}"), "f.st: \"loom.saved_epoch\"");
  EXPECT_LOOM_ERROR(read("4.5", "{}"), "loom.saved_epoch");
  EXPECT_LOOM_ERROR(read("4", "[1]"), "must be a JSON object");
  EXPECT_LOOM_ERROR(read("4", "{\"loss\": \"x\"}"), "\"loss\"");
  EXPECT_LOOM_ERROR(read("4", "{\"a\": 1, \"a\": 2}"), "loom.saved_metrics");
  EXPECT_LOOM_ERROR(train::saved_epoch({{train::kSavedEpochKey, "1"}}, "f.st"),
                    "without \"loom.saved_metrics\"");
  // A file written before epochs were counted from 1 has no base: its epoch is History's index.
  EXPECT_EQ(read("4", "{}")->epoch, 4);
  const auto read_based = [](const std::string& epoch, const std::string& base) {
    return train::saved_epoch({{train::kSavedEpochKey, epoch},
                               {train::kSavedEpochBaseKey, base},
                               {train::kSavedMetricsKey, "{}"}},
                              "f.st");
  };
  EXPECT_EQ(read_based("4", "1")->epoch, 3);
  EXPECT_EQ(read_based("4", "0")->epoch, 4);
  EXPECT_LOOM_ERROR(read_based("0", "1"), "f.st: \"loom.saved_epoch\"");  // below the base
  EXPECT_LOOM_ERROR(read_based("4", "2"), "loom.saved_epoch_base");
}

TEST(Fit, MonitoringAMissingMetricNamesIt) {
  testing::HalvesDataset train_set(8, 1);
  auto model = testing::tiny_model(3);
  optim::SGD optimizer(model->parameters(), optim::GroupOptions().with_lr(0.1));
  data::DataLoader train_loader(train_set, testing::loader_options(8, true));
  train::FitOptions fit;
  fit.out = nullptr;
  fit.callbacks = {std::make_shared<train::EarlyStopping>("val_loss")};
  EXPECT_LOOM_ERROR(
      train::fit(*model, train::binary_cross_entropy_loss(), optimizer, train_loader, nullptr, fit),
      "\"val_loss\" is not among");
  fit.callbacks.clear();
  fit.epochs = -1;
  EXPECT_LOOM_ERROR(
      train::fit(*model, train::binary_cross_entropy_loss(), optimizer, train_loader, nullptr, fit),
      "epochs must be >= 0");
}

TEST(Fit, LRSchedulerStepsPerEpoch) {
  testing::HalvesDataset train_set(8, 1);
  auto model = testing::tiny_model(3);
  optim::SGD optimizer(model->parameters(), optim::GroupOptions().with_lr(0.1));
  optim::StepLR schedule(optimizer, 1, 0.5);
  data::DataLoader train_loader(train_set, testing::loader_options(8, true));
  train::FitOptions fit;
  fit.epochs = 3;
  fit.out = nullptr;
  fit.callbacks = {std::make_shared<train::LRSchedulerStep>(schedule)};
  const train::History h =
      train::fit(*model, train::binary_cross_entropy_loss(), optimizer, train_loader, nullptr, fit);
  EXPECT_EQ(h.values("lr"), (std::vector<double>{0.1, 0.05, 0.025}));
}

TEST(History, RejectsMalformedJson) {
  EXPECT_LOOM_ERROR(train::History::from_json("{\"a\": 1}", "f.json"), "f.json");
  EXPECT_LOOM_ERROR(train::History::from_json("[{\"loss\": \"x\"}]", "f.json"),
                    "malformed history");
  EXPECT_EQ(train::format_duration(65), "1m05s");
  EXPECT_EQ(train::format_duration(3.2), "3s");
}

}  // namespace
}  // namespace loom
