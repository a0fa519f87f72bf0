// SGD, Adam and AdamW on the CPU: their first steps against values worked out in this file from
// each formula in double precision, the differences between their variants, parameter groups,
// skipped parameters, zero_grad, and every option and parameter error.
#include <cmath>

#include "loom/optim/optim.h"
#include "testing.h"

namespace loom {
namespace {

using optim::Adam;
using optim::AdamW;
using optim::EpsilonPlacement;
using optim::GroupOptions;
using optim::SGD;

const std::vector<double> kStart = {0.5, -1.25, 2.0, 0.03};
// A different gradient per step, with signs and sizes that vary between elements.
const std::vector<std::vector<double>> kGrads = {
    {0.3, -0.7, 1.1, -0.02}, {-0.45, 0.2, 0.9, 0.6}, {0.15, -1.3, -0.4, 0.05}};

Tensor leaf(const std::vector<double>& values) {
  Tensor t = from_vector(values);
  t.requires_grad_();
  return t;
}

void set_grad(Tensor& p, const std::vector<double>& g) { p.set_grad(from_vector(g)); }

void expect_values(const Tensor& p, const std::vector<double>& expected, double tol = 1e-12) {
  const std::vector<double> got = p.to_vector<double>();
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], tol) << "element " << i;
}

// PyTorch's SGD, element by element.
std::vector<double> reference_sgd(const GroupOptions& o, int steps) {
  std::vector<double> p = kStart, buf(p.size());
  for (int s = 0; s < steps; ++s) {
    for (size_t i = 0; i < p.size(); ++i) {
      double g = kGrads[s][i] + o.weight_decay * p[i];
      if (o.momentum != 0.0) {
        buf[i] = s == 0 ? g : o.momentum * buf[i] + (1.0 - o.dampening) * g;
        g = o.nesterov ? g + o.momentum * buf[i] : buf[i];
      }
      p[i] -= o.lr * g;
    }
  }
  return p;
}

// Adam as the papers and both libraries write it, with the bias corrections spelled out.
std::vector<double> reference_adam(const GroupOptions& o, bool decoupled, int steps) {
  std::vector<double> p = kStart, m(p.size()), v(p.size());
  for (int s = 0; s < steps; ++s) {
    const double t = s + 1;
    const double bc1 = 1.0 - std::pow(o.beta1, t), bc2 = 1.0 - std::pow(o.beta2, t);
    for (size_t i = 0; i < p.size(); ++i) {
      double g = kGrads[s][i];
      if (decoupled) {
        p[i] = p[i] - o.lr * o.weight_decay * p[i];
      } else {
        g = g + o.weight_decay * p[i];
      }
      m[i] = o.beta1 * m[i] + (1.0 - o.beta1) * g;
      v[i] = o.beta2 * v[i] + (1.0 - o.beta2) * g * g;
      if (o.eps_placement == EpsilonPlacement::PyTorch) {
        p[i] -= o.lr * (m[i] / bc1) / (std::sqrt(v[i] / bc2) + o.eps);
      } else {
        const double lr_t = o.lr * std::sqrt(bc2) / bc1;
        p[i] -= lr_t * m[i] / (std::sqrt(v[i]) + o.eps);
      }
    }
  }
  return p;
}

template <typename Opt>
Tensor run_steps(const GroupOptions& o, int steps) {
  Tensor p = leaf(kStart);
  Opt opt({p}, o);
  for (int s = 0; s < steps; ++s) {
    set_grad(p, kGrads[s]);
    opt.step();
  }
  return p;
}

TEST(SGD, PlainStepByHand) {
  Tensor p = leaf(kStart);
  SGD opt({p}, GroupOptions().with_lr(0.1));
  set_grad(p, kGrads[0]);
  opt.step();
  expect_values(p, {0.5 - 0.03, -1.25 + 0.07, 2.0 - 0.11, 0.03 + 0.002});
  EXPECT_EQ(opt.step_count(0), 1);
  EXPECT_EQ(opt.name(), "SGD");
}

TEST(SGD, MomentumStepsByHand) {
  // Step 1 takes the gradient as the buffer; step 2: b = 0.9 * 0.3 + (-0.45) = -0.18.
  Tensor p = leaf(kStart);
  SGD opt({p}, GroupOptions().with_lr(0.1).with_momentum(0.9));
  set_grad(p, kGrads[0]);
  opt.step();
  set_grad(p, kGrads[1]);
  opt.step();
  EXPECT_NEAR(p.to_vector<double>()[0], 0.5 - 0.1 * 0.3 - 0.1 * (-0.18), 1e-14);
}

