// conv2d on cuDNN: the case table (conv_cases.h) against the CPU, in full float32 and float64;
// TF32 results within TF32's tolerance; the algorithm cache, deterministic and benchmark modes;
// conv2d_relu as relu of conv2d.
#include "conv_cases.h"

namespace loom {
namespace {

using testing::expect_cuda_parity;

struct GpuCase {
  Shape x, w;
  Conv2dOptions opt;
};

LOOM_CASE_TABLE_TEST(Conv2d, testing::conv_cases, Cuda)

TEST(Conv2dCuda, Tf32IsOnByDefaultAndScoped) {
  EXPECT_TRUE(conv_allow_tf32());
  {
    const ConvTf32Scope off(false);
    EXPECT_FALSE(conv_allow_tf32());
    {
      const ConvTf32Scope on(true);
      EXPECT_TRUE(conv_allow_tf32());
    }
    EXPECT_FALSE(conv_allow_tf32());
  }
  EXPECT_TRUE(conv_allow_tf32());
}

// With TF32 allowed, outputs and gradients of a 576-term convolution stay within ~1e-2 of
// the float64 CPU result, measured against the result's largest magnitude (TF32 keeps 10
// mantissa bits: ~5e-4 relative per product).
TEST(Conv2dCuda, Tf32ResultsAreWithinTf32Tolerance) {
  LOOM_REQUIRE_CUDA();
  const ConvTf32Scope tf32(true);
  Generator gen(6);
  const Tensor x = randn({4, 64, 12, 12}, kFloat64, &gen),
               w = uniform({32, 64, 3, 3}, -0.5, 0.5, kFloat64, &gen);
  const Tensor b = randn({32}, kFloat64, &gen);
  const Conv2dOptions opt = Conv2dOptions().padding(1);
  Tensor xc = x.clone().set_requires_grad(true), wc = w.clone().set_requires_grad(true);
  Tensor bc = b.clone().set_requires_grad(true);
  Tensor xg = x.to(kFloat32).cuda().set_requires_grad(true),
         wg = w.to(kFloat32).cuda().set_requires_grad(true);
  Tensor bg = b.to(kFloat32).cuda().set_requires_grad(true);
  const Tensor y_cpu = conv2d(xc, wc, bc, opt), y_gpu = conv2d(xg, wg, bg, opt);
  const Tensor dy = randn(y_cpu.shape(), kFloat64, &gen);
  y_cpu.backward(dy);
  y_gpu.backward(dy.to(kFloat32).cuda());
  const auto expect_close = [](const Tensor& got, const Tensor& want, const char* what) {
    const double scale = max(abs(want)).item<double>();
    ASSERT_GT(scale, 0.0) << what;
    const std::string problem = testing::compare(got.cpu().to(kFloat64), want, 1e-2 * scale, 1e-2);
    EXPECT_TRUE(problem.empty()) << what << ": " << problem;
  };
  expect_close(y_gpu, y_cpu, "output");
  expect_close(xg.grad(), xc.grad(), "input gradient");
  expect_close(wg.grad(), wc.grad(), "weight gradient");
  expect_close(bg.grad(), bc.grad(), "bias gradient");
}

TEST(Conv2dCuda, AlgorithmsAreChosenOncePerShape) {
  LOOM_REQUIRE_CUDA();
  Generator gen(4);
  // A shape no other test uses, so its first call searches.
  Tensor x = randn({3, 5, 13, 11}, TensorOptions().device(kCUDA), &gen).set_requires_grad(true);
  Tensor w = randn({7, 5, 3, 3}, TensorOptions().device(kCUDA), &gen).set_requires_grad(true);
  const int64_t before = conv_algorithm_searches();
  const double seconds_before = conv_algorithm_search_seconds();
  Tensor y = conv2d(x, w, Tensor(), Conv2dOptions().padding(1));
  y.backward(ones_like(y));
  const int64_t after_first = conv_algorithm_searches();
  const double seconds_after_first = conv_algorithm_search_seconds();
  EXPECT_EQ(after_first, before + 3);              // forward, backward data, backward filter
  EXPECT_GT(seconds_after_first, seconds_before);  // the searches' time is counted
  for (int i = 0; i < 3; ++i) {
    Tensor y2 = conv2d(x, w, Tensor(), Conv2dOptions().padding(1));
    y2.backward(ones_like(y2));
  }
  EXPECT_EQ(conv_algorithm_searches(), after_first);
  EXPECT_EQ(conv_algorithm_search_seconds(), seconds_after_first);  // a cached choice costs none
}

// The weight gradient of one convolution computed twice with deterministic algorithms.
std::vector<std::vector<float>> deterministic_weight_grads(uint64_t seed) {
  set_deterministic(true);
  Generator gen(seed);
  Tensor x = randn({8, 16, 20, 20}, TensorOptions().device(kCUDA), &gen).set_requires_grad(true);
  Tensor w = randn({16, 16, 3, 3}, TensorOptions().device(kCUDA), &gen).set_requires_grad(true);
  std::vector<std::vector<float>> grads;
  for (int i = 0; i < 2; ++i) {
    x.set_grad(Tensor()), w.set_grad(Tensor());
    Tensor y = conv2d(x, w, Tensor(), Conv2dOptions().padding(1));
    y.backward(ones_like(y));
    grads.push_back(w.grad().cpu().to_vector<float>());
  }
  set_deterministic(false);
  return grads;
}

TEST(Conv2dCuda, DeterministicAlgorithmsRepeatBitwise) {
  LOOM_REQUIRE_CUDA();
  const auto grads = deterministic_weight_grads(5);
  EXPECT_EQ(grads[0], grads[1]);
}

// Benchmark mode times the algorithms on the call's own buffers: results stay those of
// full float32 (TF32 off), the first call of a shape searches once per pass, later calls reuse
// the timed choice, and the timing search never leaks into the call's output.
TEST(Conv2dCuda, BenchmarkModeTimesOncePerShapeAndKeepsResults) {
  LOOM_REQUIRE_CUDA();
  const ConvTf32Scope full(false);
  set_conv_benchmark(true);
  EXPECT_TRUE(conv_benchmark());
  const std::vector<GpuCase> cases = {
      {{6, 3, 64, 64}, {32, 3, 3, 3}, Conv2dOptions().stride(3)},
      {{4, 7, 15, 13}, {9, 7, 3, 3}, Conv2dOptions().padding(1)},
      {{2, 3, 7, 6}, {4, 3, 3, 3}, Conv2dOptions().stride(2).padding(Padding::Same)},
  };
  uint64_t seed = 40;
  for (const GpuCase& c : cases) {
    SCOPED_TRACE("x " + shape_str(c.x) + " w " + shape_str(c.w));
    Generator gen(seed++);
    const Tensor x = randn(c.x, kFloat32, &gen), w = uniform(c.w, -0.5, 0.5, kFloat32, &gen);
    const Tensor b = randn({c.w[0]}, kFloat32, &gen);
    const Conv2dOptions opt = c.opt;
    const int64_t before = conv_algorithm_searches();
    const testing::Function f = [opt](const std::vector<Tensor>& in) {
      return conv2d(in[0], in[1], in[2], opt);
    };
    expect_cuda_parity(f, {x, w, b});
    EXPECT_EQ(conv_algorithm_searches(), before + 3);
    expect_cuda_parity(f, {x, w, b});
    EXPECT_EQ(conv_algorithm_searches(), before + 3);
  }
  // Deterministic and benchmark together: the timed choice among deterministic algorithms
  // repeats bitwise within the run.
  const auto grads = deterministic_weight_grads(50);
  set_conv_benchmark(false);
  EXPECT_EQ(grads[0], grads[1]);
}

// The fused output of conv2d_relu is exactly relu of the unfused one on the same device (its
// values and gradients against the CPU are in conv_cases.h), and about half of it is clipped:
// the test sees both sides of the kink.
TEST(Conv2dCuda, FusedReluIsReluOfTheUnfusedOutput) {
  LOOM_REQUIRE_CUDA();
  Generator gen(70);
  const Tensor x = randn({4, 3, 20, 20}, TensorOptions().device(kCUDA), &gen);
  const Tensor w = randn({8, 3, 3, 3}, TensorOptions().device(kCUDA), &gen);
  const Tensor b = randn({8}, TensorOptions().device(kCUDA), &gen);
  const Tensor fused = conv2d_relu(x, w, b, Conv2dOptions().padding(1)).cpu();
  EXPECT_TENSOR_NEAR(fused, relu(conv2d(x, w, b, Conv2dOptions().padding(1))).cpu(), 0.0, 0.0);
  const double zeros =
      sum(eq(fused, 0.0).to(kFloat64)).item<double>() / static_cast<double>(fused.numel());
  EXPECT_GT(zeros, 0.2);
  EXPECT_LT(zeros, 0.8);
}

}  // namespace
}  // namespace loom
