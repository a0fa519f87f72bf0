// cat and stack as one case table for both devices: along every dim, with pieces of other
// sizes and strided pieces.
#pragma once

#include <string>
#include <vector>

#include "parity.h"

namespace loom::testing {

inline std::vector<ParityCase> shape_ops_cases() {
  std::vector<ParityCase> cases;
  for (int64_t d : {0, 1, 2}) {
    const std::string along = " along dim " + std::to_string(d);
    Shape a{2, 3, 4}, b{2, 3, 4}, c{2, 3, 4}, e{2, 3, 4};
    b[d] = 1, c[d] = 2, e[d] = 5;
    cases.push_back({"cat of three" + along,
                     {normal(a), normal(b), normal(c)},
                     [d](const std::vector<Tensor>& in) { return cat(in, d); }});
    cases.push_back({"cat of a twice-transposed view" + along,
                     {normal(a), normal(e)},
                     [d](const std::vector<Tensor>& in) {
                       return cat({in[0], in[1].transpose(0, 1).transpose(0, 1)}, d);
                     }});
    cases.push_back({"stack of two [2, 3]" + along,
                     {normal({2, 3}), normal({2, 3})},
                     [d](const std::vector<Tensor>& in) { return stack(in, d); }});
    cases.push_back({"stack of two [2, 3, 4]" + along,
                     {normal(a), normal(a)},
                     [d](const std::vector<Tensor>& in) {
                       return stack({in[0], in[1]}, d);
                     }});
  }
  return cases;
}

}  // namespace loom::testing