TEST(SGD, ThreeStepsOfEveryVariantMatchTheFormula) {
  const std::vector<GroupOptions> variants = {
      GroupOptions().with_lr(0.1),
      GroupOptions().with_lr(0.05).with_weight_decay(0.1),
      GroupOptions().with_lr(0.1).with_momentum(0.9),
      GroupOptions().with_lr(0.1).with_momentum(0.8).with_dampening(0.3).with_weight_decay(0.05),
      GroupOptions().with_lr(0.07).with_momentum(0.9).with_nesterov(),
      GroupOptions().with_lr(0.07).with_momentum(0.5).with_nesterov().with_weight_decay(0.2)};
  for (size_t k = 0; k < variants.size(); ++k) {
    SCOPED_TRACE("variant " + std::to_string(k));
    for (int steps = 1; steps <= 3; ++steps)
      expect_values(run_steps<SGD>(variants[k], steps), reference_sgd(variants[k], steps));
  }
  // Nesterov and plain momentum really differ after the first step.
  const GroupOptions heavy = GroupOptions().with_lr(0.1).with_momentum(0.9);
  EXPECT_GT(std::abs(run_steps<SGD>(heavy, 2).to_vector<double>()[0] -
                     run_steps<SGD>(GroupOptions(heavy).with_nesterov(), 2).to_vector<double>()[0]),
            1e-3);
}

TEST(SGD, UpdatesFloat32AndNonContiguousParameters) {
  Tensor p = from_vector<float>({1.5f, -2.0f, 0.25f});
  p.requires_grad_();
  SGD opt({p}, GroupOptions().with_lr(0.5));
  p.set_grad(from_vector<float>({1.0f, 0.5f, -0.25f}));
  opt.step();
  EXPECT_EQ(p.to_vector<float>(), (std::vector<float>{1.0f, -2.25f, 0.375f}));

  // A transposed leaf: the update lands in the right elements of its storage.
  Tensor base = from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor t = base.t();
  t.requires_grad_();
  ASSERT_FALSE(t.is_contiguous());
  SGD opt_t({t}, GroupOptions().with_lr(1.0).with_momentum(0.5));
  t.set_grad(from_vector<double>({1, 10, 100, 1000, 10000, 100000}, {3, 2}));
  opt_t.step();
  // t[i][j] = base[j][i]; grad[i][j] = 10^(2i+j).
  EXPECT_EQ(base.to_vector<double>(), (std::vector<double>{0, -98, -9997, -6, -995, -99994}));
}

TEST(Adam, FirstStepMovesEachElementByAboutLr) {
  // Step 1: m/bc1 = g and v/bc2 = g^2, so p -= lr * g / (|g| + eps).
  Tensor p = leaf(kStart);
  Adam opt({p}, GroupOptions().with_lr(0.01));
  set_grad(p, kGrads[0]);
  opt.step();
  std::vector<double> expected;
  for (size_t i = 0; i < kStart.size(); ++i) {
    expected.push_back(kStart[i] - 0.01 * kGrads[0][i] / (std::abs(kGrads[0][i]) + 1e-8));
  }
  expect_values(p, expected, 1e-14);
  EXPECT_EQ(opt.name(), "Adam");
}

TEST(Adam, ThreeStepsOfEveryVariantMatchTheFormula) {
  const std::vector<GroupOptions> variants = {
      GroupOptions().with_lr(0.01),
      GroupOptions().with_lr(0.02).with_betas(0.8, 0.95).with_eps(1e-3),
      GroupOptions().with_lr(0.02).with_betas(0.8, 0.95).with_eps(0.05).with_eps_placement(
          EpsilonPlacement::Keras),
      GroupOptions().with_lr(0.03).with_weight_decay(0.1).with_eps(1e-2)};
  for (size_t k = 0; k < variants.size(); ++k) {
    SCOPED_TRACE("variant " + std::to_string(k));
    for (int steps = 1; steps <= 3; ++steps) {
      expect_values(run_steps<Adam>(variants[k], steps), reference_adam(variants[k], false, steps));
      expect_values(run_steps<AdamW>(variants[k], steps), reference_adam(variants[k], true, steps));
    }
  }
}

