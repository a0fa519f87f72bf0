// loom-gpu-basics on the CPU: every computation at small sizes against references written
// here (plain loops, float64), the PNG writer, the timing helper and the error paths.
#include <png.h>

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "gpu_basics/commands.h"
#include "gpu_basics/device_info.h"
#include "gpu_basics/mandelbrot.h"
#include "gpu_basics/matmul.h"
#include "gpu_basics/png_writer.h"
#include "gpu_basics/timing.h"
#include "gpu_basics/vector_ops.h"
#include "testing.h"

namespace loom::gpu_basics {
namespace {

Tensor random_vector(int64_t n, uint64_t seed) {
  Generator gen(seed);
  return uniform({n}, -2.0, 2.0, kFloat32, &gen);
}

// Iteration counts the way the seed's Python computes them, with plain doubles.
int32_t seed_mandel(double x, double y, int32_t max_iters) {
  double zr = 0, zi = 0;
  for (int32_t i = 0; i < max_iters; ++i) {
    const double r = zr * zr - zi * zi + x;
    const double im = zr * zi + zi * zr + y;
    zr = r;
    zi = im;
    if (zr * zr + zi * zi >= 4) return i;
  }
  return max_iters;
}

std::vector<int32_t> seed_fractal(const MandelbrotSpec& s) {
  std::vector<int32_t> out(s.width * s.height);
  const double px = (s.x_max - s.x_min) / s.width;
  const double py = (s.y_max - s.y_min) / s.height;
  for (int64_t y = 0; y < s.height; ++y) {
    for (int64_t x = 0; x < s.width; ++x) {
      out[y * s.width + x] = seed_mandel(s.x_min + x * px, s.y_min + y * py, s.max_iters);
    }
  }
  return out;
}

std::vector<double> matmul_reference(const std::vector<float>& a, const std::vector<float>& b,
                                     int64_t m, int64_t n, int64_t k) {
  std::vector<double> c(m * n, 0.0);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t p = 0; p < k; ++p) c[i * n + j] += double(a[i * k + p]) * b[p * n + j];
    }
  }
  return c;
}

RunOptions quick_cpu() {
  RunOptions o;
  o.device = kCPU;
  o.timing = {0, 1};
  o.seed = 7;
  return o;
}

TEST(VectorAdd, SeedExampleIsExact) {
  const Tensor a = from_vector<float>({1, 2, 3, 4, 5, 6});
  const Tensor b = from_vector<float>({7, 8, 9, 10, 11, 12});
  const Tensor c = empty({6});
  vector_add(a, b, c);
  EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{8, 10, 12, 14, 16, 18}));
}

TEST(VectorAdd, LargeMatchesLoop) {
  const int64_t n = 100003;  // above the parallel grain, not a multiple of 4
  const Tensor a = random_vector(n, 1), b = random_vector(n, 2), c = empty({n});
  vector_add(a, b, c);
  const auto ha = a.to_vector<float>(), hb = b.to_vector<float>(), hc = c.to_vector<float>();
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hc[i], ha[i] + hb[i]) << "at " << i;
}

TEST(VectorAdd, RejectsMismatchedArguments) {
  const Tensor a = random_vector(10, 1);
  EXPECT_LOOM_ERROR(vector_add(a, random_vector(11, 2), empty({10})), "11 elements");
  EXPECT_LOOM_ERROR(vector_add(a, a, empty({10}, kFloat64)), "float32");
  EXPECT_LOOM_ERROR(vector_add(a, a, empty({2, 5})), "vector");
  EXPECT_LOOM_ERROR(vector_add(a, Tensor(), empty({10})), "undefined");
  EXPECT_LOOM_ERROR(
      vector_add(a, random_vector(20, 3).narrow(0, 0, 20).view({10, 2}).select(1, 0), empty({10})),
      "contiguous");
}

TEST(Saxpy, MatchesFloat64Loop) {
  const int64_t n = 70001;
  const float alpha = -1.75f;
  const Tensor x = random_vector(n, 3), y = random_vector(n, 4);
  const auto hx = x.to_vector<float>(), hy = y.to_vector<float>();
  saxpy(alpha, x, y);
  const auto out = y.to_vector<float>();
  for (int64_t i = 0; i < n; ++i) {
    const double expected = double(alpha) * hx[i] + hy[i];
    ASSERT_NEAR(out[i], expected, 2.4e-7 * (std::fabs(alpha * hx[i]) + std::fabs(hy[i])) + 1e-30);
  }
  EXPECT_LOOM_ERROR(saxpy(alpha, x, random_vector(n - 1, 5)), "elements");
}

