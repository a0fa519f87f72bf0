// softmax and log_softmax as one case table for both devices: along every dim of short rows (a
// CUDA warp each) and long ones (a block each), on a transposed operand, in float32 and float64.
#pragma once

#include <string>
#include <vector>

#include "parity.h"

namespace loom::testing {

inline std::vector<ParityCase> softmax_cases() {
  std::vector<ParityCase> cases;
  for (const Shape& shape : {Shape{3, 4, 5}, Shape{4, 5, 6}, Shape{3, 3000}, Shape{2, 1500, 2}}) {
    std::vector<int64_t> dims;
    for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) dims.push_back(d);
    dims.push_back(-1);
    for (int64_t d : dims) {
      for (bool log : {false, true}) {
        cases.push_back({std::string(log ? "log_softmax" : "softmax") + " of " + shape_str(shape) +
                             " along dim " + std::to_string(d),
                         {normal(shape, 3.0)},
                         [d, log](const std::vector<Tensor>& in) {
                           return log ? log_softmax(in[0], d) : softmax(in[0], d);
                         }});
      }
    }
  }
  cases.push_back({"softmax of a transposed matrix",
                   {normal({6, 2})},
                   [](const std::vector<Tensor>& in) { return softmax(in[0].t(), 1); }});
  cases.push_back({"softmax of [5, 7] along dim 1, float64",
                   {normal({5, 7})},
                   [](const std::vector<Tensor>& in) { return softmax(in[0], 1); },
                   {kFloat32, kFloat64}});
  return cases;
}

}  // namespace loom::testing
