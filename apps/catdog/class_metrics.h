// Per-class precision, recall, F1 and support from a confusion matrix, for `evaluate` (its text
// table and --json), as scikit-learn's classification_report computes them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace loom::catdog {

struct ClassMetrics {
  double precision = 0.0;  // tp / (tp + fp): column c's diagonal over the column's sum
  double recall = 0.0;     // tp / (tp + fn): row c's diagonal over the row's sum
  double f1 = 0.0;         // 2 p r / (p + r)
  int64_t support = 0;     // the images of class c (row c's sum)
};

// `confusion` is K x K row-major, rows the true class and columns the predicted one. A class
// nothing was predicted as has precision 0, one without images recall 0, and F1 is 0 where
// p + r = 0 (scikit-learn's zero_division=0), so that no value is NaN.
std::vector<ClassMetrics> class_metrics(const std::vector<int64_t>& confusion, size_t k);

}  // namespace loom::catdog
