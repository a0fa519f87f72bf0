// Shared test helpers: finite-difference gradient checks in float64, tensor comparisons,
// and the GPU skip used by every gpu-labelled test.
#pragma once

#include <gtest/gtest.h>
#include <loom/loom.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace loom::testing {

// How much slower a sanitizer build runs: time limits of "within 2 s" checks are multiplied by
// it (a wide spec's build ran 36x slower under ASan).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr double kSlowdown = 50;
#else
inline constexpr double kSlowdown = 1;
#endif

// A wall-clock bound of the plain build (a deadline, a timeout that must not fire, a limit on
// an elapsed time) stretched by kSlowdown. Not for timeouts a test makes fire on purpose.
template <typename Rep, typename Period>
constexpr std::chrono::milliseconds scaled(std::chrono::duration<Rep, Period> bound) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(bound * kSlowdown);
}

// scaled(bound), never past `ceiling`: a bound that must stay below another fixed one (CTest's
// timeout of the test, a sleep the test tells apart from a prompt end) to mean anything.
template <typename Rep, typename Period, typename Rep2, typename Period2>
constexpr std::chrono::milliseconds scaled(std::chrono::duration<Rep, Period> bound,
                                           std::chrono::duration<Rep2, Period2> ceiling) {
  return std::min(scaled(bound), std::chrono::duration_cast<std::chrono::milliseconds>(ceiling));
}

// Skips the current test, saying why, unless a CUDA device is usable.
#define LOOM_REQUIRE_CUDA()                                                             \
  do {                                                                                  \
    if (!::loom::built_with_cuda()) GTEST_SKIP() << "loom was built without CUDA";      \
    if (!::loom::cuda_is_available()) GTEST_SKIP() << "no CUDA device on this machine"; \
  } while (0)

// cuDNN's deterministic algorithms while the guard lives (tests that need bitwise
// reproducible GPU training), then the previous choice again.
class DeterministicAlgorithmsGuard {
 public:
  DeterministicAlgorithmsGuard() : previous_(deterministic()) { set_deterministic(true); }
  ~DeterministicAlgorithmsGuard() { set_deterministic(previous_); }
  DeterministicAlgorithmsGuard(const DeterministicAlgorithmsGuard&) = delete;
  DeterministicAlgorithmsGuard& operator=(const DeterministicAlgorithmsGuard&) = delete;

 private:
  bool previous_;
};

using Function = std::function<Tensor(const std::vector<Tensor>&)>;

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-6;
  double rtol = 1e-4;
};

// Compares the autograd gradient of f at `inputs` (float64 CPU leaves; those with
// requires_grad are checked) with central differences of <f(x), w> for a random weight w.
// Returns an empty string on success, else a description of the worst mismatch.
std::string gradcheck(const Function& f, const std::vector<Tensor>& inputs,
                      const GradcheckOptions& options = {});

#define EXPECT_GRADCHECK(f, inputs)                                     \
  do {                                                                  \
    const std::string loom_gc_ = ::loom::testing::gradcheck(f, inputs); \
    EXPECT_TRUE(loom_gc_.empty()) << loom_gc_;                          \
  } while (0)

// Max |a - b| <= atol + rtol * |b| elementwise, shapes equal; returns "" or the first failure.
std::string compare(const Tensor& actual, const Tensor& expected, double atol, double rtol);

#define EXPECT_TENSOR_NEAR(actual, expected, atol, rtol)                                  \
  do {                                                                                    \
    const std::string loom_cmp_ = ::loom::testing::compare(actual, expected, atol, rtol); \
    EXPECT_TRUE(loom_cmp_.empty()) << loom_cmp_;                                          \
  } while (0)

// A float64 CPU leaf of random normal values that requires grad, seeded for reproducibility.
Tensor random_leaf(const Shape& shape, uint64_t seed, double scale = 1.0);

// A tensor's elements in row-major order as doubles, whatever its strides.
inline std::vector<double> values_of(const Tensor& t) { return t.contiguous().to_vector<double>(); }

// Values in [lo, hi) that keep at least `margin` away from every point in `kinks`, so a finite
// difference never straddles a kink (relu at 0, clamp at its bounds).
Tensor random_away_from(const Shape& shape, uint64_t seed, double lo, double hi,
                        const std::vector<double>& kinks, double margin);

// EXPECT that `statement` throws loom::Error whose message contains `fragment`.
#define EXPECT_LOOM_ERROR(statement, fragment)                                     \
  do {                                                                             \
    try {                                                                          \
      statement;                                                                   \
      ADD_FAILURE() << "expected loom::Error containing \"" << (fragment) << "\""; \
    } catch (const ::loom::Error& loom_err_) {                                     \
      EXPECT_NE(std::string(loom_err_.what()).find(fragment), std::string::npos)   \
          << "message was: " << loom_err_.what();                                  \
    }                                                                              \
  } while (0)

}  // namespace loom::testing