TEST(Adam, KerasEpsilonPlacementDiffersFromPyTorchs) {
  const GroupOptions torch_style = GroupOptions().with_lr(0.1).with_eps(0.1);
  const GroupOptions keras_style =
      GroupOptions(torch_style).with_eps_placement(EpsilonPlacement::Keras);
  const std::vector<double> a = run_steps<Adam>(torch_style, 2).to_vector<double>();
  const std::vector<double> b = run_steps<Adam>(keras_style, 2).to_vector<double>();
  // Step 1 by hand with g = 0.3: PyTorch 0.5 - 0.1 * 0.3 / (0.3 + 0.1) = 0.425; Keras divides by
  // sqrt(v) + eps = sqrt(0.001 * 0.09) + 0.1 with lr_t = 0.1 * sqrt(0.001) / 0.1.
  Tensor p1 = run_steps<Adam>(keras_style, 1);
  const double keras_step1 =
      0.5 - 0.1 * std::sqrt(0.001) / 0.1 * (0.1 * 0.3) / (std::sqrt(0.001 * 0.09) + 0.1);
  EXPECT_NEAR(run_steps<Adam>(torch_style, 1).to_vector<double>()[0], 0.425, 1e-14);
  EXPECT_NEAR(p1.to_vector<double>()[0], keras_step1, 1e-14);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_GT(std::abs(a[i] - b[i]), 1e-3) << i;
}

TEST(Adam, AdamWDecouplesWeightDecay) {
  const GroupOptions o = GroupOptions().with_lr(0.05).with_weight_decay(0.5);
  const std::vector<double> adam = run_steps<Adam>(o, 3).to_vector<double>();
  const std::vector<double> adamw = run_steps<AdamW>(o, 3).to_vector<double>();
  for (size_t i = 0; i < adam.size(); ++i) EXPECT_GT(std::abs(adam[i] - adamw[i]), 1e-4) << i;
  // AdamW's step 1 by hand: shrink, then the sign step: 2.0 * (1 - 0.025) - 0.05 * 1.1 / (1.1 +
  // 1e-8).
  EXPECT_NEAR(run_steps<AdamW>(o, 1).to_vector<double>()[2],
              2.0 * 0.975 - 0.05 * 1.1 / (1.1 + 1e-8), 1e-14);
  // Without decay the two are the same optimizer.
  const GroupOptions plain = GroupOptions().with_lr(0.05);
  EXPECT_EQ(run_steps<Adam>(plain, 3).to_vector<double>(),
            run_steps<AdamW>(plain, 3).to_vector<double>());
  EXPECT_EQ(AdamW::default_options().weight_decay, 1e-2);
  Tensor p = leaf(kStart);
  EXPECT_EQ(AdamW({p}).options().weight_decay, 1e-2);
  EXPECT_EQ(AdamW({p}).name(), "AdamW");
}

TEST(Optimizer, GroupsHaveTheirOwnOptions) {
  Tensor a = leaf({1.0, 2.0}), b = leaf({3.0});
  SGD opt(
      {optim::ParamGroup{{a}, std::nullopt}, optim::ParamGroup{{b}, GroupOptions().with_lr(1.0)}},
      GroupOptions().with_lr(0.1));
  EXPECT_EQ(opt.param_groups().size(), 2u);
  EXPECT_EQ(opt.lr(0), 0.1);
  EXPECT_EQ(opt.lr(1), 1.0);
  a.set_grad(from_vector<double>({1.0, -1.0}));
  b.set_grad(from_vector<double>({2.0}));
  opt.step();
  expect_values(a, {0.9, 2.1});
  expect_values(b, {1.0});
  opt.set_lr(1, 0.5);
  EXPECT_EQ(opt.lr(1), 0.5);
  opt.set_lr(0.25);
  EXPECT_EQ(opt.lr(0), 0.25);
  EXPECT_EQ(opt.lr(1), 0.25);
  Tensor c = leaf({4.0});
  opt.add_param_group({{c}, std::nullopt});
  EXPECT_EQ(opt.lr(2), 0.1);  // the optimizer's defaults
  EXPECT_LOOM_ERROR(opt.lr(3), "parameter group 3 does not exist");
  EXPECT_LOOM_ERROR(opt.step_count(4), "parameter 4 does not exist");
}

TEST(Optimizer, SkipsParametersWithoutGradient) {
  Tensor a = leaf({1.0, 2.0}), b = leaf({3.0});
  Adam opt({a, b}, GroupOptions().with_lr(0.1));
  b.set_grad(from_vector<double>({0.5}));
  opt.step();
  expect_values(a, {1.0, 2.0});
  EXPECT_EQ(opt.step_count(0), 0);
  EXPECT_EQ(opt.step_count(1), 1);
  EXPECT_NEAR(b.to_vector<double>()[0], 3.0 - 0.1, 1e-7);
  // a's first step later still gets step-1 bias correction.
  a.set_grad(from_vector<double>({-2.0, 4.0}));
  opt.step();
  EXPECT_EQ(opt.step_count(0), 1);
  EXPECT_EQ(opt.step_count(1), 2);
  expect_values(a, {1.1, 1.9}, 1e-7);
}

