// The training steps alone, without fit: EagerStep's accumulation against one big batch, its
// gradient-sync switching, PipelineStep around a model's own BatchTrainer, and which step
// make_train_step picks or refuses.
#include <gtest/gtest.h>
#include <loom/loom.h>

#include "synthetic.h"
#include "testing.h"

namespace loom {
namespace {

// Linear 6 -> 1 on random inputs: a model whose gradient is a plain mean over the batch.
struct Problem {
  std::shared_ptr<nn::Linear> model;
  Tensor inputs;  // [8, 6]
  Tensor labels;  // [8], 0/1
};

Problem make_problem(uint64_t seed) {
  Generator gen(seed);
  Problem p;
  p.model = std::make_shared<nn::Linear>(6, 1, true, nn::Init::PyTorch, &gen);
  p.inputs = randn({8, 6}, kFloat32, &gen);
  p.labels = gt(uniform({8}, 0.0, 1.0, kFloat32, &gen), 0.5).to(kInt64);
  return p;
}

// A context that only says where in the epoch a step is; the loader is never read.
struct Context {
  testing::HalvesDataset set{4, 1};
  data::DataLoader loader{set, testing::loader_options(4, false)};
  train::History history;
  train::TrainContext ctx;
  Context(nn::Module& model, optim::Optimizer& optimizer, int64_t steps_per_epoch)
      : ctx(model, optimizer, loader, history) {
    ctx.steps_per_epoch = steps_per_epoch;
  }
};

std::vector<float> weights(nn::Module& m) {
  std::vector<float> out;
  for (const Tensor& p : m.parameters()) {
    const std::vector<float> v = p.contiguous().to_vector<float>();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

void expect_near(const std::vector<float>& a, const std::vector<float>& b, double tol) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], tol) << "parameter element " << i;
}

TEST(EagerStep, TwoAccumulatedHalvesStepAsTheWholeBatch) {
  const auto loss = train::binary_cross_entropy_loss();
  Problem whole = make_problem(7), halves = make_problem(7);
  optim::SGD sgd_whole(whole.model->parameters(), optim::GroupOptions().with_lr(0.5));
  optim::SGD sgd_halves(halves.model->parameters(), optim::GroupOptions().with_lr(0.5));
  const std::vector<float> before = weights(*whole.model);

  Context one(*whole.model, sgd_whole, 1);
  train::EagerStep big(*whole.model, loss, sgd_whole, {}, {});
  // The loss reported is the one before the update.
  const double loss_before = loss(whole.model->forward(whole.inputs), whole.labels).item<double>();
  const train::TrainStep::Result r = big.run(whole.inputs, whole.labels, one.ctx);
  EXPECT_FALSE(r.loss.requires_grad());
  EXPECT_NEAR(r.loss.item<double>(), loss_before, 1e-6);

  train::EagerStep::Options accumulate;
  accumulate.accumulate_steps = 2;
  Context two(*halves.model, sgd_halves, 2);
  train::EagerStep small(*halves.model, loss, sgd_halves, accumulate, {});
  for (int64_t i = 0; i < 2; ++i) {
    two.ctx.step_in_epoch = i;
    const train::TrainStep::Result h =
        small.run(halves.inputs.narrow(0, 4 * i, 4), halves.labels.narrow(0, 4 * i, 4), two.ctx);
    EXPECT_EQ(h.outputs.size(0), 4);
    // After the first half nothing has stepped; the loss reported is the half's own mean.
    if (i == 0) EXPECT_EQ(weights(*halves.model), before);
  }
  expect_near(weights(*halves.model), weights(*whole.model), 1e-6);
  EXPECT_NE(weights(*whole.model), before);
}

// A model that records the gradient-sync setting each forward runs under, as DDP would obey it.
class SyncRecorder : public nn::Module {
 public:
  explicit SyncRecorder(nn::ModulePtr inner) : inner_(std::move(inner)) {
    register_module("inner", inner_);
  }
  Tensor forward(const Tensor& input) override {
    seen.push_back(sync_);
    return inner_->forward(input);
  }
  std::string type_name() const override { return "SyncRecorder"; }
  bool set_gradient_sync(bool on) override { return std::exchange(sync_, on); }
  std::vector<bool> seen;

