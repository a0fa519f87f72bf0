// `mandelbrot`: the seed's fractal, timed honestly. The one-off start-up (CUDA context, module
// load, first launch: what the seed's 0.0046 s hid along with Numba's compilation) is its own
// line; the kernel time is the median of event-timed runs after a warm-up; the CPU time uses
// every core. The counts are checked pixel by pixel against a plain single-threaded loop.
#include <complex>
#include <thread>

#include "commands.h"
#include "device_info.h"
#include "mandelbrot.h"
#include "png_writer.h"

namespace loom::gpu_basics {
namespace {

// The seed's Python, line for line: complex doubles, one pixel at a time, no threads.
std::vector<int32_t> reference_counts(const MandelbrotSpec& spec) {
  std::vector<int32_t> counts(static_cast<size_t>(spec.width * spec.height));
  const double pixel_x = (spec.x_max - spec.x_min) / static_cast<double>(spec.width);
  const double pixel_y = (spec.y_max - spec.y_min) / static_cast<double>(spec.height);
  for (int64_t x = 0; x < spec.width; ++x) {
    const double real = spec.x_min + static_cast<double>(x) * pixel_x;
    for (int64_t y = 0; y < spec.height; ++y) {
      const double imag = spec.y_min + static_cast<double>(y) * pixel_y;
      const std::complex<double> c(real, imag);
      std::complex<double> z(0.0, 0.0);
      int32_t color = spec.max_iters;
      for (int32_t i = 0; i < spec.max_iters; ++i) {
        z = z * z + c;
        if (z.real() * z.real() + z.imag() * z.imag() >= 4.0) {
          color = i;
          break;
        }
      }
      counts[static_cast<size_t>(y * spec.width + x)] = color;
    }
  }
  return counts;
}

}  // namespace

Report run_mandelbrot(const RunOptions& options, const MandelbrotSpec& spec,
                      const std::string& png_path) {
  check_mandelbrot_spec(spec);
  LOOM_CHECK(!png_path.empty(), "mandelbrot: --png must name a file");
  Report report("mandelbrot");
  describe_run(report, options);
  report.setup(strf("%lldx%lld pixels of [%g, %g] x [%g, %g], %d iterations, float64",
                    static_cast<long long>(spec.width), static_cast<long long>(spec.height),
                    spec.x_min, spec.x_max, spec.y_min, spec.y_max, spec.max_iters));
  report.setup(
      "seed article: 4.07 s on the CPU (Python), 0.0046 s on the GPU (Numba, "
      "including JIT compilation)");
  auto& j = report.json();
  j["width"] = spec.width;
  j["height"] = spec.height;
  j["iters"] = spec.max_iters;
  const Device device = options.device;

  Tensor counts;
  if (device.is_cuda()) {
    const double startup_ms = wall_ms([&] {
      counts = mandelbrot(spec, device);
      cuda::synchronize(device.index);
    });
    report.row(strf("%-34s %12.3f ms", "GPU start-up, once (context, load)", startup_ms));
    j["gpu_startup_ms"] = startup_ms;
    const Timing t = time_it(
        device, [&] { mandelbrot_into(spec, counts); }, options.timing);
    report.row(strf("%-34s %12.4f ms", "GPU kernel (median, events)", t.median_ms));
    j["gpu_kernel_ms"] = t.median_ms;
    j["gpu_kernel_min_ms"] = t.min_ms;
  }
  const Tensor cpu_counts = empty({spec.height, spec.width}, kInt32);
  const Timing cpu = time_on_cpu([&] { mandelbrot_into(spec, cpu_counts); }, options.timing);
  const int threads = static_cast<int>(std::thread::hardware_concurrency());
  report.row(
      strf("%-34s %12.4f ms", strf("CPU, %d threads (median)", threads).c_str(), cpu.median_ms));
  j["cpu_ms"] = cpu.median_ms;
  j["cpu_threads"] = threads;
  if (device.is_cuda()) {
    const double speedup = cpu.median_ms / j["gpu_kernel_ms"].get<double>();
    report.row(strf("%-34s %12.1fx", "GPU kernel speed-up over CPU", speedup));
    j["speedup"] = speedup;
  } else {
    counts = cpu_counts;
  }

  const std::vector<int32_t> expected = reference_counts(spec);
  const auto count_wrong = [&](const Tensor& t) {
    const std::vector<int32_t> computed = t.to_vector<int32_t>();
    int64_t wrong = 0;
    for (size_t i = 0; i < expected.size(); ++i) wrong += computed[i] != expected[i];
    return wrong;
  };
  const int64_t wrong = count_wrong(counts);
  report.row(strf("#wrong %lld of %zu pixels (%s)", static_cast<long long>(wrong), expected.size(),
                  device.str().c_str()));
  j["wrong"] = wrong;
  report.check(wrong == 0, strf("mandelbrot: %lld pixels on %s differ from the reference loop",
                                static_cast<long long>(wrong), device.str().c_str()));
  if (device.is_cuda()) {
    const int64_t cpu_wrong = count_wrong(cpu_counts);
    j["cpu_wrong"] = cpu_wrong;
    report.check(cpu_wrong == 0, strf("mandelbrot: %lld pixels on the CPU differ from the "
                                      "reference loop",
                                      static_cast<long long>(cpu_wrong)));
  }

  write_gray_png(png_path, counts_to_gray(counts, spec.max_iters), spec.width, spec.height);
  report.row("wrote " + png_path);
  j["png"] = png_path;
  return report;
}

}  // namespace loom::gpu_basics
