// Training runs of fit() on one rank or on N thread ranks (threads backend, CPU) for the
// multi-rank tests: the same data, model and recipe, with each step's loss taken over all
// ranks' samples, the History, and the final weights of every rank.
#pragma once

#include <chrono>
#include <csignal>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "synthetic.h"
#include "testing.h"

namespace loom::testing {

// Each step's loss as the mean over the global batch: on N ranks the ranks' loss * count and
// counts summed (a collective per step, which a test may afford), else the batch's loss. It
// also records this rank's own batch loss exactly, and can end the run at `stop_after` by
// throwing, as a crash would (after the checkpoint callback before it has run).
class StepLosses : public train::Callback {
 public:
  explicit StepLosses(int64_t stop_after = -1, int64_t preempt_at = -1)
      : stop_after_(stop_after), preempt_at_(preempt_at) {}
  void on_batch_end(train::TrainContext& ctx) override {
    const double loss = ctx.batch_loss.item<double>(), n = static_cast<double>(ctx.batch_size);
    own.push_back(static_cast<float>(loss));
    if (ctx.group == nullptr) {
      global.push_back(loss);
    } else {
      const std::vector<double> s = train::all_reduce_values(*ctx.group, {loss * n, n});
      global.push_back(s[0] / s[1]);
    }
    if (ctx.global_step == stop_after_) throw std::runtime_error("simulated crash");
    // The last rank only, as a SIGTERM that one process of a job got first.
    if (ctx.global_step == preempt_at_ && ctx.rank == ctx.world_size - 1)
      train::request_preemption(SIGTERM);
  }
  std::vector<double> global;  // per step, over all ranks
  std::vector<float> own;      // per step, this rank's batch

 private:
  int64_t stop_after_, preempt_at_;
};

struct RankResult {
  std::vector<double> global_losses;
  std::vector<float> own_losses;
  train::History history;
  std::vector<float> weights;  // every parameter, flattened in registration order
  std::string printed;         // what fit wrote to FitOptions::out
};

inline std::vector<float> flat_weights(nn::Module& m) {
  std::vector<float> out;
  for (const auto& [name, t] : m.state_dict()) {
    const std::vector<float> v = t.contiguous().to_vector<float>();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

// max |a - b| / max(|b|, 1e-3): relative, with a floor for weights near zero.
inline double worst_relative(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return 1e30;
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::abs(double(a[i]) - b[i]) / std::max(std::abs(double(b[i])), 1e-3));
  }
  return worst;
}

// What one run is made of; every rank builds its own from it.
struct RankRecipe {
  int64_t batch = 4;  // per rank
  int64_t epochs = 2;
  int64_t train_count = 40;
  int64_t val_count = 18;  // uneven over 4 ranks (5, 5, 4, 4): every sample must still count once
  bool dropout = false;
  double lr = 2e-3;        // Adam; larger steps amplify float32 summation-order differences
  std::string checkpoint;  // shared by all ranks, every `every` steps (empty: none)
  int64_t every = 0;
  std::string rank_files;       // a folder: each rank logs to files named by its rank there
  int64_t stop_after = -1;      // crash at this global step
  bool resume = false;          // continue from `checkpoint`
  int64_t preempt_at = -1;      // the last rank asks for a preemption at this global step
  int64_t validation_from = 1;  // FitOptions::validation_from
};

// One rank's run (group null: alone). The model starts from a rank-dependent initialisation, so
// the run relies on DDP to give every rank rank 0's weights.
inline RankResult train_rank(const RankRecipe& r, const dist::GroupPtr& group) {
  const int rank = group ? group->rank() : 0, world = group ? group->size() : 1;
  const data::Shard shard{rank, world};
  const HalvesDataset train_set(r.train_count, 1), val_set(r.val_count, 2);
  // On resume, other initial weights: the checkpoint must overwrite them.
  auto model = tiny_model((r.resume ? 50 : 5) + static_cast<uint64_t>(rank), 8, r.dropout);
  optim::Adam optimizer(model->parameters(), optim::GroupOptions().with_lr(r.lr));
  data::DataLoaderOptions o;
  o.batch_size = r.batch;
  o.seed = 17;
  // Augmentation is keyed by (seed, epoch, sample), so it is the same maths on any rank count.
  o.augment = data::AugmentOptions::keras_seed(23);
  data::DataLoader train_loader(train_set, data::train_shard_options(o, train_set.size(), shard));
  data::DataLoaderOptions v;
  v.batch_size = 5;
  v.shuffle = false;
  v.augment.rescale = 1.0 / 255.0;
  data::DataLoader val_loader(val_set, data::eval_shard_options(v, val_set.size(), shard));

  std::ostringstream printed;
  train::FitOptions fit;
  fit.epochs = r.epochs;
  fit.out = &printed;
  fit.group = group;
  fit.validation_from = r.validation_from;
  if (!r.checkpoint.empty()) {
    train::CheckpointOptions c;
    c.path = r.checkpoint;
    c.every_steps = r.every;
    fit.callbacks.push_back(std::make_shared<train::ModelCheckpoint>(c));
  }
  if (!r.rank_files.empty()) {
    const std::string stem = r.rank_files + "/rank" + std::to_string(rank);
    train::CheckpointOptions c;
    c.path = stem + ".ckpt";
    c.every_steps = 2;
    c.best_model_path = stem + ".best.st";
    fit.callbacks.push_back(std::make_shared<train::ModelCheckpoint>(c));
    fit.callbacks.push_back(std::make_shared<train::CsvLogger>(stem + ".csv"));
    fit.callbacks.push_back(std::make_shared<train::JsonLinesLogger>(stem + ".jsonl"));
  }
  fit.stop_on_preemption = r.preempt_at >= 0;
  auto losses = std::make_shared<StepLosses>(r.stop_after, r.preempt_at);
  fit.callbacks.push_back(losses);
  if (r.resume) fit.resume = io::load_checkpoint(r.checkpoint, *model, optimizer);
  std::shared_ptr<nn::Module> trained = model;
  if (world > 1) trained = std::make_shared<dist::DistributedDataParallel>(model, group);

  RankResult result;
  result.history = train::fit(*trained, train::binary_cross_entropy_loss(), optimizer, train_loader,
                              &val_loader, fit);
  result.global_losses = losses->global;
  result.own_losses = losses->own;
  result.weights = flat_weights(*model);
  result.printed = printed.str();
  return result;
}

// The run on `world` thread ranks (1: alone, no group), every rank's result. A crash ends in
// the loom::Error of dist::spawn. A rank left waiting fails after a minute (more under a
// sanitizer), with an error naming the collective, inside CTest's 180 s.
inline std::vector<RankResult> train_ranks(const RankRecipe& r, int world) {
  std::vector<RankResult> results(static_cast<size_t>(world));
  if (world == 1) {
    results[0] = train_rank(r, nullptr);
    return results;
  }
  dist::SpawnOptions options;
  options.group.timeout = scaled(std::chrono::seconds(60), std::chrono::seconds(150));
  dist::spawn(
      world, kCPU,
      [&](dist::ProcessGroup& g) {
        results[static_cast<size_t>(g.rank())] = train_rank(r, g.shared_from_this());
      },
      options);
  return results;
}

}  // namespace loom::testing
