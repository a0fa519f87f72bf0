// Pooling on CUDA: CPU/CUDA parity of forward and backward for max (overlapping and
// non-overlapping windows), average (both padding counts), adaptive and global average pooling.
#include "cnn_parity.h"

namespace loom {
namespace {

using testing::expect_cuda_parity;

TEST(Pool2dCuda, MatchesTheCpu) {
  LOOM_REQUIRE_CUDA();
  struct Case {
    Shape x;
    Size2 k, s, p;
  };
  const std::vector<Case> cases = {
      {{2, 3, 8, 8}, 2, 2, 0},        {{1, 2, 7, 9}, {3, 2}, {2, 1}, {1, 1}},
      {{2, 4, 9, 7}, 3, 1, 1},        {{3, 32, 21, 21}, 2, 2, 0},
      {{1, 2, 9, 7}, {2, 3}, {3, 2}, {1, 0}},
      // Windows that cannot overlap (max pooling's scatter backward): exact cover, gaps
      // between windows, padding, and uncovered trailing rows/columns.
      {{4, 8, 62, 62}, 2, 2, 0},      {{2, 3, 10, 11}, 2, 3, 1},
      {{2, 4, 9, 9}, 3, 3, 1},        {{1, 2, 9, 7}, {3, 2}, {3, 2}, 0},
  };
  uint64_t seed = 10;
  for (const Case& c : cases) {
    Generator gen(seed++);
    const Tensor x = randn(c.x, kFloat32, &gen);
    const Size2 k = c.k, s = c.s, p = c.p;
    SCOPED_TRACE("x " + shape_str(c.x));
    expect_cuda_parity([=](const std::vector<Tensor>& in) { return max_pool2d(in[0], k, s, p); }, {x});
    expect_cuda_parity([=](const std::vector<Tensor>& in) { return avg_pool2d(in[0], k, s, p); }, {x});
    expect_cuda_parity([=](const std::vector<Tensor>& in) { return avg_pool2d(in[0], k, s, p, false); }, {x});
  }
  Generator gen(99);
  const Tensor x = randn({2, 5, 11, 9}, kFloat32, &gen);
  expect_cuda_parity([](const std::vector<Tensor>& in) { return adaptive_avg_pool2d(in[0], 4, 3); }, {x});
  expect_cuda_parity([](const std::vector<Tensor>& in) { return global_avg_pool2d(in[0]); }, {x});
}

}  // namespace
}  // namespace loom
