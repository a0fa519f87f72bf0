// cuda::Graph: a capture records instead of running and each replay recomputes from the
// inputs' current values; replay constants reach the kernels; a refused call inside a capture
// is a loom::Error that leaves the thread's stream and allocator as they were.
#include <loom/loom.h>

#include "loom/tensor/cuda/graph.h"
#include "testing.h"

namespace loom {
namespace {

TEST(CudaGraph, CaptureRecordsAndReplayRecomputes) {
  LOOM_REQUIRE_CUDA();
  Generator gen(11);
  Tensor x = uniform({1000}, 1.0, 2.0, kFloat32, &gen).cuda();
  const cuda::StreamHandle before = cuda::current_stream(0);
  cuda::Graph graph(0);
  graph.capture_begin();
  EXPECT_TRUE(cuda::capturing(0));
  EXPECT_NE(cuda::current_stream(0), before);
  const Tensor y = x * 3.0 + 1.0;  // recorded, not run
  graph.capture_end();
  EXPECT_FALSE(cuda::capturing(0));
  EXPECT_EQ(cuda::current_stream(0), before);
  EXPECT_GE(graph.num_nodes(), 1u);
  for (int round = 0; round < 3; ++round) {
    const Tensor host = uniform({1000}, -5.0, 5.0, kFloat32, &gen);
    x.copy_(host.cuda());
    graph.replay();
    EXPECT_TENSOR_NEAR(y.cpu(), host * 3.0 + 1.0, 0.0, 0.0);
  }
}

TEST(CudaGraph, RefusedCallsAreErrorsAndTheCaptureIsAbandoned) {
  LOOM_REQUIRE_CUDA();
  const cuda::StreamHandle before = cuda::current_stream(0);
  Tensor x = ones({8}, kCUDA);
  for (int what = 0; what < 3; ++what) {
    cuda::Graph graph(0);
    graph.capture_begin();
    try {
      if (what == 0) (void)sum(x * 2).item<float>();
      if (what == 1) (void)rand({8}, kCUDA);
      if (what == 2) cuda::synchronize(0);
      ADD_FAILURE() << "call " << what << " was captured";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("cannot be captured into a CUDA graph"),
                std::string::npos)
          << e.what();
      graph.capture_abort();
    }
    EXPECT_FALSE(cuda::capturing(0));
    EXPECT_FALSE(graph.captured());
    EXPECT_EQ(cuda::current_stream(0), before);
    // Eager work runs again, from the shared cache.
    EXPECT_EQ(sum(x * 2).item<float>(), 16.0f);
  }
}

TEST(CudaGraph, ErrorsInsideTheCaptureEndItCleanly) {
  LOOM_REQUIRE_CUDA();
  cuda::Graph graph(0);
  graph.capture_begin();
  EXPECT_LOOM_ERROR(graph.capture_begin(), "already capturing");
  graph.capture_abort();
  EXPECT_LOOM_ERROR(graph.replay(), "nothing has been captured");
  EXPECT_LOOM_ERROR(graph.refresh([] {}), "nothing has been captured");
  // Captures again after the abort.
  Tensor x = full({4}, 2.0, kCUDA);
  graph.capture_begin();
  const Tensor y = x * x;
  graph.capture_end();
  graph.replay();
  EXPECT_TENSOR_NEAR(y.cpu(), full({4}, 4.0), 0.0, 0.0);
}

// An optimizer step inside a graph reads its learning rate and bias corrections from replay
// constants: after a refresh the replay applies the new ones.
TEST(CudaGraph, OptimizerStepsReadTheirConstantsAtEachReplay) {
  LOOM_REQUIRE_CUDA();
  Generator gen(12);
  const Tensor start = uniform({300}, -1.0, 1.0, kFloat32, &gen);
  const Tensor grad = uniform({300}, -1.0, 1.0, kFloat32, &gen);
  Tensor eager_p = start.cuda().requires_grad_(), graph_p = start.cuda().requires_grad_();
  optim::Adam eager({eager_p}, optim::GroupOptions().with_lr(0.1)),
      graphed({graph_p}, optim::GroupOptions().with_lr(0.1));
  eager_p.set_grad(grad.cuda());
  graph_p.set_grad(grad.cuda());
  eager.step();
  graphed.step();  // the state exists before the capture
  cuda::Graph graph(0);
  graph.capture_begin();
  graphed.step();
  graph.capture_end();
  graph.replay();
  eager.step();
  for (int i = 0; i < 4; ++i) {
    if (i == 2) {
      eager.set_lr(0.01);
      graphed.set_lr(0.01);
    }
    graph.refresh([&] { graphed.step(); });
    graph.replay();
    eager.step();
    EXPECT_TENSOR_NEAR(graph_p.detach().cpu(), eager_p.detach().cpu(), 0.0, 0.0);
  }
  EXPECT_EQ(graphed.step_count(0), eager.step_count(0));
  EXPECT_LOOM_ERROR(graph.refresh([] {}), "replay constants");
}

}  // namespace
}  // namespace loom
