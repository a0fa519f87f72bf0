// `vector-add` and `saxpy`: the seed's six-element example, then a large N timed against the
// ceiling of a plain device-to-device copy of the same size (bytes read + written per second).
#include <cfloat>
#include <cmath>

#include "commands.h"
#include "device_info.h"
#include "vector_ops.h"

namespace loom::gpu_basics {
namespace {

void check_length(int64_t n, const char* op) {
  LOOM_CHECK(n >= 1 && n <= kMaxVectorLength, op, ": --n must be in [1, ", kMaxVectorLength,
             "], got ", n);
}

Tensor random_vector(int64_t n, Device device, uint64_t seed) {
  Generator gen(seed);
  return uniform({n}, -1.0, 1.0, TensorOptions(kFloat32).device(device), &gen);
}

// Times copy_vector(src -> dst) and reports it as the ceiling; returns its GB/s.
double measure_copy_ceiling(Report& report, const RunOptions& options, const Tensor& src,
                            const Tensor& dst) {
  const int64_t n = src.numel();
  const Timing t = time_it(
      options.device, [&] { copy_vector(src, dst); }, options.timing);
  const double gbs = gigabytes_per_second(kCopyBytesPerElement * n, t.median_ms);
  report.row(strf("%-12s %14lld %12.4f %10.1f %8s", "copy", static_cast<long long>(n), t.median_ms,
                  gbs, "100.0%"));
  report.json()["copy"] = {
      {"median_ms", t.median_ms}, {"gb_per_s", gbs}, {"bytes_per_element", kCopyBytesPerElement}};
  return gbs;
}

void report_bandwidth(Report& report, const char* name, int64_t n, double bytes_per_element,
                      const Timing& t, double ceiling_gbs) {
  const double gbs = gigabytes_per_second(bytes_per_element * n, t.median_ms);
  const double fraction = gbs / ceiling_gbs;
  report.row(strf("%-12s %14lld %12.4f %10.1f %7.1f%%", name, static_cast<long long>(n),
                  t.median_ms, gbs, 100.0 * fraction));
  report.json()["result"] = {{"n", n},
                             {"median_ms", t.median_ms},
                             {"min_ms", t.min_ms},
                             {"max_ms", t.max_ms},
                             {"gb_per_s", gbs},
                             {"fraction_of_copy", fraction},
                             {"bytes_per_element", bytes_per_element}};
}

void table_header(Report& report) {
  report.row(
      strf("%-12s %14s %12s %10s %8s", "operation", "elements", "median ms", "GB/s", "of copy"));
}

}  // namespace

Report run_vector_add(const RunOptions& options, int64_t n) {
  check_length(n, "vector-add");
  check_fits(3 * 4 * n, options.device, "vector-add");
  if (options.device.is_cuda()) check_fits(3 * 4 * n, kCPU, "vector-add (host check)");
  Report report("vector-add");
  describe_run(report, options);
  const Device device = options.device;

  // The seed's example: A = [1..6], B = [7..12]; C must be exactly [8, 10, ..., 18].
  const std::vector<float> a6{1, 2, 3, 4, 5, 6};
  const std::vector<float> b6{7, 8, 9, 10, 11, 12};
  const Tensor a_small = from_vector(a6).to(device);
  const Tensor b_small = from_vector(b6).to(device);
  const Tensor c_small = empty({6}, a_small.options());
  vector_add(a_small, b_small, c_small);
  const std::vector<float> c6 = c_small.to_vector<float>();
  std::string shown = "C = [";
  bool exact = true;
  for (size_t i = 0; i < 6; ++i) {
    shown += strf(i == 0 ? "%g" : ", %g", c6[i]);
    exact = exact && c6[i] == a6[i] + b6[i];
  }
  report.row(shown + "]");
  report.json()["seed_example"] = c6;
  report.check(exact, "six-element example: C != A + B");

  report.setup(
      strf("bandwidth = bytes / median time; vector-add moves %g bytes per element "
           "(read a, read b, write c), copy %g (read, write)",
           kVectorAddBytesPerElement, kCopyBytesPerElement));
  const Tensor a = random_vector(n, device, options.seed);
  const Tensor b = random_vector(n, device, options.seed + 1);
  const Tensor c = empty({n}, a.options());
  table_header(report);
  const double ceiling = measure_copy_ceiling(report, options, a, c);
  const Timing t = time_it(
      device, [&] { vector_add(a, b, c); }, options.timing);
  report_bandwidth(report, "vector-add", n, kVectorAddBytesPerElement, t, ceiling);

  // c holds a + b from the last timed run; float addition is exact IEEE on both sides.
  const std::vector<float> ha = a.to_vector<float>();
  const std::vector<float> hb = b.to_vector<float>();
  const std::vector<float> hc = c.to_vector<float>();
  int64_t wrong = 0;
  for (int64_t i = 0; i < n; ++i) wrong += hc[i] != ha[i] + hb[i];
  report.row(strf("#wrong %lld of %lld", static_cast<long long>(wrong), static_cast<long long>(n)));
  report.json()["wrong"] = wrong;
  report.check(wrong == 0, strf("vector-add: %lld elements differ from the CPU sum",
                                static_cast<long long>(wrong)));
  return report;
}

Report run_saxpy(const RunOptions& options, int64_t n, float alpha) {
  check_length(n, "saxpy");
  LOOM_CHECK(std::isfinite(alpha), "saxpy: --alpha must be finite, got ", alpha);
  // x, y, the ceiling's copy target and a saved y for the check.
  check_fits(4 * 4 * n, options.device, "saxpy");
  if (options.device.is_cuda()) check_fits(3 * 4 * n, kCPU, "saxpy (host check)");
  Report report("saxpy");
  describe_run(report, options);
  report.setup(
      strf("y = a*x + y with a = %g; bandwidth counts %g bytes per element (read x, "
           "read y, write y), copy %g (read, write)",
           alpha, kSaxpyBytesPerElement, kCopyBytesPerElement));
  report.json()["alpha"] = alpha;
  const Device device = options.device;
  const Tensor x = random_vector(n, device, options.seed);
  const Tensor y0 = random_vector(n, device, options.seed + 1);
  Tensor y = y0.clone();
  table_header(report);
  {
    const Tensor scratch = empty({n}, x.options());
    measure_copy_ceiling(report, options, x, scratch);
  }
  const double ceiling = report.json()["copy"]["gb_per_s"].get<double>();
  const Timing t = time_it(
      device, [&] { saxpy(alpha, x, y); }, options.timing);
  report_bandwidth(report, "saxpy", n, kSaxpyBytesPerElement, t, ceiling);

  // The timed runs kept adding to y: start again from y0 for one checked run. The GPU may fuse
  // a*x + y into one rounding where the CPU rounds twice; either is within two float epsilons
  // of |a*x| + |y| from the float64 result.
  y.copy_(y0);
  saxpy(alpha, x, y);
  const std::vector<float> hx = x.to_vector<float>();
  const std::vector<float> hy0 = y0.to_vector<float>();
  const std::vector<float> hy = y.to_vector<float>();
  int64_t wrong = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double expected = static_cast<double>(alpha) * hx[i] + hy0[i];
    const double scale = std::fabs(static_cast<double>(alpha) * hx[i]) + std::fabs(hy0[i]);
    wrong += std::fabs(hy[i] - expected) > 2 * FLT_EPSILON * scale + FLT_MIN;
  }
  report.row(strf("#wrong %lld of %lld", static_cast<long long>(wrong), static_cast<long long>(n)));
  report.json()["wrong"] = wrong;
  report.check(wrong == 0, strf("saxpy: %lld elements differ from the CPU result",
                                static_cast<long long>(wrong)));
  return report;
}

}  // namespace loom::gpu_basics
