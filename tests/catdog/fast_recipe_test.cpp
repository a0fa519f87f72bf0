// loom-catdog train --recipe fast: the preset's settings, the user's flags winning over it, its
// CUDA-only parts left off on the CPU, a small CPU run of it end to end, and evaluate --tta.
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "app_runner.h"
#include "catdog/commands.h"
#include "catdog/recipe.h"
#include "testing.h"

namespace loom {
namespace {

namespace fs = std::filesystem;

catdog::TrainArgs fast_args() {
  catdog::TrainArgs a;
  a.recipe = "fast";
  return a;
}

TEST(FastRecipe, SeedRecipeChangesNothing) {
  const catdog::TrainArgs seed;
  const catdog::TrainArgs r = catdog::resolve_recipe(seed, kCPU);
  EXPECT_EQ(r.model, seed.model);
  EXPECT_EQ(r.epochs, seed.epochs);
  EXPECT_EQ(r.batch_size, seed.batch_size);
  EXPECT_EQ(r.image_size, seed.image_size);
  EXPECT_EQ(r.lr, seed.lr);
  EXPECT_EQ(r.lr_schedule, seed.lr_schedule);
  EXPECT_FALSE(r.warmup_given);
  EXPECT_FALSE(r.tta);
  EXPECT_EQ(catdog::recipe_summary(r, kCPU), "");
}

TEST(FastRecipe, SetsItsSettingsOnTheCpuWithoutTheCudaOnes) {
  const catdog::TrainArgs r = catdog::resolve_recipe(fast_args(), kCPU);
  EXPECT_EQ(r.model, "resnet18");
  EXPECT_EQ(r.image_size, 96);
  EXPECT_EQ(r.batch_size, 128);
  EXPECT_EQ(r.val_batch_size, 128);  // validation's shapes are training's
  EXPECT_TRUE(r.drop_last);
  EXPECT_EQ(r.stem_stride, 2);
  EXPECT_DOUBLE_EQ(r.lr, 2e-3);
  EXPECT_DOUBLE_EQ(r.weight_decay, 0.05);
  EXPECT_EQ(r.epochs, 30);
  EXPECT_EQ(r.lr_schedule, "cosine");
  EXPECT_TRUE(r.warmup_given);
  EXPECT_EQ(r.warmup_epochs, 1);
  EXPECT_DOUBLE_EQ(r.label_smoothing, 0.1);
  EXPECT_TRUE(r.tta);
  EXPECT_EQ(r.precision, catdog::TrainArgs().precision);  // the CPU refuses bf16
  EXPECT_FALSE(r.channels_last);
  EXPECT_FALSE(r.conv_benchmark);  // the recipe leaves it off everywhere
  const std::string line = catdog::recipe_summary(r, kCPU);
  EXPECT_NE(line.find("recipe fast: model resnet18 (stem stride 2), image size 96, batch 128 "
                      "(short last batch left out), validation batch 128, lr 0.002"),
            std::string::npos)
      << line;
  EXPECT_NE(line.find("on the CPU bf16 and channels-last stay off"), std::string::npos) << line;
}

TEST(FastRecipe, SetsBf16AndChannelsLastOnCudaButNotTheConvBenchmark) {
  // Resolving only reads the device's type: no GPU is needed.
  const catdog::TrainArgs r = catdog::resolve_recipe(fast_args(), Device("cuda:0"));
  EXPECT_EQ(r.precision, "bf16");
  EXPECT_TRUE(r.channels_last);
  EXPECT_FALSE(r.conv_benchmark);  // its search cost more than it saved (recipe.cpp)
}

TEST(FastRecipe, TheUsersFlagsWin) {
  catdog::TrainArgs a = fast_args();
  a.model = "seed_cnn";
  a.epochs = 3;
  a.tta = false;
  a.precision = "fp32";
  a.channels_last = false;
  a.label_smoothing = 0.0;
  a.given = {"model", "epochs", "tta", "precision", "channels-last", "label-smoothing"};
  const catdog::TrainArgs r = catdog::resolve_recipe(a, Device("cuda:0"));
  EXPECT_EQ(r.model, "seed_cnn");
  EXPECT_EQ(r.image_size, 64);  // seed_cnn's only size, not the recipe's 96
  EXPECT_EQ(r.epochs, 3);
  EXPECT_FALSE(r.tta);
  EXPECT_EQ(r.precision, "fp32");
  EXPECT_FALSE(r.channels_last);
  EXPECT_DOUBLE_EQ(r.label_smoothing, 0.0);
  EXPECT_EQ(r.batch_size, 128);  // not given: the recipe's
  EXPECT_EQ(r.stem_stride, 1);   // seed_cnn has no stem to stride
  const std::string line = catdog::recipe_summary(r, Device("cuda:0"));
  EXPECT_NE(line.find("yours: --model, --epochs, --label-smoothing, --tta, --precision, "
                      "--channels-last"),
            std::string::npos)
      << line;
}

TEST(FastRecipe, ValidationFollowsTheUsersBatchSizeUnlessGivenItsOwn) {
  catdog::TrainArgs a = fast_args();
  a.batch_size = 64;
  a.given = {"batch-size"};
  EXPECT_EQ(catdog::resolve_recipe(a, kCPU).val_batch_size, 64);
  a.val_batch_size = 500;
  a.drop_last = false;
  a.stem_stride = 2;
  a.given = {"batch-size", "val-batch-size", "drop-last", "stem-stride"};
  const catdog::TrainArgs r = catdog::resolve_recipe(a, kCPU);
  EXPECT_EQ(r.val_batch_size, 500);
  EXPECT_FALSE(r.drop_last);
  EXPECT_EQ(r.stem_stride, 2);
  EXPECT_NE(catdog::recipe_summary(r, kCPU).find("model resnet18 (stem stride 2), image size 96, "
                                                 "batch 64, validation batch 500"),
            std::string::npos)
      << catdog::recipe_summary(r, kCPU);
}

TEST(FastRecipe, NoWarmUpWhereItCannotRun) {
  catdog::TrainArgs constant = fast_args();
  constant.lr_schedule = "constant";
  constant.given = {"lr-schedule"};
  EXPECT_FALSE(catdog::resolve_recipe(constant, kCPU).warmup_given);
  catdog::TrainArgs one_epoch = fast_args();
  one_epoch.epochs = 1;
  one_epoch.given = {"epochs"};
  EXPECT_FALSE(catdog::resolve_recipe(one_epoch, kCPU).warmup_given);
  catdog::TrainArgs own = fast_args();
  own.warmup_epochs = 3;
  own.warmup_given = true;
  own.given = {"warmup-epochs"};
  EXPECT_EQ(catdog::resolve_recipe(own, kCPU).warmup_epochs, 3);
}

TEST(FastRecipe, AnUnknownRecipeIsRefused) {
  catdog::TrainArgs a;
  a.recipe = "quick";
  EXPECT_LOOM_ERROR(catdog::resolve_recipe(a, kCPU), "--recipe: expected seed or fast");
  const std::string root =
      (fs::temp_directory_path() / ("loom_catdog_badrecipe_" + std::to_string(::getpid())))
          .string();
  fs::create_directories(root);
  testing::expect_clear_error({"train", "--recipe", "quick", "--device", "cpu"}, root + "/bad",
                              "quick not in {seed,fast}");
  fs::remove_all(root);
}

// The whole recipe on the CPU (resnet18 at 96 pixels, its warm-up, cosine, label smoothing and
// TTA) on a few generated photographs, batch and epochs given small (and no label smoothing, so
// that validation's loss is evaluate's); then evaluate --tta and without.
TEST(FastRecipe, TrainsOnTheCpuAndEvaluatesWithTta) {
  const std::string root =
      (fs::temp_directory_path() / ("loom_catdog_fast_" + std::to_string(::getpid()))).string();
  fs::remove_all(root);
  testing::make_photo_folder(root + "/data", 4, 2, 5);
  const std::string out = root + "/fast.st";
  const auto [status, text] = testing::run_to_end(
      testing::small_train_args(root + "/data", 2, out,
                                {"--recipe", "fast", "--save", "last", "--label-smoothing", "0"}),
      root + "/train");
  ASSERT_EQ(status, 0) << text;
  for (const std::string& expected :
       {std::string("recipe fast: model resnet18 (stem stride 2), image size 96, batch 4 (short "
                    "last batch left out), validation batch 4, lr 0.002"),
        std::string("cosine after a 1-epoch warm-up, validating from epoch 16, label smoothing "
                    "0, flip TTA on"),
        std::string("yours: --batch-size, --epochs, --label-smoothing"), std::string("stay off"),
        std::string("flip TTA in validation"), std::string("validation accuracy:")})
    EXPECT_NE(text.find(expected), std::string::npos) << "no \"" << expected << "\" in " << text;
  // Validation from epoch 16 of 2: only the last epoch validates.
  std::istringstream lines(text);
  std::vector<std::string> validated;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("Epoch ", 0) == 0 && line.find("val_accuracy") != std::string::npos)
      validated.push_back(line.substr(0, 9));
  }
  EXPECT_EQ(validated, (std::vector<std::string>{"Epoch 2/2"})) << text;
  ASSERT_TRUE(fs::exists(out)) << text;

