// The model zoo: summary() shapes and parameter counts (seed_cnn 410,753, classic_cnn 813,217,
// resnet18 from its layer arithmetic), the heads' number of outputs, torchvision names,
// predict(), and the CPU memorisation smoke test.
#include <cmath>

#include "testing.h"
#include "zoo_helpers.h"

namespace loom::nn {
namespace {

std::vector<Shape> shapes_of(const std::vector<LayerSummary>& rows) {
  std::vector<Shape> out;
  for (const LayerSummary& row : rows) out.push_back(row.output_shape);
  return out;
}

TEST(Zoo, SeedCnnSummaryMatchesTheKerasModel) {
  auto model = seed_cnn();
  const auto rows = model->summarize({3, 64, 64});
  EXPECT_EQ(shapes_of(rows), (std::vector<Shape>{{1, 32, 21, 21},
                                                 {1, 32, 21, 21},
                                                 {1, 32, 10, 10},
                                                 {1, 3200},
                                                 {1, 128},
                                                 {1, 128},
                                                 {1, 1}}));
  std::vector<int64_t> params;
  for (const auto& row : rows) params.push_back(row.num_parameters);
  EXPECT_EQ(params, (std::vector<int64_t>{3 * 3 * 3 * 32 + 32, 0, 0, 0, 3200 * 128 + 128, 0, 129}));
  EXPECT_EQ(model->num_parameters(), 410753);
  EXPECT_EQ(rows[0].type, "Conv2d");
  EXPECT_EQ(rows[4].name, "4");
  const std::string table = model->summary({3, 64, 64});
  EXPECT_NE(table.find("Total params: 410,753"), std::string::npos) << table;
  EXPECT_NE(table.find("Trainable params: 410,753"), std::string::npos) << table;
  EXPECT_NE(table.find("0 (Conv2d)"), std::string::npos) << table;
  EXPECT_NE(table.find("(None, 32, 21, 21)"), std::string::npos) << table;
  EXPECT_NE(table.find("409,728"), std::string::npos) << table;
}

TEST(Zoo, ClassicCnnSummary) {
  auto model = classic_cnn();
  const auto rows = model->summarize({3, 64, 64});
  EXPECT_EQ(shapes_of(rows), (std::vector<Shape>{{1, 32, 62, 62},
                                                 {1, 32, 62, 62},
                                                 {1, 32, 31, 31},
                                                 {1, 32, 29, 29},
                                                 {1, 32, 29, 29},
                                                 {1, 32, 14, 14},
                                                 {1, 6272},
                                                 {1, 128},
                                                 {1, 128},
                                                 {1, 1}}));
  // 896 + 9,248 + 802,944 + 129
  EXPECT_EQ(model->num_parameters(), (27 * 32 + 32) + (288 * 32 + 32) + (6272 * 128 + 128) + 129);
  EXPECT_EQ(model->num_parameters(), 813217);
  EXPECT_NE(model->summary({3, 64, 64}).find("Total params: 813,217"), std::string::npos);
}

// ResNet-18's parameter count from its layers: convs (no bias), BatchNorms (2 per channel)
// and the head.
int64_t resnet18_parameters(int64_t outputs) {
  auto conv = [](int64_t in, int64_t out, int64_t k) { return in * out * k * k; };
  auto bn = [](int64_t c) { return 2 * c; };
  int64_t total = conv(3, 64, 3) + bn(64);
  int64_t in = 64;
  for (int64_t width : {64, 128, 256, 512}) {
    for (int block = 0; block < 2; ++block) {
      total += conv(in, width, 3) + bn(width) + conv(width, width, 3) + bn(width);
      if (in != width) total += conv(in, width, 1) + bn(width);
      in = width;
    }
  }
  return total + 512 * outputs + outputs;
}

TEST(Zoo, ResNet18ShapesCountsAndNames) {
  auto model = resnet18();
  EXPECT_EQ(model->num_parameters(), resnet18_parameters(1));
  EXPECT_EQ(model->num_parameters(), 11169345);
  EXPECT_EQ(resnet18(10)->num_parameters(), 11173962);  // the well-known CIFAR ResNet-18 count
  const auto rows = model->summarize({3, 64, 64});
  EXPECT_EQ(shapes_of(rows), (std::vector<Shape>{{1, 64, 64, 64},
                                                 {1, 64, 64, 64},
                                                 {1, 64, 64, 64},
                                                 {1, 64, 64, 64},
                                                 {1, 128, 32, 32},
                                                 {1, 256, 16, 16},
                                                 {1, 512, 8, 8},
                                                 {1, 512},
                                                 {1, 1}}));
  EXPECT_EQ(rows[4].name, "layer2");
  EXPECT_EQ(rows[4].type, "Sequential");
  const NamedTensors state = model->state_dict();
  for (const char* key : {"conv1.weight", "bn1.running_var", "layer1.0.conv1.weight",
                          "layer1.1.bn2.bias", "layer2.0.downsample.0.weight",
                          "layer4.0.downsample.1.num_batches_tracked", "fc.weight", "fc.bias"}) {
    EXPECT_TRUE(state.contains(key)) << key;
  }
  EXPECT_FALSE(state.contains("layer1.0.downsample.0.weight"));
  EXPECT_FALSE(state.contains("conv1.bias"));
  // summarize() ran in eval mode: the running statistics are untouched, the mode restored.
  EXPECT_TRUE(model->is_training());
  EXPECT_EQ(state.at("bn1.num_batches_tracked").item<int64_t>(), 0);
  for (float m : state.at("bn1.running_mean").to_vector<float>()) EXPECT_EQ(m, 0.0f);
  EXPECT_LOOM_ERROR(resnet18(0), "num_outputs must be at least 1");
}

// num_outputs changes only the last Dense: one output is the seed's model (the spec of the
// default, which old model files hold), K outputs are K logits with 128 weights and a bias each,
// and every layer before the head draws the same weights from the same generator.
TEST(Zoo, SmallCnnsTakeTheNumberOfOutputs) {
  using Builder = std::shared_ptr<Sequential> (*)(int64_t, Init, Generator*);
  const struct {
    const char* name;
    Builder build;
    int64_t parameters;
    std::string head;  // the head's state name prefix
  } zoo[] = {{"seed_cnn", seed_cnn, 410753, "6."}, {"classic_cnn", classic_cnn, 813217, "9."}};
  for (const auto& m : zoo) {
    SCOPED_TRACE(m.name);
    Generator g1(4), g3(4);
    auto one = m.build(1, Init::Keras, &g1);
    auto three = m.build(3, Init::Keras, &g3);
    EXPECT_EQ(one->spec_json(), m.build(1, Init::Keras, nullptr)->spec_json());
    EXPECT_EQ(one->spec_json(),
              (m.name == std::string("seed_cnn") ? seed_cnn() : classic_cnn())->spec_json());
    EXPECT_EQ(one->num_parameters(), m.parameters);
    EXPECT_EQ(three->num_parameters(), m.parameters + 2 * 129);
    EXPECT_EQ(three->forward(zeros({2, 3, 64, 64})).shape(), (Shape{2, 3}));
    const NamedTensors a = one->state_dict(), b = three->state_dict();
    ASSERT_EQ(a.keys(), b.keys());
    int compared = 0;
    for (const auto& [name, tensor] : a) {
      if (name.rfind(m.head, 0) == 0) {
        EXPECT_EQ(b.at(name).size(0), 3) << name;  // weight [3, 128], bias [3]
        continue;
      }
      EXPECT_EQ(tensor.to_vector<float>(), b.at(name).to_vector<float>()) << name;
      ++compared;
    }
    EXPECT_EQ(compared, m.head == "6." ? 4 : 6);
    EXPECT_LOOM_ERROR(m.build(0, Init::Keras, nullptr), "num_outputs must be at least 1, got 0");
  }
}

TEST(Zoo, PredictAppliesTheHeadsProbabilityFunction) {
  auto model = seed_cnn();
  const Tensor x = rand({3, 3, 64, 64});
  const auto logits = model->forward(x).to_vector<float>();
  const auto probs = predict(*model, x).to_vector<float>();
  for (size_t i = 0; i < logits.size(); ++i) {
    EXPECT_NEAR(probs[i], 1 / (1 + std::exp(-logits[i])), 1e-6);
  }
  EXPECT_TRUE(model->is_training());
  Sequential classifier{std::make_shared<Linear>(4, 3)};
  const auto p = predict(classifier, randn({2, 4})).to_vector<float>();
  EXPECT_NEAR(p[0] + p[1] + p[2], 1.0, 1e-6);
  Sequential flat{std::make_shared<Identity>()};
  EXPECT_LOOM_ERROR(predict(flat, zeros({2})),
                    "predict: expected the model to output [N, outputs]");
}

TEST(Zoo, SequentialErrors) {
  Sequential empty_model;
  EXPECT_LOOM_ERROR(empty_model.forward(zeros({1})), "forward on a model without layers");
  EXPECT_LOOM_ERROR(empty_model[0], "layer index 0 out of range for 0 layers");
}

TEST(Zoo, ClassicCnnMemorisesSixtyFourImagesOnCpu) {
  manual_seed(0);
  Generator init(1);
  auto model = classic_cnn(Init::Keras, &init);
  const testing_zoo::Batch batch = testing_zoo::random_images(64, kCPU, 2);
  const double before = testing_zoo::accuracy(*model, batch);
  const int steps = testing_zoo::memorise(*model, batch, 200);
  EXPECT_GT(steps, 0) << "not memorised in 200 Adam steps (accuracy before: " << before << ")";
  EXPECT_LT(before, 0.8);  // it really had to learn
  RecordProperty("adam_steps", steps);
  EXPECT_EQ(testing_zoo::accuracy(*model, batch), 1.0);
}

}  // namespace
}  // namespace loom::nn

