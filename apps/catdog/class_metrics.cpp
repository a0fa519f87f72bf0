// Per-class precision, recall, F1 and support (class_metrics.h).
#include "class_metrics.h"

#include <loom/loom.h>

namespace loom::catdog {

std::vector<ClassMetrics> class_metrics(const std::vector<int64_t>& confusion, size_t k) {
  LOOM_CHECK(confusion.size() == k * k, "class_metrics: a confusion matrix of ", confusion.size(),
             " entries for ", k, " classes");
  std::vector<ClassMetrics> out(k);
  for (size_t c = 0; c < k; ++c) {
    int64_t predicted = 0, actual = 0;  // column c's and row c's sums
    for (size_t i = 0; i < k; ++i) {
      predicted += confusion[i * k + c];
      actual += confusion[c * k + i];
    }
    const double tp = static_cast<double>(confusion[c * k + c]);
    ClassMetrics& m = out[c];
    // zero_division=0: no prediction of c gives precision 0, no image of c recall 0.
    m.precision = predicted > 0 ? tp / static_cast<double>(predicted) : 0.0;
    m.recall = actual > 0 ? tp / static_cast<double>(actual) : 0.0;
    m.f1 = m.precision + m.recall > 0.0 ? 2.0 * m.precision * m.recall / (m.precision + m.recall)
                                        : 0.0;
    m.support = actual;
  }
  return out;
}

}  // namespace loom::catdog
