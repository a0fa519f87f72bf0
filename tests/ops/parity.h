// The one parity checker of the ops tests and the tolerance of each dtype, named once: the CPU
// against float64 on the same values, CUDA against the CPU, outputs and the gradients of
// <f(x), w> for a random w. Each op family lists its cases once (<family>_cases.h) and both test
// binaries run that table (LOOM_CASE_TABLE_TEST): the cpu one against float64 and finite
// differences, the gpu one against the CPU.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "testing.h"

namespace loom::testing {

// |actual - expected| <= atol * scale + rtol * |expected| elementwise, scale being the largest
// |expected| of the tensor (at least 1): a result summed from many terms carries a rounding
// error of its terms' size, which the largest result stands for, so an entry that cancels to
// near zero keeps the others' slack.
struct Tolerance {
  double atol, rtol;
};

struct Tolerances {
  Tolerance value, gradient;
};

// Bit for bit: selections, copies, and bfloat16 results rounded once from IEEE-exact float
// operations or from exact double sums, which both devices round alike.
inline constexpr Tolerances kExact = {{0, 0}, {0, 0}};

// How far a result computed in `dtype` may be from the same computation elsewhere (CUDA against
// the CPU, or the CPU against float64 on the same values):
//   float64   sums in another order: 1e-10 relative.
//   float32   up to ~10^4 float32 products a result (a convolution's weight gradient), summed in
//             another order or by another algorithm (cuDNN's Winograd and FFT ones), in full
//             float32: the checker turns TF32 off. 1e-4 of the largest result, as the parity tests
//             of every family allowed before the table (1e-4 to 5e-4 absolute).
//   bfloat16  computed in float and rounded once per op: a libm result (exp, log, tanh, pow) may
//             differ in float's last bit, so by one bfloat16 ulp (2^-7 relative), and a chain of
//             ops rounds each step (one ulp of the largest value). A gradient chains up to four
//             roundings, and tanh's and sigmoid's read their rounded output y, whose one ulp moves
//             1 - y^2 and y (1 - y) by 2^-7 of the weight (|w| < 5).
inline Tolerances tolerance_for(DType dtype) {
  if (dtype == kFloat64) return {{1e-12, 1e-10}, {1e-12, 1e-10}};
  if (dtype == kFloat32) return {{1e-4, 1e-4}, {1e-4, 1e-4}};
  if (dtype == kBFloat16) return {{0x1p-7, 0x1p-7}, {5 * 0x1p-7, 0x1p-5}};
  return kExact;
}

// "" or the first element of `actual` farther from `expected` than `tol` allows (NaN matches NaN).
inline std::string compare_within(const Tensor& actual, const Tensor& expected,
                                  const Tolerance& tol) {
  double scale = 1;
  for (double v : expected.detach().cpu().to(kFloat64).to_vector<double>()) {
    if (std::abs(v) > scale) scale = std::abs(v);
  }
  return compare(actual.detach().cpu(), expected.detach().cpu(), tol.atol * scale, tol.rtol);
}

struct ParityOptions {
  DType dtype = kFloat32;
  // The tolerance_for(dtype) unless set (kExact for ops that agree bit for bit).
  const Tolerances* tolerance = nullptr;
  // Which inputs are leaves that require grad (empty: all of them); the others are constants,
  // such as running statistics.
  std::vector<bool> requires_grad;
  // The layout of the first input's CUDA copy (channels-last tests); the CPU's stays NCHW.
  MemoryFormat cuda_format = MemoryFormat::Contiguous;
};

// What the CUDA side computed, for checks beyond the values (layouts, dtypes).
struct ParityRun {
  Tensor output;
  std::vector<Tensor> leaves;
};

namespace detail {

inline bool differentiable(const ParityOptions& options, size_t i) {
  return options.requires_grad.empty() || options.requires_grad[i];
}

// f on leaves holding `values` in `dtype` on `device`; the first one in `format`.
inline ParityRun run_side(const Function& f, const std::vector<Tensor>& values, DType dtype,
                          Device device, MemoryFormat format, const ParityOptions& options) {
  ParityRun run;
  for (size_t i = 0; i < values.size(); ++i) {
    Tensor leaf = values[i].detach().to(device, dtype);
    if (i == 0 && format != MemoryFormat::Contiguous) leaf = leaf.contiguous(format);
    if (differentiable(options, i)) leaf.set_requires_grad(true);
    run.leaves.push_back(leaf);
  }
  run.output = f(run.leaves);
  return run;
}

// Backward from the same weights on both sides, then the outputs and every leaf's gradient of
// `actual` against those of `expected`.
inline void expect_sides_agree(const ParityRun& actual, const ParityRun& expected,
                               const Tolerances& tol) {
  const std::string out = compare_within(actual.output, expected.output, tol.value);
  EXPECT_TRUE(out.empty()) << "output: " << out;
  if (!expected.output.requires_grad()) return;
  Generator gen(2024);
  const Tensor w = randn(expected.output.shape(), kFloat64, &gen).to(actual.output.dtype());
  actual.output.backward(w.to(actual.output.device()));
  expected.output.backward(w.to(expected.output.device(), expected.output.dtype()));
  for (size_t i = 0; i < expected.leaves.size(); ++i) {
    if (!expected.leaves[i].requires_grad()) continue;
    const Tensor& got = actual.leaves[i].grad();
    ASSERT_TRUE(got.defined() && expected.leaves[i].grad().defined()) << "input " << i;
    EXPECT_EQ(got.device(), actual.leaves[i].device()) << "input " << i;
    const std::string problem = compare_within(got, expected.leaves[i].grad(), tol.gradient);
    EXPECT_TRUE(problem.empty()) << "gradient of input " << i << ": " << problem;
  }
}

}  // namespace detail

// f on CUDA leaves holding `values` (rounded to options.dtype) against f on CPU leaves of the
// same values: outputs and every gradient within the dtype's tolerance. Convolutions run in
// full float32 (no TF32), which float32's tolerance assumes. Returns the CUDA side.
inline ParityRun expect_cuda_parity(const Function& f, const std::vector<Tensor>& values,
                                    const ParityOptions& options = {}) {
  const ConvTf32Scope full_float32(false);
  const Tolerances tol = options.tolerance ? *options.tolerance : tolerance_for(options.dtype);
  const ParityRun cpu =
      detail::run_side(f, values, options.dtype, kCPU, MemoryFormat::Contiguous, options);
  ParityRun gpu = detail::run_side(f, values, options.dtype, kCUDA, options.cuda_format, options);
  EXPECT_TRUE(gpu.output.is_cuda());
  EXPECT_EQ(gpu.output.dtype(), cpu.output.dtype());
  detail::expect_sides_agree(gpu, cpu, tol);
  return gpu;
}

// f on CPU leaves in options.dtype against f in float64 on the same (rounded) values: outputs
// and every gradient within the dtype's tolerance.
inline void expect_matches_float64(const Function& f, const std::vector<Tensor>& values,
                                   const ParityOptions& options) {
  std::vector<Tensor> rounded;
  for (const Tensor& v : values) rounded.push_back(v.detach().to(options.dtype).to(kFloat64));
  const ParityRun reference =
      detail::run_side(f, rounded, kFloat64, kCPU, MemoryFormat::Contiguous, options);
  const ParityRun run =
      detail::run_side(f, rounded, options.dtype, kCPU, MemoryFormat::Contiguous, options);
  EXPECT_EQ(run.output.dtype(), options.dtype);
  detail::expect_sides_agree(run, reference, tolerance_for(options.dtype));
}

// One input of a case: its float64 values drawn from a seed, and whether the checks
// differentiate through it.
struct Input {
  std::function<Tensor(uint64_t seed)> draw;
  bool grad = true;
};

inline Input normal(const Shape& shape, double scale = 1.0) {
  return {[shape, scale](uint64_t seed) { return random_leaf(shape, seed, scale).detach(); }};
}

inline Input uniform_in(const Shape& shape, double lo, double hi) {
  return {[shape, lo, hi](uint64_t seed) {
    Generator gen(seed);
    return uniform(shape, lo, hi, kFloat64, &gen);
  }};
}

// An input without a gradient (running statistics, a mask).
inline Input constant(Input input) {
  input.grad = false;
  return input;
}

enum class Gradcheck { Auto, Off };

// One op of a family's table: a name for the failure messages, its inputs, the op, and the
// dtypes both devices check it in. float64 is the CPU's reference (and a dtype of the CUDA
// leg when listed); a reference, where there is one independent of the op, checks the CPU's
// outputs too. Gradcheck::Auto runs float64 finite differences on cases of up to 2500 input
// elements; Off is for ops with a kink the inputs may straddle (relu) or NaN inputs.
struct ParityCase {
  std::string name;
  std::vector<Input> inputs;
  Function f;
  std::vector<DType> dtypes = {kFloat32};
  Gradcheck gradcheck = Gradcheck::Auto;
  bool bf16_exact = false;  // CUDA gives the CPU's bits in bfloat16
  Function reference;       // of float64 values, outputs only
};

enum class Leg { Cpu, Cuda };

// A seed of the case's own (FNV-1a of its name), so that each case draws fresh values.
inline uint64_t seed_of(const std::string& name) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
  return h;
}

