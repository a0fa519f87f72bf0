// Channels-last (NHWC) tensors on the CPU: the layout checks, contiguous(MemoryFormat) and its
// gradient, casts that keep the layout, elementwise ops whose outputs follow a channels-last
// input (the CPU backend runs the same [N, H, W, C] views as CUDA's), and the CNN ops, which on
// the CPU read a channels-last input as NCHW: every value equal to the NCHW computation.
#include "testing.h"

namespace loom {
namespace {

using testing::random_leaf;

constexpr MemoryFormat kCL = MemoryFormat::ChannelsLast;

Tensor channels_last_copy(const Tensor& t) { return t.detach().contiguous(kCL); }

TEST(MemoryFormat, ChannelsLastStridesAndChecks) {
  const Tensor t = empty({2, 3, 4, 5}, kFloat32, kCL);
  EXPECT_EQ(t.strides(), (Shape{60, 1, 15, 3}));
  EXPECT_TRUE(t.is_contiguous(kCL));
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_EQ(t.suggest_memory_format(), kCL);
  const Tensor nchw = zeros({2, 3, 4, 5});
  EXPECT_FALSE(nchw.is_contiguous(kCL));
  EXPECT_EQ(nchw.suggest_memory_format(), MemoryFormat::Contiguous);
  // A permuted NHWC tensor is the same thing as a channels-last one.
  EXPECT_TRUE(zeros({2, 4, 5, 3}).permute({0, 3, 1, 2}).is_contiguous(kCL));
  // One channel or one pixel: both layouts are the same bytes, and NCHW is the one suggested.
  for (const Shape& s : {Shape{2, 1, 4, 5}, Shape{2, 3, 1, 1}}) {
    const Tensor both = empty(s, kFloat32, kCL);
    EXPECT_TRUE(both.is_contiguous() && both.is_contiguous(kCL)) << shape_str(s);
    EXPECT_EQ(both.suggest_memory_format(), MemoryFormat::Contiguous) << shape_str(s);
  }
  // A slice of a channels-last tensor is neither.
  const Tensor slice = t.narrow(1, 0, 2);
  EXPECT_FALSE(slice.is_contiguous(kCL));
  EXPECT_EQ(slice.suggest_memory_format(), MemoryFormat::Contiguous);
  EXPECT_FALSE(zeros({3, 4, 5}).is_contiguous(kCL));
}

TEST(MemoryFormat, ChannelsLastNeedsFourDimensions) {
  EXPECT_LOOM_ERROR(empty({3, 4, 5}, kFloat32, kCL), "4-D");
  EXPECT_LOOM_ERROR(zeros({3, 4}).contiguous(kCL), "contiguous(ChannelsLast): needs a 4-D");
}

TEST(MemoryFormat, ContiguousChannelsLastKeepsValuesAndSendsGradientsBackInTheInputsLayout) {
  const Tensor x = random_leaf({2, 3, 4, 5}, 11);
  const Tensor y = x.contiguous(kCL);
  EXPECT_TRUE(y.is_contiguous(kCL));
  EXPECT_EQ(y.to_vector<double>(), x.to_vector<double>());  // to_vector reads in logical order
  EXPECT_TRUE(y.contiguous(kCL).is_same(y));
  EXPECT_EQ(y.contiguous().to_vector<double>(), x.to_vector<double>());
  // NHWC memory really is channel-fastest: element (0, c, 0, 0) sits at c.
  const double* raw = y.data_ptr<double>();
  for (int64_t c = 0; c < 3; ++c)
    EXPECT_EQ(raw[c], x.select(0, 0).select(1, 0).select(1, 0).select(0, c).item<double>());
  const Tensor w = random_leaf({2, 3, 4, 5}, 12).detach().contiguous(kCL);
  sum(y * w).backward();
  ASSERT_TRUE(x.grad().defined());
  EXPECT_TRUE(x.grad().is_contiguous());
  EXPECT_EQ(x.grad().to_vector<double>(), w.to_vector<double>());
}

TEST(MemoryFormat, CastsKeepChannelsLast) {
  const Tensor x = channels_last_copy(random_leaf({2, 3, 4, 5}, 13));
  const Tensor f = x.to(kFloat32);
  EXPECT_TRUE(f.is_contiguous(kCL));
  EXPECT_TENSOR_NEAR(f.to(kFloat64), x, 1e-6, 1e-6);
  EXPECT_TRUE(x.to(kBFloat16).is_contiguous(kCL));
  EXPECT_TRUE(random_leaf({2, 3, 4, 5}, 14).to(kFloat32).is_contiguous());
}

TEST(MemoryFormat, ElementwiseOutputsFollowTheFirstDenseInputOfTheirShape) {
  const Tensor a = random_leaf({2, 3, 4, 5}, 21), b = random_leaf({2, 3, 4, 5}, 22);
  const Tensor bias = random_leaf({3, 1, 1}, 23);
  const Tensor wide = random_leaf({2, 3, 4, 6}, 24);  // a slice of it is strided: no say
  const Tensor a_cl = channels_last_copy(a), b_cl = channels_last_copy(b);
  struct Case {
    const char* name;
    Tensor out, expected;
    MemoryFormat format;
  };
  const std::vector<Case> cases = {
      {"cl + cl", a_cl + b_cl, a + b, kCL},
      {"cl * nchw", a_cl * b, a * b, kCL},
      {"nchw - cl", a - b_cl, a - b, MemoryFormat::Contiguous},
      {"cl + broadcast bias", a_cl + bias, a + bias, kCL},
      {"broadcast bias + cl", bias + a_cl, bias + a, kCL},
      {"relu(cl)", relu(a_cl), relu(a), kCL},
      {"where(cl > 0, cl, nchw)", where(gt(a_cl, 0.0), a_cl, b), where(gt(a, 0.0), a, b), kCL},
      {"slice + cl", wide.narrow(3, 1, 5) + b_cl, wide.narrow(3, 1, 5) + b, kCL},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(c.out.suggest_memory_format(), c.format);
    EXPECT_TRUE(c.out.is_contiguous(c.format));
    EXPECT_EQ(c.out.to_vector<double>(), c.expected.to_vector<double>());
  }
  // Not 4-D: always contiguous.
  EXPECT_TRUE((a_cl.flatten(0, 1).narrow(0, 0, 6) + 1.0).is_contiguous());
}

TEST(MemoryFormat, GradientsThroughChannelsLastElementwiseOpsEqualNchw) {
  const Tensor a = random_leaf({2, 4, 3, 3}, 31);
  Tensor bias = random_leaf({4, 1, 1}, 32);
  const Tensor w = random_leaf({2, 4, 3, 3}, 33).detach();
  auto loss = [&](const Tensor& x) { return sum(relu(x * x + bias) * w); };
  loss(a).backward();
  const Tensor da = a.grad().clone(), dbias = bias.grad().clone();
  bias.set_grad(Tensor());
  const Tensor a2 = a.detach().clone().requires_grad_();
  loss(a2.contiguous(kCL)).backward();
  EXPECT_TENSOR_NEAR(a2.grad(), da, 1e-12, 1e-12);
  EXPECT_TENSOR_NEAR(bias.grad(), dbias, 1e-12, 1e-12);
}

// The CPU's conv, batch norm and pooling read a channels-last input as NCHW: same values.
TEST(MemoryFormat, CpuCnnOpsAcceptChannelsLastInputs) {
  const Tensor x = random_leaf({2, 3, 8, 8}, 41), weight = random_leaf({4, 3, 3, 3}, 42);
  const Tensor gamma = random_leaf({4}, 43), beta = random_leaf({4}, 44);
  auto net = [&](const Tensor& in) {
    Tensor y = conv2d(in, weight, Tensor(), Conv2dOptions().padding(1));
    y = batch_norm(y, gamma, beta, Tensor(), Tensor(), /*training=*/true, 0.1, 1e-5);
    return max_pool2d(relu(y), {2, 2}) + avg_pool2d(y, {2, 2});
  };
  const Tensor expected = net(x);
  const Tensor got = net(channels_last_copy(x).requires_grad_());
  EXPECT_TENSOR_NEAR(got, expected, 1e-12, 1e-12);
}

}  // namespace
}  // namespace loom
