// loom-gpu-basics' CUDA kernels against the CPU: vector add, SAXPY (aligned and unaligned
// pointers), the copy, Mandelbrot counts (exactly), naive/tiled/cuBLAS matmul vs float64, and
// the subcommands end to end at small sizes.
#include <cmath>
#include <filesystem>

#include "gpu_basics/commands.h"
#include "gpu_basics/device_info.h"
#include "gpu_basics/mandelbrot.h"
#include "gpu_basics/matmul.h"
#include "gpu_basics/timing.h"
#include "gpu_basics/vector_ops.h"
#include "testing.h"

namespace loom::gpu_basics {
namespace {

Tensor random_vector(int64_t n, uint64_t seed) {
  Generator gen(seed);
  return uniform({n}, -2.0, 2.0, kFloat32, &gen);
}

RunOptions quick_gpu() {
  RunOptions o;
  o.device = kCUDA;
  o.timing = {1, 3};
  o.seed = 11;
  return o;
}

TEST(GpuVectorAdd, SeedExampleIsExact) {
  LOOM_REQUIRE_CUDA();
  const Tensor a = from_vector<float>({1, 2, 3, 4, 5, 6}).cuda();
  const Tensor b = from_vector<float>({7, 8, 9, 10, 11, 12}).cuda();
  const Tensor c = empty({6}, kCUDA);
  vector_add(a, b, c);
  EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{8, 10, 12, 14, 16, 18}));
}

TEST(GpuVectorAdd, MatchesCpuAlignedAndUnaligned) {
  LOOM_REQUIRE_CUDA();
  const int64_t n = (int64_t{1} << 20) + 3;
  const Tensor ha = random_vector(n + 1, 1), hb = random_vector(n + 1, 2);
  const Tensor da = ha.cuda(), db = hb.cuda();
  for (int64_t offset : {0, 1}) {  // offset 1: the pointers are not 16-byte aligned
    const Tensor a = da.narrow(0, offset, n), b = db.narrow(0, offset, n);
    const Tensor c = empty({n + 1}, kCUDA).narrow(0, offset, n);
    vector_add(a, b, c);
    const Tensor expected = empty({n});
    vector_add(ha.narrow(0, offset, n).contiguous(), hb.narrow(0, offset, n).contiguous(),
               expected);
    EXPECT_EQ(c.to_vector<float>(), expected.to_vector<float>()) << "offset " << offset;
  }
}

TEST(GpuSaxpy, MatchesFloat64AlignedAndUnaligned) {
  LOOM_REQUIRE_CUDA();
  const int64_t n = 300007;
  const float alpha = 0.625f;
  for (int64_t offset : {0, 1}) {
    const Tensor hx = random_vector(n + 1, 3).narrow(0, offset, n);
    const Tensor hy = random_vector(n + 1, 4).narrow(0, offset, n);
    const Tensor x = random_vector(n + 1, 3).cuda().narrow(0, offset, n);
    const Tensor y = random_vector(n + 1, 4).cuda().narrow(0, offset, n);
    saxpy(alpha, x, y);
    const auto vx = hx.to_vector<float>(), vy = hy.to_vector<float>(), out = y.to_vector<float>();
    for (int64_t i = 0; i < n; ++i) {
      const double expected = double(alpha) * vx[i] + vy[i];
      ASSERT_NEAR(out[i], expected, 2.4e-7 * (std::fabs(alpha * vx[i]) + std::fabs(vy[i])) + 1e-30)
          << "offset " << offset << " at " << i;
    }
  }
}

TEST(GpuCopy, CopiesEveryByte) {
  LOOM_REQUIRE_CUDA();
  const Tensor src = random_vector(12345, 5).cuda(), dst = zeros({12345}, kCUDA);
  copy_vector(src, dst);
  EXPECT_EQ(dst.to_vector<float>(), src.to_vector<float>());
}

