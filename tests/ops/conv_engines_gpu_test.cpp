// conv2d on the engines of cuDNN's graph API (benchmark mode, engines only): every pass runs
// on an engine plan and agrees with the CPU in full float32 over strides, paddings (Keras'
// asymmetric 'same' included), dilation and 1x1 kernels; bfloat16 and TF32 plans, NCHW and
// channels-last, stay within their precision of a float64 reference; deterministic plans repeat
// bitwise; a captured step replays the eager plans bit for bit.
#include "loom/ops/conv_backend.h"
#include "loom/tensor/cuda/graph.h"
#include "parity.h"

namespace loom {
namespace {

using testing::expect_cuda_parity;

constexpr MemoryFormat kChannelsLast = MemoryFormat::ChannelsLast;

// Benchmark mode timing the graph API's engines alone, for the scope.
class EnginesOnly {
 public:
  explicit EnginesOnly(bool deterministic_algorithms = false) {
    set_conv_benchmark(true);
    loom::detail::set_conv_search_engines_only(true);
    set_deterministic(deterministic_algorithms);
  }
  ~EnginesOnly() {
    set_conv_benchmark(false);
    loom::detail::set_conv_search_engines_only(false);
    set_deterministic(false);
  }
};

struct EngineCase {
  Shape x, w;
  Conv2dOptions opt;
};

TEST(ConvEnginesCuda, EnginePlansMatchTheCpuInFullFloat32) {
  LOOM_REQUIRE_CUDA();
  const EnginesOnly engines;
  const std::vector<EngineCase> cases = {
      {{3, 3, 64, 64}, {32, 3, 3, 3}, Conv2dOptions().stride(3)},  // seed_cnn's first layer
      {{2, 4, 11, 10}, {5, 4, 3, 2}, Conv2dOptions().stride(2).padding(1)},
      {{1, 2, 9, 9}, {3, 2, 3, 3}, Conv2dOptions().dilation(2).padding(2)},
      {{2, 3, 7, 6}, {4, 3, 3, 3}, Conv2dOptions().stride(2).padding(Padding::Same)},  // asymmetric
      {{2, 8, 5, 5}, {6, 8, 1, 1}, Conv2dOptions()},
      {{4, 16, 16, 16}, {32, 16, 3, 3}, Conv2dOptions().padding(1)},
  };
  uint64_t seed = 300;
  for (const EngineCase& c : cases) {
    SCOPED_TRACE("x " + shape_str(c.x) + " w " + shape_str(c.w));
    Generator gen(seed++);
    const Tensor x = randn(c.x, kFloat32, &gen), w = uniform(c.w, -0.5, 0.5, kFloat32, &gen);
    const Tensor b = randn({c.w[0]}, kFloat32, &gen);
    const Conv2dOptions opt = c.opt;
    const int64_t before = conv_engine_choices();
    expect_cuda_parity(
        [opt](const std::vector<Tensor>& in) { return conv2d(in[0], in[1], in[2], opt); },
        {x, w, b});
    EXPECT_EQ(conv_engine_choices(), before + 3) << "a pass fell back to the legacy algorithms";
  }
}

// x and w rounded to `dtype` and back, so the float64 reference sees exactly the GPU's inputs.
Tensor representable(const Tensor& t, DType dtype) { return t.to(dtype).to(kFloat64); }

// Within `tolerance` of the reference's largest magnitude.
void expect_near_reference(const Tensor& got, const Tensor& want, double tolerance,
                           const char* what) {
  const double scale = max(abs(want)).item<double>();
  ASSERT_GT(scale, 0.0) << what;
  const std::string problem =
      testing::compare(got.cpu().to(kFloat64), want, tolerance * scale, tolerance);
  EXPECT_TRUE(problem.empty()) << what << ": " << problem;
}

// conv2d forward and backward on CUDA leaves of `dtype` in `format` against the float64 CPU
// reference on the same (representable) values: output, input and weight gradients within
// `tolerance` of each one's largest magnitude, with all three passes on engine plans.
void expect_matches_reference(const EngineCase& c, DType dtype, MemoryFormat format, uint64_t seed,
                              double tolerance) {
  Generator gen(seed);
  const Tensor x = representable(randn(c.x, kFloat64, &gen), dtype);
  const Tensor w = representable(uniform(c.w, -0.5, 0.5, kFloat64, &gen), dtype);
  Tensor xc = x.clone().set_requires_grad(true), wc = w.clone().set_requires_grad(true);
  const Tensor y_cpu = conv2d(xc, wc, Tensor(), c.opt);
  const Tensor dy = representable(randn(y_cpu.shape(), kFloat64, &gen), dtype);
  y_cpu.backward(dy);

  Tensor xg = x.to(dtype).cuda().contiguous(format).set_requires_grad(true);
  Tensor wg = w.to(dtype).cuda().contiguous(format).set_requires_grad(true);
  const int64_t before = conv_engine_choices();
  const Tensor y_gpu = conv2d(xg, wg, Tensor(), c.opt);
  y_gpu.backward(dy.to(dtype).cuda().contiguous(format));
  EXPECT_EQ(conv_engine_choices(), before + 3) << "a pass fell back to the legacy algorithms";
  expect_near_reference(y_gpu, y_cpu, tolerance, "output");
  expect_near_reference(xg.grad(), xc.grad(), tolerance, "input gradient");
  expect_near_reference(wg.grad(), wc.grad(), tolerance, "weight gradient");
}

TEST(ConvEnginesCuda, Bf16AndTf32PlansStayWithinTheirPrecision) {
  LOOM_REQUIRE_CUDA();
  const EnginesOnly engines;
  const ConvTf32Scope tf32(true);
  const std::vector<EngineCase> cases = {
      {{4, 32, 16, 16}, {48, 32, 3, 3}, Conv2dOptions().padding(1)},
      {{4, 16, 17, 17}, {32, 16, 3, 3}, Conv2dOptions().stride(2).padding(1)},
  };
  uint64_t seed = 310;
  for (const EngineCase& c : cases) {
    for (DType dtype : {kBFloat16, kFloat32}) {
      for (MemoryFormat format : {MemoryFormat::Contiguous, kChannelsLast}) {
        SCOPED_TRACE(loom::detail::concat("x ", shape_str(c.x), " ", dtype_name(dtype),
                                          format == kChannelsLast ? " NHWC" : " NCHW"));
        // 1e-2: bfloat16 rounds each result to 8 bits (0.4%), TF32 each product's inputs to 11.
        expect_matches_reference(c, dtype, format, seed++, 1e-2);
      }
    }
  }
}

// The weight gradient of one convolution, twice, on deterministic engine plans.
TEST(ConvEnginesCuda, DeterministicPlansRepeatBitwise) {
  LOOM_REQUIRE_CUDA();
  const EnginesOnly engines(/*deterministic_algorithms=*/true);
  Generator gen(320);
  Tensor x = randn({8, 16, 20, 20}, TensorOptions().device(kCUDA), &gen).set_requires_grad(true);
  Tensor w = randn({16, 16, 3, 3}, TensorOptions().device(kCUDA), &gen).set_requires_grad(true);
  std::vector<std::vector<float>> grads;
  const int64_t before = conv_engine_choices();
  for (int i = 0; i < 2; ++i) {
    x.set_grad(Tensor()), w.set_grad(Tensor());
    Tensor y = conv2d(x, w, Tensor(), Conv2dOptions().padding(1));
    y.backward(ones_like(y));
    grads.push_back(w.grad().cpu().to_vector<float>());
  }
  EXPECT_EQ(conv_engine_choices(), before + 3);
  EXPECT_EQ(grads[0], grads[1]);
}

// A conv2d forward and backward captured after an eager run replays the eager run's plans: the
// same outputs and gradients, bit for bit (deterministic plans, so that the eager run repeats).
TEST(ConvEnginesCuda, CapturedReplayMatchesTheEagerRun) {
  LOOM_REQUIRE_CUDA();
  const EnginesOnly engines(/*deterministic_algorithms=*/true);
  Generator gen(330);
  const Tensor x =
      randn({4, 16, 12, 12}, TensorOptions().device(kCUDA), &gen).contiguous(kChannelsLast);
  const Tensor w =
      randn({24, 16, 3, 3}, TensorOptions().device(kCUDA), &gen).contiguous(kChannelsLast);
  const Tensor dy =
      randn({4, 24, 12, 12}, TensorOptions().device(kCUDA), &gen).contiguous(kChannelsLast);
  const auto step = [&](Tensor& xl, Tensor& wl) {
    xl = x.clone().contiguous(kChannelsLast).set_requires_grad(true);
    wl = w.clone().contiguous(kChannelsLast).set_requires_grad(true);
    Tensor y = conv2d(xl, wl, Tensor(), Conv2dOptions().padding(1));
    y.backward(dy);
    return y;
  };
  Tensor xe, we;
  const int64_t before = conv_engine_choices();
  const Tensor y_eager = step(xe, we);
  EXPECT_EQ(conv_engine_choices(), before + 3);
  const int64_t searches = conv_algorithm_searches();

  cuda::Graph graph(0);
  graph.capture_begin();
  Tensor xr, wr;
  const Tensor y_replayed = step(xr, wr);
  graph.capture_end();
  graph.replay();
  EXPECT_EQ(conv_algorithm_searches(), searches)
      << "the capture searched instead of reusing the plans";
  EXPECT_TENSOR_NEAR(y_replayed.cpu(), y_eager.cpu(), 0.0, 0.0);
  EXPECT_TENSOR_NEAR(xr.grad().cpu(), xe.grad().cpu(), 0.0, 0.0);
  EXPECT_TENSOR_NEAR(wr.grad().cpu(), we.grad().cpu(), 0.0, 0.0);
}

}  // namespace
}  // namespace loom
