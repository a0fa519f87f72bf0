// train::CapturedStep on the GPU: replayed steps give bit for bit the eager steps' parameters,
// optimizer state and batch-norm statistics (with a learning-rate change and a second shape in
// between), steps that cannot be captured are errors that leave the model as it was, and the
// graph's memory is its own; over several ranks, every rank captures and replays alike.
#include <loom/loom.h>

#include <optional>

#include "synthetic.h"
#include "testing.h"

namespace loom {
namespace {

using train::CapturedStep;

// Conv + batch norm + dense on 8x8 RGB: every kind of state a captured step must carry along.
std::shared_ptr<nn::Sequential> small_model(uint64_t seed) {
  Generator gen(seed);
  auto model = std::make_shared<nn::Sequential>();
  model->add(std::make_shared<nn::Conv2d>(3, 8, 3, Conv2dOptions().padding(1), true,
                                          nn::Init::PyTorch, &gen));
  model->add(std::make_shared<nn::BatchNorm2d>(8));
  model->add(std::make_shared<nn::ReLU>());
  model->add(std::make_shared<nn::MaxPool2d>(2));
  model->add(std::make_shared<nn::Flatten>());
  model->add(std::make_shared<nn::Linear>(8 * 4 * 4, 1, true, nn::Init::PyTorch, &gen));
  model->to(kCUDA);
  return model;
}

struct Batch {
  Tensor images, labels;
};

// Random batches (never zeros) of the given sizes, labels int64 0/1, on the GPU.
std::vector<Batch> batches(const std::vector<int64_t>& sizes, uint64_t seed) {
  Generator gen(seed);
  std::vector<Batch> out;
  for (int64_t n : sizes) {
    out.push_back({uniform({n, 3, 8, 8}, -1.0, 1.0, kFloat32, &gen).cuda(),
                   randint(0, 2, {n}, kInt64, &gen).cuda()});
  }
  return out;
}

// A loader's options for shuffled batches of `batch` on the GPU.
data::DataLoaderOptions shuffled_cuda_batches(int64_t batch, uint64_t seed) {
  data::DataLoaderOptions o;
  o.batch_size = batch;
  o.shuffle = true;
  o.seed = seed;
  o.device = kCUDA;
  return o;
}

void expect_same_state(nn::Module& a, nn::Module& b) {
  const auto sa = a.state_dict(), sb = b.state_dict();
  ASSERT_EQ(sa.size(), sb.size());
  for (const auto& [name, tensor] : sa) {
    SCOPED_TRACE(name);
    EXPECT_TENSOR_NEAR(tensor.cpu().to(kFloat64), sb.at(name).cpu().to(kFloat64), 0.0, 0.0);
  }
}

TEST(CapturedStep, ReplaysGiveTheEagerStepsBitForBit) {
  LOOM_REQUIRE_CUDA();
  testing::DeterministicAlgorithmsGuard deterministic;
  const train::LossFn loss = train::binary_cross_entropy_loss();
  auto eager_model = small_model(5), graph_model = small_model(5);
  optim::Adam eager_opt(eager_model->parameters(), optim::GroupOptions().with_lr(1e-2));
  optim::Adam graph_opt(graph_model->parameters(), optim::GroupOptions().with_lr(1e-2));
  CapturedStep step(*graph_model, loss, graph_opt);
  // Two shapes (a full and a partial batch), a learning-rate change half-way.
  const std::vector<Batch> data = batches({16, 16, 16, 5, 16, 5, 16, 5, 16, 16, 5, 16}, 31);
  for (size_t i = 0; i < data.size(); ++i) {
    SCOPED_TRACE("step " + std::to_string(i));
    if (i == 6) {
      eager_opt.set_lr(3e-3);
      graph_opt.set_lr(3e-3);
    }
    const Tensor outputs = eager_model->forward(data[i].images);
    const Tensor eager_loss = loss(outputs, data[i].labels);
    eager_opt.zero_grad();
    eager_loss.backward();
    eager_opt.step();
    const CapturedStep::Result r = step.run(data[i].images, data[i].labels);
    EXPECT_EQ(r.loss.item<float>(), eager_loss.item<float>());
    EXPECT_TENSOR_NEAR(r.outputs.cpu(), outputs.detach().cpu(), 0.0, 0.0);
    expect_same_state(*eager_model, *graph_model);
  }
  EXPECT_EQ(step.graphs(), 2u);
  EXPECT_EQ(step.eager_steps(), 2);  // the first step of each shape
  EXPECT_EQ(step.replays(), static_cast<int64_t>(data.size()) - 2);
  // The optimizer's host-side state follows the replays: counts and buffers as the eager one's.
  const optim::OptimizerState se = eager_opt.state_dict(), sg = graph_opt.state_dict();
  EXPECT_EQ(se.scalars, sg.scalars);
  for (const auto& [name, tensor] : se.tensors) {
    EXPECT_TENSOR_NEAR(sg.tensors.at(name).cpu(), tensor.cpu(), 0.0, 0.0);
  }
  // After a replay the parameters' gradients are the graph's, equal to the eager ones.
  const auto pe = eager_model->parameters(), pg = graph_model->parameters();
  step.run(data[0].images, data[0].labels);
  {
    const Tensor outputs = eager_model->forward(data[0].images);
    const Tensor eager_loss = loss(outputs, data[0].labels);
    eager_opt.zero_grad();
    eager_loss.backward();
    eager_opt.step();
  }
  for (size_t i = 0; i < pe.size(); ++i)
    EXPECT_TENSOR_NEAR(pg[i].grad().cpu(), pe[i].grad().cpu(), 0.0, 0.0);
}

TEST(CapturedStep, SgdWithMomentumReplaysToo) {
  LOOM_REQUIRE_CUDA();
  testing::DeterministicAlgorithmsGuard deterministic;
  const train::LossFn loss = train::binary_cross_entropy_loss();
  auto eager_model = small_model(8), graph_model = small_model(8);
  const auto options = optim::GroupOptions().with_lr(0.05).with_momentum(0.9).with_nesterov();
  optim::SGD eager_opt(eager_model->parameters(), options),
      graph_opt(graph_model->parameters(), options);
  CapturedStep step(*graph_model, loss, graph_opt);
  for (const Batch& b : batches({12, 12, 12, 12, 12}, 41)) {
    const Tensor eager_loss = loss(eager_model->forward(b.images), b.labels);
    eager_opt.zero_grad();
    eager_loss.backward();
    eager_opt.step();
    step.run(b.images, b.labels);
  }
  EXPECT_EQ(step.replays(), 4);
  expect_same_state(*eager_model, *graph_model);
}

// A model whose step draws random numbers (dropout) cannot be replayed: every replay would
// repeat the capture's mask. The capture fails with an error and nothing of the step runs.
TEST(CapturedStep, RandomDrawsAndHostReadsAreErrorsNotWrongResults) {
  LOOM_REQUIRE_CUDA();
  auto model = small_model(3);
  model->add(std::make_shared<nn::Dropout>(0.5));
  optim::Adam opt(model->parameters());
  CapturedStep step(*model, train::binary_cross_entropy_loss(), opt);
  const std::vector<Batch> data = batches({4, 4}, 51);
  step.run(data[0].images, data[0].labels);  // eager
  const auto before = model->state_dict();
  std::map<std::string, Tensor> copies;
  for (const auto& [name, t] : before) copies[name] = t.cpu().clone();
  EXPECT_LOOM_ERROR(step.run(data[1].images, data[1].labels), "random draw");
  for (const auto& [name, t] : model->state_dict())
    EXPECT_TENSOR_NEAR(t.cpu(), copies.at(name), 0.0, 0.0);
  // The thread is not left capturing: eager work runs again.
  EXPECT_FALSE(cuda::capturing(0));
  EXPECT_EQ(sum(ones({3}, kCUDA) * 2).item<float>(), 6.0f);

  // A loss that reads a value on the host inside the step.
  auto model2 = small_model(4);
  optim::Adam opt2(model2->parameters());
  const train::LossFn reading = [](const Tensor& outputs, const Tensor& labels) {
    const Tensor l = train::binary_cross_entropy_loss()(outputs, labels);
    (void)l.item<float>();
    return l;
  };
  CapturedStep step2(*model2, reading, opt2);
  step2.run(data[0].images, data[0].labels);
  EXPECT_LOOM_ERROR(step2.run(data[1].images, data[1].labels), "cannot be captured");
  EXPECT_FALSE(cuda::capturing(0));
}

// Eager tensors allocated after the capture never share memory with the graph: replays leave
// them intact.
TEST(CapturedStep, TheGraphsMemoryIsPrivate) {
  LOOM_REQUIRE_CUDA();
  auto model = small_model(6);
  optim::Adam opt(model->parameters());
  CapturedStep step(*model, train::binary_cross_entropy_loss(), opt);
  const std::vector<Batch> data = batches({16, 16, 16}, 61);
  step.run(data[0].images, data[0].labels);
  step.run(data[1].images, data[1].labels);  // captured
  // Tensors of every size the step's intermediates have, filled with a known pattern.
  std::vector<Tensor> bystanders, expected;
  Generator gen(62);
  for (int64_t n : {16 * 8 * 8 * 8, 16 * 8 * 4 * 4, 16, 1, 8, 8 * 3 * 3 * 3, 128}) {
    for (int k = 0; k < 3; ++k) {
      expected.push_back(uniform({n}, 1.0, 2.0, kFloat32, &gen));
      bystanders.push_back(expected.back().cuda());
    }
  }
  for (int i = 0; i < 5; ++i) step.run(data[2].images, data[2].labels);
  for (size_t i = 0; i < bystanders.size(); ++i)
    EXPECT_TENSOR_NEAR(bystanders[i].cpu(), expected[i], 0.0, 0.0);
  EXPECT_EQ(step.replays(), 6);
}

// fit with FitOptions::capture trains exactly as without.
TEST(CapturedStep, FitWithCaptureMatchesFitWithout) {
  LOOM_REQUIRE_CUDA();
  testing::DeterministicAlgorithmsGuard deterministic;
  const testing::HalvesDataset dataset(40, 71);
  auto run = [&](bool capture, std::optional<double> clip) {
    auto model = small_model(9);
    optim::Adam opt(model->parameters(), optim::GroupOptions().with_lr(1e-2));
    data::DataLoader loader(
        dataset, shuffled_cuda_batches(16, 3));  // 40 = 16 + 16 + 8: a partial last batch
    train::FitOptions fo;
    fo.epochs = 3;
    fo.out = nullptr;
    fo.capture = capture;
    fo.clip_grad_norm = clip;
    train::History h =
        train::fit(*model, train::binary_cross_entropy_loss(), opt, loader, nullptr, fo);
    return std::make_pair(h, model);
  };
  // Without clipping, and with a norm small enough that every step clips (on the device, inside
  // the graph: CapturedStep::Options::before_update).
  for (const std::optional<double> clip : {std::optional<double>(), std::optional<double>(0.05)}) {
    SCOPED_TRACE(clip ? "clip_grad_norm 0.05" : "no clipping");
    auto [eager_history, eager_model] = run(false, clip);
    auto [graph_history, graph_model] = run(true, clip);
    ASSERT_EQ(eager_history.epochs.size(), 3u);
    for (size_t e = 0; e < 3; ++e) {
      EXPECT_EQ(graph_history.epochs[e].at("loss"), eager_history.epochs[e].at("loss"));
      EXPECT_EQ(graph_history.epochs[e].at("accuracy"), eager_history.epochs[e].at("accuracy"));
    }
    expect_same_state(*eager_model, *graph_model);
  }
}

// bf16 mixed precision (CapturedStep::Options::autocast, FitOptions::autocast): the captured
// autocast step replays the eager autocast step bit for bit, and the parameters, their
// gradients and Adam's state stay float32.
TEST(CapturedStep, AutocastReplaysGiveTheEagerAutocastStepsBitForBit) {
  LOOM_REQUIRE_CUDA();
  testing::DeterministicAlgorithmsGuard deterministic;
  const train::LossFn loss = train::binary_cross_entropy_loss();
  auto eager_model = small_model(15), graph_model = small_model(15);
  optim::Adam eager_opt(eager_model->parameters(), optim::GroupOptions().with_lr(1e-2));
  optim::Adam graph_opt(graph_model->parameters(), optim::GroupOptions().with_lr(1e-2));
  CapturedStep::Options options;
  options.autocast = true;
  CapturedStep step(*graph_model, loss, graph_opt, options);
  const std::vector<Batch> data = batches({16, 16, 16, 5, 16, 16}, 41);
  for (size_t i = 0; i < data.size(); ++i) {
    SCOPED_TRACE("step " + std::to_string(i));
    const Tensor outputs = train::forward(*eager_model, data[i].images, true);
    ASSERT_EQ(outputs.dtype(), kFloat32);
    const Tensor eager_loss = loss(outputs, data[i].labels);
    eager_opt.zero_grad();
    eager_loss.backward();
    eager_opt.step();
    const CapturedStep::Result r = step.run(data[i].images, data[i].labels);
    EXPECT_EQ(r.loss.item<float>(), eager_loss.item<float>());
    expect_same_state(*eager_model, *graph_model);
  }
  EXPECT_GT(step.replays(), 0);
  for (const Tensor& p : graph_model->parameters()) {
    EXPECT_EQ(p.dtype(), kFloat32);
    EXPECT_EQ(p.grad().dtype(), kFloat32);
  }
}

// Mixed precision trains as float32 does: on the same batches, from the same weights, the
// bf16 losses stay within a few bfloat16 steps of the full-float32 ones over 40 Adam steps and
// fall as far. A bfloat16 path that dropped a gradient, or cast it wrongly, would drift away.
TEST(CapturedStep, AutocastTrainingTracksFloat32) {
  LOOM_REQUIRE_CUDA();
  const ConvTf32Scope full_float32(false);
  const testing::HalvesDataset dataset(64, 81);
  auto run = [&](bool autocast) {
    auto model = small_model(21);
    optim::Adam opt(model->parameters(), optim::GroupOptions().with_lr(3e-3));
    data::DataLoader loader(dataset, shuffled_cuda_batches(16, 4));
    train::FitOptions fo;
    fo.epochs = 10;
    fo.out = nullptr;
    fo.capture = true;
    fo.autocast = autocast;
    return train::fit(*model, train::binary_cross_entropy_loss(), opt, loader, &loader, fo);
  };
  const train::History f32 = run(false), bf16 = run(true);
  for (size_t e = 0; e < f32.epochs.size(); ++e) {
    SCOPED_TRACE("epoch " + std::to_string(e));
    EXPECT_NEAR(bf16.epochs[e].at("loss"), f32.epochs[e].at("loss"), 0.03);
    EXPECT_NEAR(bf16.epochs[e].at("val_loss"), f32.epochs[e].at("val_loss"), 0.03);
  }
  EXPECT_LT(bf16.epochs.back().at("loss"), 0.8 * bf16.epochs.front().at("loss"));
}

// Over several ranks (finding F5): NCCL requires every rank to capture, replay or run eagerly
// the same collectives at the same step, so the ranks agree on each step's batch shape, and a
// step where they differ runs eagerly everywhere. Two thread ranks share the one GPU here (the
// threads backend); the step itself has no collective, so any rank may capture it, and the
// counts show whether the ranks chose alike.
struct Counts {
  int64_t replays = 0, eager = 0;
  size_t graphs = 0;
};

// Each rank trains its own copy of the model on batches of the sizes given for it.
std::vector<Counts> train_ranks(const std::vector<std::vector<int64_t>>& sizes, bool agree) {
  std::vector<Counts> counts(sizes.size());
  dist::SpawnOptions options;
  options.backend = dist::Backend::Threads;
  dist::spawn(
      static_cast<int>(sizes.size()), kCUDA,
      [&](dist::ProcessGroup& g) {
        auto model = small_model(3);
        optim::Adam opt(model->parameters(), optim::GroupOptions().with_lr(1e-3));
        CapturedStep::Options o;
        if (agree) o.group = g.shared_from_this();
        CapturedStep step(*model, train::binary_cross_entropy_loss(), opt, o);
        Generator gen(11 + static_cast<uint64_t>(g.rank()));
        for (int64_t n : sizes[static_cast<size_t>(g.rank())]) {
          step.run(uniform({n, 3, 8, 8}, -1.0, 1.0, kFloat32, &gen).cuda(),
                   randint(0, 2, {n}, kInt64, &gen).cuda());
        }
        counts[static_cast<size_t>(g.rank())] = {step.replays(), step.eager_steps(), step.graphs()};
      },
      options);
  return counts;
}

TEST(CapturedStepRanks, AStepWhereOneRankHasAnotherShapeRunsEagerlyOnEveryRank) {
  LOOM_REQUIRE_CUDA();
  // Rank 1's loader skipped samples at step 3.
  const std::vector<std::vector<int64_t>> sizes = {{16, 16, 16, 16, 16, 16, 16},
                                                   {16, 16, 16, 9, 16, 16, 16}};
  const std::vector<Counts> agreed = train_ranks(sizes, true);
  for (const Counts& c : agreed) {
    EXPECT_EQ(c.eager, 2);    // the warm-up step and step 3
    EXPECT_EQ(c.replays, 5);  // steps 1, 2, 4, 5, 6
    EXPECT_EQ(c.graphs, 1u);  // nobody captured the shape only one rank had
  }
  // Without the agreement the ranks choose apart: rank 0 replays a step rank 1 runs eagerly (over
  // NCCL, a hang or a collective paired with the wrong one).
  const std::vector<Counts> apart = train_ranks(sizes, false);
  EXPECT_NE(apart[0].replays, apart[1].replays);
}

TEST(CapturedStepRanks, RanksWithTheSameShapesCaptureAndReplayAlike) {
  LOOM_REQUIRE_CUDA();
  const std::vector<Counts> c =
      train_ranks({{8, 8, 5, 8, 5, 5}, {8, 8, 5, 8, 5, 5}, {8, 8, 5, 8, 5, 5}}, true);
  for (const Counts& r : c) {
    EXPECT_EQ(r.eager, 2);
    EXPECT_EQ(r.replays, 4);
    EXPECT_EQ(r.graphs, 2u);
  }
}

TEST(CapturedStepRanks, AReplayAfterTheGroupAbortedIsRefused) {
  LOOM_REQUIRE_CUDA();
  const dist::GroupPtr g = dist::make_nccl_group(dist::nccl_unique_id(), 0, 1, 0);
  auto model = small_model(4);
  optim::Adam opt(model->parameters(), optim::GroupOptions().with_lr(1e-3));
  CapturedStep::Options o;
  o.group = g;
  CapturedStep step(*model, train::binary_cross_entropy_loss(), opt, o);
  Generator gen(5);
  const Tensor x = uniform({4, 3, 8, 8}, -1.0, 1.0, kFloat32, &gen).cuda();
  const Tensor y = randint(0, 2, {4}, kInt64, &gen).cuda();
  step.run(x, y);
  EXPECT_TRUE(step.run(x, y).replayed);
  g->abort("rank 1 of 2 (nccl) aborted: a test");
  EXPECT_LOOM_ERROR(step.run(x, y), "was aborted (rank 1 of 2 (nccl) aborted: a test)");
}

}  // namespace
}  // namespace loom