TEST(Optimizer, ZeroGradDropsOrZeroesGradients) {
  Tensor a = leaf({1.0, 2.0}), b = leaf({3.0});
  SGD opt({a, b}, GroupOptions().with_lr(0.1));
  a.set_grad(from_vector<double>({1.0, -1.0}));
  opt.zero_grad(false);
  ASSERT_TRUE(a.grad().defined());
  EXPECT_EQ(a.grad().to_vector<double>(), (std::vector<double>{0.0, 0.0}));
  EXPECT_FALSE(b.grad().defined());
  opt.zero_grad();
  EXPECT_FALSE(a.grad().defined());
}

TEST(Optimizer, RejectsBadParameters) {
  Tensor a = leaf({1.0, 2.0});
  const GroupOptions o = GroupOptions().with_lr(0.1);
  EXPECT_LOOM_ERROR(SGD(std::vector<Tensor>{}, o), "SGD: got an empty parameter list");
  EXPECT_LOOM_ERROR(SGD(std::vector<optim::ParamGroup>{}, o), "empty list of parameter groups");
  EXPECT_LOOM_ERROR(SGD({a, Tensor()}, o), "parameter 1 is an undefined tensor");
  EXPECT_LOOM_ERROR(Adam({from_vector<int64_t>({1, 2})}), "dtype int64");
  EXPECT_LOOM_ERROR(Adam({a.narrow(0, 0, 1)}), "not a leaf");
  EXPECT_LOOM_ERROR(SGD({a, a}, o), "appears more than once");
  SGD opt({a}, o);
  EXPECT_LOOM_ERROR(opt.add_param_group({{a}, std::nullopt}), "appears more than once");
  EXPECT_LOOM_ERROR(opt.add_param_group({{}, std::nullopt}), "empty parameter list");
  // A gradient that does not fit (set_grad itself refuses one, so write it directly).
  a.impl()->grad = from_vector<double>({1.0, 2.0, 3.0});
  EXPECT_LOOM_ERROR(opt.step(), "gradient of shape [3] for parameter 0 of shape [2]");
  a.impl()->grad = from_vector<float>({1.0f, 2.0f});
  EXPECT_LOOM_ERROR(opt.step(), "differs from the parameter");
}

TEST(Optimizer, RejectsBadOptions) {
  Tensor a = leaf({1.0});
  EXPECT_LOOM_ERROR(SGD({a}, GroupOptions().with_lr(-0.1)), "SGD: invalid learning rate -0.1");
  EXPECT_LOOM_ERROR(SGD({a}, GroupOptions().with_lr(NAN)), "invalid learning rate");
  EXPECT_LOOM_ERROR(SGD({a}, GroupOptions().with_momentum(-1)), "invalid momentum -1");
  EXPECT_LOOM_ERROR(SGD({a}, GroupOptions().with_dampening(1.5)), "invalid dampening 1.5");
  EXPECT_LOOM_ERROR(SGD({a}, GroupOptions().with_weight_decay(-2)), "SGD: invalid weight_decay -2");
  EXPECT_LOOM_ERROR(SGD({a}, GroupOptions().with_nesterov()),
                    "Nesterov momentum needs momentum > 0");
  EXPECT_LOOM_ERROR(SGD({a}, GroupOptions().with_momentum(0.9).with_dampening(0.1).with_nesterov()),
                    "dampening 0.1");
  EXPECT_LOOM_ERROR(Adam({a}, GroupOptions().with_lr(-1)), "Adam: invalid learning rate -1");
  EXPECT_LOOM_ERROR(Adam({a}, GroupOptions().with_eps(-1e-8)), "Adam: invalid eps");
  EXPECT_LOOM_ERROR(Adam({a}, GroupOptions().with_betas(1.0, 0.999)), "Adam: invalid beta1 1");
  EXPECT_LOOM_ERROR(AdamW({a}, GroupOptions().with_betas(0.9, -0.1)), "AdamW: invalid beta2 -0.1");
  EXPECT_LOOM_ERROR(AdamW({a}, GroupOptions().with_weight_decay(-1)),
                    "AdamW: invalid weight_decay -1");
  SGD opt({a}, GroupOptions().with_lr(0.1));
  EXPECT_LOOM_ERROR(opt.set_lr(-3.0), "invalid learning rate -3");
  EXPECT_EQ(opt.lr(), 0.1);
}

}  // namespace
}  // namespace loom
