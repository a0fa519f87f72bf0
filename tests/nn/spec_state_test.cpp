// spec_state() predicts, from a spec alone, the state_dict the built module will have: it must
// agree with every built-in type's constructor (names, shapes, dtypes), since load_model trusts
// it to refuse a file before allocating anything.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "testing.h"

namespace loom::nn {
namespace {

// Sorted by name: state_dict() lists all parameters before all buffers, the prediction goes
// layer by layer.
std::vector<std::string> described(std::vector<StateEntry> state) {
  std::sort(state.begin(), state.end(),
            [](const StateEntry& a, const StateEntry& b) { return a.name < b.name; });
  std::vector<std::string> out;
  for (const StateEntry& e : state)
    out.push_back(e.name + " " + shape_str(e.shape) + " " + dtype_name(e.dtype));
  return out;
}

void expect_predicted(const Module& module) {
  const PredictedState predicted = spec_state(module.spec_json());
  EXPECT_TRUE(predicted.unpredicted.empty()) << module.spec_json();
  EXPECT_EQ(described(predicted.entries), described(module.state_layout())) << module.spec_json();
}

TEST(SpecState, AgreesWithEveryBuiltInTypeAndModel) {
  Sequential every;
  every
      .add(std::make_shared<Conv2d>(3, 4, Size2(3, 2),
                                    Conv2dOptions().stride(2).padding(Padding::Same)))
      .add(std::make_shared<Conv2d>(4, 4, 1, Conv2dOptions(), /*bias=*/false))
      .add(std::make_shared<BatchNorm2d>(4))
      .add(std::make_shared<BasicBlock>(4, 4, 1))   // no downsample
      .add(std::make_shared<BasicBlock>(4, 8, 2))   // with downsample
      .add(std::make_shared<BasicBlock>(8, 16, 1))  // a downsample for the channels alone
      .add(std::make_shared<MaxPool2d>(2))
      .add(std::make_shared<AvgPool2d>(2))
      .add(std::make_shared<GlobalAvgPool2d>())
      .add(std::make_shared<Dropout>(0.1))
      .add(std::make_shared<LeakyReLU>(0.2))
      .add(std::make_shared<Sigmoid>())
      .add(std::make_shared<Tanh>())
      .add(std::make_shared<ReLU>())
      .add(std::make_shared<Identity>())
      .add(std::make_shared<Softmax>(1))
      .add(std::make_shared<Flatten>())
      .add(std::make_shared<Linear>(16, 3))
      .add(std::make_shared<Linear>(3, 2, /*bias=*/false));
  auto inner = std::make_shared<Sequential>();
  inner->add(std::make_shared<Linear>(2, 2));
  every.add("nested", inner);
  expect_predicted(every);
  expect_predicted(*seed_cnn());
  expect_predicted(*classic_cnn());
  expect_predicted(*resnet18(3));
  expect_predicted(Sequential());
}

class StateScale : public Module {
 public:
  Tensor forward(const Tensor& x) override { return x; }
  std::string type_name() const override { return "SpecStateScale"; }
};

TEST(SpecState, UserTypesArePredictedOnlyWithAStateFunction) {
  Sequential model;
  model.add(std::make_shared<Linear>(2, 3)).add(std::make_shared<StateScale>());
  register_module_type("SpecStateScale",
                       [](const std::string&) { return std::make_shared<StateScale>(); });
  PredictedState predicted = spec_state(model.spec_json());
  EXPECT_EQ(predicted.unpredicted, std::vector<std::string>{"1"});
  EXPECT_EQ(described(predicted.entries),
            described(model.state_layout()));  // Linear's are still predicted
  EXPECT_EQ(spec_state(StateScale().spec_json()).unpredicted, std::vector<std::string>{""});
  register_module_type(
      "SpecStateScale", [](const std::string&) { return std::make_shared<StateScale>(); },
      [](const std::string&) {
        return std::vector<StateEntry>{{"factor", {}, kFloat32}};
      });
  predicted = spec_state(model.spec_json());
  EXPECT_TRUE(predicted.unpredicted.empty());
  ASSERT_EQ(predicted.entries.size(), 3u);
  EXPECT_EQ(predicted.entries.back().name, "1.factor");
  EXPECT_LOOM_ERROR(
      register_module_type("Sequential",
                           [](const std::string&) { return std::make_shared<Sequential>(); }),
      "Sequential is built in");
}

TEST(SpecState, RefusesWhatFromSpecRefuses) {
  EXPECT_LOOM_ERROR(spec_state(std::string(1000, '[') + std::string(1000, ']')),
                    "nested deeper than");
  EXPECT_LOOM_ERROR(
      spec_state(R"({"type":"Linear","config":{"in_features":3.5,"out_features":2}})"),
      "in_features");
  EXPECT_LOOM_ERROR(
      spec_state(
          R"({"type":"Sequential","config":{"layers":[{"name":"a","type":"ReLU"},{"name":"a","type":"ReLU"}]}})"),
      "distinct");
  EXPECT_LOOM_ERROR(
      spec_state(R"({"type":"Sequential","config":{"layers":[{"name":"a.b","type":"ReLU"}]}})"),
      "without '.'");
  EXPECT_LOOM_ERROR(spec_state(R"({"type":"Warp"})"), "unknown module type \"Warp\"");
}

}  // namespace
}  // namespace loom::nn
