// What the NCCL multigpu tests and their worker program (worker/nccl_worker.cpp) share: the skip
// below N GPUs, the world sizes that fit, and one rank's DDP training over NCCL, eager or
// captured (train::CapturedStep with its group), reporting what the tests judge: nothing of that
// asserts (the worker runs it outside GoogleTest and reports by its exit code). Also the F18
// case, which the CPU tests run over the threads backend too.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "ddp_cases.h"

// Skips the current test, saying why, below `n` GPUs ("needs 2 GPUs, this machine has 1").
#ifndef LOOM_REQUIRE_GPUS
#define LOOM_REQUIRE_GPUS(n)                                        \
  do {                                                              \
    LOOM_REQUIRE_CUDA();                                            \
    if (::loom::cuda_device_count() < (n)) {                        \
      GTEST_SKIP() << "needs " << (n) << " GPUs, this machine has " \
                   << ::loom::cuda_device_count();                  \
    }                                                               \
  } while (0)
#endif

namespace loom::testing {

// 2, 4, 8 up to the GPUs present, and the count itself when it is not a power of two.
inline std::vector<int> nccl_world_sizes() {
  const int gpus = cuda_device_count();
  std::vector<int> sizes;
  for (int n = 2; n <= gpus; n *= 2) sizes.push_back(n);
  if (gpus > 2 && (gpus & (gpus - 1)) != 0) sizes.push_back(gpus);
  return sizes;
}

inline const train::LossFn& bce_loss() {
  static const train::LossFn loss = [](const Tensor& outputs, const Tensor& labels) {
    return nn::binary_cross_entropy_with_logits(outputs, labels);
  };
  return loss;
}

// ddp_model's ~10 KB of gradients in six or more buckets, so that most of them are all-reduced
// from the gradient hooks while backward still runs.
inline dist::DdpOptions several_buckets() {
  dist::DdpOptions options;
  options.single_bucket_bytes = 0;
  options.first_bucket_bytes = 100;
  options.bucket_bytes = 2000;
  return options;
}

enum class StepMode { Eager, Captured };

struct NcclTraining {
  StepMode mode = StepMode::Eager;
  int64_t per_rank = 4;  // samples of each rank's batch
  int steps = 10;
  // At this step `odd_rank` trains on one sample fewer than the others (-1: never): the ranks'
  // batch shapes differ at one step, as behind a loader that skipped a bad sample.
  int odd_step = -1;
  int odd_rank = 1;
  dist::DdpOptions ddp = several_buckets();
};

struct NcclRun : TrainedRun {
  int buckets = 0;
  int launched_during_backward = 0;      // in the first (eager) step
  int64_t replays = 0, eager_steps = 0;  // CapturedStep's counts (captured mode)
  int differing_steps =
      0;  // steps after which some rank's parameters were not rank 0's, bit for bit
};

// The seed of the data the process tests and their worker both draw (equivalence_data).
inline constexpr uint64_t kProcessDataSeed = 41;

// This rank's part of an N-rank DDP run over `g` on ddp_cases.h's model and data: rank r takes
// samples r, r+N, ... of each global batch of N * per_rank, starts from its own initialisation
// (DDP must replace it with rank 0's), trains with Adam at 1e-3, all-reduces each step's loss
// (an eager collective between the captured mode's replays) and compares every rank's
// parameters with rank 0's after every step (an all_gather).
inline NcclRun train_nccl_rank(dist::ProcessGroup& g, const EquivalenceData& data,
                               const NcclTraining& t) {
  const int rank = g.rank(), world = g.size();
  const int64_t global = t.per_rank * world;
  auto model = ddp_model(42 + 1000 * static_cast<uint64_t>(rank));
  model->to(g.device());
  auto ddp = std::make_shared<dist::DistributedDataParallel>(model, g.shared_from_this(), t.ddp);
  optim::Adam adam(ddp->parameters(), optim::GroupOptions().with_lr(1e-3));
  std::unique_ptr<train::CapturedStep> captured;
  if (t.mode == StepMode::Captured) {
    train::CapturedStep::Options options;
    options.group = g.shared_from_this();
    captured = std::make_unique<train::CapturedStep>(*ddp, bce_loss(), adam, options);
  }
  NcclRun run;
  run.buckets = static_cast<int>(ddp->buckets().size());
  for (int s = 0; s < t.steps; ++s) {
    Tensor x = rank_rows(data.images, s, global, rank, world);
    Tensor y = rank_rows(data.labels, s, global, rank, world);
    if (s == t.odd_step && rank == t.odd_rank) {
      x = x.narrow(0, 0, t.per_rank - 1).contiguous();
      y = y.narrow(0, 0, t.per_rank - 1).contiguous();
    }
    x = x.to(g.device());
    y = y.to(g.device());
    Tensor loss;
    if (captured) {
      loss = captured->run(x, y).loss;
    } else {
      adam.zero_grad();
      loss = bce_loss()(ddp->forward(x), y);
      loss.backward();
      adam.step();
    }
    if (s == 0) {
      run.gradients = flat_gradients(*model);
      run.launched_during_backward = ddp->last_step().launched_during_backward;
    }
    // A copy: a replay's loss is the graph's, which the next replay overwrites.
    Tensor mean = loss.detach().reshape({1}).contiguous().clone();
    g.all_reduce(mean, dist::ReduceOp::Avg)->wait();
    run.losses.push_back(mean.item<float>());
    const std::vector<float> mine = flat_parameters(*model);
    Tensor all = empty({world * static_cast<int64_t>(mine.size())},
                       TensorOptions(kFloat32).device(g.device()));
    g.all_gather(all, from_vector(mine).to(g.device()))->wait();
    const std::vector<float> every = all.cpu().to_vector<float>();
    bool same = true;
    for (int r = 0; r < world; ++r) {
      same = same && std::equal(mine.begin(), mine.end(),
                                every.begin() + r * static_cast<int64_t>(mine.size()));
    }
    run.differing_steps += same ? 0 : 1;
  }
  run.parameters = flat_parameters(*model);
  if (captured) {
    run.replays = captured->replays();
    run.eager_steps = captured->eager_steps();
  }
  return run;
}

// A rank whose backward throws after some of its buckets went out (a gradient hook throws; the
// program catches it and goes on, as one that skips a bad step would): its next forward must
// abort the group, since its collectives no longer pair with the other ranks' (finding F18).
// Over `world` ranks of spawn on `device` (the threads backend on the CPU, NCCL on GPUs).
// Returns how many buckets rank 1 had started when its hook threw (> 0 for the case to apply).
inline int expect_a_forward_after_a_throw_mid_backward_aborts(int world, Device device) {
  dist::SpawnOptions options;
  options.group.timeout = std::chrono::seconds(60);
  const EquivalenceData data = equivalence_data(8 * 3, 72);
  std::atomic<int> rank1_buckets_before_throw{-1};
  EXPECT_LOOM_ERROR(
      dist::spawn(
          world, device,
          [&](dist::ProcessGroup& g) {
            auto model = ddp_model(42);
            model->to(g.device());
            dist::DistributedDataParallel ddp(model, g.shared_from_this(), several_buckets());
            optim::Adam adam(ddp.parameters(), optim::GroupOptions().with_lr(1e-3));
            const uint64_t first = g.next_sequence_number();
            if (g.rank() == 1) {
              // Layer 3 (the second convolution) is reached after the Linear layers' gradients (the
              // first buckets, 100 bytes and more) have gone out, before the first layer's.
              model->named_parameters().at("3.weight").register_post_accumulate_hook([&](Tensor&) {
                rank1_buckets_before_throw = static_cast<int>(g.next_sequence_number() - first);
                throw Error("a gradient hook of rank 1 throws");
              });
            }
            for (int s = 0; s < 3; ++s) {
              const Tensor x = rank_rows(data.images, s, 8, g.rank(), world).to(g.device());
              const Tensor y = rank_rows(data.labels, s, 8, g.rank(), world).to(g.device());
              adam.zero_grad();
              Tensor loss = bce_loss()(ddp.forward(x), y);
              try {
                loss.backward();
              } catch (const Error&) {
                if (g.rank() != 1) throw;
                continue;  // the next forward must refuse
              }
              adam.step();
              Tensor mean = loss.detach().reshape({1}).contiguous().clone();
              g.all_reduce(mean, dist::ReduceOp::Avg)->wait();
            }
          },
          options),
      // Named by whichever rank spawn saw fail first: rank 1 itself, or rank 0, whose pending
      // collective the abort failed.
      "DistributedDataParallel: rank 1 of 2 (" +
          std::string(device.is_cuda() ? "nccl" : "threads") +
          "): the last backward threw after some of its buckets");
  return rank1_buckets_before_throw.load();
}

}  // namespace loom::testing
