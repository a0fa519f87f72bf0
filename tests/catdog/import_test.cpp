// loom-catdog import: a bare state_dict in safetensors (as PyTorch's save_file writes it: the
// names and layouts of nn.Sequential or torchvision's ResNet, no metadata) becomes a model file
// that loads and predicts as the same weights do, with a 1-logit or a K-logit head and batch
// norm's buffers; weights of another architecture, a head without as many class names, an
// unknown model and a missing file are refused naming what. The comparison with PyTorch itself
// is tests/reference/torch_import.py.
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
      root_ + "/resnet", {"not a resnet18's", "fc.weight"});
  testing::expect_prompt_error(
      {"import", "--model", "vgg16", "--weights", root_ + "/classic.safetensors"}, root_ + "/vgg",
      {"--model", "vgg16"});
  testing::expect_prompt_error(
      {"import", "--weights", root_ + "/missing.safetensors", "--out", root_ + "/m.st"},
      root_ + "/missing", {root_ + "/missing.safetensors"});
}

// A PyTorch model trained with CrossEntropyLoss has one logit per class: its head's rows say how
// many, and --classes must name each.
TEST_F(CatdogImport, AKLogitHeadTakesKClassNamesAndPredictsWithASoftmax) {
  Generator gen(6);
  auto seed = nn::seed_cnn(3, nn::Init::PyTorch, &gen);
  io::save_safetensors(root_ + "/w3.safetensors", seed->state_dict());
  const auto [status, out] = testing::run_to_end(
      {"import", "--weights", root_ + "/w3.safetensors", "--out", root_ + "/m3.st", "--classes",
       "cat,dog,fox", "--mean", "0.485,0.456,0.406", "--std", "0.229,0.224,0.225"},
      root_ + "/import3");
  ASSERT_EQ(status, 0) << out;
  EXPECT_NE(out.find("3 logits (softmax)"), std::string::npos) << out;
  const io::LoadedModel loaded = io::load_model(root_ + "/m3.st");
  EXPECT_EQ(loaded.preprocessing.class_names, (std::vector<std::string>{"cat", "dog", "fox"}));
  EXPECT_EQ(loaded.preprocessing.mean, (std::vector<double>{0.485, 0.456, 0.406}));
  EXPECT_EQ(loaded.preprocessing.std, (std::vector<double>{0.229, 0.224, 0.225}));
  const Tensor x = uniform({2, 3, 64, 64}, 0.0, 1.0, kFloat32, &gen);
  EXPECT_EQ(testing::compare(loaded.model->forward(x), seed->forward(x), 0, 0), "");

  // The default cat,dog names two classes, not three; four names are one too many.
  testing::expect_prompt_error(
      {"import", "--weights", root_ + "/w3.safetensors", "--out", root_ + "/d.st"},
      root_ + "/default", {"--classes", "3 outputs", "3 class names", "got 2 (cat,dog)"});
  testing::expect_prompt_error({"import", "--weights", root_ + "/w3.safetensors", "--out",
                                root_ + "/d.st", "--classes", "a,b,c,d"},
                               root_ + "/four", {"--classes", "got 4 (a,b,c,d)"});
  testing::expect_prompt_error({"import", "--weights", root_ + "/w3.safetensors", "--out",
                                root_ + "/d.st", "--classes", "a,b,c", "--mean", "0.5,0.5,0.5"},
                               root_ + "/mean", {"--mean and --std", "got 3 and 0"});
  testing::expect_prompt_error(
      {"import", "--weights", root_ + "/w3.safetensors", "--out", root_ + "/d.st", "--classes",
       "a,b,c", "--mean", "0,0,0", "--std", "1,0,1"},
      root_ + "/std", {"--std", "positive", "got 0"});
  EXPECT_FALSE(fs::exists(root_ + "/d.st"));
  // A 1-logit head still names two classes.
  io::save_safetensors(root_ + "/w1.safetensors",
                       nn::seed_cnn(nn::Init::PyTorch, &gen)->state_dict());
  testing::expect_prompt_error({"import", "--weights", root_ + "/w1.safetensors", "--out",
                                root_ + "/d.st", "--classes", "a,b,c"},
                               root_ + "/one", {"1 output", "2 class names", "got 3"});
}

