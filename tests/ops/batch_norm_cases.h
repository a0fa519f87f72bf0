// batch_norm and batch_norm_relu as one case table for both devices: training (batch
// statistics, with and without weight and bias) and eval (running statistics, inputs without a
// gradient), on 2-D and 4-D inputs from a single pixel per channel to 9216 (the CUDA sums' chunks
// per channel), planes of 100 and 25 (the vectorised and scalar passes).
#pragma once

#include <string>
#include <vector>

#include "parity.h"

namespace loom::testing {

inline std::vector<ParityCase> batch_norm_cases() {
  using V = const std::vector<Tensor>&;
  std::vector<ParityCase> cases;
  for (const Shape& x : {Shape{3, 2, 3, 4}, Shape{5, 3}, Shape{1, 2, 2, 3}, Shape{8, 16, 10, 10},
                         Shape{32, 7}, Shape{2, 3, 5, 5}, Shape{16, 3, 24, 24}}) {
    const Shape c{x[1]};
    const Input input = uniform_in(x, -1.5, 2.5);
    const Input running_mean = constant(normal(c)), running_var = constant(uniform_in(c, 0.5, 2.0));
    const std::string of = " of " + shape_str(x);
    cases.push_back(
        {"batch_norm, training" + of, {input, uniform_in(c, 0.5, 1.5), normal(c)}, [](V in) {
           return batch_norm(in[0], in[1], in[2], Tensor(), Tensor(), true);
         }});
    cases.push_back({"batch_norm, training, no weight or bias" + of, {input}, [](V in) {
                       return batch_norm(in[0], Tensor(), Tensor(), Tensor(), Tensor(), true);
                     }});
    cases.push_back({"batch_norm, eval" + of,
                     {input, uniform_in(c, 0.5, 1.5), normal(c), running_mean, running_var},
                     [](V in) { return batch_norm(in[0], in[1], in[2], in[3], in[4], false); }});
    // Weights of both signs: the relu cuts where the normalised value is positive, too.
    cases.push_back(
        {"batch_norm_relu, training" + of, {input, uniform_in(c, -1.5, 1.5), normal(c)}, [](V in) {
           return batch_norm_relu(in[0], in[1], in[2], Tensor(), Tensor(), true);
         }});
    cases.push_back(
        {"batch_norm_relu, eval" + of,
         {input, uniform_in(c, -1.5, 1.5), normal(c), running_mean, running_var},
         [](V in) { return batch_norm_relu(in[0], in[1], in[2], in[3], in[4], false); }});
  }
  return cases;
}

}  // namespace loom::testing
