// Resume equals uninterrupted, in one process: train N steps straight through; train k steps
// with a checkpoint, rebuild model, optimizer and loaders from nothing, resume, finish. Every
// step's loss, the History and the final weights must be bit-identical on the CPU, for a stop
// in the middle of an epoch and at an epoch's end.
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <memory>

#include "resume_run.h"

namespace loom {
namespace {

namespace fs = std::filesystem;
using testing::RunResult;
using testing::train_run;

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
    path_ = (fs::temp_directory_path() / ("loom_resume_" + std::to_string(::getpid()) + ".ckpt"))
                .string();
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
  EXPECT_LOOM_ERROR(
      train::fit(*model, train::binary_cross_entropy_loss(), optimizer, loader, nullptr, fit),
      "loader seeds");
}

// SIGTERM and SIGUSR1 set the flag while a PreemptionScope lives (the process goes on), and the
// previous handlers are back once it is gone.
TEST(Preemption, TheScopeTurnsSignalsIntoTheFlagAndThenPutsTheHandlersBack) {
  struct sigaction before {};
  ASSERT_EQ(::sigaction(SIGTERM, nullptr, &before), 0);
  {
    const train::PreemptionScope scope;
    EXPECT_EQ(train::preemption_signal(), 0);
    ASSERT_EQ(::raise(SIGUSR1), 0);
    EXPECT_EQ(train::preemption_signal(), SIGUSR1);
    ASSERT_EQ(::raise(SIGTERM), 0);
    EXPECT_EQ(train::preemption_signal(), SIGTERM);
    train::clear_preemption();
  }
  struct sigaction after {};
  ASSERT_EQ(::sigaction(SIGTERM, nullptr, &after), 0);
  EXPECT_EQ(after.sa_handler, before.sa_handler);
}

// What a preemption does to fit (issue 38, what to build 4): the flag set during step 3 stops
// the run right after it, on_preempted sees that step, on_train_end is not called, and the
// history says which signal; without stop_on_preemption the flag changes nothing.
TEST_F(Resume, APreemptionStopsFitAtTheNextStepBoundary) {
  struct Recorder : train::Callback {
    void on_batch_end(train::TrainContext& ctx) override {
      if (ctx.global_step == 3) train::request_preemption(SIGTERM);
    }
    void on_preempted(train::TrainContext& ctx) override { preempted_at = ctx.global_step; }
    void on_train_end(train::TrainContext& ctx) override { ended_at = ctx.global_step; }
    int64_t preempted_at = -1, ended_at = -1;
  };
  for (const bool stop : {true, false}) {
    testing::HalvesDataset train_set(16, 1);
    auto model = testing::tiny_model(5);
    optim::Adam optimizer(model->parameters());
    data::DataLoaderOptions o;
    o.batch_size = 4;
    data::DataLoader loader(train_set, o);
    train::FitOptions fit;
    fit.out = nullptr;
    fit.epochs = 2;
    fit.stop_on_preemption = stop;
    auto recorder = std::make_shared<Recorder>();
    fit.callbacks.push_back(recorder);
    const train::History h =
        train::fit(*model, train::binary_cross_entropy_loss(), optimizer, loader, nullptr, fit);
    train::clear_preemption();
    EXPECT_EQ(h.preempted_by, stop ? SIGTERM : 0);
    EXPECT_EQ(recorder->preempted_at, stop ? 3 : -1);
    EXPECT_EQ(recorder->ended_at, stop ? -1 : 8);
    EXPECT_EQ(h.epochs.size(), stop ? 0u : 2u);
  }
}

}  // namespace
}  // namespace loom
