// Every differentiable elementwise op and activation as a test case (function, arity, input
// domain), and the operand layouts they run on: written once, and made into the family's case
// table (elementwise_parity_cases) that both devices run, with large tensors, both CUDA kernels
// and where() with a broadcast condition.
#pragma once

#include <string>
#include <vector>

#include "parity.h"

namespace loom::testing {

// Where inputs come from: any normal values, values in [0.5, 2) (log, sqrt, pow, division),
// or uniform values in [-2, 2) kept 0.05 away from the op's kinks.
enum class Domain { Any, Positive, AwayFromKinks };

struct OpCase {
  std::string name;
  int arity;
  Domain domain;
  std::vector<double> kinks;
  Function f;
};

// Shapes of the leaves; with transpose_first the first operand is used as in[0].t(), so a
// [4, 3] leaf becomes a non-contiguous [3, 4] operand.
struct Layout {
  std::string name;
  std::vector<Shape> shapes;
  bool transpose_first = false;
};

inline std::vector<Layout> unary_layouts() {
  return {{"matrix", {{2, 3}}},
          {"scalar", {{}}},
          {"rank3", {{2, 3, 4}}},
          {"transposed", {{4, 3}}, true}};
}

inline std::vector<Layout> binary_layouts() {
  return {{"same", {{3, 4}, {3, 4}}},     {"outer", {{3, 1}, {1, 4}}},
          {"trailing", {{2, 3, 4}, {4}}}, {"scalar_left", {{}, {2, 3}}},
          {"scalar_right", {{2, 3}, {}}}, {"transposed", {{4, 3}, {3, 4}}, true}};
}

inline std::vector<Layout> layouts_for(const OpCase& c) {
  return c.arity == 1 ? unary_layouts() : binary_layouts();
}

inline Tensor make_input(const OpCase& c, const Shape& shape, uint64_t seed) {
  switch (c.domain) {
    case Domain::Positive:
      return random_away_from(shape, seed, 0.5, 2.0, {}, 0.0);
    case Domain::AwayFromKinks:
      return random_away_from(shape, seed, -2.0, 2.0, c.kinks, 0.05);
    case Domain::Any:
      break;
  }
  return random_leaf(shape, seed);
}

// Applies the layout's view to the leaves, then the op.
inline Function with_layout(const Function& f, const Layout& layout) {
  return [f, layout](const std::vector<Tensor>& in) {
    std::vector<Tensor> operands = in;
    if (layout.transpose_first) operands[0] = operands[0].t();
    return f(operands);
  };
}

// Whether an op of differentiable_cases() computes through exp, log, tanh or pow, whose float
// results may differ in the last bit between libm and CUDA and from the correctly rounded one.
// The others are IEEE-exact float operations and selections: in bfloat16 (computed in float,
// rounded once) they give the correctly rounded result on both devices.
inline bool uses_libm(const std::string& name) {
  for (const char* op :
       {"exp", "log", "sigmoid", "tanh", "pow_3", "pow_half", "pow_neg", "pow_0", "pow"}) {
    if (name == op) return true;
  }
  return false;
}

inline std::vector<OpCase> differentiable_cases() {
  using V = const std::vector<Tensor>&;
  const Domain any = Domain::Any, pos = Domain::Positive, kinks = Domain::AwayFromKinks;
  return {
      {"neg", 1, any, {}, [](V in) { return neg(in[0]); }},
      {"unary_minus", 1, any, {}, [](V in) { return -in[0]; }},
      {"exp", 1, any, {}, [](V in) { return exp(in[0]); }},
      {"log", 1, pos, {}, [](V in) { return log(in[0]); }},
      {"sqrt", 1, pos, {}, [](V in) { return sqrt(in[0]); }},
      {"abs", 1, kinks, {0.0}, [](V in) { return abs(in[0]); }},
      {"clamp", 1, kinks, {-0.5, 0.7}, [](V in) { return clamp(in[0], -0.5, 0.7); }},
      {"pow_3", 1, any, {}, [](V in) { return pow(in[0], 3.0); }},
      {"pow_half", 1, pos, {}, [](V in) { return pow(in[0], 0.5); }},
      {"pow_neg", 1, pos, {}, [](V in) { return pow(in[0], -1.5); }},
      {"pow_0", 1, any, {}, [](V in) { return pow(in[0], 0.0); }},
      {"add_scalar", 1, any, {}, [](V in) { return in[0] + 1.5; }},
      {"scalar_add", 1, any, {}, [](V in) { return 1.5 + in[0]; }},
      {"sub_scalar", 1, any, {}, [](V in) { return in[0] - 0.25; }},
      {"scalar_sub", 1, any, {}, [](V in) { return 2.0 - in[0]; }},
      {"mul_scalar", 1, any, {}, [](V in) { return in[0] * -3.0; }},
      {"scalar_mul", 1, any, {}, [](V in) { return 0.5 * in[0]; }},
      {"div_scalar", 1, any, {}, [](V in) { return in[0] / 4.0; }},
      {"scalar_div", 1, pos, {}, [](V in) { return 3.0 / in[0]; }},
      {"relu", 1, kinks, {0.0}, [](V in) { return relu(in[0]); }},
      {"leaky_relu", 1, kinks, {0.0}, [](V in) { return leaky_relu(in[0], 0.1); }},
      {"leaky_relu_neg_slope", 1, kinks, {0.0}, [](V in) { return leaky_relu(in[0], -0.2); }},
      {"sigmoid", 1, any, {}, [](V in) { return sigmoid(in[0]); }},
      {"tanh", 1, any, {}, [](V in) { return tanh(in[0]); }},
      {"add", 2, any, {}, [](V in) { return in[0] + in[1]; }},
      // Its kink is a + b = 0, which the seeded normal operands do not come within a finite
      // difference's step of.
      {"add_relu", 2, any, {}, [](V in) { return add_relu(in[0], in[1]); }},
      {"sub", 2, any, {}, [](V in) { return in[0] - in[1]; }},
      {"mul", 2, any, {}, [](V in) { return in[0] * in[1]; }},
      {"div", 2, pos, {}, [](V in) { return in[0] / in[1]; }},
      {"maximum", 2, any, {}, [](V in) { return maximum(in[0], in[1]); }},
      {"minimum", 2, any, {}, [](V in) { return minimum(in[0], in[1]); }},
      {"pow", 2, pos, {}, [](V in) { return pow(in[0], in[1]); }},
      // The condition comes from the first operand, kept away from the threshold so a finite
      // difference never flips it.
      {"where", 2, kinks, {0.3}, [](V in) { return where(gt(in[0], 0.3), in[0], in[1]); }},
  };
}

// Every op of differentiable_cases() on every layout in float32, float64 and bfloat16: bfloat16
// is computed in float and rounded once with the same function on both devices, so ops made of
// IEEE-exact float operations agree bit for bit, gradients included; the libm ones within
// bfloat16's tolerance. Then large tensors (gradients summed over 1031 rows), dense operands
// whose size is a multiple of 8 (CUDA's 16-byte kernel: 8 bfloat16, 4 float or 2 double a
// thread) and views one element in or of odd size (its scalar kernel), and where() with a
// broadcast condition.
inline std::vector<ParityCase> elementwise_parity_cases() {
  using V = const std::vector<Tensor>&;
  std::vector<ParityCase> cases;
  for (const OpCase& c : differentiable_cases()) {
    for (const Layout& layout : layouts_for(c)) {
      ParityCase p{c.name + " on " + layout.name,
                   {},
                   with_layout(c.f, layout),
                   {kFloat32, kFloat64, kBFloat16}};
      for (const Shape& shape : layout.shapes) {
        p.inputs.push_back(
            {[c, shape](uint64_t seed) { return make_input(c, shape, seed).detach(); }});
      }
      p.bf16_exact = !uses_libm(c.name);
      cases.push_back(p);
    }
  }
  const Input a = normal({1031, 2049}), b = normal({2049});
  cases.push_back({"large: sigmoid of a broadcast product",
                   {a, b},
                   [](V in) { return sigmoid(in[0] * in[1]); },
                   {kFloat32, kFloat64}});
  cases.push_back({"large: a transposed operand minus a number",
                   {a},
                   [](V in) { return in[0].t() - 1.5; },
                   {kFloat32, kFloat64}});
  // b's gradient sums 1031 rows in double, in another order on each device: a few double ulps
  // apart, which could change the rounding to bfloat16 only for a sum that close to a tie.
  ParityCase product{"large: a broadcast product plus a number",
                     {a, b},
                     [](V in) { return in[0] * in[1] + 0.5; },
                     {kBFloat16}};
  product.bf16_exact = true;
  cases.push_back(product);
  cases.push_back({"large: sigmoid of a transposed operand minus a column",
                   {a, b},
                   [](V in) { return sigmoid(in[0].t()) - in[1].unsqueeze(1); },
                   {kBFloat16}});
  const Input x = normal({8193}), y = normal({8193});
  for (int64_t start : {0, 1}) {
    for (int64_t length : {8192, 8191}) {
      ParityCase p{"relu(x * y) + x from element " + std::to_string(start) + ", " +
                       std::to_string(length) + " elements",
                   {x, y},
                   [start, length](V in) {
                     const Tensor u = in[0].narrow(0, start, length),
                                  v = in[1].narrow(0, start, length);
                     return relu(u * v) + u;
                   },
                   {kFloat32, kFloat64, kBFloat16}};
      p.bf16_exact = true;
      cases.push_back(p);
    }
  }
  Generator gen(4);
  const Tensor cond = randint(0, 2, {3, 1}, kUInt8, &gen);
  cases.push_back({"where with a broadcast condition",
                   {normal({1, 4}), normal({3, 4})},
                   [cond](V in) { return where(cond.to(in[0].device()), in[0], in[1]); },
                   {kFloat32, kFloat64}});
  return cases;
}

}  // namespace loom::testing
