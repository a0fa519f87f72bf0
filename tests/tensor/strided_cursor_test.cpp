// StridedCursor and coalesce against StridedIndexer's division-based indexing, and the CPU
// copy / fill / accumulate loops built on them on transposed, permuted, offset and broadcast
// tensors large enough to be split over threads mid-row.
#include "loom/tensor/strided_cursor.h"

#include <random>

#include "loom/tensor/primitives.h"
#include "testing.h"

namespace loom {
namespace {

// Values 0.5, 1.5, 2.5, ... in row-major order, so every element is distinct and known.
Tensor ramp(const Shape& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(i) + 0.5f;
  return from_vector(v, shape);
}

// Walks `ix` (after coalescing a copy) from `begin` to `end` run by run, collecting offsets.
std::vector<int64_t> walk(StridedIndexer ix, int64_t begin, int64_t end) {
  coalesce(&ix, 1);
  std::vector<int64_t> offsets;
  StridedCursor cur(ix, begin);
  for (int64_t left = end - begin; left > 0;) {
    const int64_t count = std::min(cur.run(), left);
    for (int64_t j = 0; j < count; ++j) offsets.push_back(cur.offset() + j * cur.stride());
    cur.advance(count);
    left -= count;
  }
  return offsets;
}

TEST(StridedCursor, MatchesIndexerFromAnyStart) {
  const Tensor base = ramp({4, 5, 6, 7});
  const std::vector<Tensor> views = {base, base.permute({2, 0, 3, 1}), base.narrow(2, 1, 4),
                                     base.narrow(0, 1, 2).transpose(1, 3),
                                     ramp({5, 1, 7}).expand({3, 5, 6, 7})};
  std::mt19937_64 rng(7);
  for (const Tensor& v : views) {
    const StridedIndexer ix = make_indexer(v, v.shape(), "test");
    const int64_t n = v.numel();
    for (int trial = 0; trial < 20; ++trial) {
      const int64_t begin = static_cast<int64_t>(rng() % n);
      const int64_t end = begin + static_cast<int64_t>(rng() % (n - begin + 1));
      const std::vector<int64_t> got = walk(ix, begin, end);
      ASSERT_EQ(static_cast<int64_t>(got.size()), end - begin);
      for (int64_t i = begin; i < end; ++i) {
        ASSERT_EQ(got[i - begin], ix(i)) << "shape " << shape_str(v.shape()) << " position " << i;
      }
    }
  }
}

TEST(StridedCursor, CoalesceMergesBroadcastBias) {
  // [N, C, H, W] against a [C, 1, 1] bias: the output is 1-D, the bias [N, C, H*W].
  const Tensor bias = ramp({3, 1, 1});
  StridedIndexer ix[2] = {make_indexer(ramp({2, 3, 4, 5}), {2, 3, 4, 5}, "test"),
                          make_indexer(bias, {2, 3, 4, 5}, "test")};
  coalesce(ix, 2);
  ASSERT_EQ(ix[0].ndim, 3);
  EXPECT_EQ(ix[0].sizes[0], 2);
  EXPECT_EQ(ix[0].sizes[1], 3);
  EXPECT_EQ(ix[0].sizes[2], 20);
  EXPECT_EQ(ix[1].strides[0], 0);
  EXPECT_EQ(ix[1].strides[1], 1);
  EXPECT_EQ(ix[1].strides[2], 0);
  StridedIndexer alone = make_indexer(ramp({2, 3, 4, 5}), {2, 3, 4, 5}, "test");
  coalesce(&alone, 1);
  EXPECT_EQ(alone.ndim, 1);
  EXPECT_EQ(alone.sizes[0], 120);
}

TEST(CpuCopy, TransposedAndPermutedToContiguous) {
  // 301 x 257 floats: more than one thread's chunk, with chunk edges in the middle of rows.
  const Tensor a = ramp({301, 257});
  const std::vector<float> t = a.t().contiguous().to_vector<float>();
  for (int64_t j = 0; j < 257; ++j) {
    for (int64_t i = 0; i < 301; ++i)
      ASSERT_EQ(t[j * 301 + i], static_cast<float>(i * 257 + j) + 0.5f);
  }
  const Tensor b = ramp({6, 40, 9, 50}).narrow(1, 3, 30);
  const std::vector<float> p = b.permute({3, 1, 0, 2}).contiguous().to_vector<float>();
  int64_t k = 0;
  for (int64_t w = 0; w < 50; ++w)
    for (int64_t c = 0; c < 30; ++c)
      for (int64_t n = 0; n < 6; ++n)
        for (int64_t h = 0; h < 9; ++h, ++k) {
          ASSERT_EQ(p[k], static_cast<float>(((n * 40 + c + 3) * 9 + h) * 50 + w) + 0.5f);
        }
}

TEST(CpuCopy, BroadcastIntoStridedDestinationWithConversion) {
  // float64 row [1, 300] broadcast over 200 rows into a transposed float32 view.
  const Tensor row = ramp({1, 300}).to(kFloat64);
  Tensor dst = zeros({300, 200});
  dst.t().copy_(row);
  const std::vector<float> d = dst.to_vector<float>();
  for (int64_t j = 0; j < 300; ++j)
    for (int64_t i = 0; i < 200; ++i) ASSERT_EQ(d[j * 200 + i], static_cast<float>(j) + 0.5f);
}

TEST(CpuFillAndAccumulate, StridedViewsTouchOnlyTheirElements) {
  Tensor x = zeros({260, 300});
  x.narrow(1, 10, 200).fill_(2.0);
  detail::accumulate(x.t(), ramp({300, 260}));  // x[i][j] += ramp[j][i]
  const std::vector<float> v = x.to_vector<float>();
  for (int64_t i = 0; i < 260; ++i) {
    for (int64_t j = 0; j < 300; ++j) {
      const float filled = (j >= 10 && j < 210) ? 2.0f : 0.0f;
      ASSERT_EQ(v[i * 300 + j], filled + static_cast<float>(j * 260 + i) + 0.5f);
    }
  }
}

}  // namespace
}  // namespace loom
