// nn::Module: registration and dotted names, train/eval propagation, in-place moves, zero_grad,
// state_dict round trips and every load_state_dict error.
#include "testing.h"

namespace loom::nn {
namespace {

// A two-level module with a parameter, a buffer and children, for naming tests.
class Block : public Module {
 public:
  Block() {
    scale = register_parameter("scale", full({2}, 1.5));
    count = register_buffer("count", zeros({1}));
    inner = register_module("inner", std::make_shared<Linear>(2, 3));
  }
  Tensor forward(const Tensor& x) override { return inner->forward(x * scale); }
  std::string type_name() const override { return "Block"; }
  Tensor scale, count;
  std::shared_ptr<Linear> inner;
};

TEST(Module, NamesNestWithDotsInRegistrationOrder) {
  Sequential model{std::make_shared<Block>(), std::make_shared<ReLU>(),
                   std::make_shared<Linear>(3, 1)};
  EXPECT_EQ(model.named_parameters().keys(),
            (std::vector<std::string>{"0.scale", "0.inner.weight", "0.inner.bias", "2.weight",
                                      "2.bias"}));
  EXPECT_EQ(model.named_buffers().keys(), (std::vector<std::string>{"0.count"}));
  EXPECT_EQ(model.named_parameters(/*recurse=*/false).size(), 0u);
  EXPECT_EQ(model.children().size(), 3u);
  EXPECT_EQ(model.parameters().size(), 5u);
  EXPECT_EQ(model.num_parameters(), 2 + 6 + 3 + 3 + 1);
  for (const Tensor& p : model.parameters()) {
    EXPECT_TRUE(p.requires_grad());
    EXPECT_TRUE(p.is_leaf());
  }
  EXPECT_EQ(model.state_dict().keys(),
            (std::vector<std::string>{"0.scale", "0.inner.weight", "0.inner.bias", "2.weight",
                                      "2.bias", "0.count"}));
}

TEST(Module, ParametersAreTheLayersOwnHandles) {
  auto linear = std::make_shared<Linear>(4, 2);
  EXPECT_TRUE(linear->named_parameters().at("weight").is_same(linear->weight));
  EXPECT_TRUE(linear->parameters()[1].is_same(linear->bias));
  EXPECT_EQ(linear->weight.shape(), (Shape{2, 4}));
  auto no_bias = std::make_shared<Linear>(4, 2, /*bias=*/false);
  EXPECT_FALSE(no_bias->bias.defined());
  EXPECT_EQ(no_bias->named_parameters().keys(), (std::vector<std::string>{"weight"}));
}

class Registrar : public Module {
 public:
  Tensor forward(const Tensor& x) override { return x; }
  std::string type_name() const override { return "Registrar"; }
  using Module::register_buffer;
  using Module::register_module;
  using Module::register_parameter;
};

TEST(Module, BadRegistrationsThrow) {
  Registrar m;
  m.register_parameter("w", zeros({2}));
  EXPECT_LOOM_ERROR(m.register_parameter("w", zeros({2})), "\"w\" is already registered");
  EXPECT_LOOM_ERROR(m.register_buffer("w", zeros({2})), "already registered");
  EXPECT_LOOM_ERROR(m.register_module("w", std::make_shared<ReLU>()), "already registered");
  EXPECT_LOOM_ERROR(m.register_parameter("a.b", zeros({2})), "contain no '.'");
  EXPECT_LOOM_ERROR(m.register_parameter("", zeros({2})), "non-empty");
  EXPECT_LOOM_ERROR(m.register_parameter("u", Tensor()), "parameter \"u\" is undefined");
  EXPECT_LOOM_ERROR(m.register_parameter("i", zeros({2}, kInt64)), "must be floating-point");
  EXPECT_LOOM_ERROR(m.register_module("null", ModulePtr()), "is null");
  EXPECT_LOOM_ERROR(m.register_buffer("b", Tensor()), "buffer \"b\" is undefined");
  auto owner = std::make_shared<Registrar>();
  EXPECT_LOOM_ERROR(owner->register_module("me", owner), "cannot be its own child");
  // An integer parameter that does not require grad is fine (frozen lookup tables).
  m.register_parameter("frozen", zeros({2}, kInt64), /*requires_grad=*/false);
  EXPECT_EQ(m.num_parameters(), 4);
  EXPECT_EQ(m.num_parameters(/*trainable_only=*/true), 2);
}

TEST(Module, TrainAndEvalReachEveryDescendant) {
  auto block = std::make_shared<Block>();
  Sequential model{block, std::make_shared<Dropout>(0.5)};
  EXPECT_TRUE(model.is_training());
  model.eval();
  EXPECT_FALSE(model.is_training());
  EXPECT_FALSE(block->is_training());
  EXPECT_FALSE(block->inner->is_training());
  EXPECT_FALSE(model[1]->is_training());
  model.train();
  EXPECT_TRUE(block->inner->is_training());
}

TEST(Module, EvalModeGuardRestoresMixedModes) {
  auto block = std::make_shared<Block>();
  Sequential model{block, std::make_shared<ReLU>()};
  block->inner->eval();  // a frozen part inside a training model
  {
    EvalModeGuard guard(model);
    EXPECT_FALSE(model.is_training());
    EXPECT_FALSE(block->is_training());
  }
  EXPECT_TRUE(model.is_training());
  EXPECT_TRUE(block->is_training());
  EXPECT_FALSE(block->inner->is_training());
}

TEST(Module, ToDtypeConvertsInPlaceAndKeepsIntegerBuffers) {
  auto bn = std::make_shared<BatchNorm2d>(3);
  Tensor held = bn->weight;  // a handle taken before the move
  bn->to(kFloat64);
  EXPECT_EQ(held.dtype(), kFloat64);
  EXPECT_EQ(bn->running_var.dtype(), kFloat64);
  EXPECT_EQ(bn->num_batches_tracked.dtype(), kInt64);
  EXPECT_EQ(held.to_vector<double>(), (std::vector<double>{1, 1, 1}));
  EXPECT_TRUE(held.requires_grad());
  EXPECT_LOOM_ERROR(bn->to(kInt32), "floating-point dtypes only");
  EXPECT_EQ(bn->device(), kCPU);
}

TEST(Module, ZeroGradDropsOrZeroesGradients) {
  auto linear = std::make_shared<Linear>(3, 2);
  Tensor x = randn({4, 3});
  sum(linear->forward(x)).backward();
  ASSERT_TRUE(linear->weight.grad().defined());
  linear->zero_grad(/*set_to_none=*/false);
  ASSERT_TRUE(linear->weight.grad().defined());
  for (float g : linear->weight.grad().to_vector<float>()) EXPECT_EQ(g, 0.0f);
  sum(linear->forward(x)).backward();
  EXPECT_NE(linear->bias.grad().to_vector<float>()[0], 0.0f);
  linear->zero_grad();
  EXPECT_FALSE(linear->weight.grad().defined());
  EXPECT_FALSE(linear->bias.grad().defined());
}

TEST(ModuleStateDict, RoundTripCopiesValuesIntoAnotherModel) {
  manual_seed(11);
  auto a = std::make_shared<Block>();
  auto b = std::make_shared<Block>();
  ASSERT_NE(a->inner->weight.to_vector<float>(), b->inner->weight.to_vector<float>());
  Tensor(a->count).fill_(7);
  Tensor b_weight = b->inner->weight;
  const LoadResult result = b->load_state_dict(a->state_dict());
  EXPECT_TRUE(result.missing_keys.empty());
  EXPECT_TRUE(result.unexpected_keys.empty());
  EXPECT_EQ(b_weight.to_vector<float>(), a->inner->weight.to_vector<float>());
  EXPECT_TRUE(b_weight.is_same(b->inner->weight));  // loaded in place
  EXPECT_EQ(b->count.to_vector<float>(), (std::vector<float>{7}));
  Tensor x = randn({5, 2});
  EXPECT_TENSOR_NEAR(b->forward(x), a->forward(x), 0, 0);
  // The dict shares storage with the module (as PyTorch's), but carries no autograd history.
  const NamedTensors state = a->state_dict();
  EXPECT_FALSE(state.at("scale").requires_grad());
  Tensor(a->scale).fill_(3);
  EXPECT_EQ(state.at("scale").to_vector<float>()[0], 3.0f);
}

TEST(ModuleStateDict, LoadConvertsDtype) {
  auto a = std::make_shared<Linear>(2, 2);
  auto b = std::make_shared<Linear>(2, 2);
  b->to(kFloat64);
  b->load_state_dict(a->state_dict());
  EXPECT_EQ(b->weight.dtype(), kFloat64);
  EXPECT_TENSOR_NEAR(b->weight, a->weight.to(kFloat64), 0, 0);
}

TEST(ModuleStateDict, EveryProblemIsListedInOneError) {
  auto model = std::make_shared<Block>();
  NamedTensors state;
  state.insert("scale", zeros({3}));            // wrong shape
  state.insert("inner.weight", zeros({3, 2}));  // fine
  state.insert("extra", zeros({1}));            // unexpected
  // missing: inner.bias, count
  const std::vector<float> before = model->inner->weight.to_vector<float>();
  try {
    model->load_state_dict(state);
    ADD_FAILURE() << "expected loom::Error";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("load_state_dict into Block"), std::string::npos) << message;
    EXPECT_NE(message.find("missing keys: inner.bias, count"), std::string::npos) << message;
    EXPECT_NE(message.find("unexpected keys: extra"), std::string::npos) << message;
    EXPECT_NE(message.find("scale (expected [2], got [3])"), std::string::npos) << message;
  }
  EXPECT_EQ(model->inner->weight.to_vector<float>(), before);  // nothing copied
}

TEST(ModuleStateDict, NonStrictSkipsMissingAndUnexpectedButNotShapes) {
  auto model = std::make_shared<Block>();
  NamedTensors state{{"inner.weight", full({3, 2}, 0.25)}, {"extra", zeros({1})}};
  const LoadResult result = model->load_state_dict(state, /*strict=*/false);
  EXPECT_EQ(result.missing_keys, (std::vector<std::string>{"scale", "inner.bias", "count"}));
  EXPECT_EQ(result.unexpected_keys, (std::vector<std::string>{"extra"}));
  for (float w : model->inner->weight.to_vector<float>()) EXPECT_EQ(w, 0.25f);
  NamedTensors bad{{"inner.weight", zeros({2, 3})}};
  EXPECT_LOOM_ERROR(model->load_state_dict(bad, /*strict=*/false),
                    "inner.weight (expected [3, 2], got [2, 3])");
  NamedTensors undefined{{"scale", Tensor()}};
  EXPECT_LOOM_ERROR(model->load_state_dict(undefined, false), "\"scale\" is an undefined tensor");
}

TEST(NamedTensors, DuplicateAndMissingNamesThrow) {
  NamedTensors t{{"a", zeros({1})}};
  EXPECT_LOOM_ERROR(t.insert("a", zeros({1})), "duplicate name \"a\"");
  EXPECT_LOOM_ERROR(t.at("b"), "no tensor named \"b\"");
  EXPECT_TRUE(t.contains("a"));
  EXPECT_FALSE(t.contains("b"));
}

}  // namespace
}  // namespace loom::nn