// The CPU leg: every dtype against float64 (and the reference, where there is one), then
// float64 finite differences. The CUDA leg: every dtype against the CPU.
inline void check_case(const ParityCase& c, Leg leg) {
  SCOPED_TRACE(c.name);
  std::vector<Tensor> values;
  ParityOptions options;
  int64_t elements = 0;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    values.push_back(c.inputs[i].draw(seed_of(c.name) + i));
    options.requires_grad.push_back(c.inputs[i].grad);
    if (c.inputs[i].grad) elements += values.back().numel();
    const std::vector<double> v = values.back().to_vector<double>();
    ASSERT_TRUE(std::any_of(v.begin(), v.end(), [](double e) { return e != 0; }))
        << "input " << i << " is all zeros, which hides what a kernel forgets to write";
  }
  for (DType dtype : c.dtypes) {
    SCOPED_TRACE(dtype_name(dtype));
    options.dtype = dtype;
    options.tolerance = dtype == kBFloat16 && c.bf16_exact ? &kExact : nullptr;
    if (leg == Leg::Cuda) {
      expect_cuda_parity(c.f, values, options);
    } else if (dtype != kFloat64) {
      expect_matches_float64(c.f, values, options);
    }
  }
  if (leg == Leg::Cuda) return;
  if (c.reference) {
    std::vector<DType> dtypes = c.dtypes;
    if (std::find(dtypes.begin(), dtypes.end(), kFloat64) == dtypes.end()) {
      dtypes.push_back(kFloat64);
    }
    for (DType dtype : dtypes) {
      SCOPED_TRACE(std::string("against the reference in ") + dtype_name(dtype));
      std::vector<Tensor> rounded, exact;
      for (const Tensor& v : values) {
        rounded.push_back(v.to(dtype));
        exact.push_back(rounded.back().to(kFloat64));
      }
      NoGradGuard no_grad;
      const std::string problem =
          compare_within(c.f(rounded), c.reference(exact), tolerance_for(dtype).value);
      EXPECT_TRUE(problem.empty()) << problem;
    }
  }
  if (c.gradcheck == Gradcheck::Auto && elements <= 2500) {
    std::vector<Tensor> leaves;
    for (size_t i = 0; i < values.size(); ++i) {
      leaves.push_back(values[i].clone().set_requires_grad(c.inputs[i].grad));
    }
    const std::string problem = gradcheck(c.f, leaves);
    EXPECT_TRUE(problem.empty()) << "finite differences: " << problem;
  }
}

// The one test body of a family's table, for this binary's leg (Cpu or Cuda): every case.
#define LOOM_CASE_TABLE_TEST(suite, table, leg)                                       \
  TEST(suite, EveryCaseOn##leg) {                                                     \
    if (::loom::testing::Leg::leg == ::loom::testing::Leg::Cuda) LOOM_REQUIRE_CUDA(); \
    for (const ::loom::testing::ParityCase& loom_case_ : table()) {                   \
      ::loom::testing::check_case(loom_case_, ::loom::testing::Leg::leg);             \
    }                                                                                 \
  }

}  // namespace loom::testing
