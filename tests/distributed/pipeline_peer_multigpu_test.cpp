// PipelineParallel and copies between GPUs: stages on cuda:0 and cuda:1 (and cuda:0..3) train as
// the whole model on one device, also with the caller on streams of its own (F16); a copy to
// another GPU is ordered on both devices' streams, so neither freeing its source nor a pending
// write to its destination's block can corrupt it (F7); peer access is on, so a hand-over runs
// at NVLink speed, not through the host (F8).
#include <gtest/gtest.h>

#include <chrono>
#include <iostream>

#if defined(LOOM_TESTS_CUDA_RUNTIME)
#include <cuda_runtime.h>
#endif

#include "nccl_cases.h"
#include "pipeline_stream_cases.h"

namespace loom::testing {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<std::vector<Device>> device_lists() {
  std::vector<std::vector<Device>> lists = {{cuda_device(0), cuda_device(1)}};
  if (cuda_device_count() >= 4)
    lists.push_back({cuda_device(0), cuda_device(1), cuda_device(2), cuda_device(3)});
  return lists;
}

std::string names(const std::vector<Device>& devices) {
  std::string s;
  for (const Device& d : devices) s += (s.empty() ? "" : ", ") + d.str();
  return s;
}

TEST(PipelinePeers, StagesOnSeveralGpusTrainAsTheWholeModelOnOne) {
  LOOM_REQUIRE_GPUS(2);
  DeterministicAlgorithmsGuard deterministic_guard;
  ConvTf32Scope full_float32(false);
  const int64_t batch = 18;
  const int steps = 10;
  const EquivalenceData data = equivalence_data(batch * steps, 36);
  const TrainedRun whole = train_single(data, batch, steps, kCUDA);
  for (const std::vector<Device>& devices : device_lists()) {
    for (dist::PipelineSchedule schedule :
         {dist::PipelineSchedule::GPipe, dist::PipelineSchedule::OneFOneB}) {
      dist::PipelineOptions options;
      options.micro_batches = 4;
      options.schedule = schedule;
      const std::string what = names(devices) + ", " + dist::schedule_name(schedule);
      expect_same_training(train_pipeline_over(data, batch, steps, devices, options, false), whole,
                           1e-5, what);
      // F16 across devices: the caller on a stream of its own on every GPU.
      expect_same_training(train_pipeline_over(data, batch, steps, devices, options, true), whole,
                           1e-5, what + ", on the caller's streams");
    }
  }
}

TEST(PipelinePeers, EvalForwardAcrossGpusEqualsTheWholeModelWhileMemoryIsReused) {
  LOOM_REQUIRE_GPUS(2);
  DeterministicAlgorithmsGuard deterministic_guard;
  ConvTf32Scope full_float32(false);
  auto whole = ddp_model(42);
  whole->to(kCUDA);
  whole->eval();
  dist::PipelineParallel pipe(ddp_model(42), {cuda_device(0), cuda_device(1)});
  pipe.eval();
  NoGradGuard no_grad;
  Generator gen(37);
  for (int i = 0; i < 20; ++i) {
    const Tensor x = randn({4096, 3, 8, 8}, kFloat32, &gen).to(kCUDA);
    const Tensor out = pipe.forward(x);
    // Blocks the forward's activations and hand-overs just gave back, overwritten at once.
    for (int d = 0; d < 2; ++d) {
      for (int k = 0; k < 4; ++k) full({4096, 6, 8, 8}, -1e30, cuda_device(d));
    }
    EXPECT_EQ(out.device(), cuda_device(0));
    EXPECT_TENSOR_NEAR(out, whole->forward(x), 1e-5, 1e-5);
  }
}

// F7: to() copies on the source's stream and the destination's stream waits for it. Freeing the
// source right after and writing new tensors of its size there (its block, reused at once on
// that stream) must not reach the copy; nor may a write still queued on the destination's
// stream to the block the copy lands in.
TEST(PeerCopies, ACopyToAnotherGpuSurvivesItsSourceBeingFreedAndReused) {
  LOOM_REQUIRE_GPUS(2);
  constexpr int64_t kCount = int64_t(16) << 20;  // 64 MB of float32
  for (const auto& [from, to] : {std::pair<int, int>{0, 1}, std::pair<int, int>{1, 0}}) {
    std::vector<Tensor> copies;
    for (int i = 0; i < 24; ++i) {
      Tensor source = full({kCount}, i + 1.0, cuda_device(from));
      copies.push_back(source.to(cuda_device(to)));
      source = Tensor();
      for (int k = 0; k < 3; ++k) full({kCount}, -1.0 - k, cuda_device(from));
    }
    for (int i = 0; i < 24; ++i) {
      EXPECT_EQ(min(copies[i]).item<float>(), i + 1.0f)
          << "cuda:" << from << " -> cuda:" << to << ", copy " << i;
      EXPECT_EQ(max(copies[i]).item<float>(), i + 1.0f)
          << "cuda:" << from << " -> cuda:" << to << ", copy " << i;
    }
  }
}

TEST(PeerCopies, ACopyToAnotherGpuLandsAfterWhatTheDestinationsStreamStillWritesThere) {
  LOOM_REQUIRE_GPUS(2);
  constexpr int64_t kCount = int64_t(16) << 20;
  Generator gen(38);
  Tensor a = randn({4096, 4096}, kFloat32, &gen).to(cuda_device(1));
  const Tensor b = mul(randn({4096, 4096}, kFloat32, &gen), 1.0 / 64).to(cuda_device(1));
  for (int i = 0; i < 8; ++i) {
    const Tensor source = full({kCount}, i + 1.0, cuda_device(0));
    {
      // cuda:1's stream is busy, then writes a block of the copy's size and gives it back: the
      // copy below gets that block while the write is still queued.
      for (int k = 0; k < 8; ++k) a = matmul(a, b);
      Tensor pending = full({kCount}, -7.0, cuda_device(1));
    }
    const Tensor copy = source.to(cuda_device(1));
    EXPECT_EQ(min(copy).item<float>(), i + 1.0f) << "copy " << i;
    EXPECT_EQ(max(copy).item<float>(), i + 1.0f) << "copy " << i;
  }
}

// F8: with peer access on, a 256 MB to() between GPUs goes over NVLink (hundreds of GB/s on
// H200) or PCIe peer to peer, not staged through host memory (~10-25 GB/s).
TEST(PeerCopies, AHandOverBetweenPeerGpusIsNotStagedThroughTheHost) {
  LOOM_REQUIRE_GPUS(2);
#if defined(LOOM_TESTS_CUDA_RUNTIME)
  int forward = 0, backward = 0;
  ASSERT_EQ(cudaDeviceCanAccessPeer(&forward, 0, 1), cudaSuccess);
  ASSERT_EQ(cudaDeviceCanAccessPeer(&backward, 1, 0), cudaSuccess);
  if (forward == 0 || backward == 0) {
    GTEST_SKIP()
        << "cuda:0 and cuda:1 cannot access each other's memory (no NVLink or PCIe peer to peer): "
           "copies are staged through the host here";
  }
  EXPECT_TRUE(cuda::enable_peer_access(0, 1));
#else
  GTEST_SKIP() << "this build of the test has no CUDA runtime to ask cudaDeviceCanAccessPeer";
#endif
  constexpr int64_t kCount = int64_t(64) << 20;  // 256 MB of float32
  const Tensor source = full({kCount}, 3.0, cuda_device(0));
  Tensor copy;
  for (int warm = 0; warm < 2; ++warm)
    copy = source.to(cuda_device(1));  // peer access, blocks cached
  cuda::synchronize(0);
  cuda::synchronize(1);
  constexpr int kReps = 10;
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < kReps; ++i) copy = source.to(cuda_device(1));
  cuda::synchronize(0);
  cuda::synchronize(1);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const double gb_per_s = kReps * kCount * 4.0 / seconds / 1e9;
  std::cout << "[ bandwidth ] cuda:0 -> cuda:1, 256 MB by to(): " << gb_per_s << " GB/s\n";
  ::testing::Test::RecordProperty("peer_copy_gb_per_s", std::to_string(gb_per_s));
  EXPECT_GT(gb_per_s, 50.0);
  EXPECT_EQ(min(copy).item<float>(), 3.0f);
  EXPECT_EQ(max(copy).item<float>(), 3.0f);
}

}  // namespace
}  // namespace loom::testing
