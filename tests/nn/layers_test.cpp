// The layers against hand-computed values or the ops they wrap: Linear, Conv2d, pooling,
// BatchNorm2d (running statistics and eval), Dropout, activations, Flatten; input checks.
#include <cmath>

#include "testing.h"

namespace loom::nn {
namespace {

TEST(LinearLayer, ComputesXWTransposePlusBias) {
  Linear layer(3, 2);
  layer.weight.copy_(from_vector<float>({1, 2, 3, -1, 0, 2}, {2, 3}));
  layer.bias.copy_(from_vector<float>({0.5f, -0.5f}, {2}));
  Tensor x = from_vector<float>({1, 1, 1, 2, 0, -1}, {2, 3});
  // row 0: [1+2+3+0.5, -1+0+2-0.5] ; row 1: [2+0-3+0.5, -2+0-2-0.5]
  EXPECT_EQ(layer(x).to_vector<float>(), (std::vector<float>{6.5f, 0.5f, -0.5f, -4.5f}));
  EXPECT_LOOM_ERROR(layer(zeros({2, 4})), "Linear(3, 2): input of shape [2, 4] must end in 3");
  EXPECT_LOOM_ERROR(Linear(0, 2), "must be positive");
}

TEST(Conv2dLayer, MatchesADirectLoopWithStrideAndPadding) {
  Conv2d conv(2, 3, Size2(3, 2), Conv2dOptions().stride(2, 1).padding(1, 0));
  Tensor x = randn({2, 2, 5, 4}, kFloat64);
  conv.to(kFloat64);
  const Tensor y = conv(x);
  const int64_t oh = (5 + 2 - 3) / 2 + 1, ow = (4 - 2) / 1 + 1;
  ASSERT_EQ(y.shape(), (Shape{2, 3, oh, ow}));
  const auto xv = x.to_vector<double>(), wv = conv.weight.to_vector<double>();
  const auto bv = conv.bias.to_vector<double>(), yv = y.to_vector<double>();
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t o = 0; o < 3; ++o)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double acc = bv[o];
          for (int64_t c = 0; c < 2; ++c)
            for (int64_t ki = 0; ki < 3; ++ki)
              for (int64_t kj = 0; kj < 2; ++kj) {
                const int64_t r = i * 2 - 1 + ki, s = j + kj;
                if (r < 0 || r >= 5) continue;
                acc += xv[((n * 2 + c) * 5 + r) * 4 + s] * wv[((o * 2 + c) * 3 + ki) * 2 + kj];
              }
          EXPECT_NEAR(yv[((n * 3 + o) * oh + i) * ow + j], acc, 1e-12);
        }
  EXPECT_LOOM_ERROR(conv(zeros({2, 3, 5, 4}, kFloat64)), "expected input [N, 2, H, W]");
  EXPECT_LOOM_ERROR(Conv2d(3, 0, 3), "must be positive");
}

TEST(Conv2dLayer, SameAndValidPadding) {
  Conv2d same(3, 4, 3, Conv2dOptions().padding(Padding::Same));
  EXPECT_EQ(same(randn({1, 3, 7, 6})).shape(), (Shape{1, 4, 7, 6}));
  Conv2d valid(3, 4, 3, Conv2dOptions().padding(Padding::Valid));
  EXPECT_EQ(valid(randn({1, 3, 7, 6})).shape(), (Shape{1, 4, 5, 4}));
}

TEST(Conv2dLayer, GradientsReachWeightAndBias) {
  Conv2d conv(2, 2, 2);
  conv.to(kFloat64);
  const Tensor x = testing::random_leaf({1, 2, 4, 3}, 5);
  testing::Function f = [&](const std::vector<Tensor>& in) { return conv(in[0]); };
  EXPECT_GRADCHECK(f, (std::vector<Tensor>{x}));
  conv.zero_grad();  // gradcheck's own backward accumulated into the parameters
  sum(conv(x)).backward();
  ASSERT_TRUE(conv.bias.grad().defined());
  // d(sum)/d(bias_o) = number of output positions = 3 * 2.
  EXPECT_EQ(conv.bias.grad().to_vector<double>(), (std::vector<double>{6, 6}));
}

