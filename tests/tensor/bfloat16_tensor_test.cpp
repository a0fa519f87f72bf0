// bfloat16 tensors in the core on the CPU: to() and copy_ from and to every dtype (checked
// against bf16_reference.h), strided and broadcast copies, fills and factories, random draws,
// item(), accumulation, printing, and the autograd of to().
#include <limits>
#include <random>
#include <sstream>

#include "bf16_reference.h"
#include "loom/tensor/primitives.h"
#include "testing.h"

namespace loom {
namespace {

using namespace testing;

// Floats of every kind in one tensor: random bit patterns (NaN left out), ties, subnormals,
// the overflow threshold, infinities and signed zeros.
std::vector<float> awkward_floats(uint32_t seed, size_t random_count) {
  std::mt19937 rng(seed);
  std::vector<float> values = {0.0f,
                               -0.0f,
                               1.0f,
                               -1.0f,
                               1.0f + 0x1p-8f,
                               1.0f + 3 * 0x1p-8f,
                               0x1p-133f,
                               0x1p-134f,
                               3 * 0x1p-134f,
                               std::numeric_limits<float>::denorm_min(),
                               std::ldexp(255.0f, 120) + 0x1p119f,
                               std::numeric_limits<float>::max(),
                               INFINITY,
                               -INFINITY};
  while (values.size() < random_count) {
    const float f = float_from_bits(static_cast<uint32_t>(rng()));
    if (!std::isnan(f)) values.push_back(f);
  }
  return values;
}

TEST(BFloat16Tensor, FromEveryDtypeRoundsAsTheReference) {
  const std::vector<float> floats = awkward_floats(1, 5000);
  const Tensor f32 = from_vector<float>(floats);
  const Tensor b = f32.to(kBFloat16);
  EXPECT_EQ(b.dtype(), kBFloat16);
  EXPECT_EQ(b.nbytes(), 2 * floats.size());
  EXPECT_EQ(bf16_bits_of(b), reference_bits_of(f32));

  Generator gen(2);
  const Tensor f64 = randn({3000}, kFloat64, &gen);  // values float could not hold
  EXPECT_EQ(bf16_bits_of(f64.to(kBFloat16)), reference_bits_of(f64));

  const std::vector<int64_t> ints = {0,   1,   -7,     255,
                                     257, 259, -65535, (int64_t(1) << 40) + (int64_t(1) << 32) + 1};
  const Tensor i64 = from_vector<int64_t>(ints);
  EXPECT_EQ(bf16_bits_of(i64.to(kBFloat16)), reference_bits_of(i64));
  const Tensor i32 = from_vector<int32_t>({3, -300, 1 << 30, 12345});
  EXPECT_EQ(bf16_bits_of(i32.to(kBFloat16)), reference_bits_of(i32));
  const Tensor u8 = from_vector<uint8_t>({0, 1, 127, 200, 255});
  EXPECT_EQ(bf16_bits_of(u8.to(kBFloat16)), reference_bits_of(u8));
}

TEST(BFloat16Tensor, ToWiderDtypesIsExactAndToIntegersTruncates) {
  std::vector<BFloat16> all;
  for (uint32_t b = 0; b <= 0xFFFF; ++b) {
    if (!bf16_is_nan(static_cast<uint16_t>(b)))
      all.push_back(BFloat16::from_bits(static_cast<uint16_t>(b)));
  }
  const Tensor b = from_vector<BFloat16>(all);
  const std::vector<float> f = b.to(kFloat32).to_vector<float>();
  const std::vector<double> d = b.to(kFloat64).to_vector<double>();
  for (size_t i = 0; i < all.size(); ++i) {
    ASSERT_EQ(static_cast<double>(f[i]), bf16_value(all[i].bits)) << std::hex << all[i].bits;
    ASSERT_EQ(d[i], bf16_value(all[i].bits)) << std::hex << all[i].bits;
  }
  const Tensor small = from_vector<float>({-2.5f, 2.75f, 100.0f, 255.0f}).to(kBFloat16);
  EXPECT_EQ(small.to(kInt64).to_vector<int64_t>(), (std::vector<int64_t>{-2, 2, 100, 255}));
  EXPECT_EQ(small.to(kInt32).to_vector<int32_t>(), (std::vector<int32_t>{-2, 2, 100, 255}));
}

TEST(BFloat16Tensor, StridedAndBroadcastCopies) {
  Generator gen(3);
  const Tensor x = randn({5, 7}, kFloat64, &gen);
  // A transposed float64 source into a contiguous bfloat16 destination, and back into a
  // transposed float32 view.
  Tensor b = empty({7, 5}, kBFloat16);
  b.copy_(x.t());
  EXPECT_EQ(bf16_bits_of(b), reference_bits_of(x.t().contiguous()));
  Tensor f = zeros({5, 7}, kFloat32);
  f.t().copy_(b);
  EXPECT_EQ(f.to_vector<float>(), b.t().contiguous().to(kFloat32).to_vector<float>());
  // A row broadcast over a bfloat16 destination, and a narrowed bfloat16 source.
  Tensor rows = empty({3, 7}, kBFloat16);
  rows.copy_(x.select(0, 2));
  for (int64_t r = 0; r < 3; ++r)
    EXPECT_EQ(bf16_bits_of(rows.select(0, r)), reference_bits_of(x.select(0, 2)));
  const Tensor part = b.narrow(1, 1, 3).contiguous();
  EXPECT_EQ(bf16_bits_of(part), reference_bits_of(x.t().narrow(1, 1, 3).contiguous()));
  EXPECT_TRUE(b.t().contiguous().is_contiguous());
  EXPECT_EQ(bf16_bits_of(b.t().contiguous()), reference_bits_of(x));
}

TEST(BFloat16Tensor, FillsAndFactories) {
  EXPECT_EQ(bf16_bits_of(full({3}, 0.1, kBFloat16)),
            std::vector<uint16_t>(3, reference_bf16_bits(0.1)));
  EXPECT_EQ(bf16_bits_of(ones({2, 2}, kBFloat16)), std::vector<uint16_t>(4, 0x3F80));
  EXPECT_EQ(bf16_bits_of(zeros({2}, kBFloat16)), std::vector<uint16_t>(2, 0x0000));
  EXPECT_EQ(bf16_bits_of(full({2}, 1e300, kBFloat16)), std::vector<uint16_t>(2, kBf16Inf));
  Tensor t = full({4, 3}, -1.0, kBFloat16);
  t.narrow(1, 1, 1).fill_(1.0 + 0x1p-8 + 0x1p-30);  // just above a tie: rounds up
  EXPECT_EQ(bf16_bits_of(t.select(1, 1)), std::vector<uint16_t>(4, 0x3F81));
  EXPECT_EQ(bf16_bits_of(t.select(1, 0)), std::vector<uint16_t>(4, 0xBF80));
  EXPECT_EQ(bf16_bits_of(arange(0.0, 3.0, 0.5, kBFloat16)),
            (std::vector<uint16_t>{0x0000, 0x3F00, 0x3F80, 0x3FC0, 0x4000, 0x4020}));
  EXPECT_EQ(scalar_tensor(1.0 / 3.0, kBFloat16).item<float>(),
            static_cast<float>(round_to_bf16(1.0 / 3.0)));
  EXPECT_EQ(scalar_tensor(-7.25, kBFloat16).item<double>(), -7.25);
  EXPECT_TRUE(zeros({2}, TensorOptions(kBFloat16).requires_grad()).requires_grad());
}

// A draw in bfloat16 is the float64 draw of the same counters rounded once, with uniform
// values that round up to `high` replaced by `low`, as for every dtype.
TEST(BFloat16Tensor, RandomDrawsAreTheFloat64DrawsRounded) {
  Generator a(21), b(21);
  const Tensor u = rand({20000}, kBFloat16, &a);
  std::vector<uint16_t> expected;
  for (double v : rand({20000}, kFloat64, &b).to_vector<double>()) {
    const uint16_t r = reference_bf16_bits(v);
    expected.push_back(bf16_value(r) < 1.0 ? r : 0x0000);
  }
  EXPECT_EQ(bf16_bits_of(u), expected);
  for (float v : u.to_vector<float>()) ASSERT_TRUE(v >= 0.0f && v < 1.0f) << v;
  EXPECT_EQ(bf16_bits_of(randn({5000}, kBFloat16, &a)),
            reference_bits_of(randn({5000}, kFloat64, &b)));
  EXPECT_EQ(randint(-300, 300, {500}, kBFloat16, &a).to(kInt64).to_vector<int64_t>(),
            randint(-300, 300, {500}, kFloat64, &b).to(kBFloat16).to(kInt64).to_vector<int64_t>());
}

// The engine's gradient accumulation adds in float and rounds once: the reference rounds the
// exact sum (exact in double for these magnitudes).
TEST(BFloat16Tensor, AccumulateRoundsTheSumOnce) {
  Generator gen(31);
  const Tensor x = randn({64, 33}, kFloat64, &gen), y = randn({33, 64}, kFloat64, &gen);
  Tensor acc = x.to(kBFloat16);
  const Tensor add = y.to(kBFloat16);
  const std::vector<double> lhs = acc.to(kFloat64).to_vector<double>();
  const std::vector<double> rhs = add.t().contiguous().to(kFloat64).to_vector<double>();
  detail::accumulate(acc, add.t());
  std::vector<uint16_t> expected;
  for (size_t i = 0; i < lhs.size(); ++i) expected.push_back(reference_bf16_bits(lhs[i] + rhs[i]));
  EXPECT_EQ(bf16_bits_of(acc), expected);
}

TEST(BFloat16Tensor, ToRecordsItsGradientInTheSourceDtype) {
  const Tensor x = random_leaf({4}, 5);
  const Tensor y = x.to(kBFloat16);
  EXPECT_EQ(y.grad_fn()->name(), "to");
  y.backward(from_vector<float>({0.1f, 1.0f, -3.0f, 1e-3f}).to(kBFloat16));
  EXPECT_EQ(x.grad().dtype(), kFloat64);
  std::vector<double> expected;
  for (double g : {0.1, 1.0, -3.0, 1e-3}) expected.push_back(round_to_bf16(static_cast<float>(g)));
  EXPECT_EQ(x.grad().to_vector<double>(), expected);
}

TEST(BFloat16Tensor, PrintsLikePyTorch) {
  EXPECT_EQ(from_vector<float>({1, 2.5f, -3}).to(kBFloat16).str(),
            "tensor([ 1.0000,  2.5000, -3.0000], dtype=bfloat16)");
  EXPECT_EQ(scalar_tensor(0.1, kBFloat16).str(), "tensor(0.1001, dtype=bfloat16)");
  EXPECT_EQ(ones({2}, kBFloat16).str(), "tensor([1., 1.], dtype=bfloat16)");
  EXPECT_EQ(full({1}, INFINITY, kBFloat16).str(), "tensor([inf], dtype=bfloat16)");
  std::ostringstream name;
  name << kBFloat16;
  EXPECT_EQ(name.str(), "bfloat16");
  EXPECT_EQ(element_size(kBFloat16), 2u);
  EXPECT_TRUE(is_floating(kBFloat16));
  EXPECT_LOOM_ERROR(ones({2}, kBFloat16).data_ptr<float>(), "holds bfloat16, not float32");
}

}  // namespace
}  // namespace loom
