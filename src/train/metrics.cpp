// The metrics of metrics.h: each a function of summed statistics (a confusion matrix, or the
// histograms of positives' and negatives' scores), so batches and ranks add.
#include "loom/train/metrics.h"

#include <cmath>
#include <limits>

#include "loom/ops/ops.h"
#include "loom/tensor/autograd.h"
#include "loom/train/ranks.h"

namespace loom::train {

Tensor predicted_classes(const Tensor& outputs) {
  return outputs.size(1) == 1 ? ge(outputs.reshape({outputs.size(0)}), 0.0).to(kInt64)
                              : argmax(outputs, 1);
}

void Metric::update(const Tensor& outputs, const Tensor& labels) {
  LOOM_CHECK(outputs.defined() && labels.defined() && outputs.dim() == 2 &&
                 outputs.size(0) == labels.numel(),
             name(), ": outputs ", outputs.defined() ? shape_str(outputs.shape()) : "undefined",
             " do not match labels ", labels.defined() ? shape_str(labels.shape()) : "undefined",
             " (expected outputs [B, K] and B labels)");
  NoGradGuard no_grad;
  const Tensor classes = labels.reshape({labels.numel()}).to(outputs.device(), kInt64);
  const Tensor batch = batch_sums(outputs.detach(), classes);
  LOOM_CHECK(!sums_.defined() || sums_.numel() == batch.numel(), name(), ": this batch has ",
             outputs.size(1), " outputs per sample, unlike the batches before it");
  if (!sums_.defined()) {
    sums_ = batch.clone();
  } else {
    sums_.add_(batch.to(sums_.device()));
  }
}

double Metric::result(dist::ProcessGroup* group) const {
  std::vector<double> sums =
      sums_.defined() ? sums_.cpu().to_vector<double>() : std::vector<double>{};
  if (group != nullptr && group->size() > 1) {
    // A rank without batches adds zeros of the size the others agree on.
    const int64_t n =
        all_reduce_value(*group, static_cast<int64_t>(sums.size()), dist::ReduceOp::Max);
    sums.resize(static_cast<size_t>(n), 0.0);
    sums = all_reduce_values(*group, sums);
  }
  if (sums.empty()) return std::numeric_limits<double>::quiet_NaN();
  return from_sums(sums);
}

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double ratio(double a, double b) { return b > 0 ? a / b : kNaN; }

// The confusion matrix of the batch, float64 [K * K] row-major: [true, predicted].
Tensor confusion_sums(const Tensor& outputs, const Tensor& classes) {
  const int64_t k = outputs.size(1) == 1 ? 2 : outputs.size(1);
  const Tensor counts =
      matmul(one_hot(classes, k, kFloat64).t(), one_hot(predicted_classes(outputs), k, kFloat64));
  return counts.reshape({k * k});
}

int64_t classes_of(const std::vector<double>& sums) {
  return static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(sums.size()))));
}

class Accuracy : public Metric {
 public:
  std::string name() const override { return "accuracy"; }

 protected:
  Tensor batch_sums(const Tensor& outputs, const Tensor& classes) const override {
    return confusion_sums(outputs, classes);
  }
  double from_sums(const std::vector<double>& c) const override {
    const int64_t k = classes_of(c);
    double correct = 0, total = 0;
    for (int64_t i = 0; i < k * k; ++i) {
      total += c[i];
      if (i / k == i % k) correct += c[i];
    }
    return ratio(correct, total);
  }
};

// Precision, recall or F1 of one class from the confusion matrix; averaged over the classes
// for K > 2, of class 1 for a binary head.
class ClassScore : public Metric {
 public:
  enum Kind { Precision, Recall, F1 };
  explicit ClassScore(Kind kind) : kind_(kind) {}
  std::string name() const override {
    return kind_ == Precision ? "precision" : kind_ == Recall ? "recall" : "f1";
  }

 protected:
  Tensor batch_sums(const Tensor& outputs, const Tensor& classes) const override {
    return confusion_sums(outputs, classes);
  }
  double from_sums(const std::vector<double>& c) const override {
    const int64_t k = classes_of(c);
    const auto score = [&](int64_t cls) {
      double tp = c[cls * k + cls], predicted = 0, actual = 0;
      for (int64_t j = 0; j < k; ++j) {
        predicted += c[j * k + cls];
        actual += c[cls * k + j];
      }
      const double p = ratio(tp, predicted), r = ratio(tp, actual);
      if (kind_ == Precision) return p;
      if (kind_ == Recall) return r;
      // F1 = 2 tp / (predicted + actual): defined whenever the class occurs or is predicted.
      return ratio(2 * tp, predicted + actual);
    };
    if (k == 2) return score(1);
    double sum = 0;
    for (int64_t cls = 0; cls < k; ++cls) sum += score(cls);
    return sum / static_cast<double>(k);
  }

 private:
  Kind kind_;
};

class Auc : public Metric {
 public:
  explicit Auc(int bins) : bins_(bins) {
    LOOM_CHECK(bins >= 2, "auc: bins must be at least 2, got ", bins);
  }
  std::string name() const override { return "auc"; }

 protected:
  // [positives per bin..., negatives per bin...] of sigmoid(logit).
  Tensor batch_sums(const Tensor& outputs, const Tensor& classes) const override {
    LOOM_CHECK(outputs.size(1) == 1,
               "auc: defined here for a binary head [B, 1]; these outputs are ",
               shape_str(outputs.shape()));
    const Tensor p = sigmoid(outputs.reshape({outputs.size(0)}).to(kFloat64));
    const Tensor bin =
        clamp(p * static_cast<double>(bins_), 0.0, bins_ - 1.0).to(kInt64);  // floor: p >= 0
    const Tensor in_bin = one_hot(bin, bins_, kFloat64);                     // [B, bins]
    const Tensor positive = classes.to(kFloat64).reshape({classes.numel(), 1});
    return cat({sum(in_bin * positive, {0}), sum(in_bin * (1.0 - positive), {0})}, 0);
  }
  double from_sums(const std::vector<double>& h) const override {
    double positives = 0, negatives = 0, pairs_won = 0;
    for (int b = 0; b < bins_; ++b) {
      // A positive in bin b beats every negative in a lower bin and ties those in its own.
      pairs_won += h[b] * (negatives + 0.5 * h[bins_ + b]);
      positives += h[b];
      negatives += h[bins_ + b];
    }
    return ratio(pairs_won, positives * negatives);
  }

 private:
  int bins_;
};

}  // namespace

MetricPtr accuracy() { return std::make_shared<Accuracy>(); }
MetricPtr precision() { return std::make_shared<ClassScore>(ClassScore::Precision); }
MetricPtr recall() { return std::make_shared<ClassScore>(ClassScore::Recall); }
MetricPtr f1() { return std::make_shared<ClassScore>(ClassScore::F1); }
MetricPtr auc(int bins) { return std::make_shared<Auc>(bins); }

}  // namespace loom::train
