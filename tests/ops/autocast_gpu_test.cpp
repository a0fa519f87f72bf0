// bf16 mixed precision on the GPU (tensor/autocast.h): under loom::Autocast, conv2d,
// conv2d_relu and linear take float32 CUDA operands, compute in bfloat16 with float32
// accumulation and return bfloat16; their gradients reach the float32 leaves as float32.
//
// The reference is independent of the GPU path: the same op in float64 on the CPU, on the
// operands rounded to bfloat16 (what autocast casts them to), with the output weighting rounded
// too (the widening's backward rounds it). One bfloat16 rounding of each result is off by at
// most 2^-9 of it; the tolerance is 2^-8 relative plus 2^-9 of the largest result (a result
// near cancellation has a rounding error relative to its terms, not to itself). Pooling and
// batch norm on bfloat16 data are checked against the CPU's bfloat16 path.
#include <cmath>

#include "bf16_reference.h"
#include "testing.h"

namespace loom {
namespace {

using namespace testing;

constexpr double kRtol = 0x1p-8;

// x rounded to bfloat16, in float64 (exact).
Tensor rounded64(const Tensor& x) { return x.detach().cpu().to(kBFloat16).to(kFloat64); }

double max_abs(const Tensor& t) { return max(abs(t.detach().cpu().to(kFloat64))).item<double>(); }

void expect_close_to_reference(const Tensor& actual, const Tensor& reference,
                               const std::string& what) {
  const std::string problem = compare(actual.detach().cpu().to(kFloat64), reference.detach(),
                                      0x1p-9 * max_abs(reference), kRtol);
  EXPECT_TRUE(problem.empty()) << what << ": " << problem;
}

// f under autocast on float32 CUDA leaves holding `values`, against f on float64 CPU leaves
// holding the values rounded to bfloat16; outputs and every leaf's gradient compared. The
// output must be bfloat16 and the gradients float32, as the leaves are.
void expect_autocast_matches_reference(const std::function<Tensor(const std::vector<Tensor>&)>& f,
                                       const std::vector<Tensor>& values) {
  std::vector<Tensor> gpu, ref;
  for (const Tensor& v : values) {
    gpu.push_back(v.to(kCUDA, kFloat32).set_requires_grad(true));
    ref.push_back(rounded64(v).set_requires_grad(true));
  }
  Tensor y;
  {
    Autocast autocast;
    y = f(gpu);
  }
  ASSERT_EQ(y.dtype(), kBFloat16);
  ASSERT_TRUE(y.is_cuda());
  const Tensor y_ref = f(ref);
  expect_close_to_reference(y, y_ref, "output");
  Generator gen(77);
  const Tensor w = rounded64(randn(y_ref.shape(), kFloat64, &gen));
  y.to(kFloat32).backward(w.to(kCUDA, kFloat32));  // outside the scope, as training does
  y_ref.backward(w);
  for (size_t i = 0; i < values.size(); ++i) {
    SCOPED_TRACE("input " + std::to_string(i));
    ASSERT_TRUE(gpu[i].grad().defined());
    EXPECT_EQ(gpu[i].grad().dtype(), kFloat32);
    expect_close_to_reference(gpu[i].grad(), ref[i].grad(), "gradient");
  }
}

Tensor values(const Shape& shape, uint64_t seed) {
  Generator gen(seed);
  return randn(shape, kFloat64, &gen);
}

TEST(AutocastGpu, Conv2dRunsInBFloat16AndMatchesTheRoundedReference) {
  LOOM_REQUIRE_CUDA();
  for (const Conv2dOptions& o : {Conv2dOptions(), Conv2dOptions().stride(2).padding(1),
                                 Conv2dOptions().padding(Padding::Same)}) {
    expect_autocast_matches_reference(
        [&](const std::vector<Tensor>& in) { return conv2d(in[0], in[1], in[2], o); },
        {values({4, 16, 13, 11}, 1), values({8, 16, 3, 3}, 2), values({8}, 3)});
  }
  // Fused with relu, and the seed CNN's first layer (3 channels, stride 3).
  expect_autocast_matches_reference(
      [](const std::vector<Tensor>& in) {
        return conv2d_relu(in[0], in[1], in[2], Conv2dOptions().padding(1));
      },
      {values({2, 8, 9, 9}, 4), values({16, 8, 3, 3}, 5), values({16}, 6)});
  expect_autocast_matches_reference(
      [](const std::vector<Tensor>& in) {
        return conv2d_relu(in[0], in[1], in[2], Conv2dOptions().stride(3));
      },
      {values({5, 3, 30, 30}, 7), values({32, 3, 3, 3}, 8), values({32}, 9)});
}

TEST(AutocastGpu, LinearAndMatmulRunInBFloat16AndMatchTheRoundedReference) {
  LOOM_REQUIRE_CUDA();
  expect_autocast_matches_reference(
      [](const std::vector<Tensor>& in) { return linear(in[0], in[1], in[2]); },
      {values({32, 200}, 11), values({64, 200}, 12), values({64}, 13)});
  expect_autocast_matches_reference(
      [](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); },
      {values({3, 17, 40}, 14), values({40, 9}, 15)});
  expect_autocast_matches_reference([](const std::vector<Tensor>& in) { return bmm(in[0], in[1]); },
                                    {values({4, 6, 33}, 16), values({4, 33, 5}, 17)});
}

// 4096 (and 9 * 512) products of ones: float32 accumulation gives the exact count, which is a
// bfloat16 value; bfloat16 accumulation would stop growing at 256 (256 + 1 rounds to 256).
TEST(AutocastGpu, ProductsAccumulateInFloat32) {
  LOOM_REQUIRE_CUDA();
  Autocast autocast;
  const Tensor a = ones({2, 4096}, kCUDA), b = ones({3, 4096}, kCUDA);
  EXPECT_EQ(linear(a, b).to(kFloat32).cpu().to_vector<float>(), std::vector<float>(6, 4096.0f));
  const Tensor x = ones({1, 512, 3, 3}, kCUDA), w = ones({2, 512, 3, 3}, kCUDA);
  EXPECT_EQ(conv2d(x, w).to(kFloat32).cpu().to_vector<float>(), std::vector<float>(2, 4608.0f));
}

TEST(AutocastGpu, LeavesCpuFloat64AndBFloat16OperandsAlone) {
  LOOM_REQUIRE_CUDA();
  Autocast autocast;
  const Tensor x64 = values({2, 3, 6, 6}, 20).cuda(), w64 = values({4, 3, 3, 3}, 21).cuda();
  EXPECT_EQ(conv2d(x64, w64).dtype(), kFloat64);
  const Tensor x = values({2, 3, 6, 6}, 20).to(kFloat32), w = values({4, 3, 3, 3}, 21).to(kFloat32);
  EXPECT_EQ(conv2d(x, w).dtype(), kFloat32);  // the CPU: autocast is CUDA's
  // A bfloat16 activation meets a float32 weight: the weight is cast, nothing else.
  const Tensor act = x.to(kCUDA, kBFloat16);
  EXPECT_EQ(conv2d(act, w.cuda()).dtype(), kBFloat16);
  {
    Autocast off(false);
    EXPECT_FALSE(autocast_enabled());
    EXPECT_EQ(conv2d(x.cuda(), w.cuda()).dtype(), kFloat32);
    EXPECT_LOOM_ERROR(conv2d(act, w.cuda()),
                      "weight dtype float32 differs from input dtype bfloat16");
  }
  EXPECT_TRUE(autocast_enabled());
}

TEST(AutocastGpu, PoolingOnBFloat16MatchesTheCpuBitForBit) {
  LOOM_REQUIRE_CUDA();
  const Tensor x = values({3, 5, 12, 10}, 30).to(kBFloat16);
  for (bool overlapping : {false, true}) {
    SCOPED_TRACE(overlapping ? "overlapping windows" : "windows that tile");
    Tensor cpu = x.clone().set_requires_grad(true), gpu = x.cuda().set_requires_grad(true);
    const Tensor y_cpu = overlapping ? max_pool2d(cpu, 3, 2, 1) : max_pool2d(cpu, 2);
    const Tensor y_gpu = overlapping ? max_pool2d(gpu, 3, 2, 1) : max_pool2d(gpu, 2);
    ASSERT_EQ(y_gpu.dtype(), kBFloat16);
    EXPECT_EQ(bf16_bits_of(y_gpu.cpu()), bf16_bits_of(y_cpu));
    const Tensor w = values(y_cpu.shape(), 31).to(kBFloat16);
    y_cpu.backward(w);
    y_gpu.backward(w.cuda());
    EXPECT_EQ(bf16_bits_of(gpu.grad().cpu()), bf16_bits_of(cpu.grad()));
  }
  // Max pooling selects: its bfloat16 output is the float64 result on the same values.
  EXPECT_EQ(bf16_bits_of(max_pool2d(x.cuda(), 2).cpu()),
            reference_bits_of(max_pool2d(x.to(kFloat64), 2)));
  // Average pooling sums in double and rounds once, on both devices.
  Tensor cpu = x.clone().set_requires_grad(true), gpu = x.cuda().set_requires_grad(true);
  const Tensor a_cpu = avg_pool2d(cpu, 3, 2, 1), a_gpu = avg_pool2d(gpu, 3, 2, 1);
  EXPECT_EQ(bf16_bits_of(a_gpu.cpu()), bf16_bits_of(a_cpu));
  EXPECT_EQ(bf16_bits_of(a_cpu), reference_bits_of(avg_pool2d(x.to(kFloat64), 3, 2, 1)));
  const Tensor w = values(a_cpu.shape(), 32).to(kBFloat16);
  a_cpu.backward(w);
  a_gpu.backward(w.cuda());
  EXPECT_EQ(bf16_bits_of(gpu.grad().cpu()), bf16_bits_of(cpu.grad()));
}

TEST(AutocastGpu, BatchNormOnBFloat16KeepsFloat32StatisticsAndMatchesTheCpu) {
  LOOM_REQUIRE_CUDA();
  const Tensor x = (values({6, 4, 7, 5}, 40) * 3.0 + 1.5).to(kBFloat16);
  const Tensor weight = values({4}, 41).to(kFloat32), bias = values({4}, 42).to(kFloat32);
  for (bool training : {true, false}) {
    SCOPED_TRACE(training ? "training" : "eval");
    Tensor rm_cpu = values({4}, 43).to(kFloat32),
           rv_cpu = (abs(values({4}, 44)) + 0.5).to(kFloat32);
    Tensor rm_gpu = rm_cpu.cuda(), rv_gpu = rv_cpu.cuda();
    Tensor xc = x.clone().set_requires_grad(true), xg = x.cuda().set_requires_grad(true);
    Tensor wc = weight.clone().set_requires_grad(true), wg = weight.cuda().set_requires_grad(true);
    Tensor bc = bias.clone().set_requires_grad(true), bg = bias.cuda().set_requires_grad(true);
    const Tensor y_cpu = batch_norm(xc, wc, bc, rm_cpu, rv_cpu, training);
    const Tensor y_gpu = batch_norm(xg, wg, bg, rm_gpu, rv_gpu, training);
    ASSERT_EQ(y_gpu.dtype(), kBFloat16);
    // Both devices sum in double and round once; the sums' order differs, so a result may land
    // on the other side of a rounding boundary: one bfloat16 step at most.
    EXPECT_TENSOR_NEAR(y_gpu.cpu(), y_cpu, 1e-6, kRtol);
    EXPECT_EQ(rm_gpu.dtype(), kFloat32);
    EXPECT_TENSOR_NEAR(rm_gpu.cpu(), rm_cpu, 1e-6, 1e-6);
    EXPECT_TENSOR_NEAR(rv_gpu.cpu(), rv_cpu, 1e-6, 1e-6);
    // Against float64 on the same values (statistics, then one rounding of the output).
    const Tensor y64 = batch_norm(x.to(kFloat64), weight.to(kFloat64), bias.to(kFloat64),
                                  values({4}, 43).to(kFloat32).to(kFloat64),
                                  (abs(values({4}, 44)) + 0.5).to(kFloat32).to(kFloat64), training);
    EXPECT_TENSOR_NEAR(y_gpu.cpu(), y64, 1e-5, kRtol);
    const Tensor w = values(y_cpu.shape(), 45).to(kBFloat16);
    y_cpu.backward(w);
    y_gpu.backward(w.cuda());
    EXPECT_EQ(xg.grad().dtype(), kBFloat16);
    EXPECT_EQ(wg.grad().dtype(), kFloat32);
    EXPECT_TENSOR_NEAR(xg.grad().cpu(), xc.grad(), 1e-3 * max_abs(xc.grad()), 2 * kRtol);
    EXPECT_TENSOR_NEAR(wg.grad().cpu(), wc.grad(), 1e-5, 1e-5);
    EXPECT_TENSOR_NEAR(bg.grad().cpu(), bc.grad(), 1e-5, 1e-5);
  }
}

TEST(AutocastGpu, DropoutOnBFloat16DrawsTheFloat32Mask) {
  LOOM_REQUIRE_CUDA();
  const Tensor x = values({64, 33}, 50).to(kBFloat16).to(kCUDA, kFloat32);  // bfloat16 values
  Generator a(51), b(51);
  const Tensor y32 = dropout(x, 0.3, true, &a).cpu();
  const Tensor y16 = dropout(x.to(kBFloat16), 0.3, true, &b).cpu();
  ASSERT_EQ(y16.dtype(), kBFloat16);
  // The same elements dropped (x has no zeros), the kept ones scaled and rounded once.
  EXPECT_EQ(eq(y16.to(kFloat32), 0.0).to_vector<uint8_t>(), eq(y32, 0.0).to_vector<uint8_t>());
  EXPECT_TENSOR_NEAR(y16, y32, 0.0, kRtol);
}

}  // namespace
}  // namespace loom
