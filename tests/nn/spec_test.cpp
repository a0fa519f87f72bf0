// JSON specs: every layer type survives spec -> from_spec -> spec; a rebuilt zoo model with the
// original's state_dict computes the same outputs; malformed specs throw clear errors.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "testing.h"

namespace loom::nn {
namespace {

TEST(Spec, EveryLayerTypeRoundTrips) {
  auto inner = std::make_shared<Sequential>();
  inner
      ->add(std::make_shared<Conv2d>(4, 4, Size2(1, 3), Conv2dOptions().padding(Padding::Same),
                                     false))
      .add(std::make_shared<Tanh>());
  Sequential model;
  model
      .add(
          std::make_shared<Conv2d>(3, 4, 3, Conv2dOptions().stride(2, 1).padding(1, 0).dilation(2)))
      .add(std::make_shared<BatchNorm2d>(4, 1e-3, 0.01))
      .add(std::make_shared<LeakyReLU>(0.3))
      .add("block", inner)
      .add(std::make_shared<MaxPool2d>(Size2(2, 1), 1, Size2(1, 0)))
      .add(std::make_shared<AvgPool2d>(3, 2, 1, false))
      .add(std::make_shared<Conv2d>(4, 2, 1, Conv2dOptions().padding(Padding::Valid)))
      .add(std::make_shared<Dropout>(0.2))
      .add(std::make_shared<Sigmoid>())
      .add(std::make_shared<GlobalAvgPool2d>())
      .add(std::make_shared<Dense>(2, 3, false))
      .add(std::make_shared<ReLU>())
      .add(std::make_shared<Identity>())
      .add(std::make_shared<Softmax>(1))
      .add(std::make_shared<Flatten>(0, 1));
  const std::string spec = model.spec_json();
  const ModulePtr rebuilt = from_spec(spec);
  EXPECT_EQ(rebuilt->spec_json(), spec);
  EXPECT_EQ(rebuilt->type_name(), "Sequential");
  EXPECT_EQ(rebuilt->state_dict().keys(), model.state_dict().keys());
  const auto json = nlohmann::json::parse(spec);
  EXPECT_EQ(json["config"]["layers"][3]["name"], "block");
  EXPECT_EQ(json["config"]["layers"][0]["config"]["dilation"], nlohmann::json({2, 2}));
  EXPECT_EQ(json["config"]["layers"][6]["config"]["padding"], "valid");
}

TEST(Spec, RebuiltSeedCnnWithLoadedWeightsGivesTheSameOutputs) {
  auto model = seed_cnn();
  const std::string spec = model->spec_json();
  EXPECT_NE(spec.find("\"stride\":[3,3]"), std::string::npos) << spec;
  const ModulePtr rebuilt = from_spec(spec);
  rebuilt->load_state_dict(model->state_dict());
  const Tensor x = randn({2, 3, 64, 64});
  EXPECT_TENSOR_NEAR(rebuilt->forward(x), model->forward(x), 0, 0);
  EXPECT_EQ(rebuilt->num_parameters(), 410753);
}

TEST(Spec, RebuiltResNetKeepsTorchvisionNamesAndOutputs) {
  auto model = resnet18(3);
  const ModulePtr rebuilt = from_spec(model->spec_json());
  EXPECT_EQ(rebuilt->state_dict().keys(), model->state_dict().keys());
  rebuilt->load_state_dict(model->state_dict());
  model->eval();
  rebuilt->eval();
  const Tensor x = randn({2, 3, 16, 16});  // fully convolutional: any size >= 8 works
  EXPECT_TENSOR_NEAR(rebuilt->forward(x), model->forward(x), 1e-6, 1e-5);
}

class Scale : public Module {
 public:
  explicit Scale(double factor) : factor_(factor) {}
  Tensor forward(const Tensor& x) override { return x * factor_; }
  std::string type_name() const override { return "Scale"; }
  std::string config_json() const override { return nlohmann::json{{"factor", factor_}}.dump(); }
  double factor_;
};

TEST(Spec, UserTypesAreRegisteredExplicitly) {
  Sequential model{std::make_shared<Scale>(2.5)};
  EXPECT_LOOM_ERROR(from_spec(model.spec_json()), "unknown module type \"Scale\"");
  register_module_type("Scale", [](const std::string& config) {
    return std::make_shared<Scale>(nlohmann::json::parse(config).at("factor").get<double>());
  });
  const ModulePtr rebuilt = from_spec(model.spec_json());
  EXPECT_FLOAT_EQ(rebuilt->forward(ones({1})).item<float>(), 2.5f);
  const auto types = registered_module_types();
  EXPECT_NE(std::find(types.begin(), types.end(), "Scale"), types.end());
  EXPECT_NE(std::find(types.begin(), types.end(), "BasicBlock"), types.end());
}

TEST(Spec, MalformedSpecsThrow) {
  EXPECT_LOOM_ERROR(from_spec("{not json"), "from_spec: malformed JSON");
  EXPECT_LOOM_ERROR(register_module_type("", nullptr), "need a name and a factory");
  EXPECT_LOOM_ERROR(from_spec(R"({"type": "BasicBlock", "config": {"in_channels": 4,
                    "out_channels": 4, "stride": 0}})"),
                    "BasicBlock spec: \"stride\" must be an integer in [1, 2147483647], got 0");
  EXPECT_LOOM_ERROR(from_spec("[1, 2]"), "expected {\"type\"");
  EXPECT_LOOM_ERROR(from_spec(R"({"type": "Conv3d"})"), "known types: AvgPool2d BasicBlock");
  EXPECT_LOOM_ERROR(from_spec(R"({"type": "Linear", "config": {"in_features": 3}})"),
                    "from_spec: bad config for Linear");
  EXPECT_LOOM_ERROR(from_spec(R"({"type": "Conv2d", "config": {"in_channels": 3, "out_channels": 4,
                  "kernel": [3, 3], "stride": [1, 1], "dilation": [1, 1], "padding": "full"}})"),
                    "padding must be \"same\", \"valid\" or [h, w], got \"full\"");
  EXPECT_LOOM_ERROR(from_spec(R"({"type": "Conv2d", "config": {"in_channels": 3,
                    "out_channels": 4, "kernel": [3], "stride": [1, 1], "dilation": [1, 1],
                    "padding": [0, 0]}})"),
                    "\"kernel\" must be a [h, w] pair");
  EXPECT_LOOM_ERROR(from_spec(R"({"type": "Sequential", "config": {"layers": 3}})"),
                    "\"layers\" must be an array");
  EXPECT_LOOM_ERROR(
      from_spec(R"({"type": "Sequential", "config": {"layers": [{"type": "ReLU"}]}})"),
      "each layer needs a \"name\"");
  EXPECT_LOOM_ERROR(from_spec(R"({"type": "MaxPool2d", "config": {"kernel": 2, "stride": [2, 2],
                    "padding": [0, 0]}})"),
                    "\"kernel\" must be a [h, w] pair");
}

}  // namespace
}  // namespace loom::nn
