// clip_grad_norm_ on known vectors: the returned norm, the scaling when it exceeds max_norm,
// untouched gradients when it does not, mixed dtypes, expanded gradients, and the errors.
#include <cmath>

#include "loom/optim/optim.h"
#include "testing.h"

namespace loom {
namespace {

Tensor leaf_with_grad(const std::vector<double>& values, const std::vector<double>& grad) {
  Tensor t = from_vector(values);
  t.requires_grad_();
  t.set_grad(from_vector(grad));
  return t;
}

TEST(ClipGradNorm, ScalesToMaxNormAcrossTensors) {
  Tensor a = leaf_with_grad({1.0, 1.0}, {3.0, -4.0}), b = leaf_with_grad({1.0}, {12.0});
  Tensor no_grad = from_vector<double>({5.0});
  no_grad.requires_grad_();
  EXPECT_NEAR(optim::clip_grad_norm_({a, no_grad, b}, 6.5), 13.0, 1e-12);  // sqrt(9 + 16 + 144)
  const double c = 6.5 / (13.0 + 1e-6);
  EXPECT_TENSOR_NEAR(a.grad(), from_vector<double>({3.0 * c, -4.0 * c}), 1e-14, 0);
  EXPECT_TENSOR_NEAR(b.grad(), from_vector<double>({12.0 * c}), 1e-14, 0);
  EXPECT_FALSE(no_grad.grad().defined());
  EXPECT_NEAR(optim::clip_grad_norm_({a, b}, 100.0), 6.5, 1e-5);  // now below: unchanged
  EXPECT_TENSOR_NEAR(b.grad(), from_vector<double>({12.0 * c}), 1e-14, 0);
}

TEST(ClipGradNorm, LeavesSmallGradientsAlone) {
  Tensor a = leaf_with_grad({0.0, 0.0, 0.0}, {0.5, -0.25, 1.0});
  EXPECT_NEAR(optim::clip_grad_norm_({a}, 2.0), std::sqrt(0.25 + 0.0625 + 1.0), 1e-15);
  EXPECT_EQ(a.grad().to_vector<double>(), (std::vector<double>{0.5, -0.25, 1.0}));
  Tensor none = from_vector<double>({1.0});
  EXPECT_EQ(optim::clip_grad_norm_({none}, 1.0), 0.0);
}

TEST(ClipGradNorm, MixesDtypesAndLargeTensors) {
  Generator gen(7);
  Tensor big = randn({100003}, kFloat32, &gen);
  big.requires_grad_();
  Tensor g = randn({100003}, kFloat32, &gen);
  big.set_grad(g.clone());
  Tensor small = leaf_with_grad({1.0, 2.0}, {2.0, -1.0});
  double expected_sq = 5.0;
  for (float v : g.to_vector<float>()) expected_sq += double(v) * double(v);
  const double total = optim::clip_grad_norm_({big, small}, 1.0);
  EXPECT_NEAR(total, std::sqrt(expected_sq), 1e-9 * std::sqrt(expected_sq));
  const double c = 1.0 / (total + 1e-6);
  EXPECT_EQ(big.grad().dtype(), kFloat32);
  const std::vector<float> got = big.grad().to_vector<float>(), before = g.to_vector<float>();
  for (size_t i = 0; i < got.size(); i += 997) EXPECT_NEAR(got[i], before[i] * c, 1e-6) << i;
  EXPECT_TENSOR_NEAR(small.grad(), from_vector<double>({2.0 * c, -1.0 * c}), 1e-14, 0);
}

TEST(ClipGradNorm, ScalesAnExpandedGradientOnce) {
  Tensor a = from_vector<double>({1.0, 2.0, 3.0});
  a.requires_grad_();
  a.set_grad(from_vector<double>({2.0}).expand({3}));
  EXPECT_NEAR(optim::clip_grad_norm_({a}, 1.0), std::sqrt(12.0), 1e-12);
  const double c = 1.0 / (std::sqrt(12.0) + 1e-6);
  EXPECT_TRUE(a.grad().is_contiguous());
  EXPECT_TENSOR_NEAR(a.grad(), from_vector<double>({2.0 * c, 2.0 * c, 2.0 * c}), 1e-14, 0);
}

TEST(ClipGradNorm, RejectsBadArguments) {
  Tensor a = leaf_with_grad({1.0}, {1.0});
  EXPECT_LOOM_ERROR(optim::clip_grad_norm_({a}, -1.0),
                    "clip_grad_norm_: max_norm must be non-negative, got -1");
  EXPECT_LOOM_ERROR(optim::clip_grad_norm_({a}, NAN), "max_norm must be non-negative");
  EXPECT_LOOM_ERROR(optim::clip_grad_norm_({a, Tensor()}, 1.0), "got an undefined parameter");
}

}  // namespace
}  // namespace loom