TEST(PoolingLayers, MaxAvgAndGlobal) {
  Tensor x = from_vector<float>({1, 5, 2, 0,  //
                                 3, 4, 8, 1,  //
                                 0, 2, 6, 7,  //
                                 9, 1, 3, 2},
                                {1, 1, 4, 4});
  EXPECT_EQ(MaxPool2d(2)(x).to_vector<float>(), (std::vector<float>{5, 8, 9, 7}));
  EXPECT_EQ(AvgPool2d(2)(x).to_vector<float>(), (std::vector<float>{3.25f, 2.75f, 3, 4.5f}));
  EXPECT_EQ(MaxPool2d(Size2(1, 4))(x).shape(), (Shape{1, 1, 4, 1}));
  const Tensor g = GlobalAvgPool2d()(x);
  EXPECT_EQ(g.shape(), (Shape{1, 1}));
  EXPECT_FLOAT_EQ(g.item<float>(), 54.0f / 16);
  EXPECT_LOOM_ERROR(GlobalAvgPool2d()(zeros({2, 3})), "expected input [N, C, H, W]");
  EXPECT_LOOM_ERROR(MaxPool2d(0), "kernel must be positive");
  EXPECT_LOOM_ERROR(AvgPool2d(2, -1), "stride/padding non-negative");
}

TEST(BatchNorm2dLayer, TrainingUpdatesRunningStatisticsAndEvalUsesThem) {
  BatchNorm2d bn(2, 1e-5, 0.1);
  bn.to(kFloat64);
  Tensor x1 = randn({3, 2, 2, 2}, kFloat64) * 2.0 + 1.0;
  Tensor x2 = randn({3, 2, 2, 2}, kFloat64) - 0.5;
  // Per-channel mean and unbiased variance over N, H, W by a plain loop.
  auto stats = [](const Tensor& x, int64_t c, bool unbiased) {
    const auto v = x.to_vector<double>();
    double s = 0, ss = 0;
    int m = 0;
    for (int64_t n = 0; n < 3; ++n)
      for (int64_t k = 0; k < 4; ++k) {
        const double value = v[(n * 2 + c) * 4 + k];
        s += value, ss += value * value, ++m;
      }
    const double mean = s / m;
    return std::make_pair(mean, (ss - m * mean * mean) / (unbiased ? m - 1 : m));
  };
  const Tensor y1 = bn(x1);
  bn(x2);
  EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 2);
  for (int64_t c = 0; c < 2; ++c) {
    const auto [m1, v1] = stats(x1, c, true);
    const auto [m2, v2] = stats(x2, c, true);
    const double rm = 0.9 * (0.9 * 0 + 0.1 * m1) + 0.1 * m2;
    const double rv = 0.9 * (0.9 * 1 + 0.1 * v1) + 0.1 * v2;
    EXPECT_NEAR(bn.running_mean.to_vector<double>()[c], rm, 1e-12);
    EXPECT_NEAR(bn.running_var.to_vector<double>()[c], rv, 1e-12);
    // Training output: normalised with the batch's biased variance.
    const auto [bm, bv] = stats(x1, c, false);
    const double first = x1.to_vector<double>()[c * 4];
    EXPECT_NEAR(y1.to_vector<double>()[c * 4], (first - bm) / std::sqrt(bv + 1e-5), 1e-9);
  }
  bn.eval();
  const Tensor before = bn.running_mean.clone();
  const Tensor y = bn(x1);
  EXPECT_TENSOR_NEAR(bn.running_mean, before, 0, 0);  // eval does not update
  EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 2);
  const auto rm = bn.running_mean.to_vector<double>(), rv = bn.running_var.to_vector<double>();
  const auto xv = x1.to_vector<double>(), yv = y.to_vector<double>();
  for (size_t i = 0; i < xv.size(); ++i) {
    const size_t c = (i / 4) % 2;
    EXPECT_NEAR(yv[i], (xv[i] - rm[c]) / std::sqrt(rv[c] + 1e-5), 1e-9);
  }
  EXPECT_LOOM_ERROR(bn(zeros({2, 3, 2, 2}, kFloat64)),
                    "BatchNorm2d(2): expected input [N, 2, H, W]");
  EXPECT_LOOM_ERROR(BatchNorm2d(2, 1e-5, 1.5), "momentum in [0, 1]");
  EXPECT_LOOM_ERROR(BatchNorm2d(0), "num_features must be positive");
}