 private:
  nn::ModulePtr inner_;
  bool sync_ = true;
};

TEST(EagerStep, OnlyEachGroupsLastBackwardSyncsAndTheSettingIsRestored) {
  Problem p = make_problem(3);
  SyncRecorder model(p.model);
  optim::SGD sgd(model.parameters(), optim::GroupOptions().with_lr(0.1));
  train::EagerStep::Options o;
  o.accumulate_steps = 3;
  Context c(model, sgd, 5);  // groups of 3 and 2
  train::EagerStep step(model, train::binary_cross_entropy_loss(), sgd, o, {});
  for (int64_t i = 0; i < 5; ++i) {
    c.ctx.step_in_epoch = i;
    step.run(p.inputs.narrow(0, i, 1), p.labels.narrow(0, i, 1), c.ctx);
  }
  EXPECT_EQ(model.seen, (std::vector<bool>{false, false, true, false, true}));
  EXPECT_TRUE(model.set_gradient_sync(true)) << "the model's own setting was not restored";
}

TEST(EagerStep, HooksRunAroundTheUpdateAndFinishEpochStepsAShortGroup) {
  Problem p = make_problem(5);
  optim::SGD sgd(p.model->parameters(), optim::GroupOptions().with_lr(0.1));
  std::vector<std::string> calls;
  train::StepHooks hooks;
  hooks.before_update = [&] { calls.push_back("update"); };
  hooks.after_step = [&](const Tensor& loss, const Tensor& outputs, const Tensor& labels) {
    EXPECT_FALSE(loss.requires_grad());
    EXPECT_EQ(outputs.size(0), labels.numel());
    calls.push_back("after");
  };
  train::EagerStep::Options o;
  o.accumulate_steps = 4;
  o.after_backward = [&](train::TrainContext&) { calls.push_back("backward"); };
  Context c(*p.model, sgd, 4);
  train::EagerStep step(*p.model, train::binary_cross_entropy_loss(), sgd, o, hooks);
  // The loader ends after 2 of the 4 batches the epoch was to have (bad samples skipped).
  for (int64_t i = 0; i < 2; ++i) {
    c.ctx.step_in_epoch = i;
    step.run(p.inputs.narrow(0, 2 * i, 2), p.labels.narrow(0, 2 * i, 2), c.ctx);
  }
  const std::vector<float> before = weights(*p.model);
  EXPECT_EQ(calls, (std::vector<std::string>{"backward", "after", "backward", "after"}));
  step.finish_epoch();
  EXPECT_EQ(calls.back(), "update");
  EXPECT_NE(weights(*p.model), before) << "finish_epoch did not step the pending gradients";
  step.finish_epoch();  // nothing pending: no second step
  EXPECT_EQ(std::count(calls.begin(), calls.end(), "update"), 1);
}

// A model that trains its batches itself: forward and backward with the loss it is given.
class SelfTrainer : public nn::Module, public nn::BatchTrainer {
 public:
  explicit SelfTrainer(nn::ModulePtr inner) : inner_(std::move(inner)) {
    register_module("inner", inner_);
  }
  Tensor forward(const Tensor& input) override { return inner_->forward(input); }
  std::string type_name() const override { return "SelfTrainer"; }
  nn::BatchTrainer* batch_trainer() override { return this; }
  Result train_batch(const Tensor& inputs, const Tensor& targets, const Loss& loss) override {
    ++batches;
    const Tensor outputs = forward(inputs);
    const Tensor l = loss(outputs, targets);
    l.backward();
    return {l.detach(), outputs.detach()};
  }
  int batches = 0;