TEST(CopyVector, CopiesEveryByte) {
  const int64_t n = (int64_t{1} << 19) + 5;  // several 1 MiB chunks and a partial one
  const Tensor src = random_vector(n, 6), dst = zeros({n});
  copy_vector(src, dst);
  EXPECT_EQ(dst.to_vector<float>(), src.to_vector<float>());
}

TEST(Mandelbrot, SeedImageMatchesScalarReference) {
  const MandelbrotSpec spec;  // 1536 x 1024, 20 iterations, as in the seed
  const Tensor counts = mandelbrot(spec, kCPU);
  ASSERT_EQ(counts.shape(), (Shape{1024, 1536}));
  const auto got = counts.to_vector<int32_t>();
  EXPECT_EQ(got, seed_fractal(spec));
  // By hand: c = -2 - i has |c|^2 = 5 after the first step, so it escapes at i = 0; pixel
  // (1024, 512) is c = 0, which never escapes.
  EXPECT_EQ(got[0], 0);
  EXPECT_EQ(got[512 * 1536 + 1024], 20);
}

TEST(Mandelbrot, OddSizeAndMoreIterations) {
  MandelbrotSpec spec;
  spec.width = 67;
  spec.height = 41;
  spec.max_iters = 300;
  spec.x_min = -0.75;
  spec.x_max = -0.7;
  spec.y_min = 0.1;
  spec.y_max = 0.13;
  const auto got = mandelbrot(spec, kCPU).to_vector<int32_t>();
  const auto expected = seed_fractal(spec);
  EXPECT_EQ(got, expected);
  int distinct = 0;  // a region on the boundary: the counts vary, so the test is not trivial
  for (size_t i = 1; i < got.size(); ++i) distinct += got[i] != got[0];
  EXPECT_GT(distinct, 100);
}

TEST(Mandelbrot, RejectsBadSpecs) {
  MandelbrotSpec spec;
  spec.width = 0;
  EXPECT_LOOM_ERROR(mandelbrot(spec, kCPU), "width");
  spec = {};
  spec.height = int64_t{1} << 20;
  EXPECT_LOOM_ERROR(mandelbrot(spec, kCPU), "height");
  spec = {};
  spec.max_iters = 0;
  EXPECT_LOOM_ERROR(mandelbrot(spec, kCPU), "iters");
  spec = {};
  spec.x_max = spec.x_min;
  EXPECT_LOOM_ERROR(mandelbrot(spec, kCPU), "empty rectangle");
  EXPECT_LOOM_ERROR(mandelbrot_into(MandelbrotSpec{}, empty({1024, 1536})), "int32");
  EXPECT_LOOM_ERROR(mandelbrot_into(MandelbrotSpec{}, empty({10, 10}, kInt32)), "shape");
}

TEST(Mandelbrot, GrayScale) {
  const Tensor counts = from_vector<int32_t>({0, 10, 20, 5}, {2, 2});
  EXPECT_EQ(counts_to_gray(counts, 20), (std::vector<uint8_t>{0, 127, 255, 63}));
  EXPECT_LOOM_ERROR(counts_to_gray(empty({2}), 20), "int32");
}

std::vector<uint8_t> read_gray_png(const std::string& path, int64_t* width, int64_t* height) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  EXPECT_TRUE(png_image_begin_read_from_file(&image, path.c_str())) << image.message;
  image.format = PNG_FORMAT_GRAY;
  std::vector<uint8_t> pixels(PNG_IMAGE_SIZE(image));
  EXPECT_TRUE(png_image_finish_read(&image, nullptr, pixels.data(), 0, nullptr)) << image.message;
  *width = image.width;
  *height = image.height;
  return pixels;
}