  const auto [eval_status, eval_text] =
      testing::run_to_end({"evaluate", "--model", out, "--data", root + "/data", "--device", "cpu",
                           "--workers", "0", "--tta", "--json"},
                          root + "/evaluate");
  ASSERT_EQ(eval_status, 0) << eval_text;
  const auto j = nlohmann::json::parse(eval_text.substr(eval_text.find('{')));
  EXPECT_EQ(j["tta"], true);
  EXPECT_EQ(j["samples"], 4);
  // The last epoch's validation (printed to 4 decimals; unsmoothed, as evaluate's loss, with
  // --label-smoothing 0) scored what evaluate --tta scores.
  double val_accuracy = -1, val_loss = -1;
  const size_t at = text.find("validation accuracy: ");
  ASSERT_NE(at, std::string::npos) << text;
  ASSERT_EQ(std::sscanf(text.c_str() + at, "validation accuracy: %lf (loss %lf)", &val_accuracy,
                        &val_loss),
            2)
      << text;
  EXPECT_NEAR(j["accuracy"].get<double>(), val_accuracy, 1e-4);
  EXPECT_NEAR(j["loss"].get<double>(), val_loss, 1e-4);
  // Without --tta the loss is the plain one's: another number (beyond the 5e-5 of the printed
  // rounding; two epochs leave the model's outputs near each other's, so not by much).
  const auto [plain_status, plain_text] =
      testing::run_to_end({"evaluate", "--model", out, "--data", root + "/data", "--device", "cpu",
                           "--workers", "0", "--json"},
                          root + "/plain");
  ASSERT_EQ(plain_status, 0) << plain_text;
  const auto plain = nlohmann::json::parse(plain_text.substr(plain_text.find('{')));
  EXPECT_EQ(plain["tta"], false);
  EXPECT_GT(std::abs(plain["loss"].get<double>() - val_loss), 2e-4) << plain_text;
  fs::remove_all(root);
}

}  // namespace
}  // namespace loom
