// The NCCL backend's guarantees that one GPU can check: a replay's device work is watched with
// the group's deadline (finding F6), a graph that captured a collective keeps its communicator
// alive (F11), and NCCL_COMM_BLOCKING=1 is called out (F21). The multigpu tests check the rest.
#include <chrono>
#include <cstdlib>
#include <memory>
#include <thread>

#include "loom/distributed/nccl_group.h"
#include "loom/tensor/cuda/graph.h"
#include "testing.h"

namespace loom::testing {
namespace {

using namespace std::chrono_literals;

dist::GroupPtr one_rank_group() { return dist::make_nccl_group(dist::nccl_unique_id(), 0, 1, 0); }

TEST(NcclOneRank, WatchedDeviceWorkPastTheDeadlineAbortsTheGroupWithNobodyWaiting) {
  LOOM_REQUIRE_CUDA();
  const dist::GroupPtr g = one_rank_group();
  // Work that takes far longer than the timeout: a replay stuck on a peer that is gone.
  Tensor a = uniform({8192, 8192}, -1.0, 1.0, kFloat32).cuda();
  Tensor b = a;
  for (int i = 0; i < 30; ++i) b = matmul(a, b) * 1e-4;
  g->set_timeout(1ms);
  dist::WorkPtr watched = g->watch_stream("a captured step's replay");
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (!g->is_aborted() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(1ms);
  ASSERT_TRUE(g->is_aborted())
      << "the watchdog did not abort the group at the watched work's deadline";
  EXPECT_NE(g->abort_reason().find(
                "a captured step's replay (after collective #0) passed the group's timeout"),
            std::string::npos)
      << g->abort_reason();
  EXPECT_LOOM_ERROR(watched->wait(), "a captured step's replay");
  EXPECT_LOOM_ERROR(g->watch_stream("a captured step's replay"), "refused: the group was aborted");
  cuda::synchronize(0);
}

TEST(NcclOneRank, WatchedDeviceWorkThatFinishesCompletes) {
  LOOM_REQUIRE_CUDA();
  const dist::GroupPtr g = one_rank_group();
  Tensor t = uniform({1 << 20}, 1.0, 2.0, kFloat32).cuda();
  g->all_reduce(t);
  dist::WorkPtr watched = g->watch_stream("a captured step's replay");
  EXPECT_NO_THROW(watched->wait());
  EXPECT_TRUE(watched->is_completed());
  EXPECT_FALSE(g->is_aborted());
}

TEST(NcclOneRank, AGraphThatCapturedACollectiveKeepsItsCommunicatorAlive) {
  LOOM_REQUIRE_CUDA();
  dist::GroupPtr g = one_rank_group();
  const std::weak_ptr<dist::ProcessGroup> alive = g;
  Tensor t = uniform({1024}, 1.0, 2.0, kFloat32).cuda();
  const std::vector<float> before = t.cpu().to_vector<float>();
  auto graph = std::make_unique<cuda::Graph>(0);
  graph->capture_begin();
  g->all_reduce(t, dist::ReduceOp::Avg)->wait_stream();
  t.copy_(t * 2.0);
  graph->capture_end();
  // NCCL finalises a communicator only once every graph that captured it is gone: the group must
  // not close (waiting for its timeout, then aborting) while the graph lives.
  g.reset();
  ASSERT_FALSE(alive.expired());
  graph->replay();
  graph->replay();
  const std::vector<float> after = t.cpu().to_vector<float>();
  for (size_t i = 0; i < before.size(); ++i) ASSERT_EQ(after[i], before[i] * 4.0f) << i;
  const auto start = std::chrono::steady_clock::now();
  graph.reset();
  EXPECT_TRUE(alive.expired());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s)
      << "closing the group waited for its timeout";
}

TEST(NcclOneRank, ACaptureStartedWhileAnEagerCollectiveRunsCapturesNotThrows) {
  // DDP's eager warm-up steps leave their bucket all-reduces in flight (nothing waits for them
  // on the host); the capture that follows starts a collective, and the group's list of works
  // in flight must not ask the unfinished one's event from inside the capture.
  LOOM_REQUIRE_CUDA();
  const dist::GroupPtr g = one_rank_group();
  Tensor a = uniform({4096, 4096}, -1.0, 1.0, kFloat32).cuda();
  Tensor b = a;
  for (int i = 0; i < 20; ++i) b = matmul(a, b) * 1e-3;
  Tensor t = uniform({1024}, 1.0, 2.0, kFloat32).cuda();
  dist::WorkPtr eager = g->all_reduce(t);  // behind the products: still in flight
  cuda::Graph graph(0);
  graph.capture_begin();
  EXPECT_NO_THROW(g->all_reduce(t)->wait_stream());
  graph.capture_end();
  graph.replay();
  EXPECT_NO_THROW(eager->wait());
  cuda::synchronize(0);
}

TEST(NcclOneRank, NcclCommBlockingIsCalledOut) {
  LOOM_REQUIRE_CUDA();
  ::setenv("NCCL_COMM_BLOCKING", "1", 1);
  ::testing::internal::CaptureStderr();
  const dist::GroupPtr g = one_rank_group();
  const std::string err = ::testing::internal::GetCapturedStderr();
  ::unsetenv("NCCL_COMM_BLOCKING");
  EXPECT_NE(err.find("NCCL_COMM_BLOCKING=1 makes NCCL's calls blocking"), std::string::npos) << err;
}

}  // namespace
}  // namespace loom::testing