TEST(PngWriter, RoundTripsAndLeavesNoTemporary) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("gpu_basics_png_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "image.png").string();
  std::vector<uint8_t> gray(13 * 7);
  for (size_t i = 0; i < gray.size(); ++i) gray[i] = static_cast<uint8_t>(i * 37 % 256);
  write_gray_png(path, gray, 13, 7);
  int64_t w = 0, h = 0;
  EXPECT_EQ(read_gray_png(path, &w, &h), gray);
  EXPECT_EQ(w, 13);
  EXPECT_EQ(h, 7);
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    files += entry.is_regular_file();
  EXPECT_EQ(files, 1);
  EXPECT_LOOM_ERROR(write_gray_png(path, gray, 13, 8), "do not make");
  EXPECT_LOOM_ERROR(write_gray_png((dir / "missing" / "x.png").string(), gray, 13, 7),
                    "cannot create");
  std::filesystem::remove_all(dir);
}

struct MatmulCase {
  int64_t m, n, k;
};

TEST(Matmul, EveryCpuKernelMatchesFloat64Loop) {
  for (const MatmulCase& s :
       {MatmulCase{37, 29, 53}, MatmulCase{130, 70, 150}, MatmulCase{1, 1, 1}}) {
    Generator gen(s.m * 1000 + s.k);
    const Tensor a = uniform({s.m, s.k}, -1, 1, kFloat32, &gen);
    const Tensor b = uniform({s.k, s.n}, -1, 1, kFloat32, &gen);
    const auto expected =
        matmul_reference(a.to_vector<float>(), b.to_vector<float>(), s.m, s.n, s.k);
    for (MatmulKernel kernel :
         {MatmulKernel::kNaive, MatmulKernel::kTiled, MatmulKernel::kLibrary}) {
      const auto got = matmul(a, b, kernel).to_vector<float>();
      ASSERT_EQ(got.size(), expected.size());
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_NEAR(got[i], expected[i], 1e-5 * std::sqrt(double(s.k)))
            << matmul_kernel_name(kernel, kCPU) << " " << s.m << "x" << s.n << "x" << s.k << " at "
            << i;
      }
    }
  }
}

TEST(Matmul, RejectsBadArguments) {
  const Tensor a = randn({4, 5}), b = randn({5, 3});
  EXPECT_LOOM_ERROR(matmul(a, randn({4, 3}), MatmulKernel::kNaive), "do not multiply");
  EXPECT_LOOM_ERROR(matmul(a.to(kFloat64), b, MatmulKernel::kNaive), "float32");
  EXPECT_LOOM_ERROR(matmul(randn({4}), b, MatmulKernel::kNaive), "2-D");
  EXPECT_LOOM_ERROR(matmul(a, b.t(), MatmulKernel::kNaive), "contiguous");
  EXPECT_LOOM_ERROR(matmul_into(a, b, empty({4, 4}), MatmulKernel::kTiled), "c must have shape");
  EXPECT_LOOM_ERROR(matmul(a, b, MatmulKernel::kLibraryTf32), "needs a CUDA device");
  EXPECT_LOOM_ERROR(matmul(empty({0, 5}), b, MatmulKernel::kNaive), "empty product");
}

TEST(Timing, MedianAndRunCounts) {
  EXPECT_EQ(summarize({5, 1, 3}).median_ms, 3);
  EXPECT_EQ(summarize({4, 1, 3, 2}).median_ms, 2.5);
  EXPECT_EQ(summarize({4, 1, 3, 2}).min_ms, 1);
  EXPECT_EQ(summarize({4, 1, 3, 2}).max_ms, 4);
  int calls = 0;
  const Timing t = time_it(kCPU, [&] { ++calls; }, {3, 5});
  EXPECT_EQ(calls, 8);
  EXPECT_EQ(t.repeats, 5);
  EXPECT_GE(t.median_ms, 0);
  EXPECT_LOOM_ERROR(time_on_cpu([] {}, {0, 0}), "repeats");
  EXPECT_LOOM_ERROR(summarize({}), "no samples");
}

TEST(Devices, PickAndFit) {
  EXPECT_EQ(pick_device("cpu"), kCPU);
  EXPECT_EQ(pick_device("auto"), cuda_is_available() ? kCUDA : kCPU);
  EXPECT_LOOM_ERROR(pick_device("tpu"), "--device");
  EXPECT_LOOM_ERROR(pick_device("cuda:64"), "--device cuda:64");
  EXPECT_NO_THROW(check_fits(1 << 20, kCPU, "op"));
  EXPECT_LOOM_ERROR(check_fits(int64_t{1} << 60, kCPU, "vector-add"), "vector-add: needs");
  EXPECT_LOOM_ERROR(check_fits(0, kCPU, "op"), "nothing to compute");
}

