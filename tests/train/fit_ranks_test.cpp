// fit() over thread ranks on the CPU: N ranks of batch b train as one rank of batch N*b (each
// step's loss, every epoch's metrics, the final weights); a run resumed on 2 ranks continues the
// uninterrupted 2-rank run bit for bit; only rank 0 prints and writes files; the ranks agree on
// an epoch's steps; loaders without this rank's shard and checkpoints of another rank count are
// refused.
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "rank_runs.h"

namespace loom {
namespace {

namespace fs = std::filesystem;
using testing::RankRecipe;
using testing::RankResult;
using testing::train_ranks;

void expect_relative(double got, double want, double tolerance, const std::string& what) {
  EXPECT_LE(std::abs(got - want), tolerance * std::max(std::abs(want), 1e-12))
      << what << ": " << got << " vs " << want;
}

class FitRanks : public ::testing::TestWithParam<int> {};

TEST_P(FitRanks, NRanksOfBatchBTrainAsOneRankOfBatchNB) {
  const int world = GetParam();
  RankRecipe per_rank;  // 40 samples: batches of 4 on 2 ranks (5 steps), 4, 4, 2 on 4 ranks
  RankRecipe single = per_rank;
  single.batch = per_rank.batch * world;
  const RankResult one = train_ranks(single, 1)[0];
  const std::vector<RankResult> ranks = train_ranks(per_rank, world);

  ASSERT_EQ(ranks[0].global_losses.size(), one.global_losses.size());
  EXPECT_NE(one.global_losses.front(), one.global_losses.back());
  for (size_t s = 0; s < one.global_losses.size(); ++s) {
    expect_relative(ranks[0].global_losses[s], one.global_losses[s], 1e-5,
                    "step " + std::to_string(s + 1));
  }
  ASSERT_EQ(ranks[0].history.epochs.size(), 2u);
  for (size_t e = 0; e < 2; ++e) {
    const train::EpochMetrics& got = ranks[0].history.epochs[e];
    const train::EpochMetrics& want = one.history.epochs[e];
    for (const char* m : {"loss", "val_loss"}) expect_relative(got.at(m), want.at(m), 1e-5, m);
    // Counts of correct predictions: the same samples, and logits equal to float rounding.
    for (const char* m : {"accuracy", "val_accuracy"}) EXPECT_DOUBLE_EQ(got.at(m), want.at(m)) << m;
  }
  EXPECT_LE(testing::worst_relative(ranks[0].weights, one.weights), 1e-5);
  for (int r = 1; r < world; ++r) {
    EXPECT_EQ(ranks[r].weights, ranks[0].weights) << "rank " << r;
    EXPECT_EQ(ranks[r].history.epochs, ranks[0].history.epochs) << "rank " << r;
    EXPECT_EQ(ranks[r].global_losses, ranks[0].global_losses) << "rank " << r;
    EXPECT_EQ(ranks[r].printed, "") << "rank " << r << " printed";
  }
  // Rank 0 prints the progress lines (at the tenths, the same steps on every rank) and epochs.
  EXPECT_NE(ranks[0].printed.find("Epoch 1/2 step 1/"), std::string::npos) << ranks[0].printed;
  EXPECT_NE(ranks[0].printed.find("Epoch 2/2 "), std::string::npos) << ranks[0].printed;
}

INSTANTIATE_TEST_SUITE_P(Ranks, FitRanks, ::testing::Values(2, 4));

// Every rank skips the same validations (a rank that validated alone would wait in the metrics'
// collectives), and the epoch that validates has one rank's metrics.
TEST(FitRanksValidation, TwoRanksSkipTheEpochsOneRankSkips) {
  RankRecipe per_rank;
  per_rank.epochs = 3;
  per_rank.validation_from = 3;
  RankRecipe single = per_rank;
  single.batch = per_rank.batch * 2;
  const RankResult one = train_ranks(single, 1)[0];
  const std::vector<RankResult> ranks = train_ranks(per_rank, 2);
  for (const RankResult* run : {&one, &ranks[0], &ranks[1]}) {
    ASSERT_EQ(run->history.epochs.size(), 3u);
    for (size_t e = 0; e < 3; ++e)
      EXPECT_EQ(run->history.epochs[e].count("val_accuracy"), e == 2 ? 1u : 0u)
          << "epoch " << e + 1;
  }
  EXPECT_DOUBLE_EQ(ranks[0].history.epochs[2].at("val_accuracy"),
                   one.history.epochs[2].at("val_accuracy"));
  expect_relative(ranks[0].history.epochs[2].at("val_loss"), one.history.epochs[2].at("val_loss"),
                  1e-5, "val_loss");
  EXPECT_EQ(ranks[1].history.epochs, ranks[0].history.epochs);
}

void expect_bit_identical(const RankResult& a, const RankResult& b, const std::string& what) {
  ASSERT_EQ(a.own_losses.size(), b.own_losses.size()) << what;
  for (size_t i = 0; i < a.own_losses.size(); ++i) {
    EXPECT_EQ(std::memcmp(&a.own_losses[i], &b.own_losses[i], sizeof(float)), 0)
        << what << " step " << i << ": " << a.own_losses[i] << " vs " << b.own_losses[i];
  }
  EXPECT_EQ(a.history.epochs, b.history.epochs) << what;
  EXPECT_EQ(a.weights, b.weights) << what;
}

TEST(FitRanksResume, MidEpochOnTwoRanksContinuesTheUninterruptedRun) {
  const std::string dir = testing::temp_dir("loom_ranks", "resume");
  RankRecipe r;
  r.epochs = 3;
  r.dropout = true;  // each rank's own generator, which the resume must restore per rank
  manual_seed(99);   // dist::spawn derives the ranks' generators from it
  const std::vector<RankResult> straight = train_ranks(r, 2);
  ASSERT_EQ(straight[0].own_losses.size(), 15u);
  EXPECT_NE(straight[0].own_losses, straight[1].own_losses);  // the ranks see different samples

  // Checkpoints every 3 steps; the crash at step 8 (epoch 2, its step 3 of 5) leaves step 6's.
  r.checkpoint = dir + "/run.ckpt";
  r.every = 3;
  r.stop_after = 8;
  manual_seed(99);
  EXPECT_LOOM_ERROR(train_ranks(r, 2), "simulated crash");
  const io::Checkpoint ckpt = io::read_checkpoint(r.checkpoint);
  ASSERT_EQ(ckpt.state.global_step, 6);
  ASSERT_EQ(ckpt.state.loss_sum.shape(), (Shape{2}));  // each rank's running sum

  r.stop_after = -1;
  r.resume = true;
  manual_seed(1234);  // the checkpoint's generator state must win over this
  const std::vector<RankResult> resumed = train_ranks(r, 2);
  for (int rank = 0; rank < 2; ++rank) {
    RankResult joined = straight[rank];
    joined.own_losses.assign(straight[rank].own_losses.begin() + 6,
                             straight[rank].own_losses.end());
    expect_bit_identical(resumed[rank], joined, "rank " + std::to_string(rank));
  }
  fs::remove_all(dir);
}

// A preemption that one thread rank sees first (issue 38, what to build 4): the ranks compare
// their flags after every step, so both stop after the same step, rank 0 writes that step's
// checkpoint, and the resumed run continues the uninterrupted one bit for bit.
TEST(FitRanksResume, APreemptionStopsEveryRankAtOneStepAndResumesBitIdentically) {
  const std::string dir = testing::temp_dir("loom_ranks", "preempt");
  RankRecipe r;
  r.epochs = 3;
  const std::vector<RankResult> straight = train_ranks(r, 2);
  ASSERT_EQ(straight[0].own_losses.size(), 15u);

  r.checkpoint = dir + "/run.ckpt";
  r.preempt_at = 7;
  const std::vector<RankResult> preempted = train_ranks(r, 2);
  train::clear_preemption();
  for (const RankResult& p : preempted) {
    EXPECT_EQ(p.history.preempted_by, SIGTERM);
    EXPECT_EQ(p.own_losses.size(), 7u);
  }
  ASSERT_EQ(io::read_checkpoint(r.checkpoint).state.global_step, 7);

  r.preempt_at = -1;
  r.resume = true;
  const std::vector<RankResult> resumed = train_ranks(r, 2);
  for (int rank = 0; rank < 2; ++rank) {
    RankResult joined = straight[rank];
    joined.own_losses.assign(straight[rank].own_losses.begin() + 7,
                             straight[rank].own_losses.end());
    expect_bit_identical(resumed[rank], joined, "rank " + std::to_string(rank));
  }
  fs::remove_all(dir);
}

TEST(FitRanksResume, OnlyRankZeroWritesFiles) {
  const std::string dir = testing::temp_dir("loom_ranks", "files");
  RankRecipe r;
  r.rank_files = dir;  // each rank would write rank<r>.{ckpt,best.st,csv,jsonl}
  const std::vector<RankResult> ranks = train_ranks(r, 2);
  for (const char* suffix : {".ckpt", ".best.st", ".csv", ".jsonl"}) {
    EXPECT_TRUE(fs::exists(dir + "/rank0" + suffix)) << suffix;
    EXPECT_FALSE(fs::exists(dir + "/rank1" + suffix)) << suffix;
  }
  // The files hold the wrapped model (no "module." prefix) and the metrics of all ranks.
  EXPECT_NO_THROW(io::load_model(dir + "/rank0.best.st"));
  EXPECT_NO_THROW(io::load_safetensors(dir + "/rank0.ckpt").at("model.0.weight"));
  std::ifstream csv(dir + "/rank0.csv");
  const std::string text((std::istreambuf_iterator<char>(csv)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, train::history_csv(ranks[0].history));
  fs::remove_all(dir);
}

// Rank 0 deals 3 batches, rank 1 only 2: both take 2 steps (the fewest), as drop_last would.
class UnevenSampler : public data::Sampler {
 public:
  UnevenSampler(int rank) : rank_(rank) {}
  std::vector<int64_t> indices(int64_t) const override {
    return rank_ == 0 ? std::vector<int64_t>{0, 2, 4, 6, 8, 10} : std::vector<int64_t>{1, 3, 5, 7};
  }
  data::Shard shard() const override { return {rank_, 2}; }

 private:
  int rank_;
};

class StepCounter : public train::Callback {
 public:
  void on_epoch_end(train::TrainContext& ctx, const train::EpochMetrics&) override {
    steps.push_back(ctx.step_in_epoch);
    samples.push_back(ctx.samples_seen);
  }
  std::vector<int64_t> steps, samples;
};

TEST(FitRanksSteps, RanksTakeTheFewestRanksSteps) {
  const testing::HalvesDataset set(12, 3);
  std::vector<std::vector<int64_t>> steps(2), samples(2);
  std::vector<train::History> histories(2);
  dist::spawn(2, kCPU, [&](dist::ProcessGroup& g) {
    auto model = testing::tiny_model(1, 8, false);
    auto ddp = std::make_shared<dist::DistributedDataParallel>(model, g.shared_from_this());
    optim::SGD optimizer(model->parameters(), optim::GroupOptions().with_lr(0.01));
    data::DataLoaderOptions o;
    o.batch_size = 2;
    o.sampler = std::make_shared<UnevenSampler>(g.rank());
    o.augment.rescale = 1.0 / 255.0;
    data::DataLoader loader(set, o);
    auto counter = std::make_shared<StepCounter>();
    train::FitOptions fit;
    fit.epochs = 2;
    fit.out = nullptr;
    fit.group = g.shared_from_this();
    fit.callbacks = {counter};
    histories[g.rank()] =
        train::fit(*ddp, train::binary_cross_entropy_loss(), optimizer, loader, nullptr, fit);
    steps[g.rank()] = counter->steps;
    samples[g.rank()] = counter->samples;
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(steps[r], (std::vector<int64_t>{2, 2})) << "rank " << r;
    EXPECT_EQ(samples[r], (std::vector<int64_t>{4, 4})) << "rank " << r;
  }
  EXPECT_EQ(histories[0].epochs, histories[1].epochs);
}

TEST(FitRanksErrors, UnshardedLoadersAndAnotherRankCountsCheckpointAreRefused) {
  const testing::HalvesDataset set(16, 3);
  const std::string dir = testing::temp_dir("loom_ranks", "errors");
  // A mid-epoch checkpoint of one rank: the run crashes right after step 2's.
  {
    auto model = testing::tiny_model(1);
    optim::SGD optimizer(model->parameters(), optim::GroupOptions().with_lr(0.01));
    data::DataLoaderOptions o;
    o.batch_size = 4;
    data::DataLoader loader(set, o);
    train::CheckpointOptions c;
    c.path = dir + "/one.ckpt";
    c.every_steps = 2;
    train::FitOptions fit;
    fit.out = nullptr;
    fit.callbacks = {std::make_shared<train::ModelCheckpoint>(c),
                     std::make_shared<testing::StepLosses>(2)};
    EXPECT_THROW(
        train::fit(*model, train::binary_cross_entropy_loss(), optimizer, loader, nullptr, fit),
        std::runtime_error);
    ASSERT_EQ(io::read_checkpoint(c.path).state.step_in_epoch, 2);
  }
  enum Case { kTrainNotSharded, kValNotSharded, kResumeOtherRanks };
  for (Case which : {kTrainNotSharded, kValNotSharded, kResumeOtherRanks}) {
    const char* expected =
        which == kTrainNotSharded ? "of 2 (threads) deals shard 0 of 1, not this rank's"
        : which == kValNotSharded
            ? "the validation loader of rank"
            : "cannot resume mid-epoch on 2 ranks: the checkpoint was taken mid-epoch on 1";
    EXPECT_LOOM_ERROR(
        dist::spawn(
            2, kCPU,
            [&](dist::ProcessGroup& g) {
              auto model = testing::tiny_model(1);
              auto ddp =
                  std::make_shared<dist::DistributedDataParallel>(model, g.shared_from_this());
              optim::SGD optimizer(model->parameters(), optim::GroupOptions().with_lr(0.01));
              data::DataLoaderOptions o;
              o.batch_size = 4;
              const data::Shard shard{g.rank(), g.size()};
              data::DataLoader train_loader(
                  set,
                  which == kTrainNotSharded ? o : data::train_shard_options(o, set.size(), shard));
              data::DataLoader val_loader(
                  set,
                  which == kValNotSharded ? o : data::eval_shard_options(o, set.size(), shard));
              train::FitOptions fit;
              fit.out = nullptr;
              fit.group = g.shared_from_this();
              if (which == kResumeOtherRanks)
                fit.resume = io::load_checkpoint(dir + "/one.ckpt", *model, optimizer);
              train::fit(*ddp, train::binary_cross_entropy_loss(), optimizer, train_loader,
                         &val_loader, fit);
            }),
        expected);
  }
  fs::remove_all(dir);
}

TEST(ShardOptions, EvalShardsCoverEverySampleOnceAndTrainShardsAreEqual) {
  std::vector<int64_t> seen;
  for (int rank = 0; rank < 4; ++rank) {
    const data::DistributedEvalSampler s(18, rank, 4);
    EXPECT_EQ(s.shard().rank, rank);
    const std::vector<int64_t> part = s.indices(3);
    EXPECT_EQ(part.size(), rank < 2 ? 5u : 4u);
    seen.insert(seen.end(), part.begin(), part.end());
  }
  std::sort(seen.begin(), seen.end());
  for (int64_t i = 0; i < 18; ++i) EXPECT_EQ(seen[static_cast<size_t>(i)], i);
  data::DataLoaderOptions o;
  o.seed = 5;
  EXPECT_EQ(data::train_shard_options(o, 18, {}).sampler, nullptr);  // one rank: unchanged
  const data::DataLoaderOptions sharded = data::train_shard_options(o, 18, {1, 4});
  ASSERT_NE(sharded.sampler, nullptr);
  EXPECT_EQ(sharded.sampler->shard().world_size, 4);
  EXPECT_EQ(sharded.sampler->indices(2), data::DistributedSampler(18, 1, 4, true, 5).indices(2));
  EXPECT_LOOM_ERROR(data::train_shard_options(sharded, 18, {0, 2}), "already name a sampler");
  EXPECT_LOOM_ERROR(data::DistributedEvalSampler(5, 2, 2), "rank 2 is outside [0, 2)");
}

}  // namespace
}  // namespace loom
