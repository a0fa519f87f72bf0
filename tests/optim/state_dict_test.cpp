// Optimizer checkpoints: state_dict contents, that resuming from one continues exactly like an
// uninterrupted run, that the snapshot does not move, and every load error (which must leave
// the optimizer unchanged).
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "loom/optim/optim.h"
#include "testing.h"

namespace loom {
namespace {

using optim::GroupOptions;
using optim::OptimizerState;

using Factory = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>;

std::vector<Tensor> make_params() {
  Generator gen(21);
  std::vector<Tensor> params = {randn({3, 2}, kFloat64, &gen), randn({5}, kFloat64, &gen)};
  for (Tensor& p : params) p.requires_grad_();
  return params;
}

std::vector<Tensor> copies(const std::vector<Tensor>& params) {
  std::vector<Tensor> out;
  for (const Tensor& p : params) out.push_back(p.detach().clone().requires_grad_());
  return out;
}

// Gradients that depend on the step, so a resumed run that lost its state would diverge.
void step_with_grads(optim::Optimizer& opt, std::vector<Tensor>& params, int step) {
  Generator gen(1000 + step);
  for (Tensor& p : params) p.set_grad(randn(p.shape(), kFloat64, &gen));
  opt.step();
}

const std::vector<std::pair<std::string, Factory>>& factories() {
  static const std::vector<std::pair<std::string, Factory>> all = {
      {"SGD",
       [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
         return std::make_unique<optim::SGD>(
             std::move(p), GroupOptions().with_lr(0.1).with_momentum(0.9).with_nesterov());
       }},
      {"Adam",
       [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
         return std::make_unique<optim::Adam>(std::move(p),
                                              GroupOptions().with_lr(0.01).with_weight_decay(0.1));
       }},
      {"AdamW", [](std::vector<Tensor> p) -> std::unique_ptr<optim::Optimizer> {
         return std::make_unique<optim::AdamW>(std::move(p), GroupOptions().with_lr(0.01));
       }}};
  return all;
}

TEST(OptimizerState, ResumingEqualsAnUninterruptedRun) {
  for (const auto& [name, make] : factories()) {
    SCOPED_TRACE(name);
    std::vector<Tensor> straight = make_params();
    auto opt = make(straight);
    for (int s = 0; s < 5; ++s) step_with_grads(*opt, straight, s);

    std::vector<Tensor> first = make_params();
    auto before = make(first);
    for (int s = 0; s < 2; ++s) step_with_grads(*before, first, s);
    const OptimizerState saved = before->state_dict();
    EXPECT_EQ(saved.optimizer, name);
    std::vector<Tensor> resumed = copies(first);
    auto after = make(resumed);
    after->load_state_dict(saved);
    EXPECT_EQ(after->step_count(1), 2);
    for (int s = 2; s < 5; ++s) step_with_grads(*after, resumed, s);
    for (size_t i = 0; i < straight.size(); ++i) {
      EXPECT_EQ(resumed[i].to_vector<double>(), straight[i].to_vector<double>())
          << "parameter " << i;
    }
  }
}

TEST(OptimizerState, HoldsNamedBuffersStepsAndOptionsAsASnapshot) {
  std::vector<Tensor> params = make_params();
  optim::Adam opt(params, GroupOptions().with_lr(0.01).with_betas(0.8, 0.99));
  step_with_grads(opt, params, 0);
  OptimizerState state = opt.state_dict();
  EXPECT_EQ(state.tensors.size(), 4u);
  ASSERT_TRUE(state.tensors.count("state.1.exp_avg_sq"));
  EXPECT_EQ(state.tensors.at("state.0.exp_avg").shape(), (Shape{3, 2}));
  EXPECT_EQ(state.scalars.at("state.0.step"), 1.0);
  EXPECT_EQ(state.scalars.at("group.0.lr"), 0.01);
  EXPECT_EQ(state.scalars.at("group.0.beta1"), 0.8);
  EXPECT_EQ(state.scalars.at("group.0.num_params"), 2.0);
  // exp_avg after one step is (1 - beta1) g: the snapshot holds it even after more steps.
  Generator gen(1000);
  const Tensor g0 = randn({3, 2}, kFloat64, &gen);
  const std::vector<double> m = state.tensors.at("state.0.exp_avg").to_vector<double>();
  step_with_grads(opt, params, 1);
  const std::vector<double> g = g0.to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(m[i], 0.2 * g[i], 1e-15);
  EXPECT_EQ(state.tensors.at("state.0.exp_avg").to_vector<double>(), m);
  // Options come back with the state: lr here.
  opt.set_lr(0.5);
  opt.load_state_dict(state);
  EXPECT_EQ(opt.lr(), 0.01);
  EXPECT_EQ(opt.step_count(0), 1);
}

TEST(OptimizerState, ReferencesAreTheBuffersThemselvesAndTheDictIsACopy) {
  for (const auto& [name, make] : factories()) {
    SCOPED_TRACE(name);
    std::vector<Tensor> params = make_params();
    auto opt = make(params);
    step_with_grads(*opt, params, 0);
    const OptimizerState copied = opt->state_dict();
    const OptimizerState referenced = opt->state_references();
    EXPECT_EQ(referenced.optimizer, copied.optimizer);
    EXPECT_EQ(referenced.scalars, copied.scalars);
    ASSERT_EQ(referenced.tensors.size(), copied.tensors.size());
    ASSERT_FALSE(referenced.tensors.empty());
    std::map<std::string, std::vector<double>> before;
    for (const auto& [key, t] : copied.tensors) {
      EXPECT_EQ(referenced.tensors.at(key).to_vector<double>(), t.to_vector<double>()) << key;
      EXPECT_NE(referenced.tensors.at(key).raw_data(), t.raw_data()) << key;
      before[key] = t.to_vector<double>();
    }
    step_with_grads(*opt, params, 1);  // changes every buffer in place
    const OptimizerState after = opt->state_dict();
    for (const auto& [key, t] : referenced.tensors) {
      EXPECT_EQ(t.to_vector<double>(), after.tensors.at(key).to_vector<double>()) << key;
      EXPECT_NE(t.to_vector<double>(), before.at(key)) << key;
      EXPECT_EQ(copied.tensors.at(key).to_vector<double>(), before.at(key)) << key;
    }
  }
}

TEST(OptimizerState, LoadErrorsNameTheProblemAndChangeNothing) {
  std::vector<Tensor> params = make_params();
  optim::SGD opt(params, GroupOptions().with_lr(0.1).with_momentum(0.9));
  step_with_grads(opt, params, 0);
  const OptimizerState good = opt.state_dict();
  opt.set_lr(0.3);

  auto expect_refused = [&](OptimizerState bad, const std::string& fragment) {
    EXPECT_LOOM_ERROR(opt.load_state_dict(bad), fragment);
    EXPECT_EQ(opt.lr(), 0.3);  // nothing was applied
    EXPECT_EQ(opt.step_count(0), 1);
  };
  OptimizerState bad = good;
  bad.optimizer = "Adam";
  expect_refused(bad, "SGD.load_state_dict: the state was saved by a Adam optimizer");
  std::vector<Tensor> adam_params = make_params();
  optim::Adam adam(adam_params);
  EXPECT_LOOM_ERROR(adam.load_state_dict(good), "saved by a SGD optimizer");

  bad = good;
  bad.tensors.at("state.1.momentum_buffer") = zeros({4}, kFloat64);
  expect_refused(bad, "\"state.1.momentum_buffer\" has shape [4] but parameter 1 has shape [5]");
  bad = good;
  bad.tensors.erase("state.0.momentum_buffer");
  expect_refused(bad, "missing tensor \"state.0.momentum_buffer\"");
  bad = good;
  bad.tensors["state.0.exp_avg"] = zeros({3, 2}, kFloat64);
  expect_refused(bad, "unexpected tensor \"state.0.exp_avg\"");
  bad = good;
  bad.scalars["group.0.amsgrad"] = 1.0;
  expect_refused(bad, "unexpected scalar \"group.0.amsgrad\"");
  bad = good;
  bad.scalars.erase("state.1.step");
  expect_refused(bad, "missing scalar \"state.1.step\"");
  bad = good;
  bad.scalars.erase("group.0.momentum");
  expect_refused(bad, "missing scalar \"group.0.momentum\"");
  bad = good;
  bad.scalars.at("state.0.step") = 1.5;
  expect_refused(bad, "\"state.0.step\" is 1.5, not a step count");
  bad = good;
  bad.scalars.at("group.0.lr") = -1.0;
  expect_refused(bad, "SGD: invalid learning rate -1");
  bad = good;
  bad.scalars.at("group.0.num_params") = 3.0;
  expect_refused(bad, "parameter group 0 has 2 parameters but the state has 3");
  bad = good;
  bad.scalars["group.1.num_params"] = 1.0;
  expect_refused(bad, "the state has more than 1 parameter groups");
  bad = good;
  bad.scalars.erase("group.0.num_params");
  expect_refused(bad, "the optimizer has 1 parameter groups but the state has 0");

  opt.load_state_dict(good);
  EXPECT_EQ(opt.lr(), 0.1);
}

TEST(OptimizerState, AParameterThatNeverSteppedNeedsNoBuffers) {
  std::vector<Tensor> params = make_params();
  optim::Adam opt(params);
  params[1].set_grad(ones({5}, kFloat64));
  opt.step();
  OptimizerState state = opt.state_dict();
  EXPECT_EQ(state.scalars.at("state.0.step"), 0.0);
  EXPECT_FALSE(state.tensors.count("state.0.exp_avg"));
  std::vector<Tensor> other = copies(params);
  optim::Adam fresh(other);
  fresh.load_state_dict(state);
  EXPECT_EQ(fresh.step_count(0), 0);
  EXPECT_EQ(fresh.step_count(1), 1);
}

}  // namespace
}  // namespace loom
