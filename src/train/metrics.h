// Metrics for fit and evaluate, as Keras' metrics: accuracy, precision, recall, F1 and, for a
// binary head, the area under the ROC curve. A metric adds each batch's statistics to a few
// float64 sums on the model's device (no host sync per batch); the sums add across ranks, so
// a metric over N ranks' shards is the metric of the whole data; result() reads them once.
//
//   train::FitOptions fit;
//   fit.metrics = {train::precision(), train::recall(), train::f1(), train::auc()};
//   // History gets "precision", "val_precision", ... per epoch; evaluate() fills
//   EvalResult::metrics.
//
// Outputs are the model's logits: [B, 1] for a binary head (class 1 when the logit is >= 0,
// as predict decides), [B, K] for K classes (the argmax); labels hold class indices.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "loom/distributed/process_group.h"
#include "loom/tensor/tensor.h"

namespace loom::train {

// The predicted class of each row of outputs [B, K], int64 [B].
Tensor predicted_classes(const Tensor& outputs);

class Metric {
 public:
  virtual ~Metric() = default;
  // The History key ("precision"; fit adds "val_precision" for the validation data).
  virtual std::string name() const = 0;

  void reset() { sums_ = Tensor(); }
  // Adds one batch: outputs [B, 1] or [B, K] (without history), labels [B] or [B, 1].
  void update(const Tensor& outputs, const Tensor& labels);
  // The metric over every batch since reset(), over all ranks of `group` when given (a
  // collective: every rank calls it). NaN when undefined (precision with no predicted positive).
  double result(dist::ProcessGroup* group = nullptr) const;

 protected:
  // This batch's statistics: a float64 [n] tensor on the outputs' device; n may depend on the
  // number of classes but must be the same for every batch.
  virtual Tensor batch_sums(const Tensor& outputs, const Tensor& classes) const = 0;
  virtual double from_sums(const std::vector<double>& sums) const = 0;

 private:
  Tensor sums_;
};

using MetricPtr = std::shared_ptr<Metric>;

// Share of samples whose predicted class is the label.
MetricPtr accuracy();
// For a binary head, of class 1 (Keras' binary precision, recall, F1); for K classes, the
// unweighted mean over the classes (macro average, as scikit-learn's average="macro").
MetricPtr precision();
MetricPtr recall();
MetricPtr f1();
// Binary heads only: the probability that a random positive scores above a random negative
// (ties count one half), from histograms of sigmoid(logit) in `bins` equal bins: within one
// bin's width of the exact value (Keras' AUC uses 200 thresholds).
MetricPtr auc(int bins = 1024);

}  // namespace loom::train
