// The tensor core on the CPU: factories, views and aliasing, copies, dtypes, printing, errors.
#include "testing.h"

namespace loom {
namespace {

using testing::random_leaf;

TEST(Factories, ShapesDtypesAndValues) {
  Tensor z = zeros({2, 3});
  EXPECT_EQ(z.shape(), (Shape{2, 3}));
  EXPECT_EQ(z.strides(), (Shape{3, 1}));
  EXPECT_EQ(z.dtype(), kFloat32);
  EXPECT_EQ(z.device(), kCPU);
  for (float v : z.to_vector<float>()) EXPECT_EQ(v, 0.0f);
  for (double v : ones({4}, kFloat64).to_vector<double>()) EXPECT_EQ(v, 1.0);
  for (int64_t v : full({3}, 7, kInt64).to_vector<int64_t>()) EXPECT_EQ(v, 7);
  EXPECT_EQ(arange(5, kInt64).to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(arange(1.0, 2.0, 0.25, kFloat64).to_vector<double>(),
            (std::vector<double>{1.0, 1.25, 1.5, 1.75}));
  EXPECT_EQ(arange(3.0, 0.0, -1.0).to_vector<float>(), (std::vector<float>{3, 2, 1}));
  EXPECT_EQ(scalar_tensor(2.5).dim(), 0);
  EXPECT_EQ(scalar_tensor(2.5).item<float>(), 2.5f);
}

TEST(Factories, FromVectorConvertsAndFromBlobAliases) {
  Tensor t = from_vector<int32_t>({1, 2, 3, 4, 5, 6}, {2, 3}, kFloat64);
  EXPECT_EQ(t.dtype(), kFloat64);
  EXPECT_EQ(t.to_vector<double>(), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  std::vector<float> owned{1, 2, 3, 4};
  Tensor blob = from_blob(owned.data(), {2, 2}, kFloat32);
  owned[3] = 40;
  EXPECT_EQ(blob.to_vector<float>()[3], 40.0f);
  bool deleted = false;
  {
    Tensor with_deleter =
        from_blob(owned.data(), {4}, kFloat32, kCPU, [&](void*) { deleted = true; });
    Tensor view = with_deleter.narrow(0, 1, 2);
    with_deleter = Tensor();
    EXPECT_FALSE(deleted);  // the view still holds the storage
  }
  EXPECT_TRUE(deleted);
}

TEST(Factories, BadArgumentsThrow) {
  EXPECT_LOOM_ERROR(from_vector<float>({1, 2, 3}, {2, 2}), "do not fill shape [2, 2]");
  EXPECT_LOOM_ERROR(zeros({2, -1}), "negative size");
  EXPECT_LOOM_ERROR(arange(0.0, 1.0, 0.0), "non-zero step");
  EXPECT_LOOM_ERROR(arange(0.0, 1.0, -1.0), "goes away from end");
  EXPECT_LOOM_ERROR(zeros({2}, kInt64).set_requires_grad(true), "floating-point");
  EXPECT_LOOM_ERROR(Device("gpu:0"), "expected \"cpu\"");
  EXPECT_LOOM_ERROR(Device("cuda:x"), "bad CUDA index");
  EXPECT_EQ(Device("cuda:3").index, 3);
  EXPECT_LOOM_ERROR(zeros({1}).item<float>() + zeros({2}).item<float>(), "needs exactly one");
  EXPECT_LOOM_ERROR(zeros({2}).data_ptr<double>(), "holds float32, not float64");
  EXPECT_LOOM_ERROR(Tensor().shape(), "undefined");
}

TEST(Factories, SizesThatDoNotFitAreErrorsNotWrappedAllocations) {
  // 2^31 x 2^31 float32 is 2^64 bytes: the product used to wrap to 0, and a 64-byte block
  // was then written as if it held the whole tensor (a model file's Linear(2^31, 2^31)).
  const int64_t big = int64_t(1) << 31;
  EXPECT_LOOM_ERROR(empty({big, big}),
                    "empty: a tensor of shape [2147483648, 2147483648] and dtype float32");
  EXPECT_LOOM_ERROR(zeros({big, big}, kFloat64),
                    "more than the 1152921504606846976 any tensor may have");
  EXPECT_LOOM_ERROR(randn({big, big}), "would need");
  float x = 1.0f;
  EXPECT_LOOM_ERROR(from_blob(&x, {big, big}, kFloat32), "from_blob: a tensor of shape");
  EXPECT_LOOM_ERROR(empty({big, big, big}), "too many elements");
}

TEST(Factories, CudaTensorWithoutCudaIsAClearError) {
  if (cuda_is_available()) GTEST_SKIP() << "a CUDA device is present";
  EXPECT_LOOM_ERROR(zeros({2}, kCUDA), "cuda:0");
}

TEST(Views, ShareStorageAndSeeWrites) {
  Tensor base = arange(12, kFloat32).reshape({3, 4});
  Tensor tr = base.t();
  EXPECT_EQ(tr.shape(), (Shape{4, 3}));
  EXPECT_EQ(tr.strides(), (Shape{1, 4}));
  EXPECT_FALSE(tr.is_contiguous());
  EXPECT_TRUE(tr.storage().is_same(base.storage()));
  Tensor row = base.select(0, 1);
  EXPECT_EQ(row.to_vector<float>(), (std::vector<float>{4, 5, 6, 7}));
  row.fill_(-1);
  EXPECT_EQ(base.to_vector<float>()[5], -1.0f);
  EXPECT_EQ(tr.to_vector<float>(), (std::vector<float>{0, -1, 8, 1, -1, 9, 2, -1, 10, 3, -1, 11}));
  Tensor col = base.narrow(1, 2, 1);
  col.copy_(full({3, 1}, 9));
  EXPECT_EQ(base.to_vector<float>(), (std::vector<float>{0, 1, 9, 3, -1, -1, 9, -1, 8, 9, 9, 11}));
}

// add_ adds in place, through a view too, and names what differs when the tensors do not match.
TEST(InPlace, AddAddsInPlaceAndRefusesMismatches) {
  Generator gen(14);
  Tensor base = uniform({2, 3}, -1.0, 1.0, kFloat64, &gen);
  const Tensor before = base.clone();
  const Tensor other = uniform({2, 3}, -1.0, 1.0, kFloat64, &gen);
  const void* storage = base.raw_data();
  base.add_(other);
  EXPECT_EQ(base.raw_data(), storage);
  EXPECT_TENSOR_NEAR(base, before + other, 0.0, 0.0);
  Tensor row = base.select(0, 1);
  row.add_(full({3}, 2.0, kFloat64));
  EXPECT_TENSOR_NEAR(base.select(0, 1), (before + other).select(0, 1) + 2.0, 1e-15, 0.0);
  EXPECT_LOOM_ERROR(base.add_(ones({3}, kFloat64)), "they must match");
  EXPECT_LOOM_ERROR(base.add_(ones({2, 3}, kFloat32)), "float32");
  EXPECT_LOOM_ERROR(base.add_(Tensor()), "undefined");
}

TEST(Views, ReshapeViewsWhenItCanAndCopiesWhenItMust) {
  Tensor base = arange(24, kFloat32).reshape({2, 3, 4});
  Tensor merged = base.reshape({6, -1});
  EXPECT_EQ(merged.shape(), (Shape{6, 4}));
  EXPECT_TRUE(merged.storage().is_same(base.storage()));
  Tensor permuted = base.permute({2, 0, 1});
  EXPECT_EQ(permuted.shape(), (Shape{4, 2, 3}));
  EXPECT_LOOM_ERROR(permuted.view({24}).shape(), "not compatible with the strides");
  EXPECT_EQ(permuted.view({4, 6}).strides(), (Shape{1, 4}));
  // Splitting a permuted dim is still a view.
  Tensor split = permuted.view({2, 2, 2, 3});
  EXPECT_TRUE(split.storage().is_same(base.storage()));
  Tensor copied = permuted.reshape({24});
  EXPECT_FALSE(copied.storage().is_same(base.storage()));
  EXPECT_EQ(copied.to_vector<float>()[1], 4.0f);  // permuted[0][0][1] = base[0][1][0]
  EXPECT_LOOM_ERROR(base.reshape({5, -1}), "invalid for a tensor of shape [2, 3, 4]");
  EXPECT_LOOM_ERROR(base.reshape({-1, -1}), "only one dimension can be -1");
  EXPECT_EQ(base.flatten(1).shape(), (Shape{2, 12}));
  EXPECT_EQ(base.unsqueeze(-1).shape(), (Shape{2, 3, 4, 1}));
  EXPECT_EQ(base.unsqueeze(0).squeeze().shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(ones({1, 3, 1}).squeeze(2).shape(), (Shape{1, 3}));
  EXPECT_LOOM_ERROR(base.transpose(0, 3), "dim 3 is out of range");
  EXPECT_LOOM_ERROR(base.narrow(1, 2, 2), "do not fit dimension 1 of size 3");
  EXPECT_LOOM_ERROR(base.permute({0, 0, 1}), "appears twice");
}

TEST(Copies, DtypeConversionAndContiguous) {
  Tensor f = from_vector<float>({1.7f, -2.2f, 3.5f});
  EXPECT_EQ(f.to(kInt64).to_vector<int64_t>(), (std::vector<int64_t>{1, -2, 3}));
  EXPECT_EQ(f.to(kFloat32).is_same(f), true);
  Tensor t = arange(6, kFloat64).reshape({2, 3}).t();
  Tensor c = t.contiguous();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_EQ(c.to_vector<double>(), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  Tensor dst = zeros({2, 3});
  dst.copy_(from_vector<float>({1, 2, 3}));  // broadcast along dim 0
  EXPECT_EQ(dst.to_vector<float>(), (std::vector<float>{1, 2, 3, 1, 2, 3}));
  EXPECT_LOOM_ERROR(dst.copy_(zeros({4})), "cannot be broadcast");
}

TEST(Random, SeededAndInRange) {
  Generator a(42), b(42), c(43);
  const auto va = rand({1000}, kFloat32, &a).to_vector<float>();
  const auto vb = rand({1000}, kFloat32, &b).to_vector<float>();
  const auto vc = rand({1000}, kFloat32, &c).to_vector<float>();
  EXPECT_EQ(va, vb);
  EXPECT_NE(va, vc);
  double mean = 0;
  for (float v : va) {
    EXPECT_GE(v, 0.0f);
    EXPECT_LT(v, 1.0f);
    mean += v / va.size();
  }
  EXPECT_NEAR(mean, 0.5, 0.05);
  // A second draw from the same generator continues the stream rather than repeating it.
  EXPECT_NE(rand({1000}, kFloat32, &a).to_vector<float>(), va);

  Generator g(7);
  const auto normal = randn({20000}, kFloat64, &g).to_vector<double>();
  double m = 0, m2 = 0;
  for (double v : normal) m += v / normal.size(), m2 += v * v / normal.size();
  EXPECT_NEAR(m, 0.0, 0.03);
  EXPECT_NEAR(m2, 1.0, 0.05);

  const auto ints = randint(-3, 4, {5000}, kInt64, &g).to_vector<int64_t>();
  std::vector<int> counts(7, 0);
  for (int64_t v : ints) {
    ASSERT_GE(v, -3);
    ASSERT_LT(v, 4);
    ++counts[v + 3];
  }
  for (int count : counts) EXPECT_GT(count, 550);  // ~714 each
  manual_seed(5);
  const auto first = rand({10}).to_vector<float>();
  manual_seed(5);
  EXPECT_EQ(rand({10}).to_vector<float>(), first);
}

TEST(Printing, LooksLikePyTorch) {
  EXPECT_EQ(from_vector<float>({1, 2.5f, -3}).str(), "tensor([ 1.0000,  2.5000, -3.0000])");
  EXPECT_EQ(arange(4, kInt64).reshape({2, 2}).str(), "tensor([[0, 1],\n        [2, 3]])");
  EXPECT_EQ(ones({2}, kFloat64).str(), "tensor([1., 1.], dtype=float64)");
  EXPECT_EQ(scalar_tensor(3).str(), "tensor(3.)");
  EXPECT_EQ(zeros({0, 2}).str(), "tensor([], size=[0, 2])");
  Tensor leaf = ones({1}).set_requires_grad(true);
  EXPECT_EQ(leaf.str(), "tensor([1.], requires_grad=True)");
  const std::string big = arange(2000, kFloat32).str();
  EXPECT_NE(big.find("..."), std::string::npos);
  EXPECT_NE(big.find("1999."), std::string::npos);
}

TEST(Allocator, BinsBoundWasteAndAreMonotone) {
  EXPECT_EQ(cuda::bin_size(1), 512u);
  EXPECT_EQ(cuda::bin_size(512), 512u);
  EXPECT_EQ(cuda::bin_size(513), 1024u);
  size_t previous = 0;
  for (size_t n = 1; n < (size_t{1} << 32); n = n * 3 / 2 + 7) {
    const size_t b = cuda::bin_size(n);
    EXPECT_GE(b, n);
    EXPECT_LE(b, n + std::max<size_t>(512, n / 8)) << n;
    EXPECT_GE(b, previous);
    previous = b;
  }
}

}  // namespace
}  // namespace loom
