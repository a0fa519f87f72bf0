// train::Metric: accuracy, precision, recall and F1 (binary: of class 1; K classes: macro mean)
// against loops over the same predictions, AUC against the exact pairwise count, batches and
// ranks adding up to the whole, bad input; and fit/evaluate reporting them.
#include <gtest/gtest.h>
#include <loom/loom.h>

#include <cmath>

#include "synthetic.h"
#include "testing.h"

namespace loom {
namespace {

struct Scored {
  Tensor logits;  // [n, k] (k = 1: binary)
  Tensor labels;  // int64 [n]
};

Scored scored(int64_t n, int64_t k, uint64_t seed) {
  Generator gen(seed);
  Tensor labels = randint(0, k == 1 ? 2 : k, {n}, kInt64, &gen);
  // Informative but imperfect scores: the label's logit raised, plus noise.
  Tensor logits = randn({n, k}, kFloat32, &gen);
  if (k == 1) {
    logits = logits + (labels.to(kFloat32).reshape({n, 1}) * 1.5 - 0.75);
  } else {
    logits = logits + one_hot(labels, k) * 1.2;
  }
  return {logits, labels};
}

// Feeds `m` the data in uneven batches and returns its result.
double fed(const train::MetricPtr& m, const Scored& s) {
  m->reset();
  const int64_t n = s.labels.numel();
  for (int64_t start = 0, b = 1; start < n; start += b, b = b % 7 + 3) {
    const int64_t len = std::min(b, n - start);
    m->update(s.logits.narrow(0, start, len), s.labels.narrow(0, start, len));
  }
  return m->result();
}

struct Reference {
  double accuracy, precision, recall, f1;
};

// The scores by counting on the host, one sample at a time.
Reference by_loops(const Scored& s) {
  const std::vector<float> logit = s.logits.contiguous().to_vector<float>();
  const std::vector<int64_t> label = s.labels.to_vector<int64_t>();
  const int64_t n = s.labels.numel(), k = s.logits.size(1);
  const int64_t classes = k == 1 ? 2 : k;
  std::vector<double> tp(classes, 0), predicted(classes, 0), actual(classes, 0);
  double correct = 0;
  for (int64_t i = 0; i < n; ++i) {
    int64_t p = 0;
    if (k == 1) {
      p = logit[i] >= 0 ? 1 : 0;
    } else {
      for (int64_t c = 1; c < k; ++c) p = logit[i * k + c] > logit[i * k + p] ? c : p;
    }
    predicted[p] += 1;
    actual[label[i]] += 1;
    if (p == label[i]) {
      tp[p] += 1;
      correct += 1;
    }
  }
  Reference r{correct / n, 0, 0, 0};
  const auto add = [&](int64_t c, double w) {
    const double prec = tp[c] / predicted[c], rec = tp[c] / actual[c];
    r.precision += w * prec;
    r.recall += w * rec;
    r.f1 += w * 2 * prec * rec / (prec + rec);
  };
  if (k == 1) {
    add(1, 1.0);
  } else {
    for (int64_t c = 0; c < classes; ++c) add(c, 1.0 / classes);
  }
  return r;
}

TEST(Metrics, BinaryScoresOfClassOneMatchLoops) {
  const Scored s = scored(203, 1, 1);
  const Reference r = by_loops(s);
  EXPECT_NEAR(fed(train::accuracy(), s), r.accuracy, 1e-12);
  EXPECT_NEAR(fed(train::precision(), s), r.precision, 1e-12);
  EXPECT_NEAR(fed(train::recall(), s), r.recall, 1e-12);
  EXPECT_NEAR(fed(train::f1(), s), r.f1, 1e-12);
  EXPECT_GT(r.accuracy, 0.6);  // the data is informative, so the checks above are not of chance
}

TEST(Metrics, MultiClassScoresAreMacroMeansMatchingLoops) {
  const Scored s = scored(301, 4, 2);
  const Reference r = by_loops(s);
  EXPECT_NEAR(fed(train::accuracy(), s), r.accuracy, 1e-12);
  EXPECT_NEAR(fed(train::precision(), s), r.precision, 1e-12);
  EXPECT_NEAR(fed(train::recall(), s), r.recall, 1e-12);
  EXPECT_NEAR(fed(train::f1(), s), r.f1, 1e-12);
}

// The exact AUC: positive-negative pairs won, ties one half.
double exact_auc(const Scored& s) {
  const std::vector<float> score = s.logits.contiguous().to_vector<float>();
  const std::vector<int64_t> label = s.labels.to_vector<int64_t>();
  double won = 0, pairs = 0;
  for (size_t i = 0; i < label.size(); ++i) {
    for (size_t j = 0; j < label.size(); ++j) {
      if (label[i] != 1 || label[j] != 0) continue;
      pairs += 1;
      won += score[i] > score[j] ? 1.0 : score[i] == score[j] ? 0.5 : 0.0;
    }
  }
  return won / pairs;
}

TEST(Metrics, AucIsWithinABinOfTheExactPairCount) {
  const Scored s = scored(500, 1, 3);
  const double exact = exact_auc(s);
  EXPECT_GT(exact, 0.7);
  EXPECT_NEAR(fed(train::auc(), s), exact, 2e-3);
  EXPECT_NEAR(fed(train::auc(4096), s), exact, 5e-4);
  // Every score equal: every pair a tie.
  const Scored flat{zeros({10, 1}), from_vector<int64_t>({0, 1, 0, 1, 1, 0, 0, 1, 1, 0}, {10})};
  EXPECT_DOUBLE_EQ(fed(train::auc(), flat), 0.5);
}

TEST(Metrics, RanksAddUpToTheWhole) {
  const Scored s = scored(120, 1, 4);
  const std::vector<train::MetricPtr> whole = {train::precision(), train::recall(), train::f1(),
                                               train::auc()};
  std::vector<double> expected;
  for (const auto& m : whole) expected.push_back(fed(m, s));
  std::vector<std::vector<double>> got(3);
  dist::spawn(3, kCPU, [&](dist::ProcessGroup& g) {
    // Rank 2 sees no batch at all: it adds zeros.
    const std::vector<train::MetricPtr> mine = {train::precision(), train::recall(), train::f1(),
                                                train::auc()};
    for (const auto& m : mine) {
      if (g.rank() < 2)
        m->update(s.logits.narrow(0, g.rank() * 60, 60), s.labels.narrow(0, g.rank() * 60, 60));
      got[static_cast<size_t>(g.rank())].push_back(m->result(&g));
    }
  });
  for (int r = 0; r < 3; ++r) {
    for (size_t i = 0; i < expected.size(); ++i)
      EXPECT_NEAR(got[r][i], expected[i], 1e-12) << "rank " << r << ", metric " << i;
  }
}

TEST(Metrics, BadInputAndUndefinedValues) {
  const Scored three = scored(9, 3, 5);
  EXPECT_LOOM_ERROR(train::auc()->update(three.logits, three.labels), "binary head");
  EXPECT_LOOM_ERROR(train::auc(1), "bins must be at least 2");
  EXPECT_LOOM_ERROR(train::precision()->update(three.logits, three.labels.narrow(0, 0, 8)),
                    "do not match labels");
  auto m = train::f1();
  m->update(three.logits, three.labels);
  const Scored four = scored(9, 4, 6);
  EXPECT_LOOM_ERROR(m->update(four.logits, four.labels), "unlike the batches before it");
  // Nothing predicted positive: precision is undefined (NaN), as 0/0.
  auto p = train::precision();
  p->update(full({4, 1}, -3.0), from_vector<int64_t>({0, 1, 1, 0}, {4}));
  EXPECT_TRUE(std::isnan(p->result()));
  EXPECT_TRUE(std::isnan(train::recall()->result()));  // no batch yet
}

TEST(Metrics, FitAndEvaluateReportThem) {
  manual_seed(12);
  testing::HalvesDataset train_set(48, 1), val_set(32, 2);
  auto model = testing::tiny_model(3, 8, /*dropout=*/false);
  optim::Adam optimizer(model->parameters(), optim::GroupOptions().with_lr(1e-2));
  data::DataLoader train_loader(train_set, testing::loader_options(8, true));
  data::DataLoader val_loader(val_set, testing::loader_options(16, false));
  train::FitOptions fit;
  fit.epochs = 3;
  fit.out = nullptr;
  fit.metrics = {train::precision(), train::recall(), train::f1(), train::auc()};
  const train::History h = train::fit(*model, train::binary_cross_entropy_loss(), optimizer,
                                      train_loader, &val_loader, fit);
  for (const char* key :
       {"precision", "recall", "f1", "auc", "val_precision", "val_recall", "val_f1", "val_auc"}) {
    ASSERT_TRUE(h.epochs.back().count(key)) << key;
    EXPECT_GE(h.epochs.back().at(key), 0.0) << key;
    EXPECT_LE(h.epochs.back().at(key), 1.0) << key;
  }
  // The last epoch's validation metrics are those of the final model.
  const train::EvalResult e = train::evaluate(*model, train::binary_cross_entropy_loss(),
                                              val_loader, nullptr, {train::f1(), train::auc()});
  EXPECT_DOUBLE_EQ(e.metrics.at("f1"), h.epochs.back().at("val_f1"));
  EXPECT_DOUBLE_EQ(e.metrics.at("auc"), h.epochs.back().at("val_auc"));
  // F1 from the confusion matrix evaluate returns.
  const std::vector<int64_t> c = e.confusion.to_vector<int64_t>();  // [[tn, fp], [fn, tp]]
  EXPECT_NEAR(e.metrics.at("f1"), 2.0 * c[3] / (2.0 * c[3] + c[1] + c[2]), 1e-12);
}

}  // namespace
}  // namespace loom
