// matmul, bmm and linear as one case table for both devices: every operand rank, transposed
// views, an operand the BLAS cannot read as it is, broadcast batches, a product larger than a
// tile, with and without bias, in float32 and float64.
#pragma once

#include <string>
#include <vector>

#include "parity.h"

namespace loom::testing {

inline std::vector<ParityCase> linalg_cases() {
  using V = const std::vector<Tensor>&;
  const Function mm = [](V in) { return matmul(in[0], in[1]); };
  std::vector<ParityCase> cases;
  const std::vector<std::pair<Shape, Shape>> products = {
      {{3, 4}, {4, 2}},
      {{5, 3}, {3, 4}},
      {{64, 96}, {96, 48}},
      {{4}, {4}},
      {{3}, {3, 4}},
      {{4}, {4, 2}},
      {{2, 3}, {3}},
      {{3, 4}, {4}},
      {{2, 1, 3, 4}, {3, 4, 5}},
      {{2, 1, 3, 4}, {3, 4, 2}},
      {{2, 1, 3, 4}, {4, 2}},
      {{3, 4}, {3, 4, 2}},
      {{2, 3, 4}, {4, 5}},
      {{2, 4}, {3, 4, 5}},
      {{7, 1, 8}, {8, 2}},
      {{200, 300}, {300, 100}},  // larger than a tile
  };
  for (const auto& [a, b] : products) {
    cases.push_back({"matmul " + shape_str(a) + " @ " + shape_str(b), {normal(a), normal(b)}, mm});
  }
  cases.push_back({"matmul [6, 5] @ [5, 3], float64",
                   {normal({6, 5}), normal({5, 3})},
                   mm,
                   {kFloat32, kFloat64}});
  cases.push_back({"matmul of a transposed operand", {normal({4, 3}), normal({4, 2})}, [](V in) {
                     return matmul(in[0].t(), in[1]);
                   }});
  cases.push_back({"matmul of two transposed operands", {normal({4, 6}), normal({5, 4})}, [](V in) {
                     return matmul(in[0].t(), in[1].t());
                   }});
  cases.push_back(
      {"matmul of an operand the BLAS cannot read", {normal({3, 2, 4}), normal({3, 4})}, [](V in) {
         return matmul(in[0].permute({1, 0, 2}).reshape({2, 12}).narrow(1, 0, 3), in[1]);
       }});
  cases.push_back(
      {"bmm", {normal({3, 2, 4}), normal({3, 4, 5})}, [](V in) { return bmm(in[0], in[1]); }});
  cases.push_back({"bmm of a transposed operand", {normal({3, 4, 5}), normal({3, 6, 5})}, [](V in) {
                     return bmm(in[0], in[1].transpose(1, 2));
                   }});
  for (const auto& [x, w] :
       std::vector<std::pair<Shape, Shape>>{{{3, 2, 4}, {5, 4}}, {{2, 3, 8}, {5, 8}}}) {
    cases.push_back({"linear " + shape_str(x) + " by " + shape_str(w) + " with bias",
                     {normal(x), normal(w), normal({w[0]})},
                     [](V in) { return linear(in[0], in[1], in[2]); }});
    cases.push_back({"linear " + shape_str(x) + " by " + shape_str(w) + " without bias",
                     {normal(x), normal(w)},
                     [](V in) { return linear(in[0], in[1]); }});
  }
  cases.push_back({"linear of a vector", {normal({8}), normal({5, 8})}, [](V in) {
                     return linear(in[0], in[1]);
                   }});
  return cases;
}

}  // namespace loom::testing
