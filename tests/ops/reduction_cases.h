// sum, mean, max, min, sum_to and expand as one case table for both devices: every op over
// short rows (a CUDA warp each) and long ones (a block each), along every dim and with keepdim;
// and in bfloat16 on bounded values, whose sums are exact in double, so the devices agree bit
// for bit.
#pragma once

#include <string>
#include <vector>

#include "bf16_reference.h"
#include "parity.h"

namespace loom::testing {

inline std::vector<ParityCase> reduction_cases() {
  using V = const std::vector<Tensor>&;
  struct Op {
    std::string name;
    Function f;
  };
  std::vector<Op> ops = {
      {"sum", [](V in) { return sum(in[0]); }},
      {"sum over dim 1", [](V in) { return sum(in[0], {1}); }},
      {"sum over dims 0 and 2, keepdim",
       [](V in) {
         return sum(in[0], {0, 2}, true);
       }},
      {"mean", [](V in) { return mean(in[0]); }},
      {"mean over dim -1", [](V in) { return mean(in[0], {-1}); }},
      {"mean over dim -1, keepdim", [](V in) { return mean(in[0], {-1}, true); }},
      {"mean over dims 0 and 1",
       [](V in) {
         return mean(in[0], {0, 1});
       }},
      {"max", [](V in) { return max(in[0]); }},
      {"min", [](V in) { return min(in[0]); }},
      {"min over dim -1", [](V in) { return min(in[0], -1); }},
      {"sum_to [1, last]",
       [](V in) {
         return sum_to(in[0], {1, in[0].size(2)});
       }},
      {"expand of a narrowed dim",
       [](V in) {
         return in[0].narrow(1, 0, 1).expand({-1, 3, -1});
       }},
  };
  for (int64_t d : {0, 1, 2}) {
    for (bool keep : {false, true}) {
      const std::string along = " along dim " + std::to_string(d) + (keep ? ", keepdim" : "");
      ops.push_back({"max" + along, [d, keep](V in) { return max(in[0], d, keep); }});
      ops.push_back({"min" + along, [d, keep](V in) { return min(in[0], d, keep); }});
    }
  }
  std::vector<ParityCase> cases;
  // Short rows (a warp each) and long rows (a block each).
  for (const Shape& shape :
       {Shape{3, 4, 5}, Shape{4, 5, 6}, Shape{3, 2, 2500}, Shape{2, 1300, 3}}) {
    for (const Op& op : ops)
      cases.push_back({op.name + " of " + shape_str(shape), {normal(shape)}, op.f});
  }
  cases.push_back(
      {"sum of a transposed matrix", {normal({4, 3})}, [](V in) { return sum(in[0].t(), {0}); }});
  cases.push_back({"sum_to [1, 3, 1]", {normal({2, 3, 4})}, [](V in) {
                     return sum_to(in[0], {1, 3, 1});
                   }});
  cases.push_back({"expand [3, 1] to [2, 3, 4]", {normal({3, 1})}, [](V in) {
                     return in[0].expand({2, 3, 4});
                   }});
  cases.push_back({"expand [3, 1] to [-1, 2]", {normal({3, 1})}, [](V in) {
                     return in[0].expand({-1, 2});
                   }});
  cases.push_back({"expand [3, 1] to [4, 3, 5], times 1", {normal({3, 1})}, [](V in) {
                     return in[0].expand({4, 3, 5}) * 1.0;
                   }});
  // bfloat16 sums accumulate in double, exactly for values on bounded_bf16's grid: both devices
  // round the same sum once. Selections are exact too.
  const Input bounded = {[](uint64_t seed) { return bounded_bf16({13, 70}, seed).to(kFloat64); }};
  for (const Op& op : std::vector<Op>{
           {"sum over dim 1", [](V in) { return sum(in[0], {1}); }},
           {"mean over dim 0, keepdim", [](V in) { return mean(in[0], {0}, true); }},
           {"max along dim 1", [](V in) { return max(in[0], 1); }},
           {"min", [](V in) { return min(in[0]); }},
       }) {
    // The grid has ties, which a finite difference of max or min cannot step over.
    ParityCase c{
        op.name + " of bounded bfloat16 values", {bounded}, op.f, {kBFloat16}, Gradcheck::Off};
    c.bf16_exact = true;
    cases.push_back(c);
  }
  return cases;
}

}  // namespace loom::testing
