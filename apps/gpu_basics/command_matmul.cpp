// `matmul`: naive, tiled and library matmul of two N x N float32 matrices, GFLOP/s each, and
// the CPU's Eigen for comparison. Every result is checked against float64 dot products.
#include <cmath>

#include "commands.h"
#include "device_info.h"
#include "matmul.h"

namespace loom::gpu_basics {
namespace {

// Checks at most this many entries (all of them for small N), always including the corners,
// where the tiled kernel's partial edge tiles are.
constexpr int64_t kCheckedEntries = 4096;

// Tolerances relative to sqrt(sum_p (a_ip b_pj)^2), the natural size of a sum of k random
// products: float32 summation stays near eps * sqrt(k) (~4e-6 at k = 4096); TF32 rounds the
// inputs to 10 mantissa bits (~1e-3). Dropping even one 8-wide slice of k exceeds both.
constexpr double kFp32Tolerance = 1e-4;
constexpr double kTf32Tolerance = 1e-2;

struct Entry {
  int64_t i;
  int64_t j;
};

std::vector<Entry> checked_entries(int64_t n, uint64_t seed) {
  std::vector<Entry> entries;
  if (n * n <= kCheckedEntries) {
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) entries.push_back({i, j});
    }
    return entries;
  }
  entries = {{0, 0}, {0, n - 1}, {n - 1, 0}, {n - 1, n - 1}};
  uint64_t state = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  while (static_cast<int64_t>(entries.size()) < kCheckedEntries) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    const auto r = static_cast<int64_t>(state >> 33);
    entries.push_back({r % n, (r / n) % n});
  }
  return entries;
}

// The largest |c_ij - sum_p a_ip b_pj| / sqrt(sum_p (a_ip b_pj)^2) over the checked entries,
// with the sums in float64.
double max_scaled_error(const std::vector<float>& a, const std::vector<float>& b,
                        const std::vector<float>& c, int64_t n, const std::vector<Entry>& entries) {
  double worst = 0;
  for (const Entry& e : entries) {
    double sum = 0;
    double squares = 0;
    for (int64_t p = 0; p < n; ++p) {
      const double product = static_cast<double>(a[e.i * n + p]) * b[p * n + e.j];
      sum += product;
      squares += product * product;
    }
    const double error = std::fabs(c[e.i * n + e.j] - sum) / std::sqrt(squares + 1e-30);
    worst = std::max(worst, error);
  }
  return worst;
}

}  // namespace

Report run_matmul(const RunOptions& options, int64_t n) {
  LOOM_CHECK(n >= 1 && n <= kMaxMatmulSize, "matmul: --n must be in [1, ", kMaxMatmulSize,
             "], got ", n);
  check_fits(3 * 4 * n * n, options.device, "matmul");
  check_fits(3 * 4 * n * n, kCPU, "matmul (host check)");
  Report report("matmul");
  describe_run(report, options);
  report.setup(
      strf("C = A B, A and B %lldx%lld float32 uniform in [-1, 1); GFLOP/s = 2 N^3 / "
           "median time",
           static_cast<long long>(n), static_cast<long long>(n)));
  report.setup(strf(
      "check: |C - C64| / sqrt(sum (a b)^2) on %lld entries vs float64 sums; "
      "tolerance %g (fp32), %g (TF32)",
      static_cast<long long>(std::min(n * n, kCheckedEntries)), kFp32Tolerance, kTf32Tolerance));
  auto& j = report.json();
  j["n"] = n;
  j["kernels"] = nlohmann::json::array();
  const Device device = options.device;
  Generator gen(options.seed);
  const Tensor a = uniform({n, n}, -1.0, 1.0, TensorOptions(kFloat32).device(device), &gen);
  const Tensor b = uniform({n, n}, -1.0, 1.0, TensorOptions(kFloat32).device(device), &gen);
  const std::vector<float> ha = a.to_vector<float>();
  const std::vector<float> hb = b.to_vector<float>();
  const std::vector<Entry> entries = checked_entries(n, options.seed);
  const double flops = matmul_flops(n, n, n);

  report.row(strf("%-12s %-6s %12s %12s %10s %12s", "kernel", "device", "median ms", "GFLOP/s",
                  "vs lib", "max error"));
  double library_ms = 0;
  const auto measure = [&](MatmulKernel kernel, const Tensor& lhs, const Tensor& rhs,
                           const TimingOptions& timing) {
    const Device where = lhs.device();
    const Tensor c = empty({n, n}, lhs.options());
    const Timing t = time_it(
        where, [&] { matmul_into(lhs, rhs, c, kernel); }, timing);
    const double error = max_scaled_error(ha, hb, c.to_vector<float>(), n, entries);
    const double tolerance = kernel == MatmulKernel::kLibraryTf32 ? kTf32Tolerance : kFp32Tolerance;
    const char* name = matmul_kernel_name(kernel, where);
    if (kernel == MatmulKernel::kLibrary && where == device) library_ms = t.median_ms;
    const double gflops = flops / (t.median_ms * 1e6);
    const std::string versus =
        library_ms > 0 && where == device ? strf("%.2fx", library_ms / t.median_ms) : "";
    report.row(strf("%-12s %-6s %12.3f %12.1f %10s %12.2e", name, where.str().c_str(), t.median_ms,
                    gflops, versus.c_str(), error));
    j["kernels"].push_back({{"kernel", name},
                            {"device", where.str()},
                            {"median_ms", t.median_ms},
                            {"gflops", gflops},
                            {"max_scaled_error", error},
                            {"tolerance", tolerance}});
    report.check(error <= tolerance, strf("matmul %s on %s: error %.3g, tolerance %g", name,
                                          where.str().c_str(), error, tolerance));
  };
  // The library first, so the others can be given as a fraction of it.
  measure(MatmulKernel::kLibrary, a, b, options.timing);
  if (device.is_cuda()) measure(MatmulKernel::kLibraryTf32, a, b, options.timing);
  measure(MatmulKernel::kTiled, a, b, options.timing);
  measure(MatmulKernel::kNaive, a, b, options.timing);
  if (device.is_cuda()) {
    // The CPU for comparison: Eigen on every core, fewer runs since each is long at N = 4096.
    const TimingOptions cpu_timing{1, std::min(options.timing.repeats, 3)};
    measure(MatmulKernel::kLibrary, a.cpu(), b.cpu(), cpu_timing);
  }
  return report;
}

}  // namespace loom::gpu_basics
