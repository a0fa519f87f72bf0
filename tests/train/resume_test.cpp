// Resume equals uninterrupted, in one process: train N steps straight through; train k steps
// with a checkpoint, rebuild model, optimizer and loaders from nothing, resume, finish. Every
// step's loss, the History and the final weights must be bit-identical on the CPU, for a stop
// in the middle of an epoch and at an epoch's end.
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "synthetic.h"
#include "testing.h"

namespace loom {
namespace {

namespace fs = std::filesystem;

// Records each step's loss exactly; optionally stops the run after `stop_after` steps by
// throwing, as a crash would (the checkpoint callback runs before it).
class StepRecorder : public train::Callback {
 public:
  explicit StepRecorder(int64_t stop_after = -1) : stop_after_(stop_after) {}
  void on_batch_end(train::TrainContext& ctx) override {
    losses.push_back(ctx.batch_loss.item<float>());
    if (ctx.global_step == stop_after_) throw std::runtime_error("simulated crash");
  }
  std::vector<float> losses;

 private:
  int64_t stop_after_;
};

struct RunResult {
  std::vector<float> losses;
  train::History history;
  nn::NamedTensors weights;
};

// One training run of 3 epochs of 5 steps; when `stop_after` >= 0 it crashes there and a second,
// freshly built run resumes from the checkpoint written every `every` steps.
RunResult train_run(const std::string& ckpt, int64_t stop_after, int64_t every) {
  testing::HalvesDataset train_set(40, 1), val_set(16, 2);
  auto build = [&](RunResult& run, std::optional<io::TrainingState>* resume, int64_t stop) {
    manual_seed(99);  // a resumed run must overwrite this from the checkpoint
    auto model = testing::tiny_model(stop >= 0 || resume == nullptr ? 5 : 6);  // other init on resume
    optim::Adam optimizer(model->parameters(), optim::GroupOptions().with_lr(5e-3));
    data::DataLoaderOptions o;
    o.batch_size = 8;
    o.seed = 17;
    o.augment = data::AugmentOptions::keras_seed(23);
    data::DataLoader train_loader(train_set, o);
    o.shuffle = false;
    o.augment = data::AugmentOptions();
    o.augment.rescale = 1.0 / 255.0;
    data::DataLoader val_loader(val_set, o);
    train::FitOptions fit;
    fit.epochs = 3;
    fit.out = nullptr;
    auto recorder = std::make_shared<StepRecorder>(stop);
    train::CheckpointOptions c;
    c.path = ckpt;
    c.every_steps = every;
    fit.callbacks = {std::make_shared<train::ModelCheckpoint>(c), recorder};
    if (resume != nullptr) fit.resume = io::load_checkpoint(ckpt, *model, optimizer);
    try {
      run.history = train::fit(*model, train::binary_cross_entropy_loss(), optimizer, train_loader, &val_loader, fit);
    } catch (const std::runtime_error&) {
    }
    run.losses.insert(run.losses.end(), recorder->losses.begin(), recorder->losses.end());
    run.weights = nn::NamedTensors();
    for (const auto& [name, t] : model->state_dict()) run.weights.insert(name, t.clone());
  };
  RunResult run;
  if (stop_after < 0) {
    manual_seed(99);
    build(run, nullptr, -1);
    return run;
  }
  build(run, nullptr, stop_after);
  // Steps after the last checkpoint are lost with the crash: the resumed run redoes them.
  const int64_t saved = stop_after / every * every;
  run.losses.resize(static_cast<size_t>(saved));
  std::optional<io::TrainingState> unused;
  build(run, &unused, -2);
  return run;
}

void expect_identical(const RunResult& a, const RunResult& b) {
  ASSERT_EQ(a.losses.size(), b.losses.size());
  for (size_t i = 0; i < a.losses.size(); ++i) {
    EXPECT_EQ(std::memcmp(&a.losses[i], &b.losses[i], sizeof(float)), 0)
        << "step " << i + 1 << ": " << a.losses[i] << " vs " << b.losses[i];
  }
  EXPECT_EQ(a.history.epochs, b.history.epochs);
  for (const auto& [name, t] : a.weights) {
    EXPECT_EQ(t.to_vector<float>(), b.weights.at(name).to_vector<float>()) << name;
  }
}

class Resume : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (fs::temp_directory_path() / ("loom_resume_" + std::to_string(::getpid()) + ".ckpt")).string();
  }
  void TearDown() override { fs::remove(path_); }
  std::string path_;
};

TEST_F(Resume, MidEpochIsBitIdenticalToAnUninterruptedRun) {
  const RunResult straight = train_run(path_ + ".a", -1, 1);
  ASSERT_EQ(straight.losses.size(), 15u);
  EXPECT_NE(straight.losses.front(), straight.losses.back());
  // Checkpoints every 3 steps; the crash at step 8 (epoch 2, step 3 of 5) resumes from step 6.
  expect_identical(train_run(path_, 8, 3), straight);
}

TEST_F(Resume, AtAnEpochBoundaryIsBitIdentical) {
  const RunResult straight = train_run(path_ + ".b", -1, 1);
  expect_identical(train_run(path_, 11, 5), straight);
}

TEST_F(Resume, RefusesALoaderWithOtherSeeds) {
  testing::HalvesDataset train_set(16, 1);
  auto model = testing::tiny_model(5);
  optim::Adam optimizer(model->parameters());
  io::TrainingState state;
  state.loader_seed = 4;
  io::save_checkpoint(path_, *model, optimizer, state);
  data::DataLoaderOptions o;
  o.seed = 5;
  data::DataLoader loader(train_set, o);
  train::FitOptions fit;
  fit.out = nullptr;
  fit.resume = io::load_checkpoint(path_, *model, optimizer);
  EXPECT_LOOM_ERROR(train::fit(*model, train::binary_cross_entropy_loss(), optimizer, loader, nullptr, fit),
                    "loader seeds");
}

}  // namespace
}  // namespace loom