// ResNet-18 under torchvision's names, with batch norm's running statistics that are not the
// initial ones (so eval-mode outputs depend on them), imported at 32x32 in a DDP wrapper's
// "module." names; num_batches_tracked may be absent.
TEST_F(CatdogImport, Resnet18WithTorchvisionNamesAndBatchNormBuffers) {
  Generator gen(7);
  auto reference = nn::resnet18(2, nn::Init::PyTorch, &gen);
  nn::NamedTensors torch_state, without_counts;
  for (const auto& [name, t] : reference->state_dict()) {
    Tensor value = t;
    if (name.find("running_mean") != std::string::npos) {
      value = uniform(t.shape(), -0.2, 0.2, kFloat32, &gen);
    } else if (name.find("running_var") != std::string::npos) {
      value = uniform(t.shape(), 0.5, 1.5, kFloat32, &gen);
    }
    torch_state.insert("module." + name, value);
    if (name.find("num_batches_tracked") == std::string::npos) without_counts.insert(name, value);
  }
  reference->load_state_dict(without_counts, /*strict=*/false);
  reference->eval();
  io::save_safetensors(root_ + "/r.safetensors", torch_state);
  const auto [status, out] =
      testing::run_to_end({"import", "--model", "resnet18", "--weights", root_ + "/r.safetensors",
                           "--out", root_ + "/r.st", "--image-size", "32"},
                          root_ + "/resnet");
  ASSERT_EQ(status, 0) << out;
  EXPECT_NE(out.find("2 logits (softmax)"), std::string::npos) << out;
  const io::LoadedModel loaded = io::load_model(root_ + "/r.st");
  EXPECT_EQ(loaded.preprocessing.height, 32);
  EXPECT_EQ(loaded.model->state_dict().at("layer3.1.bn2.running_var").to_vector<float>(),
            torch_state.at("module.layer3.1.bn2.running_var").to_vector<float>());
  loaded.model->eval();
  const Tensor x = uniform({2, 3, 32, 32}, 0.0, 1.0, kFloat32, &gen);
  EXPECT_EQ(testing::compare(loaded.model->forward(x), reference->forward(x), 0, 0), "");

  io::save_safetensors(root_ + "/nocount.safetensors", without_counts);
  const auto [status2, out2] =
      testing::run_to_end({"import", "--model", "resnet18", "--weights",
                           root_ + "/nocount.safetensors", "--out", root_ + "/n.st"},
                          root_ + "/nocount");
  ASSERT_EQ(status2, 0) << out2;
  EXPECT_NE(out2.find("bn1.num_batches_tracked absent"), std::string::npos) << out2;
}

TEST_F(CatdogImport, Resnet18ErrorsNameTheTensorOrTheStem) {
  Generator gen(8);
  nn::NamedTensors state = nn::resnet18(1, nn::Init::PyTorch, &gen)->state_dict();
  nn::NamedTensors imagenet_stem, wrong_bn;
  for (const auto& [name, t] : state) {
    imagenet_stem.insert(name, name == "conv1.weight" ? zeros({64, 3, 7, 7}) : t);
    wrong_bn.insert(name, name == "layer2.0.bn1.running_mean" ? zeros({64}) : t);
  }
  io::save_safetensors(root_ + "/stem.safetensors", imagenet_stem);
  testing::expect_prompt_error({"import", "--model", "resnet18", "--weights",
                                root_ + "/stem.safetensors", "--out", root_ + "/s.st"},
                               root_ + "/stem", {"conv1.weight", "7x7", "nn.Identity()"}, 10.0);
  io::save_safetensors(root_ + "/bn.safetensors", wrong_bn);
  testing::expect_prompt_error({"import", "--model", "resnet18", "--weights",
                                root_ + "/bn.safetensors", "--out", root_ + "/s.st"},
                               root_ + "/bn", {"layer2.0.bn1.running_mean", "[128]", "[64]"}, 10.0);
  testing::expect_prompt_error(
      {"import", "--model", "seed_cnn", "--weights", root_ + "/bn.safetensors", "--out",
       root_ + "/s.st", "--image-size", "32"},
      root_ + "/size", {"--image-size", "64x64 images only"});
  EXPECT_FALSE(fs::exists(root_ + "/s.st"));
}

}  // namespace
}  // namespace loom