TEST(GpuMandelbrot, CountsEqualTheCpuExactly) {
  LOOM_REQUIRE_CUDA();
  MandelbrotSpec boundary;  // a zoom on the boundary, where rounding differences would show
  boundary.width = 333;
  boundary.height = 211;
  boundary.max_iters = 500;
  boundary.x_min = -0.75;
  boundary.x_max = -0.7;
  boundary.y_min = 0.1;
  boundary.y_max = 0.13;
  for (const MandelbrotSpec& spec : {MandelbrotSpec{}, boundary}) {
    const auto gpu = mandelbrot(spec, kCUDA).to_vector<int32_t>();
    const auto cpu = mandelbrot(spec, kCPU).to_vector<int32_t>();
    ASSERT_EQ(gpu.size(), cpu.size());
    int64_t wrong = 0;
    for (size_t i = 0; i < gpu.size(); ++i) wrong += gpu[i] != cpu[i];
    EXPECT_EQ(wrong, 0) << spec.width << "x" << spec.height;
  }
}

TEST(GpuMatmul, KernelsMatchFloat64) {
  LOOM_REQUIRE_CUDA();
  struct Case {
    int64_t m, n, k;
  };
  for (const Case& s : {Case{37, 29, 53}, Case{130, 257, 99}, Case{256, 256, 256}}) {
    Generator gen(s.m + s.n + s.k);
    const Tensor a = uniform({s.m, s.k}, -1, 1, kFloat32, &gen);
    const Tensor b = uniform({s.k, s.n}, -1, 1, kFloat32, &gen);
    const auto va = a.to_vector<float>(), vb = b.to_vector<float>();
    std::vector<double> expected(s.m * s.n, 0.0);
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t j = 0; j < s.n; ++j)
        for (int64_t p = 0; p < s.k; ++p)
          expected[i * s.n + j] += double(va[i * s.k + p]) * vb[p * s.n + j];
    const Tensor da = a.cuda(), db = b.cuda();
    for (MatmulKernel kernel : {MatmulKernel::kNaive, MatmulKernel::kTiled, MatmulKernel::kLibrary,
                                MatmulKernel::kLibraryTf32}) {
      const auto got = matmul(da, db, kernel).to_vector<float>();
      // TF32 keeps 10 mantissa bits of each input.
      const double tol =
          (kernel == MatmulKernel::kLibraryTf32 ? 5e-3 : 1e-5) * std::sqrt(double(s.k));
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_NEAR(got[i], expected[i], tol) << matmul_kernel_name(kernel, kCUDA) << " " << s.m
                                              << "x" << s.n << "x" << s.k << " at " << i;
      }
    }
  }
}

TEST(GpuMatmul, RejectsMixedDevices) {
  LOOM_REQUIRE_CUDA();
  EXPECT_LOOM_ERROR(matmul(randn({4, 5}, kCUDA), randn({5, 3}), MatmulKernel::kTiled), "cuda:0");
}

TEST(GpuTiming, EventsMeasureKernels) {
  LOOM_REQUIRE_CUDA();
  const Tensor x = random_vector(1 << 20, 6).cuda(), y = zeros({1 << 20}, kCUDA);
  int calls = 0;
  const Timing t = time_it(kCUDA, [&] { ++calls, saxpy(1.0f, x, y); }, {2, 4});
  EXPECT_EQ(calls, 6);
  EXPECT_GT(t.median_ms, 0);
  EXPECT_LE(t.min_ms, t.median_ms);
}

TEST(GpuCommands, EveryCommandPassesItsChecks) {
  LOOM_REQUIRE_CUDA();
  const Report info = run_info();
  EXPECT_GE(info.json()["gpus"].size(), 1u);
  EXPECT_TRUE(run_vector_add(quick_gpu(), 1 << 20).ok());
  EXPECT_TRUE(run_saxpy(quick_gpu(), (1 << 20) + 1, -2.0f).ok());
  const auto png = std::filesystem::temp_directory_path() /
                   ("gpu_basics_gpu_" + std::to_string(getpid()) + ".png");
  const Report mandel = run_mandelbrot(quick_gpu(), MandelbrotSpec{}, png.string());
  EXPECT_TRUE(mandel.ok());
  EXPECT_GT(mandel.json()["gpu_kernel_ms"].get<double>(), 0);
  EXPECT_TRUE(std::filesystem::exists(png));
  std::filesystem::remove(png);
  const Report mm = run_matmul(quick_gpu(), 256);
  EXPECT_TRUE(mm.ok());
  EXPECT_EQ(mm.json()["kernels"].size(), 5u);  // cuBLAS fp32 and TF32, tiled, naive, Eigen
  EXPECT_LOOM_ERROR(run_vector_add(quick_gpu(), kMaxVectorLength), "needs");
}

}  // namespace
}  // namespace loom::gpu_basics