TEST(Commands, InfoDescribesTheCpu) {
  const Report report = run_info();
  EXPECT_TRUE(report.ok());
  const auto& j = report.json();
  EXPECT_GT(j["cpu"]["threads"].get<int>(), 0);
  EXPECT_FALSE(j["cpu"]["model"].get<std::string>().empty());
  if (!cuda_is_available()) EXPECT_TRUE(j.contains("no_gpu_reason"));
}

TEST(Commands, VectorAddAndSaxpyPassTheirChecks) {
  const Report add = run_vector_add(quick_cpu(), 4099);
  EXPECT_TRUE(add.ok());
  EXPECT_EQ(add.json()["seed_example"], nlohmann::json({8, 10, 12, 14, 16, 18}));
  EXPECT_EQ(add.json()["wrong"], 0);
  EXPECT_GT(add.json()["result"]["gb_per_s"].get<double>(), 0);
  const Report sx = run_saxpy(quick_cpu(), 4099, 3.0f);
  EXPECT_TRUE(sx.ok());
  EXPECT_EQ(sx.json()["wrong"], 0);
}

TEST(Commands, MandelbrotWritesItsImage) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("gpu_basics_cmd_" + std::to_string(getpid()) + ".png");
  MandelbrotSpec spec;
  spec.width = 96;
  spec.height = 64;
  const Report report = run_mandelbrot(quick_cpu(), spec, path.string());
  EXPECT_TRUE(report.ok());
  int64_t w = 0, h = 0;
  const auto pixels = read_gray_png(path.string(), &w, &h);
  EXPECT_EQ(w, 96);
  EXPECT_EQ(h, 64);
  EXPECT_EQ(pixels, counts_to_gray(mandelbrot(spec, kCPU), spec.max_iters));
  std::filesystem::remove(path);
  EXPECT_LOOM_ERROR(run_mandelbrot(quick_cpu(), spec, ""), "--png");
}

TEST(Commands, MatmulPassesItsChecks) {
  const Report report = run_matmul(quick_cpu(), 70);
  EXPECT_TRUE(report.ok());
  EXPECT_EQ(report.json()["kernels"].size(), 3u);
}

TEST(Commands, RejectBadSizes) {
  EXPECT_LOOM_ERROR(run_vector_add(quick_cpu(), 0), "--n must be in");
  EXPECT_LOOM_ERROR(run_vector_add(quick_cpu(), -5), "--n must be in");
  EXPECT_LOOM_ERROR(run_saxpy(quick_cpu(), int64_t{1} << 40, 1.0f), "--n must be in");
  EXPECT_LOOM_ERROR(run_saxpy(quick_cpu(), 16, INFINITY), "--alpha");
  // 2^34 floats fit the flag's range but not this machine's memory (3 x 64 GiB).
  EXPECT_LOOM_ERROR(run_vector_add(quick_cpu(), kMaxVectorLength), "needs");
  EXPECT_LOOM_ERROR(run_matmul(quick_cpu(), 0), "--n must be in");
  EXPECT_LOOM_ERROR(run_matmul(quick_cpu(), kMaxMatmulSize), "needs");
  MandelbrotSpec spec;
  spec.width = 0;
  EXPECT_LOOM_ERROR(run_mandelbrot(quick_cpu(), spec, "x.png"), "width");
}

TEST(Report, TextAndJson) {
  Report report("demo");
  report.setup("setup line");
  report.row("a row");
  report.check(true, "fine");
  std::ostringstream text;
  report.print(text, false);
  EXPECT_NE(text.str().find("# setup line\na row\n"), std::string::npos);
  EXPECT_NE(text.str().find("all checks passed"), std::string::npos);
  report.check(false, "broken thing");
  EXPECT_FALSE(report.ok());
  std::ostringstream json;
  report.print(json, true);
  const auto parsed = nlohmann::json::parse(json.str());
  EXPECT_EQ(parsed["ok"], false);
  EXPECT_EQ(parsed["command"], "demo");
  EXPECT_EQ(parsed["checks"].size(), 2u);
  EXPECT_EQ(strf("%d-%s", 3, "x"), "3-x");
}

}  // namespace
}  // namespace loom::gpu_basics
