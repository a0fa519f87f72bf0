// One training run for the resume tests, on the CPU or a GPU: train straight through, or crash
// after some steps and resume in a freshly built run from the last checkpoint.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "synthetic.h"
#include "testing.h"

namespace loom::testing {

// Records each step's loss exactly; optionally stops the run after `stop_after` steps by
// throwing, as a crash would (the checkpoint callback runs before it).
class StepRecorder : public train::Callback {
 public:
  explicit StepRecorder(int64_t stop_after = -1) : stop_after_(stop_after) {}
  void on_batch_end(train::TrainContext& ctx) override {
    losses.push_back(ctx.batch_loss.item<float>());
    if (ctx.global_step == stop_after_) throw std::runtime_error("simulated crash");
  }
  std::vector<float> losses;

 private:
  int64_t stop_after_;
};

struct RunResult {
  std::vector<float> losses;
  train::History history;
  nn::NamedTensors weights;
};

// One training run of 3 epochs of 5 steps; when `stop_after` >= 0 it crashes there and a second,
// freshly built run resumes from the checkpoint written every `every` steps.
inline RunResult train_run(const std::string& ckpt, int64_t stop_after, int64_t every,
                           Device device = kCPU) {
  testing::HalvesDataset train_set(40, 1), val_set(16, 2);
  auto build = [&](RunResult& run, std::optional<io::TrainingState>* resume, int64_t stop) {
    manual_seed(99);  // a resumed run must overwrite this from the checkpoint
    auto model =
        testing::tiny_model(stop >= 0 || resume == nullptr ? 5 : 6);  // other init on resume
    model->to(device);  // before the optimizer, so its state lives there too
    optim::Adam optimizer(model->parameters(), optim::GroupOptions().with_lr(5e-3));
    data::DataLoaderOptions o;
    o.batch_size = 8;
    o.seed = 17;
    o.augment = data::AugmentOptions::keras_seed(23);
    o.device = device;
    data::DataLoader train_loader(train_set, o);
    o.shuffle = false;
    o.augment = data::AugmentOptions();
    o.augment.rescale = 1.0 / 255.0;
    data::DataLoader val_loader(val_set, o);
    train::FitOptions fit;
    fit.epochs = 3;
    fit.out = nullptr;
    auto recorder = std::make_shared<StepRecorder>(stop);
    train::CheckpointOptions c;
    c.path = ckpt;
    c.every_steps = every;
    fit.callbacks = {std::make_shared<train::ModelCheckpoint>(c), recorder};
    if (resume != nullptr) fit.resume = io::load_checkpoint(ckpt, *model, optimizer);
    try {
      run.history = train::fit(*model, train::binary_cross_entropy_loss(), optimizer, train_loader,
                               &val_loader, fit);
    } catch (const std::runtime_error&) {
    }
    run.losses.insert(run.losses.end(), recorder->losses.begin(), recorder->losses.end());
    run.weights = nn::NamedTensors();
    for (const auto& [name, t] : model->state_dict()) run.weights.insert(name, t.clone());
  };
  RunResult run;
  if (stop_after < 0) {
    manual_seed(99);
    build(run, nullptr, -1);
    return run;
  }
  build(run, nullptr, stop_after);
  // Steps after the last checkpoint are lost with the crash: the resumed run redoes them.
  const int64_t saved = stop_after / every * every;
  run.losses.resize(static_cast<size_t>(saved));
  std::optional<io::TrainingState> unused;
  build(run, &unused, -2);
  return run;
}

}  // namespace loom::testing
