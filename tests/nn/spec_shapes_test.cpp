// SpecShapes tells from a spec alone which inputs a model takes, so that a model file's
// preprocessing can be refused before any image is decoded. Its rules are checked against the
// layers' own forward passes on random CPU inputs of many sizes, so they cannot drift apart.
#include <chrono>
#include <nlohmann/json.hpp>

#include "testing.h"

namespace loom::nn {
namespace {

using Verdict = InputFit::Verdict;

const char* name_of(Verdict v) {
  switch (v) {
    case Verdict::Fits:
      return "Fits";
    case Verdict::TooSmall:
      return "TooSmall";
    case Verdict::TooLarge:
      return "TooLarge";
    case Verdict::Refused:
      return "Refused";
    case Verdict::Unknown:
      return "Unknown";
  }
  return "?";
}

// The spec's verdict on `example` against the module's forward pass on a batch of two of them:
// the forward throws exactly where the rule says the input does not fit, and otherwise gives the
// shape the rule predicts. Unknown promises nothing of the forward.
void expect_rule_matches_forward(Module& module, const Shape& example) {
  const InputFit fit = SpecShapes(module.spec_json()).fit(example);
  SCOPED_TRACE(module.spec_json() + " on " + shape_str(example) + ": " + name_of(fit.verdict) +
               " " + fit.reason);
  if (fit.verdict == Verdict::Unknown) return;
  Shape batch = {2};
  batch.insert(batch.end(), example.begin(), example.end());
  NoGradGuard no_grad;
  Shape out;
  bool threw = false;
  std::string message;
  try {
    out = module.forward(testing::random_leaf(batch, 7).to(kFloat32)).shape();
  } catch (const Error& e) {
    threw = true;
    message = e.what();
  }
  if (threw) {
    EXPECT_NE(fit.verdict, Verdict::Fits) << message;
    return;
  }
  ASSERT_EQ(fit.verdict, Verdict::Fits);
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(out[0], 2);
  EXPECT_EQ(Shape(out.begin() + 1, out.end()), fit.output);
}

TEST(SpecShapes, SeedAndClassicCnnTakeTheirOwnInputSize) {
  // Both round down (seed_cnn's stride-3 kernel and pooling, classic_cnn's pooling), so a few
  // sizes around 64 give the same features as 64 does.
  const struct {
    std::shared_ptr<Sequential> model;
    int64_t smallest, largest;
  } zoo[] = {{seed_cnn(), 60, 65}, {classic_cnn(), 62, 65}};
  for (const auto& [model, smallest, largest] : zoo) {
    const SpecShapes shapes(model->spec_json());
    const InputFit fit = shapes.fit({3, 64, 64});
    EXPECT_EQ(fit.verdict, Verdict::Fits) << fit.reason;
    EXPECT_EQ(fit.output, Shape({1}));
    EXPECT_EQ(shapes.fit({3, 128, 128}).verdict, Verdict::TooLarge);
    EXPECT_EQ(shapes.fit({3, 66, 66}).verdict, Verdict::TooLarge);
    EXPECT_EQ(shapes.fit({3, 4096, 4096}).verdict, Verdict::TooLarge);
    EXPECT_EQ(shapes.fit({3, 32, 32}).verdict, Verdict::TooSmall);
    EXPECT_EQ(shapes.fit({3, 64, 128}).verdict, Verdict::TooLarge);
    const InputFit gray = shapes.fit({1, 64, 64});
    EXPECT_EQ(gray.verdict, Verdict::Refused);
    EXPECT_EQ(gray.layer, "0");
    EXPECT_NE(gray.reason.find("3-channel"), std::string::npos) << gray.reason;
    const auto sides = shapes.square_sides(3, 4096);
    ASSERT_TRUE(sides.has_value());
    EXPECT_EQ(sides->smallest, smallest);
    EXPECT_EQ(sides->largest, largest);
    // Exactly the sides square_sides names fit, and the forward agrees at each.
    for (int64_t s = 1; s <= 80; ++s) {
      EXPECT_EQ(shapes.fit({3, s, s}).verdict == Verdict::Fits, s >= smallest && s <= largest) << s;
      if (s >= 40) expect_rule_matches_forward(*model, {3, s, s});
    }
    expect_rule_matches_forward(*model, {3, 64, 61});
    expect_rule_matches_forward(*model, {3, 64, 70});
  }
  // The refusal names the layer and both numbers.
  const InputFit big = SpecShapes(seed_cnn()->spec_json()).fit({3, 4096, 4096});
  EXPECT_EQ(big.layer, "4");
  EXPECT_NE(big.reason.find("Linear(3200 -> 128)"), std::string::npos) << big.reason;
  EXPECT_NE(big.reason.find("[14883968]"), std::string::npos) << big.reason;
}

TEST(SpecShapes, AFullyConvolutionalModelIsNotPinned) {
  // resnet18 ends in global pooling: any size from 1x1 up fits, so only a caller's own limits
  // bound its input.
  auto model = resnet18(2);
  const SpecShapes shapes(model->spec_json());
  for (int64_t s : {1, 7, 64, 4096}) {
    const InputFit fit = shapes.fit({3, s, s});
    EXPECT_EQ(fit.verdict, Verdict::Fits) << s << ": " << fit.reason;
    EXPECT_EQ(fit.output, Shape({2}));
  }
  const auto sides = shapes.square_sides(3, 4096);
  ASSERT_TRUE(sides.has_value());
  EXPECT_EQ(sides->smallest, 1);
  EXPECT_EQ(sides->largest, 4096);
  model->eval();
  for (int64_t s : {1, 5, 9}) expect_rule_matches_forward(*model, {3, s, s + 2});
  expect_rule_matches_forward(*model, {1, 8, 8});
}

// A user's type, registered without a shape rule and then with one.
class Opaque : public Module {
 public:
  Tensor forward(const Tensor& x) override { return x; }
  std::string type_name() const override { return "SpecShapesOpaque"; }
};

TEST(SpecShapes, ALayerWithoutAShapeRuleLeavesTheAnswerUnknown) {
  register_module_type("SpecShapesOpaque",
                       [](const std::string&) { return std::make_shared<Opaque>(); });
  const std::string opaque =
      R"({"type":"Sequential","config":{"layers":[{"name":"c","type":"Conv2d","config":{"in_channels":3,)"
      R"("out_channels":2,"kernel":[3,3],"stride":[1,1],"padding":[0,0],"dilation":[1,1]}},)"
      R"({"name":"x","type":"SpecShapesOpaque"},{"name":"f","type":"Flatten"},)"
      R"({"name":"l","type":"Linear","config":{"in_features":8,"out_features":1}}]}})";
  const SpecShapes shapes(opaque);
  const InputFit fit = shapes.fit({3, 64, 64});
  EXPECT_EQ(fit.verdict, Verdict::Unknown);
  EXPECT_EQ(fit.layer, "x");
  EXPECT_NE(fit.reason.find("SpecShapesOpaque has no shape rule"), std::string::npos) << fit.reason;
  EXPECT_FALSE(shapes.square_sides(3, 4096).has_value());
  // A layer before it still refuses what it cannot take.
  EXPECT_EQ(shapes.fit({3, 2, 2}).verdict, Verdict::TooSmall);
  EXPECT_EQ(shapes.fit({1, 64, 64}).verdict, Verdict::Refused);

  // With a rule (its shape as it is), the spec pins its input: 2 channels x 2 x 2 = 8 features.
  register_module_type(
      "SpecShapesOpaque", [](const std::string&) { return std::make_shared<Opaque>(); }, nullptr,
      [](const std::string&) -> ShapeRule { return [](const Shape& x) { return fits(x); }; });
  const SpecShapes with_rule(opaque);
  EXPECT_EQ(with_rule.fit({3, 4, 4}).verdict, Verdict::Fits);
  const auto sides = with_rule.square_sides(3, 4096);
  ASSERT_TRUE(sides.has_value());
  EXPECT_EQ(sides->smallest, 4);
  EXPECT_EQ(sides->largest, 4);

  // A Flatten over the batch dimension makes shapes that depend on the batch size.
  Sequential batch_flat;
  batch_flat.add(std::make_shared<Flatten>(0, -1)).add(std::make_shared<Linear>(12, 1));
  EXPECT_EQ(SpecShapes(batch_flat.spec_json()).fit({3, 2, 2}).verdict, Verdict::Unknown);
}

TEST(SpecShapes, ConvRulesMatchTheForwardPass) {
  const std::vector<Conv2dOptions> options = {
      Conv2dOptions(),
      Conv2dOptions().stride(2),
      Conv2dOptions().stride(3, 1),
      Conv2dOptions().padding(1),
      Conv2dOptions().padding(2, 0).stride(2),
      Conv2dOptions().dilation(2),
      Conv2dOptions().dilation(1, 3).padding(1),
      Conv2dOptions().padding(Padding::Same),
      Conv2dOptions().padding(Padding::Same).stride(2).dilation(2),
      Conv2dOptions().padding(Padding::Same).stride(3, 2),
      Conv2dOptions().padding(Padding::Valid).stride(2),
  };
  const std::vector<Size2> kernels = {Size2(1), Size2(3), Size2(3, 2), Size2(4)};
  for (const Conv2dOptions& o : options) {
    for (const Size2& k : kernels) {
      Conv2d conv(2, 3, k, o);
      for (int64_t h : {1, 2, 3, 4, 5, 8, 13}) {
        for (int64_t w : {1, 3, 6}) expect_rule_matches_forward(conv, {2, h, w});
      }
      expect_rule_matches_forward(conv, {3, 8, 8});  // other channels
      expect_rule_matches_forward(conv, {2, 8});     // not an image
    }
  }
}

TEST(SpecShapes, PoolingAndOtherRulesMatchTheForwardPass) {
  std::vector<std::shared_ptr<Module>> layers;
  for (int64_t k : {1, 2, 3}) {
    for (int64_t s : {0, 1, 2}) {
      for (int64_t p : {0, 1}) {  // padding 1 of a kernel of 1 is over half of it: refused
        layers.push_back(std::make_shared<MaxPool2d>(Size2(k, 2), Size2(s, 1), Size2(p, 0)));
        layers.push_back(std::make_shared<AvgPool2d>(Size2(2, k), Size2(1, s), Size2(0, p)));
      }
    }
  }
  layers.push_back(std::make_shared<GlobalAvgPool2d>());
  layers.push_back(std::make_shared<BatchNorm2d>(2));
  layers.push_back(std::make_shared<BasicBlock>(2, 2, 1));
  layers.push_back(std::make_shared<BasicBlock>(2, 4, 2));
  layers.push_back(std::make_shared<BasicBlock>(2, 4, 3));
  for (int64_t start : {-4, -2, 0, 1, 2, 3, 4}) {
    for (int64_t end : {-1, -3, 1, 3, 4}) layers.push_back(std::make_shared<Flatten>(start, end));
  }
  for (int64_t dim : {-5, -4, -1, 0, 3, 4}) layers.push_back(std::make_shared<Softmax>(dim));
  layers.push_back(std::make_shared<Linear>(5, 2));  // on the last dimension of any rank
  layers.push_back(std::make_shared<ReLU>());
  layers.push_back(std::make_shared<LeakyReLU>(0.1));
  layers.push_back(std::make_shared<Sigmoid>());
  layers.push_back(std::make_shared<Tanh>());
  layers.push_back(std::make_shared<Dropout>(0.5));
  layers.push_back(std::make_shared<Identity>());
  for (const auto& layer : layers) {
    layer->eval();
    for (const Shape& example :
         std::vector<Shape>{{2, 1, 1}, {2, 2, 5}, {2, 5, 3}, {2, 7, 5}, {3, 4, 5}, {5}, {4, 5}}) {
      expect_rule_matches_forward(*layer, example);
    }
  }
}

// A one-layer Sequential spec of `type` with `config` (JSON), named "a": for layers too large to
// build in a test.
std::string layer_spec(const std::string& type, const std::string& config) {
  return R"({"type":"Sequential","config":{"layers":[{"name":"a","type":")" + type +
         R"(","config":)" + config + "}]}}";
}

