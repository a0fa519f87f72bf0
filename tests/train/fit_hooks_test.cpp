// fit's gradient hooks: accumulation over batches (the mean gradient of each group, a short
// last group included, and DDP's no_sync until a group's last backward), clipping on the device,
// after_backward between backward and the step, and their refusals.
#include <gtest/gtest.h>
#include <loom/loom.h>

#include "synthetic.h"
#include "testing.h"

namespace loom {
namespace {

std::vector<float> flat(nn::Module& m) {
  std::vector<float> out;
  for (const Tensor& p : m.parameters()) {
    const std::vector<float> v = p.contiguous().to_vector<float>();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

double worst(const std::vector<float>& a, const std::vector<float>& b) {
  double w = a.size() == b.size() ? 0.0 : 1e30;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    w = std::max(w, std::abs(double(a[i]) - b[i]) / std::max(std::abs(double(b[i])), 1e-3));
  return w;
}

// The batches of one epoch, as fit's loader deals them.
std::vector<data::Batch> batches_of(const data::Dataset& set, int64_t batch, int64_t epoch) {
  data::DataLoader loader(set, testing::loader_options(batch, true));
  loader.start_epoch(epoch);
  std::vector<data::Batch> out;
  while (std::optional<data::Batch> b = loader.next()) out.push_back(*b);
  return out;
}

TEST(FitHooks, AccumulationStepsOnEachGroupsMeanGradientShortLastGroupIncluded) {
  testing::HalvesDataset set(40, 1);  // 10 batches of 4: groups of 3, 3, 3 and 1
  const auto loss = train::binary_cross_entropy_loss();
  auto fitted = testing::tiny_model(5, 8, false);
  optim::SGD sgd(fitted->parameters(), optim::GroupOptions().with_lr(0.1));
  data::DataLoader loader(set, testing::loader_options(4, true));
  train::FitOptions fit;
  fit.epochs = 2;
  fit.out = nullptr;
  fit.accumulate_steps = 3;
  int backwards = 0;
  fit.after_backward = [&](train::TrainContext&) { ++backwards; };
  train::fit(*fitted, loss, sgd, loader, nullptr, fit);
  EXPECT_EQ(backwards, 20);

  // By hand: each group's batches' losses divided by the group's size, then one step.
  auto manual = testing::tiny_model(5, 8, false);
  optim::SGD manual_sgd(manual->parameters(), optim::GroupOptions().with_lr(0.1));
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    const std::vector<data::Batch> b = batches_of(set, 4, epoch);
    ASSERT_EQ(b.size(), 10u);
    for (size_t first = 0; first < b.size(); first += 3) {
      const size_t size = std::min<size_t>(3, b.size() - first);
      manual_sgd.zero_grad();
      for (size_t i = first; i < first + size; ++i) {
        (loss(manual->forward(b[i].images), b[i].labels) * (1.0 / static_cast<double>(size)))
            .backward();
      }
      manual_sgd.step();
    }
  }
  EXPECT_LE(worst(flat(*fitted), flat(*manual)), 1e-6);
  // And it is not plain training: one step per batch moves the weights elsewhere.
  auto plain = testing::tiny_model(5, 8, false);
  optim::SGD plain_sgd(plain->parameters(), optim::GroupOptions().with_lr(0.1));
  data::DataLoader plain_loader(set, testing::loader_options(4, true));
  train::FitOptions once = fit;
  once.accumulate_steps = 1;
  once.after_backward = nullptr;
  train::fit(*plain, loss, plain_sgd, plain_loader, nullptr, once);
  EXPECT_GT(worst(flat(*plain), flat(*manual)), 1e-3);
}

TEST(FitHooks, UnderDdpOnlyAGroupsLastBackwardAllReduces) {
  testing::HalvesDataset set(32, 2);
  std::vector<std::vector<int>> launched(2);  // per rank, per backward: buckets reduced
  std::vector<std::vector<float>> params(2);
  dist::spawn(2, kCPU, [&](dist::ProcessGroup& g) {
    auto model = testing::tiny_model(6, 8, false);
    auto ddp = std::make_shared<dist::DistributedDataParallel>(model, g.shared_from_this());
    optim::SGD sgd(ddp->parameters(), optim::GroupOptions().with_lr(0.1));
    data::DataLoader loader(set, data::train_shard_options(testing::loader_options(4, true),
                                                           set.size(), {g.rank(), g.size()}));
    train::FitOptions fit;
    fit.epochs = 1;
    fit.out = nullptr;
    fit.group = g.shared_from_this();
    fit.accumulate_steps = 2;
    fit.after_backward = [&](train::TrainContext&) {
      const dist::DdpStepStats s = ddp->last_step();
      launched[static_cast<size_t>(g.rank())].push_back(s.launched_during_backward +
                                                        s.launched_at_end);
    };
    train::fit(*ddp, train::binary_cross_entropy_loss(), sgd, loader, nullptr, fit);
    params[static_cast<size_t>(g.rank())] = flat(*model);
  });
  // 4 batches per rank: backwards 1 and 3 accumulate locally, 2 and 4 reduce.
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(launched[r].size(), 4u);
    EXPECT_EQ(launched[r][0], 0);
    EXPECT_GT(launched[r][1], 0);
    EXPECT_EQ(launched[r][2], 0);
    EXPECT_GT(launched[r][3], 0);
  }
  EXPECT_EQ(params[0], params[1]);
}

TEST(FitHooks, ClippingOnTheDeviceMatchesClipGradNorm) {
  testing::HalvesDataset set(24, 3);
  const auto loss = train::binary_cross_entropy_loss();
  auto fitted = testing::tiny_model(7, 8, false);
  optim::SGD sgd(fitted->parameters(), optim::GroupOptions().with_lr(0.5));
  data::DataLoader loader(set, testing::loader_options(8, true));
  train::FitOptions fit;
  fit.out = nullptr;
  fit.clip_grad_norm = 0.05;  // well below the gradients' norm: every step clips
  std::vector<double> norms;
  fit.after_backward = [&](train::TrainContext& ctx) {
    double sq = 0;
    for (const Tensor& p : ctx.model.parameters()) sq += sum(p.grad() * p.grad()).item<double>();
    norms.push_back(std::sqrt(sq));
  };
  train::fit(*fitted, loss, sgd, loader, nullptr, fit);
  ASSERT_EQ(norms.size(), 3u);
  for (double n : norms) EXPECT_GT(n, 0.05);

  auto manual = testing::tiny_model(7, 8, false);
  optim::SGD manual_sgd(manual->parameters(), optim::GroupOptions().with_lr(0.5));
  for (const data::Batch& b : batches_of(set, 8, 0)) {
    manual_sgd.zero_grad();
    loss(manual->forward(b.images), b.labels).backward();
    optim::clip_grad_norm_(manual->parameters(), 0.05);
    manual_sgd.step();
  }
  EXPECT_LE(worst(flat(*fitted), flat(*manual)), 1e-6);
}

TEST(FitHooks, AfterBackwardRunsBeforeTheStep) {
  testing::HalvesDataset set(16, 4);
  auto model = testing::tiny_model(8, 8, false);
  const std::vector<float> before = flat(*model);
  optim::SGD sgd(model->parameters(), optim::GroupOptions().with_lr(0.5));
  data::DataLoader loader(set, testing::loader_options(8, true));
  train::FitOptions fit;
  fit.out = nullptr;
  fit.after_backward = [](train::TrainContext& ctx) {
    for (const Tensor& p : ctx.model.parameters()) {
      ASSERT_TRUE(p.grad().defined());
      Tensor(p.grad()).zero_();  // no gradient, so SGD without momentum leaves the weights
    }
  };
  train::fit(*model, train::binary_cross_entropy_loss(), sgd, loader, nullptr, fit);
  EXPECT_EQ(flat(*model), before);
}

TEST(FitHooks, BadOptionsAreRefused) {
  testing::HalvesDataset set(8, 5);
  auto model = testing::tiny_model(9, 8, false);
  optim::SGD sgd(model->parameters(), optim::GroupOptions().with_lr(0.1));
  data::DataLoader loader(set, testing::loader_options(4, true));
  const auto run = [&](const train::FitOptions& o) {
    train::fit(*model, train::binary_cross_entropy_loss(), sgd, loader, nullptr, o);
  };
  train::FitOptions o;
  o.out = nullptr;
  o.accumulate_steps = 0;
  EXPECT_LOOM_ERROR(run(o), "accumulate_steps must be at least 1, got 0");
  o.accumulate_steps = 1;
  o.clip_grad_norm = -1.0;
  EXPECT_LOOM_ERROR(run(o), "clip_grad_norm must be a finite number > 0");
  o.clip_grad_norm = std::nan("");
  EXPECT_LOOM_ERROR(run(o), "clip_grad_norm must be a finite number > 0");
  o.clip_grad_norm.reset();
  o.capture = true;
  o.accumulate_steps = 2;
  EXPECT_LOOM_ERROR(run(o), "cannot accumulate gradients");
  o.accumulate_steps = 1;
  o.after_backward = [](train::TrainContext&) {};
  EXPECT_LOOM_ERROR(run(o), "after_backward");
}

TEST(ClipOnDevice, EqualsTheHostClipAndNeverReadsTheNorm) {
  for (double max_norm : {0.01, 1e6}) {  // clipping, and within the norm (factor exactly 1)
    std::vector<Tensor> a, b;
    for (int i = 0; i < 3; ++i) {
      a.push_back(testing::random_leaf({5, 4}, 40 + i));
      b.push_back(testing::random_leaf({5, 4}, 40 + i));
    }
    for (size_t i = 0; i < a.size(); ++i) {
      a[i].set_grad(testing::random_leaf({5, 4}, 50 + i).detach());
      b[i].set_grad(testing::random_leaf({5, 4}, 50 + i).detach());
    }
    const double host = optim::clip_grad_norm_(a, max_norm);
    const Tensor device = optim::clip_grad_norm_on_device(b, max_norm);
    EXPECT_NEAR(device.item<double>(), host, 1e-9 * host);
    for (size_t i = 0; i < a.size(); ++i)
      EXPECT_EQ(testing::compare(b[i].grad(), a[i].grad(), 1e-7, 1e-6), "");
  }
}

}  // namespace
}  // namespace loom
