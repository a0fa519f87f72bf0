// bfloat16 in the core on a GPU: the CUDA strided copy converts to and from bfloat16 bit for
// bit as the CPU does (every pattern, ties, subnormals, overflow, NaN), fills, random draws and
// gradient accumulation agree with the CPU exactly, and bfloat16 crosses devices unchanged.
#include <limits>
#include <random>

#include "bf16_reference.h"
#include "loom/tensor/primitives.h"
#include "testing.h"

namespace loom {
namespace {

using namespace testing;

// Fresh random floats of every magnitude, and floats sitting on, just below and just above the
// bfloat16 ties of random patterns; infinities and signed zeros. NaN is checked on its own.
std::vector<float> conversion_floats(uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> values = {0.0f,
                               -0.0f,
                               INFINITY,
                               -INFINITY,
                               std::numeric_limits<float>::max(),
                               std::numeric_limits<float>::denorm_min(),
                               std::ldexp(255.0f, 120) + 0x1p119f};
  for (int i = 0; i < 20000; ++i) {
    const float f = float_from_bits(static_cast<uint32_t>(rng()));
    if (!std::isnan(f)) values.push_back(f);
    const uint32_t top = static_cast<uint32_t>(rng()) & 0xFFFF0000u;
    for (uint32_t low : {0x7FFFu, 0x8000u, 0x8001u}) {
      const float g = float_from_bits(top | low);
      if (!std::isnan(g)) values.push_back(g);
    }
  }
  return values;
}

// Doubles around bfloat16 ties at a distance float cannot hold, and of every magnitude.
std::vector<double> conversion_doubles(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> values = {1e300, -1e300, 1e-300, -1e-300};
  for (int i = 0; i < 20000; ++i) {
    const uint16_t m = static_cast<uint16_t>(rng() % 0x7F80);
    const double tie = (bf16_magnitude(m) + bf16_magnitude(m + 1)) / 2;
    const double hair = (bf16_magnitude(m + 1) - bf16_magnitude(m)) * 0x1p-30;
    const double sign = (rng() & 1) ? -1.0 : 1.0;
    for (double d : {tie, tie - hair, tie + hair}) values.push_back(sign * d);
    values.push_back(std::ldexp(static_cast<double>(rng() >> 11) * 0x1p-53,
                                static_cast<int>(rng() % 300) - 150));
  }
  return values;
}

TEST(BFloat16Gpu, ConversionsToBFloat16MatchTheCpuBitForBit) {
  LOOM_REQUIRE_CUDA();
  const Tensor f32 = from_vector<float>(conversion_floats(41));
  const Tensor on_gpu = f32.to(kCUDA).to(kBFloat16);
  ASSERT_TRUE(on_gpu.is_cuda());
  EXPECT_EQ(bf16_bits_of(on_gpu.cpu()), bf16_bits_of(f32.to(kBFloat16)));
  EXPECT_EQ(bf16_bits_of(on_gpu.cpu()), reference_bits_of(f32));

  const Tensor f64 = from_vector<double>(conversion_doubles(42));
  EXPECT_EQ(bf16_bits_of(f64.to(kCUDA).to(kBFloat16).cpu()), bf16_bits_of(f64.to(kBFloat16)));
  EXPECT_EQ(bf16_bits_of(f64.to(kCUDA).to(kBFloat16).cpu()), reference_bits_of(f64));

  Generator gen(43);
  for (DType dtype : {kInt64, kInt32, kUInt8}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor ints =
        randint(dtype == kUInt8 ? 0 : -100000, dtype == kUInt8 ? 256 : 100000, {5000}, dtype, &gen);
    EXPECT_EQ(bf16_bits_of(ints.to(kCUDA).to(kBFloat16).cpu()), bf16_bits_of(ints.to(kBFloat16)));
  }

  // NaN: quiet NaN with the sign kept, the same bits on both devices.
  const Tensor nans =
      from_vector<float>({float_from_bits(0x7F800001u), float_from_bits(0xFF80FFFFu),
                          float_from_bits(0x7FC00000u), float_from_bits(0xFFA12345u)});
  const std::vector<uint16_t> gpu_nans = bf16_bits_of(nans.to(kCUDA).to(kBFloat16).cpu());
  EXPECT_EQ(gpu_nans, bf16_bits_of(nans.to(kBFloat16)));
  for (uint16_t bits : gpu_nans)
    EXPECT_TRUE(bf16_is_nan(bits) && (bits & 0x0040)) << std::hex << bits;
}

TEST(BFloat16Gpu, ConversionsFromBFloat16MatchTheCpuBitForBit) {
  LOOM_REQUIRE_CUDA();
  std::vector<BFloat16> all;
  for (uint32_t b = 0; b <= 0xFFFF; ++b)
    all.push_back(BFloat16::from_bits(static_cast<uint16_t>(b)));
  const Tensor every = from_vector<BFloat16>(all);
  const Tensor dev = every.to(kCUDA);
  // Every pattern, NaNs included, widens to the same float and double bits.
  const std::vector<float> f_gpu = dev.to(kFloat32).cpu().to_vector<float>();
  const std::vector<float> f_cpu = every.to(kFloat32).to_vector<float>();
  const std::vector<double> d_gpu = dev.to(kFloat64).cpu().to_vector<double>();
  const std::vector<double> d_cpu = every.to(kFloat64).to_vector<double>();
  for (size_t i = 0; i < all.size(); ++i) {
    ASSERT_EQ(float_bits(f_gpu[i]), float_bits(f_cpu[i])) << std::hex << i;
    ASSERT_EQ(std::memcmp(&d_gpu[i], &d_cpu[i], sizeof(double)), 0) << std::hex << i;
  }
  // To integers: finite values that fit, truncated toward zero.
  Generator gen(44);
  const Tensor values = (randn({4000}, kFloat32, &gen) * 1000.0).to(kBFloat16);
  EXPECT_EQ(values.to(kCUDA).to(kInt64).cpu().to_vector<int64_t>(),
            values.to(kInt64).to_vector<int64_t>());
  EXPECT_EQ(values.to(kCUDA).to(kInt32).cpu().to_vector<int32_t>(),
            values.to(kInt32).to_vector<int32_t>());
  // Across devices bfloat16 moves as bytes.
  EXPECT_EQ(bf16_bits_of(dev.cpu()), bf16_bits_of(every));
}

TEST(BFloat16Gpu, StridedAndBroadcastCopiesMatchTheCpu) {
  LOOM_REQUIRE_CUDA();
  Generator gen(45);
  const Tensor x = randn({67, 129}, kFloat64, &gen);
  const Tensor xg = x.to(kCUDA);
  Tensor dst_cpu = empty({129, 67}, kBFloat16),
         dst_gpu = empty({129, 67}, TensorOptions(kBFloat16).device(kCUDA));
  dst_cpu.copy_(x.t());
  dst_gpu.copy_(xg.t());
  EXPECT_EQ(bf16_bits_of(dst_gpu.cpu()), bf16_bits_of(dst_cpu));
  // bfloat16 into a transposed float32 view, a broadcast row, and a CPU source into a CUDA view.
  Tensor f_cpu = zeros({67, 129}), f_gpu = zeros({67, 129}, kCUDA);
  f_cpu.t().copy_(dst_cpu);
  f_gpu.t().copy_(dst_gpu);
  EXPECT_EQ(f_gpu.cpu().to_vector<float>(), f_cpu.to_vector<float>());
  Tensor rows_cpu = empty({5, 129}, kBFloat16),
         rows_gpu = empty({5, 129}, TensorOptions(kBFloat16).device(kCUDA));
  rows_cpu.copy_(x.select(0, 3));
  rows_gpu.copy_(xg.select(0, 3));
  EXPECT_EQ(bf16_bits_of(rows_gpu.cpu()), bf16_bits_of(rows_cpu));
  Tensor across = zeros({129, 67}, TensorOptions(kBFloat16).device(kCUDA));
  across.t().copy_(x);  // CPU float64 into a transposed CUDA bfloat16 view
  EXPECT_EQ(bf16_bits_of(across.cpu()), bf16_bits_of(dst_cpu));
  EXPECT_EQ(bf16_bits_of(dst_gpu.t().contiguous().cpu()), bf16_bits_of(dst_cpu.t().contiguous()));
}

TEST(BFloat16Gpu, FillsAndRandomDrawsMatchTheCpu) {
  LOOM_REQUIRE_CUDA();
  const TensorOptions gpu = TensorOptions(kBFloat16).device(kCUDA);
  for (double v : {0.1, -1.0 - 0x1p-8 - 0x1p-30, 1e300, 3e-39}) {
    SCOPED_TRACE(v);
    EXPECT_EQ(bf16_bits_of(full({37}, v, gpu).cpu()), bf16_bits_of(full({37}, v, kBFloat16)));
    Tensor strided = zeros({6, 5}, gpu);
    strided.t().narrow(0, 1, 2).fill_(v);
    Tensor expected = zeros({6, 5}, kBFloat16);
    expected.t().narrow(0, 1, 2).fill_(v);
    EXPECT_EQ(bf16_bits_of(strided.cpu()), bf16_bits_of(expected));
  }
  EXPECT_EQ(bf16_bits_of(ones({3}, gpu).cpu()), std::vector<uint16_t>(3, 0x3F80));
  Generator a(46), b(46);
  EXPECT_EQ(bf16_bits_of(rand({10000}, gpu, &a).cpu()), bf16_bits_of(rand({10000}, kBFloat16, &b)));
  EXPECT_EQ(bf16_bits_of(randint(-500, 500, {3000}, gpu, &a).cpu()),
            bf16_bits_of(randint(-500, 500, {3000}, kBFloat16, &b)));
  // Normal draws go through log and cos, whose last bits may differ between libm and CUDA: at
  // most one bfloat16 ulp apart.
  EXPECT_TENSOR_NEAR(randn({10000}, gpu, &a).cpu(), randn({10000}, kBFloat16, &b), 0.0, 0x1p-7);
}

TEST(BFloat16Gpu, AccumulateMatchesTheCpuBitForBit) {
  LOOM_REQUIRE_CUDA();
  Generator gen(47);
  for (const Shape& shape : {Shape{64, 33}, Shape{4097}}) {
    SCOPED_TRACE(shape_str(shape));
    const Tensor a = randn(shape, kBFloat16, &gen), b = randn(shape, kBFloat16, &gen);
    Tensor ca = a.clone(), da = a.cuda();
    detail::accumulate(ca, b);  // contiguous: the flat kernel
    detail::accumulate(da, b.cuda());
    EXPECT_EQ(bf16_bits_of(da.cpu()), bf16_bits_of(ca));
  }
  const Tensor a = randn({64, 33}, kBFloat16, &gen), b = randn({33, 64}, kBFloat16, &gen);
  Tensor ca = a.clone(), da = a.cuda();
  detail::accumulate(ca, b.t());  // strided
  detail::accumulate(da, b.cuda().t());
  EXPECT_EQ(bf16_bits_of(da.cpu()), bf16_bits_of(ca));
}

}  // namespace
}  // namespace loom