TEST(SpecShapes, LargeSizesAreRefusedWithoutOverflow) {
  constexpr int64_t kMax = 2147483647;
  Sequential padded;  // 2^32 a side after it
  padded.add(std::make_shared<Conv2d>(3, 1, 1, Conv2dOptions().padding(kMax)));
  EXPECT_EQ(SpecShapes(padded.spec_json()).fit({3, 64, 64}).verdict, Verdict::TooLarge);
  const SpecShapes wide(layer_spec(
      "Conv2d",
      R"({"in_channels":3,"out_channels":2147483647,"kernel":[1,1],"stride":[1,1],"padding":[0,0],"dilation":[1,1]})"));
  EXPECT_EQ(wide.fit({3, 1, 1}).verdict, Verdict::Fits);  // 2^31 - 1 elements
  const InputFit fit = wide.fit({3, 2, 1});
  EXPECT_EQ(fit.verdict, Verdict::TooLarge);
  EXPECT_EQ(fit.layer, "a");
  EXPECT_EQ(wide.fit({3, kMax, kMax}).verdict, Verdict::TooLarge);
  // 'same' padding's arithmetic at the largest kernel, stride and dilation.
  const SpecShapes same(layer_spec(
      "Conv2d",
      R"({"in_channels":3,"out_channels":1,"kernel":[2147483647,1],"stride":[2147483647,2147483647],)"
      R"("padding":"same","dilation":[2147483647,2147483647]})"));
  const InputFit same_fit = same.fit({3, 1 << 14, 1 << 14});
  EXPECT_EQ(same_fit.verdict, Verdict::Fits) << same_fit.reason;
  EXPECT_EQ(same_fit.output, Shape({1, 1, 1}));
  // A stride that skips all but one pixel takes any size: it fits, and the spec does not pin it.
  Sequential skipping;
  skipping.add(std::make_shared<Conv2d>(3, 1, 1, Conv2dOptions().stride(kMax)))
      .add(std::make_shared<Flatten>())
      .add(std::make_shared<Linear>(1, 1));
  const auto sides = SpecShapes(skipping.spec_json()).square_sides(3, 4096);
  ASSERT_TRUE(sides.has_value());
  EXPECT_EQ(sides->largest, 4096);
  EXPECT_EQ(SpecShapes(skipping.spec_json()).fit({3, 0, 4}).verdict, Verdict::TooSmall);
}

