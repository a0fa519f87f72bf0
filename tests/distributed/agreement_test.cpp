// dist::all_equal: whether every rank holds the same 64-bit number (how the ranks of a captured
// DDP step agree to capture, replay or run eagerly together: finding F5).
#include "loom/distributed/agreement.h"

#include <cstdint>
#include <vector>

#include "testing.h"

namespace loom::dist {
namespace {

// all_equal over `values.size()` thread ranks, rank r holding values[r]; every rank's answer.
std::vector<bool> answers(const std::vector<uint64_t>& values) {
  std::vector<bool> got(values.size());
  std::vector<char> out(values.size());
  spawn(static_cast<int>(values.size()), kCPU, [&](ProcessGroup& g) {
    out[static_cast<size_t>(g.rank())] = all_equal(g, values[static_cast<size_t>(g.rank())]) ? 1 : 0;
  });
  for (size_t r = 0; r < values.size(); ++r) got[r] = out[r] != 0;
  return got;
}

TEST(AllEqual, EveryRankAnswersTheSame) {
  const uint64_t v = 0x9e3779b97f4a7c15ull;
  EXPECT_EQ(answers({v, v, v, v}), std::vector<bool>(4, true));
  EXPECT_EQ(answers({v, v, v ^ 1, v}), std::vector<bool>(4, false));             // low half differs
  EXPECT_EQ(answers({v, v ^ (1ull << 40), v}), std::vector<bool>(3, false));     // high half
  EXPECT_EQ(answers({v ^ (1ull << 63), v}), std::vector<bool>(2, false));        // the top bit
  EXPECT_EQ(answers({0, ~0ull}), std::vector<bool>(2, false));                   // the extremes
  EXPECT_EQ(answers({~0ull, ~0ull, ~0ull}), std::vector<bool>(3, true));
}

TEST(AllEqual, AWorldOfOneAgreesWithoutACollective) {
  const GroupPtr g = make_threads_groups(1, kCPU)[0];
  EXPECT_TRUE(all_equal(*g, 42));
  EXPECT_EQ(g->next_sequence_number(), 0u);
}

TEST(AllEqual, ItIsACollectiveInTheGroupsOrder) {
  // Two agreements then an all_reduce: the ranks' sequences stay in step.
  spawn(3, kCPU, [](ProcessGroup& g) {
    EXPECT_TRUE(all_equal(g, 7));
    EXPECT_FALSE(all_equal(g, static_cast<uint64_t>(g.rank())));
    Tensor t = full({4}, static_cast<double>(g.rank() + 1), TensorOptions(kFloat32));
    g.all_reduce(t)->wait();
    EXPECT_EQ(t.to_vector<float>(), std::vector<float>(4, 6.0f));
    EXPECT_EQ(g.next_sequence_number(), 3u);
  });
}

}  // namespace
}  // namespace loom::dist
