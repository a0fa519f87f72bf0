// Horizontal-flip test-time augmentation: flip_horizontal against a loop, flip_tta_outputs'
// probabilities against the mean of the model's on the images and on their mirror (one-logit and
// class heads), and evaluate(flip_tta) against those outputs computed here.
#include <cmath>
#include <vector>

#include "synthetic.h"
#include "testing.h"

namespace loom {
namespace {

std::vector<double> sigmoid_of(const Tensor& logits) {
  std::vector<double> p;
  for (float v : logits.to_vector<float>()) p.push_back(1.0 / (1.0 + std::exp(-double(v))));
  return p;
}

// Row-wise softmax of [N, K] logits, in double.
std::vector<double> softmax_of(const Tensor& logits) {
  const int64_t n = logits.size(0), k = logits.size(1);
  const auto v = logits.to_vector<float>();
  std::vector<double> p(v.size());
  for (int64_t i = 0; i < n; ++i) {
    double top = v[i * k], sum = 0;
    for (int64_t j = 1; j < k; ++j) top = std::max(top, double(v[i * k + j]));
    for (int64_t j = 0; j < k; ++j) sum += p[i * k + j] = std::exp(v[i * k + j] - top);
    for (int64_t j = 0; j < k; ++j) p[i * k + j] /= sum;
  }
  return p;
}

TEST(FlipHorizontal, ReversesTheLastAxis) {
  Generator gen(2);
  const Tensor x = randn({2, 3, 4, 5}, kFloat32, &gen);
  const auto in = x.to_vector<float>();
  const auto out = train::flip_horizontal(x).to_vector<float>();
  ASSERT_EQ(out.size(), in.size());
  for (size_t row = 0; row < in.size() / 5; ++row)
    for (size_t j = 0; j < 5; ++j) EXPECT_EQ(out[row * 5 + j], in[row * 5 + 4 - j]);
  EXPECT_LOOM_ERROR(train::flip_horizontal(randn({3, 4, 5}, kFloat32, &gen)), "[N, C, H, W]");
}

TEST(FlipTta, OneLogitHeadAveragesTheProbabilitiesOfImageAndMirror) {
  Generator gen(4);
  auto model = testing::tiny_model(3, 8, false);
  model->eval();
  const Tensor x = uniform({6, 3, 8, 8}, 0.0, 1.0, kFloat32, &gen);
  const auto p = sigmoid_of(model->forward(x));
  const auto q = sigmoid_of(model->forward(train::flip_horizontal(x)));
  const auto tta = sigmoid_of(train::flip_tta_outputs(*model, x));
  ASSERT_EQ(tta.size(), 6u);
  double differs = 0;
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_NEAR(tta[i], 0.5 * (p[i] + q[i]), 1e-6) << i;
    differs = std::max(differs, std::abs(p[i] - q[i]));
  }
  EXPECT_GT(differs, 1e-4) << "the model gives its mirror the same output: the test proves nothing";
}

TEST(FlipTta, ClassHeadAveragesTheSoftmaxes) {
  Generator gen(6);
  auto model = std::make_shared<nn::Sequential>();
  model->add(std::make_shared<nn::Flatten>());
  model->add(std::make_shared<nn::Linear>(3 * 4 * 4, 3, true, nn::Init::PyTorch, &gen));
  const Tensor x = uniform({5, 3, 4, 4}, -1.0, 1.0, kFloat32, &gen);
  const auto p = softmax_of(model->forward(x));
  const auto q = softmax_of(model->forward(train::flip_horizontal(x)));
  const auto tta = softmax_of(train::flip_tta_outputs(*model, x));
  ASSERT_EQ(tta.size(), 15u);
  for (size_t i = 0; i < 15; ++i) EXPECT_NEAR(tta[i], 0.5 * (p[i] + q[i]), 1e-6) << i;
}

TEST(FlipTta, ExtremeLogitsStayFinite) {
  auto model = std::make_shared<nn::Sequential>();
  model->add(std::make_shared<nn::Flatten>());
  Tensor logits = train::flip_tta_outputs(*model, full({2, 1, 1, 1}, 1000.0));
  for (float v : logits.to_vector<float>()) {
    EXPECT_TRUE(std::isfinite(v));
    EXPECT_GT(v, 10.0f);  // still a confident class 1
  }
}

TEST(FlipTta, EvaluateScoresTheAveragedPredictions) {
  // The halves' label is which side is brighter: the mirror predicts the other class, so the
  // averaged predictions score differently from the plain ones and the test can tell them apart.
  testing::HalvesDataset dataset(13, 9);
  auto model = testing::tiny_model(5, 8, false);
  const train::LossFn bce = train::binary_cross_entropy_loss();
  data::DataLoader loader(dataset, testing::loader_options(4, false));
  const train::EvalResult plain = train::evaluate(*model, bce, loader);
  const train::EvalResult tta =
      train::evaluate(*model, bce, loader, nullptr, {}, {}, false, false, true);
  data::DataLoader whole(dataset, testing::loader_options(13, false));
  whole.start_epoch(0);
  const data::Batch batch = *whole.next();
  model->eval();
  const Tensor outputs = train::flip_tta_outputs(*model, batch.images);
  ASSERT_EQ(tta.samples, 13);
  EXPECT_NEAR(tta.loss, bce(outputs, batch.labels).item<double>(), 1e-5);
  EXPECT_DOUBLE_EQ(tta.accuracy, train::count_correct(outputs, batch.labels).item<double>() / 13.0);
  EXPECT_GT(std::abs(tta.loss - plain.loss), 1e-4);
}

}  // namespace
}  // namespace loom