// In a Sequential a BatchNorm2d and the ReLU after it run as one op (batch_norm_relu), with the
// values, gradients and statistics of the two layers run one after the other.
TEST(BatchNorm2dLayer, ThenReluRunsFusedInASequentialAndAlike) {
  Generator gen(17);
  const Tensor x0 = randn({4, 3, 5, 5}, kFloat32, &gen),
               upstream = randn({4, 3, 5, 5}, kFloat32, &gen);
  auto bn = std::make_shared<BatchNorm2d>(3);
  Sequential model{bn, std::make_shared<ReLU>()};
  BatchNorm2d alone(3);
  Tensor x = x0.clone().set_requires_grad(true), xa = x0.clone().set_requires_grad(true);
  const Tensor y = model.forward(x), ya = relu(alone.forward(xa));
  ASSERT_TRUE(y.grad_fn());
  EXPECT_EQ(y.grad_fn()->name(), "batch_norm_relu");
  EXPECT_TENSOR_NEAR(y, ya, 1e-6, 1e-6);
  y.backward(upstream);
  ya.backward(upstream);
  EXPECT_TENSOR_NEAR(x.grad(), xa.grad(), 1e-6, 1e-5);
  EXPECT_TENSOR_NEAR(bn->weight.grad(), alone.weight.grad(), 1e-5, 1e-5);
  EXPECT_TENSOR_NEAR(bn->running_var, alone.running_var, 1e-7, 1e-6);
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);
}

TEST(DropoutLayer, ScalesInTrainingAndIsIdentityInEval) {
  Dropout drop(0.25);
  manual_seed(3);
  const Tensor x = rand({4000}) + 1.0;
  const auto xv = x.to_vector<float>();
  const auto yv = drop(x).to_vector<float>();
  int zeros_seen = 0;
  for (size_t i = 0; i < xv.size(); ++i) {
    if (yv[i] == 0) {
      ++zeros_seen;
    } else {
      EXPECT_NEAR(yv[i], xv[i] / 0.75f, 1e-5);
    }
  }
  EXPECT_NEAR(zeros_seen / 4000.0, 0.25, 0.03);
  drop.eval();
  EXPECT_TRUE(drop(x).is_same(x) || drop(x).to_vector<float>() == xv);
  EXPECT_LOOM_ERROR(Dropout(1.0), "p must be in [0, 1)");
  EXPECT_LOOM_ERROR(Dropout(-0.1), "p must be in [0, 1)");
}

TEST(ActivationLayers, ForwardToTheirOps) {
  const Tensor x = from_vector<float>({-2, -0.5f, 0.5f, 3}, {2, 2});
  EXPECT_EQ(ReLU()(x).to_vector<float>(), (std::vector<float>{0, 0, 0.5f, 3}));
  EXPECT_EQ(LeakyReLU(0.1)(x).to_vector<float>(), (std::vector<float>{-0.2f, -0.05f, 0.5f, 3}));
  EXPECT_NEAR(Sigmoid()(x).to_vector<float>()[3], 1 / (1 + std::exp(-3.0)), 1e-6);
  EXPECT_NEAR(Tanh()(x).to_vector<float>()[0], std::tanh(-2.0), 1e-6);
  const auto s = Softmax()(x).to_vector<float>();
  EXPECT_NEAR(s[0], std::exp(-2.0) / (std::exp(-2.0) + std::exp(-0.5)), 1e-6);
  EXPECT_NEAR(s[2] + s[3], 1.0, 1e-6);
  const auto s0 = Softmax(0)(x).to_vector<float>();
  EXPECT_NEAR(s0[0] + s0[2], 1.0, 1e-6);
  EXPECT_TRUE(Identity()(x).is_same(x));
  EXPECT_EQ(Flatten()(zeros({2, 3, 4, 5})).shape(), (Shape{2, 60}));
  EXPECT_EQ(Flatten(0, 1)(zeros({2, 3, 4})).shape(), (Shape{6, 4}));
}

}  // namespace
}  // namespace loom::nn
