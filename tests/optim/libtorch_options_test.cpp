// The libtorch-shaped optimizer forms (Adam(params, lr), AdamOptions(...).betas(...), SGDOptions,
// AdamWOptions): each takes the same steps as the GroupOptions form it stands for, its getters
// read back what was set, and a bad value is refused as GroupOptions' is.
#include <tuple>
#include <vector>

#include "loom/optim/optim.h"
#include "testing.h"

namespace loom {
namespace libtorch_options_test {

using optim::Adam;
using optim::AdamOptions;
using optim::AdamW;
using optim::AdamWOptions;
using optim::GroupOptions;
using optim::Optimizer;
using optim::SGD;
using optim::SGDOptions;

// Two parameters of different shapes with random values, the same for every call.
std::vector<Tensor> fresh_params() {
  Generator gen(7);
  return {randn({3, 4}, {}, &gen).requires_grad_(), randn({5}, {}, &gen).requires_grad_()};
}

// Runs four steps with random gradients (the same sequence for every optimizer) and returns the
// parameters' values.
std::vector<std::vector<float>> run_steps(Optimizer& optimizer, std::vector<Tensor>& params) {
  Generator gen(11);
  for (int step = 0; step < 4; ++step) {
    for (Tensor& p : params) p.set_grad(randn(p.shape(), {}, &gen));
    optimizer.step();
  }
  std::vector<std::vector<float>> values;
  for (const Tensor& p : params) values.push_back(p.to_vector<float>());
  return values;
}

// The libtorch form and the GroupOptions form, stepped alike, end bit-identical; and both moved.
template <typename Libtorch, typename Loom>
void expect_same_updates(Libtorch make_libtorch, Loom make_loom) {
  std::vector<Tensor> a = fresh_params(), b = fresh_params();
  const std::vector<float> start = a[0].to_vector<float>();
  auto first = make_libtorch(a);
  auto second = make_loom(b);
  const auto got = run_steps(*first, a), want = run_steps(*second, b);
  EXPECT_EQ(got, want);
  EXPECT_NE(got[0], start) << "the optimizer did not move the parameters";
  EXPECT_EQ(first->name(), second->name());
}

TEST(LibtorchOptions, AdamWithALearningRateStepsAsGroupOptions) {
  expect_same_updates([](std::vector<Tensor> p) { return std::make_unique<Adam>(p, 3e-2); },
                      [](std::vector<Tensor> p) {
                        return std::make_unique<Adam>(p, GroupOptions().with_lr(3e-2));
                      });
  // And not as another learning rate: the comparison can fail.
  std::vector<Tensor> a = fresh_params(), b = fresh_params();
  Adam one(a, 3e-2), other(b, 1e-2);
  EXPECT_NE(run_steps(one, a), run_steps(other, b));
}

TEST(LibtorchOptions, AdamOptionsStepAsGroupOptions) {
  expect_same_updates(
      [](std::vector<Tensor> p) {
        return std::make_unique<Adam>(
            p, AdamOptions(2e-2).betas({0.8, 0.99}).eps(1e-6).weight_decay(0.1));
      },
      [](std::vector<Tensor> p) {
        return std::make_unique<Adam>(
            p, GroupOptions().with_lr(2e-2).with_betas(0.8, 0.99).with_eps(1e-6).with_weight_decay(
                   0.1));
      });
}

TEST(LibtorchOptions, AdamWFormsKeepTheDecoupledDefaultDecay) {
  expect_same_updates([](std::vector<Tensor> p) { return std::make_unique<AdamW>(p, 5e-2); },
                      [](std::vector<Tensor> p) {
                        return std::make_unique<AdamW>(
                            p, GroupOptions().with_lr(5e-2).with_weight_decay(1e-2));
                      });
  expect_same_updates(
      [](std::vector<Tensor> p) {
        return std::make_unique<AdamW>(p, AdamWOptions(5e-2).weight_decay(0.3).betas({0.85, 0.95}));
      },
      [](std::vector<Tensor> p) {
        return std::make_unique<AdamW>(
            p, GroupOptions().with_lr(5e-2).with_weight_decay(0.3).with_betas(0.85, 0.95));
      });
  std::vector<Tensor> params = fresh_params();
  EXPECT_EQ(AdamW(params, 1e-3).options().weight_decay, 1e-2);
  EXPECT_EQ(Adam(params, 1e-3).options().weight_decay, 0.0);
}

TEST(LibtorchOptions, SGDFormsStepAsGroupOptions) {
  expect_same_updates(
      [](std::vector<Tensor> p) { return std::make_unique<SGD>(p, 0.1); },
      [](std::vector<Tensor> p) { return std::make_unique<SGD>(p, GroupOptions().with_lr(0.1)); });
  expect_same_updates(
      [](std::vector<Tensor> p) {
        return std::make_unique<SGD>(
            p, SGDOptions(0.1).momentum(0.9).nesterov(true).weight_decay(1e-3));
      },
      [](std::vector<Tensor> p) {
        return std::make_unique<SGD>(
            p,
            GroupOptions().with_lr(0.1).with_momentum(0.9).with_nesterov().with_weight_decay(1e-3));
      });
  expect_same_updates(
      [](std::vector<Tensor> p) {
        return std::make_unique<SGD>(p, SGDOptions(0.05).momentum(0.5).dampening(0.25));
      },
      [](std::vector<Tensor> p) {
        return std::make_unique<SGD>(
            p, GroupOptions().with_lr(0.05).with_momentum(0.5).with_dampening(0.25));
      });
}

TEST(LibtorchOptions, ParamGroupsTakeTheOptionTypesAsDefaults) {
  // The first group keeps the defaults AdamOptions gives; the second has its own learning rate.
  auto groups = [](std::vector<Tensor> p) {
    return std::vector<optim::ParamGroup>{{{p[0]}, std::nullopt},
                                          {{p[1]}, GroupOptions().with_lr(0.5)}};
  };
  expect_same_updates(
      [&](std::vector<Tensor> p) {
        return std::make_unique<Adam>(groups(p), AdamOptions(0.01).betas({0.5, 0.9}));
      },
      [&](std::vector<Tensor> p) {
        return std::make_unique<Adam>(groups(p), GroupOptions().with_lr(0.01).with_betas(0.5, 0.9));
      });
  std::vector<Tensor> params = fresh_params();
  SGD sgd(groups(params), SGDOptions(0.2));
  EXPECT_EQ(sgd.lr(0), 0.2);
  EXPECT_EQ(sgd.lr(1), 0.5);
  AdamW adamw(groups(params), AdamWOptions(0.03));
  EXPECT_EQ(adamw.options(0).weight_decay, 1e-2);
}

TEST(LibtorchOptions, GettersReadBackWhatWasSet) {
  const AdamOptions defaults;
  EXPECT_EQ(defaults.lr(), 1e-3);
  EXPECT_EQ(defaults.betas(), std::make_tuple(0.9, 0.999));
  EXPECT_EQ(defaults.eps(), 1e-8);
  EXPECT_EQ(defaults.weight_decay(), 0.0);
  AdamOptions a(0.2);
  a.lr(0.3).betas(std::make_tuple(0.7, 0.8)).eps(1e-5).weight_decay(0.01);
  a.eps_placement(optim::EpsilonPlacement::Keras);
  EXPECT_EQ(a.lr(), 0.3);
  EXPECT_EQ(a.betas(), std::make_tuple(0.7, 0.8));
  EXPECT_EQ(a.eps(), 1e-5);
  EXPECT_EQ(a.weight_decay(), 0.01);
  EXPECT_EQ(a.group_options().eps_placement, optim::EpsilonPlacement::Keras);
  EXPECT_EQ(AdamWOptions().weight_decay(), 1e-2);
  const SGDOptions s = SGDOptions(0.4).momentum(0.9).dampening(0.1).nesterov(true);
  EXPECT_EQ(s.lr(), 0.4);
  EXPECT_EQ(s.momentum(), 0.9);
  EXPECT_EQ(s.dampening(), 0.1);
  EXPECT_TRUE(s.nesterov());
}

TEST(LibtorchOptions, BadValuesAreRefusedAsGroupOptionsAre) {
  std::vector<Tensor> params = fresh_params();
  EXPECT_THROW(Adam(params, -1.0), Error);
  EXPECT_THROW(Adam(params, AdamOptions(1e-3).betas({1.5, 0.999})), Error);
  EXPECT_THROW(AdamW(params, AdamWOptions().eps(-1.0)), Error);
  EXPECT_THROW(SGD(params, SGDOptions(0.1).momentum(-0.5)), Error);
  EXPECT_THROW(SGD(params, std::nan("")), Error);
}

}  // namespace libtorch_options_test
}  // namespace loom