namespace loom {
namespace {

// A module that is not a Sequential: two children and a parameter of its own.
class Residual : public nn::Module {
 public:
  Residual() {
    a_ = register_module("a", std::make_shared<nn::Linear>(4, 4));
    b_ = register_module("b", std::make_shared<nn::Linear>(4, 2));
    scale_ = register_parameter("scale", ones({4}));
  }
  Tensor forward(const Tensor& x) override { return b_->forward(a_->forward(x) * scale_ + x); }
  std::string type_name() const override { return "Residual"; }

 private:
  std::shared_ptr<nn::Linear> a_, b_;
  Tensor scale_;
};

TEST(Summary, AnyModuleListsItsChildrenAndItsOutputShape) {
  Residual model;
  model.train();
  const std::string text = nn::summary(model, {4});
  EXPECT_NE(text.find("Model: \"Residual\""), std::string::npos) << text;
  EXPECT_NE(text.find("a (Linear)"), std::string::npos) << text;
  EXPECT_NE(text.find("20"), std::string::npos) << text;  // 4 x 4 + 4
  EXPECT_NE(text.find("(its own parameters)"), std::string::npos) << text;
  EXPECT_NE(text.find("Output shape: (None, 2)"), std::string::npos) << text;
  EXPECT_NE(text.find("Total params: 34"), std::string::npos) << text;  // 20 + 10 + 4
  EXPECT_TRUE(model.is_training());                                     // the mode is restored
  // A Sequential keeps its layer-by-layer table.
  auto seq = nn::seed_cnn();
  EXPECT_EQ(nn::summary(*seq, {3, 64, 64}), seq->summary({3, 64, 64}));
}

}  // namespace
}  // namespace loom
