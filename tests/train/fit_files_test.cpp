// The files fit's callbacks write on its background writer: complete and right when fit returns
// (the checkpoint, the best model file, both logs), and when it throws; a failed write fails the
// run naming the file, but never takes the place of training's own error; callbacks called
// outside fit write at once.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "synthetic.h"
#include "testing.h"

namespace loom {
namespace {

namespace fs = std::filesystem;

// Throws, as a failing training step would, at the end of epoch `epoch`.
class ThrowAtEpochEnd : public train::Callback {
 public:
  explicit ThrowAtEpochEnd(int64_t epoch) : epoch_(epoch) {}
  void on_epoch_end(train::TrainContext& ctx, const train::EpochMetrics& /*metrics*/) override {
    if (ctx.epoch == epoch_)
      throw std::runtime_error("training broke in epoch " + std::to_string(epoch_));
  }

 private:
  int64_t epoch_;
};

class FitFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::temp_dir("loom_fit_files",
                             ::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  std::vector<std::string> listing() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir_))
      names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
  train::History fit(const std::vector<train::CallbackPtr>& callbacks, int64_t epochs = 3) {
    train::FitOptions options;
    options.epochs = epochs;
    options.out = nullptr;
    options.callbacks = callbacks;
    return train::fit(*model_, train::binary_cross_entropy_loss(), optimizer_, train_loader_,
                      &val_loader_, options);
  }

  std::string dir_;
  testing::HalvesDataset train_set_{32, 1}, val_set_{16, 2};
  std::shared_ptr<nn::Sequential> model_ = testing::tiny_model(4);
  optim::Adam optimizer_{model_->parameters(), optim::GroupOptions().with_lr(1e-2)};
  data::DataLoader train_loader_{train_set_, testing::loader_options(8, true)};
  data::DataLoader val_loader_{val_set_, testing::loader_options(8, false)};
};

TEST_F(FitFiles, EveryFileIsCompleteAndRightWhenFitReturns) {
  train::CheckpointOptions c;
  c.path = path("run.ckpt");
  c.every_steps = 3;
  c.best_model_path = path("best.st");
  c.monitor = "val_loss";
  const train::History h = fit({std::make_shared<train::ModelCheckpoint>(c),
                                std::make_shared<train::CsvLogger>(path("m.csv")),
                                std::make_shared<train::JsonLinesLogger>(path("m.jsonl"))});
  ASSERT_EQ(h.epochs.size(), 3u);
  EXPECT_EQ(io::read_file(path("m.csv")), train::history_csv(h));
  std::string jsonl;  // one line per epoch, counted from 1
  for (size_t e = 0; e < h.epochs.size(); ++e)
    jsonl += train::metrics_json(static_cast<int64_t>(e) + 1, h.epochs[e]) + "\n";
  EXPECT_EQ(io::read_file(path("m.jsonl")), jsonl);
  EXPECT_EQ(jsonl.rfind("{\"epoch\":1,", 0), 0u) << jsonl;
  // The last checkpoint: the end of the last epoch, with the model's and optimizer's last state.
  const io::Checkpoint ckpt = io::read_checkpoint(path("run.ckpt"));
  EXPECT_EQ(ckpt.state.epoch, 3);
  EXPECT_EQ(ckpt.state.global_step, 12);
  EXPECT_EQ(train::History::from_json(ckpt.state.history_json, "ckpt").epochs, h.epochs);
  for (const auto& [name, t] : model_->state_dict()) {
    EXPECT_EQ(ckpt.file.at("model." + name).to_vector<float>(), t.to_vector<float>()) << name;
  }
  for (const auto& [key, t] : optimizer_.state_dict().tensors) {
    EXPECT_EQ(ckpt.file.at("optim." + key).to_vector<float>(), t.to_vector<float>()) << key;
  }
  const int64_t best = train::BestTracker("val_loss", train::Mode::Auto).replay(h);
  const std::optional<train::SavedEpoch> saved =
      train::saved_epoch(io::load_model(path("best.st")).metadata, "best.st");
  ASSERT_TRUE(saved.has_value());
  EXPECT_EQ(saved->epoch, best);
  EXPECT_EQ(saved->metrics, h.epochs[static_cast<size_t>(best)]);
  EXPECT_EQ(listing(), (std::vector<std::string>{"best.st", "m.csv", "m.jsonl",
                                                 "run.ckpt"}));  // no temporaries or locks
}

TEST_F(FitFiles, AFailedWriteFailsTheRunNamingTheFile) {
  const std::string csv = path("missing/m.csv");
  EXPECT_LOOM_ERROR(fit({std::make_shared<train::CsvLogger>(csv)}, 1), "cannot write " + csv);
  EXPECT_LOOM_ERROR(fit({std::make_shared<train::CsvLogger>(csv)}, 3), "cannot write " + csv);
}

TEST_F(FitFiles, TrainingsOwnErrorIsRethrownAndTheFilesBeforeItLand) {
  train::CheckpointOptions c;
  c.path = path("run.ckpt");
  const std::string csv = path("missing/m.csv");
  // Training fails in the same epoch end whose CSV cannot be written, before any later write
  // could report that.
  ::testing::internal::CaptureStderr();
  try {
    fit({std::make_shared<train::ModelCheckpoint>(c), std::make_shared<train::CsvLogger>(csv),
         std::make_shared<ThrowAtEpochEnd>(0)});
    ADD_FAILURE() << "fit should have thrown";
  } catch (const std::exception& e) {
    EXPECT_STREQ(e.what(), "training broke in epoch 0");
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  // The CSV's failure is reported, not lost, and not in place of training's error.
  EXPECT_NE(err.find("loom: fit: cannot write " + csv), std::string::npos) << err;
  // The checkpoint queued before the failed write is on disk: the first epoch's end.
  EXPECT_EQ(io::read_checkpoint(c.path).state.epoch, 1);

  // Without a failed write: training's error, and epoch 2's checkpoint on disk when fit throws.
  try {
    fit({std::make_shared<train::ModelCheckpoint>(c), std::make_shared<ThrowAtEpochEnd>(1)});
    ADD_FAILURE() << "fit should have thrown";
  } catch (const std::exception& e) {
    EXPECT_STREQ(e.what(), "training broke in epoch 1");
  }
  EXPECT_EQ(io::read_checkpoint(c.path).state.epoch, 2);
}

TEST_F(FitFiles, ACallbackOutsideFitWritesAtOnce) {
  train::History history{{{{"loss", 0.5}}, {{"loss", 0.25}}}};
  train::TrainContext ctx(*model_, optimizer_, train_loader_, history);
  ASSERT_EQ(ctx.writer, nullptr);
  train::CsvLogger(path("m.csv")).on_epoch_end(ctx, history.epochs.back());
  EXPECT_EQ(io::read_file(path("m.csv")), "epoch,loss\n1,0.5\n2,0.25\n");
  EXPECT_NO_THROW(ctx.flush_writes());
}

}  // namespace
}  // namespace loom
