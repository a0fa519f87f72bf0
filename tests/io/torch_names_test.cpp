// The zoo's PyTorch name maps (io/torch_import.h): the names PyTorch's definitions of seed_cnn,
// classic_cnn and torchvision's resnet18 give their tensors, wrapper prefixes removed, and the
// import's refusals. The command line's tests are tests/catdog/import_test.cpp; PyTorch itself
// is tests/reference/torch_import.py.
#include <gtest/gtest.h>
#include <loom/loom.h>

#include <algorithm>

namespace loom {
namespace {

const io::TorchName* find_torch_name(const std::vector<io::TorchName>& map,
                                     const std::string& torch) {
  for (const io::TorchName& n : map) {
    if (n.torch == torch) return &n;
  }
  return nullptr;
}

TEST(TorchNames, EachZooModelMapsPyTorchsNames) {
  // nn.Sequential(Conv2d, ReLU, MaxPool2d, Flatten, Linear, ReLU, Linear): indices 0, 4, 6.
  const auto seed = io::torch_name_map("seed_cnn");
  std::vector<std::string> seed_names;
  for (const auto& n : seed) seed_names.push_back(n.torch + "->" + n.loom);
  EXPECT_EQ(seed_names,
            (std::vector<std::string>{"0.weight->0.weight", "0.bias->0.bias", "4.weight->4.weight",
                                      "4.bias->4.bias", "6.weight->6.weight", "6.bias->6.bias"}));
  EXPECT_EQ(io::torch_name_map("classic_cnn").size(), 8u);
  EXPECT_EQ(io::torch_head_name("classic_cnn"), "9.weight");
  ASSERT_NE(find_torch_name(io::torch_name_map("classic_cnn"), "9.weight"), nullptr);

  // torchvision.models.resnet18: 20 convolutions and 20 batch norms (5 tensors each) and fc.
  const auto resnet = io::torch_name_map("resnet18", 2);
  EXPECT_EQ(resnet.size(), 20u + 20u * 5 + 2);
  for (const char* name :
       {"conv1.weight", "bn1.running_var", "layer1.0.conv2.weight", "layer2.0.downsample.0.weight",
        "layer2.0.downsample.1.running_mean", "layer4.1.bn2.bias", "fc.weight", "fc.bias"}) {
    const io::TorchName* n = find_torch_name(resnet, name);
    ASSERT_NE(n, nullptr) << name;
    EXPECT_EQ(n->loom, name);
    EXPECT_FALSE(n->optional) << name;
  }
  const io::TorchName* count = find_torch_name(resnet, "layer3.0.bn1.num_batches_tracked");
  ASSERT_NE(count, nullptr);
  EXPECT_TRUE(count->optional);
  EXPECT_EQ(find_torch_name(resnet, "layer1.0.downsample.0.weight"), nullptr);  // same shape
  EXPECT_THROW(io::torch_name_map("vgg16"), Error);
  EXPECT_THROW(io::torch_head_name("vgg16"), Error);
}

TEST(TorchNames, WrapperPrefixesAreRemovedAndCollisionsRefused) {
  nn::NamedTensors state;
  state.insert("module._orig_mod.0.weight", zeros({1}));
  state.insert("_orig_mod.module.0.bias", zeros({1}));
  state.insert("6.weight", zeros({1}));
  EXPECT_EQ(io::strip_torch_wrappers(state).keys(),
            (std::vector<std::string>{"0.weight", "0.bias", "6.weight"}));
  state.insert("module.6.weight", zeros({1}));
  try {
    io::strip_torch_wrappers(state);
    FAIL() << "two tensors named 6.weight were taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("module.6.weight"), std::string::npos) << e.what();
  }
}

TEST(TorchNames, ImportReadsTheHeadAndRefusesWhatDoesNotFit) {
  Generator gen(11);
  auto classic = nn::classic_cnn(4, nn::Init::PyTorch, &gen);
  const io::TorchImport imported =
      io::import_torch_state_dict("classic_cnn", classic->state_dict());
  EXPECT_EQ(imported.num_outputs, 4);
  EXPECT_FALSE(imported.model->is_training());
  const Tensor x = uniform({1, 3, 64, 64}, 0.0, 1.0, kFloat32, &gen);
  EXPECT_EQ(imported.model->forward(x).to_vector<float>(), classic->forward(x).to_vector<float>());

  auto expect_error = [](const std::string& model, const nn::NamedTensors& state,
                         const std::vector<std::string>& fragments) {
    try {
      io::import_torch_state_dict(model, state);
      ADD_FAILURE() << "imported";
    } catch (const Error& e) {
      for (const std::string& f : fragments) {
        EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << f << " in " << e.what();
      }
    }
  };
  expect_error("seed_cnn", classic->state_dict(), {"no \"6.weight\"", "0.weight"});
  nn::NamedTensors extra = classic->state_dict();
  extra.insert("classifier.weight", zeros({2, 2}));
  expect_error("classic_cnn", extra, {"unexpected: classifier.weight", "4 outputs"});
  nn::NamedTensors missing;
  for (const auto& [name, t] : classic->state_dict()) {
    if (name != "3.bias") missing.insert(name, t);
  }
  expect_error("classic_cnn", missing, {"missing: 3.bias"});
  nn::NamedTensors flat_head;
  for (const auto& [name, t] : classic->state_dict()) {
    flat_head.insert(name, name == "9.weight" ? zeros({512}) : t);
  }
  expect_error("classic_cnn", flat_head, {"9.weight", "[outputs, features]", "[512]"});
  expect_error("vgg16", classic->state_dict(), {"vgg16"});
}

}  // namespace
}  // namespace loom
