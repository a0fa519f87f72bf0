// dist::all_equal: whether every rank holds the same 64-bit number (how the ranks of a captured
// DDP step agree to capture, replay or run eagerly together: finding F5). Spawn's thread ranks
// compare through shared memory; groups made otherwise through a collective: both are checked.
#include "loom/distributed/agreement.h"

#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "testing.h"

namespace loom::dist {
namespace {

using namespace std::chrono_literals;

enum class Path { SharedMemory, Collective };

// Runs fn on one thread per group of `size` ranks: spawn's (shared memory), or groups made
// apart and run on threads of their own (no shared memory: the collective path).
void run_ranks(int size, Path path, const std::function<void(ProcessGroup&)>& fn) {
  if (path == Path::SharedMemory) {
    spawn(size, kCPU, fn);
    return;
  }
  const std::vector<GroupPtr> groups = make_threads_groups(size, kCPU);
  std::vector<std::thread> threads;
  for (const GroupPtr& g : groups) {
    EXPECT_EQ(g->shared_memory(), nullptr);
    threads.emplace_back([&fn, g] { fn(*g); });
  }
  for (std::thread& t : threads) t.join();
}

// all_equal over `values.size()` ranks, rank r holding values[r]; every rank's answer.
std::vector<bool> answers(const std::vector<uint64_t>& values, Path path) {
  std::vector<char> out(values.size());
  run_ranks(static_cast<int>(values.size()), path, [&](ProcessGroup& g) {
    out[static_cast<size_t>(g.rank())] =
        all_equal(g, values[static_cast<size_t>(g.rank())]) ? 1 : 0;
  });
  return std::vector<bool>(out.begin(), out.end());
}

class AllEqual : public ::testing::TestWithParam<Path> {};

TEST_P(AllEqual, EveryRankAnswersTheSame) {
  const uint64_t v = 0x9e3779b97f4a7c15ull;
  EXPECT_EQ(answers({v, v, v, v}, GetParam()), std::vector<bool>(4, true));
  EXPECT_EQ(answers({v, v, v ^ 1, v}, GetParam()), std::vector<bool>(4, false));  // low half
  EXPECT_EQ(answers({v, v ^ (1ull << 40), v}, GetParam()),
            std::vector<bool>(3, false));  // high half
  EXPECT_EQ(answers({v ^ (1ull << 63), v}, GetParam()),
            std::vector<bool>(2, false));                                   // the top bit
  EXPECT_EQ(answers({0, ~0ull}, GetParam()), std::vector<bool>(2, false));  // the extremes
  EXPECT_EQ(answers({~0ull, ~0ull, ~0ull}, GetParam()), std::vector<bool>(3, true));
}

TEST_P(AllEqual, RoundAfterRoundInTheGroupsOrder) {
  // Many rounds back to back, with another collective between: every rank's answers and the
  // group's sequence stay in step.
  run_ranks(3, GetParam(), [](ProcessGroup& g) {
    for (uint64_t round = 0; round < 200; ++round) {
      ASSERT_TRUE(all_equal(g, round * 7919));
      ASSERT_EQ(all_equal(g, round == 100 ? static_cast<uint64_t>(g.rank()) : round), round != 100);
    }
    Tensor t = full({4}, static_cast<double>(g.rank() + 1), TensorOptions(kFloat32));
    g.all_reduce(t)->wait();
    EXPECT_EQ(t.to_vector<float>(), std::vector<float>(4, 6.0f));
  });
}

INSTANTIATE_TEST_SUITE_P(Paths, AllEqual, ::testing::Values(Path::SharedMemory, Path::Collective),
                         [](const auto& info) {
                           return info.param == Path::SharedMemory ? "SharedMemory" : "Collective";
                         });

TEST(AllEqualAlone, AWorldOfOneAgreesWithoutACollective) {
  const GroupPtr g = make_threads_groups(1, kCPU)[0];
  EXPECT_TRUE(all_equal(*g, 42));
  EXPECT_EQ(g->next_sequence_number(), 0u);
}

TEST(AllEqualAlone, SpawnsRanksAgreeWithoutACollective) {
  spawn(2, kCPU, [](ProcessGroup& g) {
    EXPECT_TRUE(all_equal(g, 5));
    EXPECT_EQ(g.next_sequence_number(), 0u);
  });
}

TEST(AllEqualAlone, ARankThatFailsEndsTheOthersWaitWithAnError) {
  const auto start = std::chrono::steady_clock::now();
  SpawnOptions options;
  options.group.timeout = testing::scaled(60s, 110s);  // past the bound below, inside CTest's 120 s
  EXPECT_LOOM_ERROR(spawn(
                        3, kCPU,
                        [](ProcessGroup& g) {
                          if (g.rank() == 2) throw Error("rank 2 gives up");
                          all_equal(g, 1);  // rank 2 never arrives
                        },
                        options),
                    "rank 2 failed: rank 2 gives up");
  EXPECT_LT(std::chrono::steady_clock::now() - start, testing::scaled(20s, 80s));
}

TEST(AllEqualAlone, ARankThatNeverArrivesIsATimeout) {
  SpawnOptions options;
  options.group.timeout = 200ms;
  std::string error;
  EXPECT_LOOM_ERROR(spawn(
                        2, kCPU,
                        [&](ProcessGroup& g) {
                          if (g.rank() == 1) return;
                          try {
                            all_equal(g, 1);
                          } catch (const Error& e) {
                            error = e.what();
                            throw;
                          }
                        },
                        options),
                    "rank 0 failed");
  EXPECT_NE(error.find("agreeing with the other ranks timed out"), std::string::npos) << error;
}

}  // namespace
}  // namespace loom::dist
