// The proof that DistributedDataParallel is right: N ranks with per-rank batch b see, step by
// step, the same losses and end with the same parameters as one rank with batch N*b over the
// same samples (rank r takes samples r, r+N, r+2N, ... of each global batch, as
// DistributedSampler deals them), and after every step every rank's parameters are identical.
#pragma once

#include <gtest/gtest.h>
#include <loom/loom.h>

#include <mutex>

#include "testing.h"

namespace loom::testing {

// A small CNN without BatchNorm or dropout, so one rank and N ranks compute the same maths.
inline std::shared_ptr<nn::Sequential> ddp_model(uint64_t seed) {
  Generator gen(seed);
  auto model = std::make_shared<nn::Sequential>();
  model->add(std::make_shared<nn::Conv2d>(3, 6, 3, Conv2dOptions().padding(1), true,
                                          nn::Init::PyTorch, &gen));
  model->add(std::make_shared<nn::ReLU>());
  model->add(std::make_shared<nn::MaxPool2d>(2));
  model->add(std::make_shared<nn::Conv2d>(6, 8, 3, Conv2dOptions().padding(1), true,
                                          nn::Init::PyTorch, &gen));
  model->add(std::make_shared<nn::ReLU>());
  model->add(std::make_shared<nn::Flatten>());
  model->add(std::make_shared<nn::Linear>(8 * 4 * 4, 16, true, nn::Init::PyTorch, &gen));
  model->add(std::make_shared<nn::ReLU>());
  model->add(std::make_shared<nn::Linear>(16, 1, true, nn::Init::PyTorch, &gen));
  return model;
}

struct EquivalenceData {
  Tensor images;  // [steps * global_batch, 3, 8, 8]
  Tensor labels;  // [steps * global_batch, 1]
};

inline EquivalenceData equivalence_data(int64_t count, uint64_t seed) {
  Generator gen(seed);
  return {randn({count, 3, 8, 8}, kFloat32, &gen), randint(0, 2, {count, 1}, kFloat32, &gen)};
}

// Samples rank `rank` of `world` takes from global batch `step`.
inline Tensor rank_rows(const Tensor& all, int64_t step, int64_t global, int rank, int world) {
  std::vector<int64_t> rows;
  for (int64_t i = rank; i < global; i += world) rows.push_back(step * global + i);
  std::vector<Tensor> picked;
  for (int64_t r : rows) picked.push_back(all.narrow(0, r, 1));
  return cat(picked, 0);
}

inline std::vector<float> flat_parameters(nn::Module& m) {
  std::vector<float> out;
  for (const Tensor& p : m.parameters()) {
    const std::vector<float> v = p.contiguous().to_vector<float>();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

inline std::vector<float> flat_gradients(nn::Module& m) {
  std::vector<float> out;
  for (const Tensor& p : m.parameters()) {
    const std::vector<float> v = p.grad().contiguous().to_vector<float>();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

struct TrainedRun {
  std::vector<float> losses;     // per step: the mean over the global batch
  std::vector<float> gradients;  // of the first step (Adam hides a gradient's scale: this does not)
  std::vector<float> parameters;  // after the last step
};

// Adam at the recipe's 1e-3. (At 1e-2 its steps on near-zero gradients amplify float32's
// summation-order differences between one mean over N*b samples and N means over b to about
// 4e-5 relative after 10 steps.)

// One rank, the whole global batch each step.
inline TrainedRun train_single(const EquivalenceData& data, int64_t global, int steps,
                               Device device) {
  auto model = ddp_model(42);
  model->to(device);
  optim::Adam adam(model->parameters(), optim::GroupOptions().with_lr(1e-3));
  TrainedRun run;
  for (int s = 0; s < steps; ++s) {
    adam.zero_grad();
    Tensor x = data.images.narrow(0, s * global, global).to(device);
    Tensor y = data.labels.narrow(0, s * global, global).to(device);
    Tensor loss = nn::binary_cross_entropy_with_logits(model->forward(x), y);
    loss.backward();
    if (s == 0) run.gradients = flat_gradients(*model);
    adam.step();
    run.losses.push_back(loss.item<float>());
  }
  run.parameters = flat_parameters(*model);
  return run;
}

// This rank's part of the N-rank run; checks after every step that the ranks agree bit for bit.
inline TrainedRun train_rank(dist::ProcessGroup& g, const EquivalenceData& data, int64_t global,
                             int steps, const dist::DdpOptions& options = {},
                             MemoryFormat format = MemoryFormat::Contiguous) {
  // Each rank starts from its own initialisation: DDP must replace it with rank 0's.
  auto model = ddp_model(42 + 1000 * static_cast<uint64_t>(g.rank()));
  model->to(g.device());
  model->to(format);
  auto ddp = std::make_shared<dist::DistributedDataParallel>(model, g.shared_from_this(), options);
  optim::Adam adam(ddp->parameters(), optim::GroupOptions().with_lr(1e-3));
  TrainedRun run;
  for (int s = 0; s < steps; ++s) {
    adam.zero_grad();
    Tensor x = rank_rows(data.images, s, global, g.rank(), g.size()).to(g.device());
    Tensor y = rank_rows(data.labels, s, global, g.rank(), g.size()).to(g.device());
    Tensor loss = nn::binary_cross_entropy_with_logits(ddp->forward(x), y);
    loss.backward();
    if (s == 0) run.gradients = flat_gradients(*model);
    for (const Tensor& p : model->parameters()) {
      // Every gradient is its slot in the arena, in its parameter's layout: nothing is copied.
      EXPECT_EQ(p.grad().storage().data(), model->parameters().front().grad().storage().data());
      EXPECT_EQ(p.grad().strides(), p.strides()) << "step " << s;
    }
    adam.step();
    Tensor mean = loss.detach().reshape({1}).contiguous().clone();
    g.all_reduce(mean, dist::ReduceOp::Avg)->wait();
    run.losses.push_back(mean.item<float>());
    // Every rank's parameters equal rank 0's, bit for bit.
    const std::vector<float> mine = flat_parameters(*model);
    Tensor all = empty({g.size() * static_cast<int64_t>(mine.size())},
                       TensorOptions(kFloat32).device(g.device()));
    g.all_gather(all, from_vector(mine).to(g.device()))->wait();
    const std::vector<float> every = all.cpu().to_vector<float>();
    for (int r = 1; r < g.size(); ++r) {
      const bool same = std::equal(mine.begin(), mine.end(), every.begin() + r * mine.size(),
                                   every.begin() + (r + 1) * mine.size()) &&
                        std::equal(mine.begin(), mine.end(), every.begin());
      EXPECT_TRUE(same) << "step " << s << ": rank " << r << "'s parameters differ from rank 0's";
    }
  }
  run.parameters = flat_parameters(*model);
  return run;
}

// max |a - b| / max(|b|, 1e-3) over the elements.
inline double worst_relative(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    worst = std::max(worst, std::abs(double(a[i]) - b[i]) / std::max(std::abs(double(b[i])), 1e-3));
  }
  return a.size() == b.size() ? worst : 1e30;
}

}  // namespace loom::testing
