// Initialisers: fans, bounds and variance of glorot_uniform and kaiming_uniform, the two layer
// schemes, and seeding through a Generator.
#include <algorithm>
#include <cmath>

#include "testing.h"

namespace loom::nn {
namespace {

struct Stats {
  double min, max, mean, var;
};

Stats stats_of(const Tensor& t) {
  const auto v = t.to(kFloat64).to_vector<double>();
  Stats s{v[0], v[0], 0, 0};
  for (double x : v) s.min = std::min(s.min, x), s.max = std::max(s.max, x), s.mean += x;
  s.mean /= v.size();
  for (double x : v) s.var += (x - s.mean) * (x - s.mean);
  s.var /= v.size();
  return s;
}

TEST(Init, FansOfLinearAndConvLayouts) {
  EXPECT_EQ(compute_fans({128, 3200}).fan_in, 3200);
  EXPECT_EQ(compute_fans({128, 3200}).fan_out, 128);
  EXPECT_EQ(compute_fans({32, 3, 3, 3}).fan_in, 27);
  EXPECT_EQ(compute_fans({32, 3, 3, 3}).fan_out, 288);
  EXPECT_LOOM_ERROR(compute_fans({5}), "at least 2 dims, got [5]");
}

TEST(Init, GlorotUniformBoundsAndVariance) {
  Generator gen(1);
  Tensor w = empty({256, 384});
  glorot_uniform_(w, &gen);
  const double limit = std::sqrt(6.0 / (256 + 384));
  const Stats s = stats_of(w);
  EXPECT_GE(s.min, -limit);
  EXPECT_LE(s.max, limit);
  EXPECT_GT(s.max, 0.99 * limit);  // the whole range is used
  EXPECT_NEAR(s.mean, 0.0, 0.01 * limit);
  EXPECT_NEAR(s.var, 2.0 / (256 + 384), 0.03 * 2.0 / (256 + 384));
}

TEST(Init, KaimingUniformWithPyTorchsSlopeHasBoundOneOverSqrtFanIn) {
  Generator gen(2);
  Tensor w = empty({64, 32, 3, 3});
  kaiming_uniform_(w, std::sqrt(5.0), &gen);
  const double bound = 1.0 / std::sqrt(32.0 * 9);
  const Stats s = stats_of(w);
  EXPECT_GE(s.min, -bound);
  EXPECT_LE(s.max, bound);
  EXPECT_GT(s.max, 0.99 * bound);
  EXPECT_NEAR(s.var, bound * bound / 3, 0.04 * bound * bound / 3);
  // a = 0 (He uniform for ReLU): bound sqrt(6 / fan_in).
  kaiming_uniform_(w, 0.0, &gen);
  EXPECT_LE(stats_of(w).max, std::sqrt(6.0 / 288));
  EXPECT_GT(stats_of(w).max, 0.99 * std::sqrt(6.0 / 288));
}

TEST(Init, LayerSchemes) {
  Generator gen(3);
  Linear keras(400, 50, true, Init::Keras, &gen);
  for (float b : keras.bias.to_vector<float>()) EXPECT_EQ(b, 0.0f);
  EXPECT_LE(stats_of(keras.weight).max, std::sqrt(6.0 / 450));
  EXPECT_GT(stats_of(keras.weight).max, 0.98 * std::sqrt(6.0 / 450));

  Linear torch(400, 50, true, Init::PyTorch, &gen);
  const Stats b = stats_of(torch.bias);
  EXPECT_LE(b.max, 1.0 / 20);
  EXPECT_GE(b.min, -1.0 / 20);
  EXPECT_GT(b.max - b.min, 0.05);  // not constant
  EXPECT_LE(stats_of(torch.weight).max, 1.0 / 20);

  // Re-initialising a model in the other scheme reaches nested layers.
  Sequential model{std::make_shared<Linear>(400, 50)};
  model.init_parameters(Init::Keras, &gen);
  for (float v : model.named_parameters().at("0.bias").to_vector<float>()) EXPECT_EQ(v, 0.0f);
}

TEST(Init, SeededGeneratorsReproduce) {
  Generator a(7), b(7), c(8);
  Conv2d x(3, 8, 3, {}, true, Init::PyTorch, &a);
  Conv2d y(3, 8, 3, {}, true, Init::PyTorch, &b);
  Conv2d z(3, 8, 3, {}, true, Init::PyTorch, &c);
  EXPECT_EQ(x.weight.to_vector<float>(), y.weight.to_vector<float>());
  EXPECT_EQ(x.bias.to_vector<float>(), y.bias.to_vector<float>());
  EXPECT_NE(x.weight.to_vector<float>(), z.weight.to_vector<float>());
  // Weight and bias draw different numbers from one generator.
  EXPECT_NE(x.weight.to_vector<float>()[0], x.bias.to_vector<float>()[0]);
}

}  // namespace
}  // namespace loom::nn
