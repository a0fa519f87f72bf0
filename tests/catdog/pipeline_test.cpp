// loom-catdog train --pipeline N on the CPU: the model cut into N stages, batches into
// micro-batches, trains step by step as the uncut model does (seed_cnn has no BatchNorm), saves
// the same kind of model file, and refuses what a pipeline cannot do with one clear message.
#include <cmath>

#include "app_runner.h"
#include "testing.h"

namespace loom {
namespace {

using testing::step_losses;
namespace fs = std::filesystem;

class CatdogPipeline : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = (fs::temp_directory_path() /
             ("loom_catdog_pipeline_" + std::to_string(::getpid()) + "_" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name()))
                .string();
    fs::remove_all(root_);
    testing::make_photo_folder(root_ + "/data", 16, 4, 5);  // 32 training, 8 validation images
  }
  void TearDown() override { fs::remove_all(root_); }

  std::vector<std::string> args(const std::string& name, std::vector<std::string> extra) const {
    std::vector<std::string> a{"train",
                               "--data",
                               root_ + "/data",
                               "--epochs",
                               "2",
                               "--batch-size",
                               "8",
                               "--device",
                               "cpu",
                               "--workers",
                               "0",
                               "--seed",
                               "4",
                               "--print-losses",
                               "--out",
                               root_ + "/" + name + ".st"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  std::string root_;
};

TEST_F(CatdogPipeline, StagesAndMicroBatchesTrainAsTheWholeModel) {
  const auto [s0, whole] = testing::run_to_end(args("whole", {}), root_ + "/whole");
  ASSERT_EQ(s0, 0) << whole;
  const std::map<int, std::string> expected = step_losses(whole);
  ASSERT_EQ(expected.size(), 8u) << whole;  // 2 epochs of 32 / 8 steps
  for (const std::vector<std::string>& flags :
       {std::vector<std::string>{"--pipeline", "2", "--micro-batches", "3"},
        std::vector<std::string>{"--pipeline", "3", "--micro-batches", "4", "--pipeline-schedule",
                                 "1f1b"}}) {
    const std::string name = "pipe" + flags[1];
    const auto [status, out] = testing::run_to_end(args(name, flags), root_ + "/" + name);
    ASSERT_EQ(status, 0) << out;
    EXPECT_NE(out.find("pipeline of " + flags[1] + " stages"), std::string::npos) << out;
    const std::map<int, std::string> losses = step_losses(out);
    ASSERT_EQ(losses.size(), expected.size()) << out;
    for (const auto& [step, loss] : expected) {
      const double want = std::strtod(loss.c_str(), nullptr),
                   got = std::strtod(losses.at(step).c_str(), nullptr);
      EXPECT_LE(std::abs(got - want), 1e-5 * std::abs(want)) << name << ", step " << step;
    }
    // The file is the uncut model's kind: it loads and predicts without any pipeline.
    const io::LoadedModel loaded = io::load_model(root_ + "/" + name + ".st");
    EXPECT_EQ(loaded.model->type_name(), "Sequential");
  }
}

// Issue 38 item 9: the micro-batches' default (4) once refused every batch below 4, even
// without --pipeline; now it is min(4, batch) and only a given --micro-batches must fit.
TEST_F(CatdogPipeline, ABatchBelowFourTrainsWithAndWithoutAPipeline) {
  for (const std::vector<std::string>& flags :
       {std::vector<std::string>{}, std::vector<std::string>{"--pipeline", "2"}}) {
    const std::string name = flags.empty() ? "plain" : "pipe";
    std::vector<std::string> a = args(name, flags);
    *std::next(std::find(a.begin(), a.end(), "--batch-size")) = "2";
    a.insert(a.end(), {"--epochs", "1", "--limit", "8"});
    a.erase(std::find(a.begin(), a.end(), "--epochs"),
            std::find(a.begin(), a.end(), "--epochs") + 2);
    const auto [status, out] = testing::run_to_end(a, root_ + "/" + name);
    ASSERT_EQ(status, 0) << out;
    EXPECT_EQ(step_losses(out).size(), 4u) << out;  // 8 images in batches of 2
  }
}

TEST_F(CatdogPipeline, WhatAPipelineCannotDoIsRefused) {
  testing::expect_prompt_error(args("ranks", {"--pipeline", "2", "--world-size", "2"}),
                               root_ + "/ranks", {"--pipeline 2", "not supported", "2 ranks"},
                               10.0);
  testing::expect_prompt_error(args("micro", {"--pipeline", "2", "--micro-batches", "9"}),
                               root_ + "/micro",
                               {"--micro-batches", "between 1 and the batch size (8)"});
  testing::expect_prompt_error(args("many", {"--pipeline", "40"}), root_ + "/many",
                               {"40 stages for a model of", "layers"}, 10.0);
  EXPECT_FALSE(fs::exists(root_ + "/many.st"));
  // On the CPU bf16 is refused before the pipeline is looked at (logs_test.cpp); on CUDA with
  // "--precision bf16 does not apply to --pipeline".
  testing::expect_prompt_error(args("bf16", {"--pipeline", "2", "--precision", "bf16"}),
                               root_ + "/bf16", {"--precision bf16"});
}

}  // namespace
}  // namespace loom
