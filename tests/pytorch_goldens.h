// PyTorch's golden values (tests/golden/pytorch_goldens.json, written by
// tools/golden/generate_goldens.py) as loom tensors, and the comparison every golden test uses.
#pragma once

#include <gtest/gtest.h>
#include <loom/loom.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace loom::testing {

// Both sides compute in float64, so they differ only by rounding (another summation order,
// another grouping of one formula): ~1e-15 relative. These bounds leave room for that and for
// the condition of the ops, and still catch any difference of formula.
inline constexpr double kGoldenAtol = 1e-11;
inline constexpr double kGoldenRtol = 1e-10;

// The parsed file, found through LOOM_SOURCE_DIR (CTest sets it for every test).
inline const nlohmann::json& pytorch_goldens() {
  static const nlohmann::json goldens = [] {
    const char* source = std::getenv("LOOM_SOURCE_DIR");
    LOOM_CHECK(source != nullptr,
               "the PyTorch goldens: LOOM_SOURCE_DIR is not set (run the test through ctest)");
    const std::string path = std::string(source) + "/tests/golden/pytorch_goldens.json";
    std::ifstream in(path);
    LOOM_CHECK(in.good(), "the PyTorch goldens: cannot open ", path);
    return nlohmann::json::parse(in);
  }();
  return goldens;
}

// {"shape": [...], "data": [...]} as a float64 CPU tensor.
inline Tensor golden_tensor(const nlohmann::json& j) {
  return from_vector(j.at("data").get<std::vector<double>>(), j.at("shape").get<Shape>());
}

inline Tensor golden_leaf(const nlohmann::json& j) { return golden_tensor(j).requires_grad_(); }

// Expects `actual` to match PyTorch's `expected` within the golden bounds, and prints the
// largest difference (the number to look at when PyTorch or loom changes).
inline void expect_golden(const std::string& what, const Tensor& actual,
                          const nlohmann::json& expected) {
  const Tensor e = golden_tensor(expected);
  ASSERT_TRUE(actual.defined()) << what << ": loom computed nothing";
  ASSERT_EQ(actual.shape(), e.shape()) << what;
  const std::vector<double> a = actual.to_vector<double>(), b = e.to_vector<double>();
  double worst = 0, worst_excess = 0;
  size_t at = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double diff = std::abs(a[i] - b[i]);
    worst = std::max(worst, diff);
    const double excess = diff / (kGoldenAtol + kGoldenRtol * std::abs(b[i]));
    if (!(excess <= worst_excess)) {
      worst_excess = excess;
      at = i;
    }
  }
  std::printf("golden %-52s max |loom - torch| = %.3g\n", what.c_str(), worst);
  EXPECT_LE(worst_excess, 1.0) << what << ": element " << at << " is " << a[at] << ", PyTorch's "
                               << b[at] << " (max |difference| " << worst << ")";
}

inline void expect_golden(const std::string& what, double actual, double expected) {
  expect_golden(what, from_vector(std::vector<double>{actual}),
                {{"shape", {1}}, {"data", {expected}}});
}

}  // namespace loom::testing