 private:
  nn::ModulePtr inner_;
};

TEST(PipelineStep, RunsTheModelsOwnBatchAndAccumulatesAsEagerDoes) {
  const auto loss = train::binary_cross_entropy_loss();
  Problem own = make_problem(11), eager = make_problem(11);
  SelfTrainer model(own.model);
  optim::SGD sgd_own(model.parameters(), optim::GroupOptions().with_lr(0.5));
  optim::SGD sgd_eager(eager.model->parameters(), optim::GroupOptions().with_lr(0.5));
  train::EagerStep::Options o;
  o.accumulate_steps = 2;
  Context c_own(model, sgd_own, 2), c_eager(*eager.model, sgd_eager, 2);
  train::PipelineStep step(model, loss, sgd_own, o, {});
  train::EagerStep reference(*eager.model, loss, sgd_eager, o, {});
  for (int64_t i = 0; i < 2; ++i) {
    c_own.ctx.step_in_epoch = c_eager.ctx.step_in_epoch = i;
    const Tensor x = own.inputs.narrow(0, 4 * i, 4), y = own.labels.narrow(0, 4 * i, 4);
    const train::TrainStep::Result a = step.run(x, y, c_own.ctx);
    const train::TrainStep::Result b = reference.run(x, y, c_eager.ctx);
    // The loss reported is the batch's own mean, not the share the trainer backpropagated.
    EXPECT_NEAR(a.loss.item<double>(), b.loss.item<double>(), 1e-6);
  }
  EXPECT_EQ(model.batches, 2);
  expect_near(weights(*own.model), weights(*eager.model), 1e-6);
}

TEST(MakeTrainStep, PicksTheStepTheModelAndOptionsCallFor) {
  const auto loss = train::binary_cross_entropy_loss();
  Problem p = make_problem(1);
  optim::SGD sgd(p.model->parameters(), optim::GroupOptions().with_lr(0.1));
  train::FitOptions o;
  EXPECT_NE(
      dynamic_cast<train::EagerStep*>(train::make_train_step(*p.model, loss, sgd, o, {}).get()),
      nullptr);
  o.capture = true;  // on the CPU a step is eager
  auto cpu = train::make_train_step(*p.model, loss, sgd, o, {});
  EXPECT_NE(dynamic_cast<train::EagerStep*>(cpu.get()), nullptr);
  EXPECT_EQ(dynamic_cast<train::CapturedStep*>(cpu.get()), nullptr);

  SelfTrainer self(p.model);
  o.capture = false;
  EXPECT_NE(
      dynamic_cast<train::PipelineStep*>(train::make_train_step(self, loss, sgd, o, {}).get()),
      nullptr);
  o.capture = true;
  EXPECT_LOOM_ERROR(train::make_train_step(self, loss, sgd, o, {}),
                    "capture does not apply to a model that trains");
  o.capture = false;
  o.autocast = true;
  EXPECT_LOOM_ERROR(train::make_train_step(self, loss, sgd, o, {}),
                    "autocast does not apply to a model that trains");
}

TEST(MakeTrainStep, RefusesOptionsThatCannotBe) {
  const auto loss = train::binary_cross_entropy_loss();
  Problem p = make_problem(2);
  optim::SGD sgd(p.model->parameters(), optim::GroupOptions().with_lr(0.1));
  train::FitOptions o;
  o.accumulate_steps = 0;
  EXPECT_LOOM_ERROR(train::make_train_step(*p.model, loss, sgd, o, {}),
                    "accumulate_steps must be at least 1, got 0");
  o.accumulate_steps = 2;
  o.capture = true;  // refused on every device: the rule is the options', not the GPU's
  EXPECT_LOOM_ERROR(train::make_train_step(*p.model, loss, sgd, o, {}),
                    "cannot accumulate gradients");
  o = train::FitOptions();
  o.clip_grad_norm = -1.0;
  EXPECT_LOOM_ERROR(train::make_train_step(*p.model, loss, sgd, o, {}),
                    "clip_grad_norm must be a finite number > 0");
  train::EagerStep::Options bad;
  bad.accumulate_steps = -3;
  EXPECT_LOOM_ERROR(train::EagerStep(*p.model, loss, sgd, bad, {}),
                    "accumulate_steps must be at least 1, got -3");
}

}  // namespace
}  // namespace loom
