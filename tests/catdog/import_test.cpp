// loom-catdog import: a bare state_dict in safetensors (as PyTorch's save_file writes it: the
// names and layouts of nn.Sequential, no metadata) becomes a model file that loads and predicts
// as the same weights do; weights of another architecture, an unknown model and a missing file
// are refused naming what. The comparison with PyTorch itself is tests/reference/torch_import.py.
#include "app_runner.h"
#include "testing.h"

namespace loom {
namespace {

namespace fs = std::filesystem;

class CatdogImport : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = (fs::temp_directory_path() /
             ("loom_catdog_import_" + std::to_string(::getpid()) + "_" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name()))
                .string();
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  std::string root_;
};

TEST_F(CatdogImport, ABareStateDictBecomesAModelFileWithTheSameWeights) {
  Generator gen(4);
  auto seed = nn::seed_cnn(nn::Init::PyTorch, &gen);
  io::save_safetensors(root_ + "/w.safetensors", seed->state_dict());
  const auto [status, out] =
      testing::run_to_end({"import", "--model", "seed_cnn", "--weights", root_ + "/w.safetensors",
                           "--out", root_ + "/m.st", "--classes", "cat,dog"},
                          root_ + "/import");
  ASSERT_EQ(status, 0) << out;
  EXPECT_NE(out.find("imported"), std::string::npos) << out;
  const io::LoadedModel loaded = io::load_model(root_ + "/m.st");
  EXPECT_EQ(loaded.preprocessing.class_names, (std::vector<std::string>{"cat", "dog"}));
  EXPECT_EQ(loaded.preprocessing.height, 64);
  for (const auto& [name, t] : seed->state_dict()) {
    EXPECT_EQ(loaded.model->state_dict().at(name).to_vector<float>(), t.to_vector<float>()) << name;
  }
  const Tensor x = uniform({2, 3, 64, 64}, 0.0, 1.0, kFloat32, &gen);
  EXPECT_EQ(testing::compare(loaded.model->forward(x), seed->forward(x), 0, 0), "");
}

TEST_F(CatdogImport, WhatDoesNotFitIsRefusedNamingIt) {
  Generator gen(5);
  io::save_safetensors(root_ + "/classic.safetensors",
                       nn::classic_cnn(nn::Init::PyTorch, &gen)->state_dict());
  testing::expect_prompt_error({"import", "--model", "seed_cnn", "--weights",
                                root_ + "/classic.safetensors", "--out", root_ + "/m.st"},
                               root_ + "/wrong", {"not a seed_cnn's", "3.weight"});
  EXPECT_FALSE(fs::exists(root_ + "/m.st"));
  testing::expect_prompt_error(
      {"import", "--model", "resnet18", "--weights", root_ + "/classic.safetensors"},
      root_ + "/resnet", {"--model", "resnet18"});
  testing::expect_prompt_error(
      {"import", "--weights", root_ + "/missing.safetensors", "--out", root_ + "/m.st"},
      root_ + "/missing", {root_ + "/missing.safetensors"});
}

}  // namespace
}  // namespace loom
