// fit / evaluate / predict with K class logits (cross_entropy_loss), as loom-catdog trains three
// class folders or more: the task is learnt, and evaluate's loss, accuracy and K x K confusion
// matrix, and predict's softmax rows, match loops written here.
#include <cmath>

#include "synthetic.h"
#include "testing.h"

namespace loom {
namespace {

constexpr int64_t kClasses = 4;

// 8x8 RGB noise where class c is brighter in column pair c (columns 2c and 2c + 1).
class StripesDataset : public data::Dataset {
 public:
  StripesDataset(int64_t count, uint64_t seed) {
    Generator gen(seed);
    for (int64_t i = 0; i < count; ++i) {
      const int64_t label = i % kClasses;
      Tensor img = uniform({8, 8, 3}, 0.0, 180.0, kFloat32, &gen);
      Tensor stripe = img.narrow(1, 2 * label, 2);
      stripe.copy_(stripe + 75);
      examples_.push_back({img.to(kUInt8), label});
    }
  }
  int64_t size() const override { return static_cast<int64_t>(examples_.size()); }
  data::Example get(int64_t index) const override { return examples_[index]; }

 private:
  std::vector<data::Example> examples_;
};

std::shared_ptr<nn::Sequential> classifier(uint64_t seed) {
  Generator gen(seed);
  auto model = std::make_shared<nn::Sequential>();
  model->add(std::make_shared<nn::Conv2d>(3, 8, 3, Conv2dOptions().padding(1), true,
                                          nn::Init::PyTorch, &gen));
  model->add(std::make_shared<nn::ReLU>());
  model->add(std::make_shared<nn::MaxPool2d>(2));
  model->add(std::make_shared<nn::Flatten>());
  model->add(std::make_shared<nn::Linear>(8 * 4 * 4, kClasses, true, nn::Init::PyTorch, &gen));
  return model;
}

TEST(MulticlassFit, LearnsFourClassesAndEvaluateAndPredictMatchALoop) {
  manual_seed(5);
  StripesDataset train_set(96, 1), val_set(40, 2);
  auto model = classifier(3);
  optim::Adam optimizer(model->parameters(), optim::GroupOptions().with_lr(1e-2));
  data::DataLoader train_loader(train_set, testing::loader_options(8, true));
  data::DataLoader val_loader(val_set, testing::loader_options(16, false));
  train::FitOptions fit;
  fit.epochs = 6;
  fit.out = nullptr;
  const train::History h =
      train::fit(*model, train::cross_entropy_loss(), optimizer, train_loader, &val_loader, fit);
  ASSERT_EQ(h.epochs.size(), 6u);
  EXPECT_LT(h.epochs.back().at("loss"), h.epochs.front().at("loss"));
  EXPECT_GT(h.epochs.back().at("val_accuracy"), 0.8);  // chance: 0.25

  const train::EvalResult r = train::evaluate(*model, train::cross_entropy_loss(), val_loader);
  ASSERT_EQ(r.samples, 40);
  EXPECT_EQ(r.accuracy, h.epochs.back().at("val_accuracy"));
  // By hand: log-softmax cross-entropy and counts per (true, argmax), from the logits.
  std::vector<Tensor> images;
  for (int64_t i = 0; i < val_set.size(); ++i) {
    images.push_back(val_set.get(i).image.to(kFloat32).permute({2, 0, 1}) * (1.0 / 255.0));
  }
  std::vector<float> logits;
  {
    nn::EvalModeGuard eval(*model);
    logits = model->forward(stack(images)).to_vector<float>();
  }
  double loss = 0;
  std::vector<int64_t> confusion(kClasses * kClasses, 0);
  for (int64_t i = 0; i < val_set.size(); ++i) {
    const float* row = logits.data() + i * kClasses;
    int64_t best = 0;
    double top = row[0], norm = 0;
    for (int64_t c = 1; c < kClasses; ++c) {
      if (row[c] > row[best]) best = c;
      top = std::max(top, double(row[c]));
    }
    for (int64_t c = 0; c < kClasses; ++c) norm += std::exp(row[c] - top);
    const int64_t y = val_set.get(i).label;
    loss += top + std::log(norm) - row[y];
    ++confusion[y * kClasses + best];
  }
  EXPECT_NEAR(r.loss, loss / 40, 1e-5);
  EXPECT_EQ(r.confusion.shape(), (Shape{kClasses, kClasses}));
  EXPECT_EQ(r.confusion.to_vector<int64_t>(), confusion);
  int64_t diagonal = 0;
  for (int64_t c = 0; c < kClasses; ++c) diagonal += confusion[c * kClasses + c];
  EXPECT_NEAR(r.accuracy, diagonal / 40.0, 1e-12);

  // predict: softmax rows, summing to 1, whose argmax is the confusion's prediction.
  const Tensor probs = train::predict(*model, val_loader);
  ASSERT_EQ(probs.shape(), (Shape{40, kClasses}));
  const std::vector<float> p = probs.to_vector<float>();
  for (int64_t i = 0; i < 40; ++i) {
    const float* row = logits.data() + i * kClasses;
    double top = row[0], norm = 0, total = 0;
    for (int64_t c = 1; c < kClasses; ++c) top = std::max(top, double(row[c]));
    for (int64_t c = 0; c < kClasses; ++c) norm += std::exp(row[c] - top);
    for (int64_t c = 0; c < kClasses; ++c) {
      EXPECT_NEAR(p[i * kClasses + c], std::exp(row[c] - top) / norm, 1e-6) << i << " " << c;
      total += p[i * kClasses + c];
    }
    EXPECT_NEAR(total, 1.0, 1e-5);
  }
}

}  // namespace
}  // namespace loom