TEST(SpecShapes, MalformedConfigsAreErrors) {
  const std::string conv =
      R"({"in_channels":3,"out_channels":2,"kernel":[3,3],"stride":[1,1],"padding":[0,0],"dilation":[1,1]})";
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"Conv2d",
       R"({"in_channels":3,"out_channels":2,"kernel":"3","stride":[1,1],"padding":[0,0],"dilation":[1,1]})"},
      {"Conv2d",
       R"({"in_channels":3,"out_channels":2,"kernel":[3,3],"stride":[0,1],"padding":[0,0],"dilation":[1,1]})"},
      {"Conv2d",
       R"({"in_channels":3,"out_channels":2,"kernel":[3,3],"stride":[1,1],"padding":"full","dilation":[1,1]})"},
      {"Conv2d",
       R"({"in_channels":3,"kernel":[3,3],"stride":[1,1],"padding":[0,0],"dilation":[1,1]})"},
      {"Linear", R"({"in_features":3200.5,"out_features":1})"},
      {"Linear", R"({"in_features":-1,"out_features":1})"},
      {"MaxPool2d", R"({"kernel":[2,2],"stride":[-1,2],"padding":[0,0]})"},
      {"AvgPool2d", R"({"kernel":[0,2],"stride":[2,2],"padding":[0,0]})"},
      {"BatchNorm2d", R"({"num_features":"8"})"},
      {"Flatten", R"({"start_dim":1.5})"},
      {"Softmax", R"({"dim":1000})"},
      {"BasicBlock", R"({"in_channels":3,"out_channels":3,"stride":0})"},
      {"NoSuchType", "{}"},
  };
  for (const auto& [type, config] : bad) {
    SCOPED_TRACE(type + " " + config);
    EXPECT_LOOM_ERROR(SpecShapes(layer_spec(type, config)), "layer \"a\"");
  }
  EXPECT_NO_THROW(SpecShapes(layer_spec("Conv2d", conv)));
  EXPECT_LOOM_ERROR(SpecShapes("{\"type\":"), "from_spec");
  EXPECT_LOOM_ERROR(SpecShapes(std::string(1000, '[') + std::string(1000, ']')),
                    "nested deeper than");
  // Pooling's padding over half the kernel builds, as it always has, and is refused at any size.
  const InputFit padded =
      SpecShapes(layer_spec("MaxPool2d", R"({"kernel":[2,2],"stride":[2,2],"padding":[2,0]})"))
          .fit({3, 8, 8});
  EXPECT_EQ(padded.verdict, Verdict::Refused);
  EXPECT_NE(padded.reason.find("at most half the kernel"), std::string::npos) << padded.reason;
}

TEST(SpecShapes, AWideSpecIsAskedAboutInLinearTime) {
  Sequential wide;
  for (int i = 0; i < 20000; ++i) wide.add(std::make_shared<ReLU>());
  wide.add(std::make_shared<Flatten>()).add(std::make_shared<Linear>(3 * 64 * 64, 1));
  const std::string spec = wide.spec_json();
  const auto start = std::chrono::steady_clock::now();
  const SpecShapes shapes(spec);
  const auto sides = shapes.square_sides(3, 4096);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
            2.0 * testing::kSlowdown);
  ASSERT_TRUE(sides.has_value());
  EXPECT_EQ(sides->smallest, 64);
  EXPECT_EQ(sides->largest, 64);
}

}  // namespace
}  // namespace loom::nn
