// One process driving several ranks: nothing process-wide may decide a rank's results. Four
// ranks train side by side for 100 steps (each its own model, data and dropout from its own
// generator, the loss averaged across ranks every step) and must equal, bit for bit, the same
// ranks trained one after another on this thread with the same seeds.
#include <gtest/gtest.h>

#include <mutex>

#include "loom/distributed/distributed.h"
#include "testing.h"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace loom::testing {
namespace {

constexpr int kRanks = 4;
constexpr int kRankThreadSteps = 100;

struct RankRun {
  std::vector<float> losses;
  std::vector<float> parameters;
};

// The model, its data and the dropout masks all come from the default generator, which is the
// rank's own under spawn.
RankRun train_one_rank(const std::function<float(float)>& average_loss) {
  auto model = std::make_shared<nn::Sequential>();
  model->add(std::make_shared<nn::Conv2d>(3, 4, 3, Conv2dOptions().padding(1)));
  model->add(std::make_shared<nn::ReLU>());
  model->add(std::make_shared<nn::MaxPool2d>(2));
  model->add(std::make_shared<nn::Flatten>());
  model->add(std::make_shared<nn::Dropout>(0.25));
  model->add(std::make_shared<nn::Linear>(4 * 4 * 4, 1));
  optim::Adam adam(model->parameters(), optim::GroupOptions().with_lr(1e-2));
  const Tensor images = randn({16, 3, 8, 8});
  const Tensor labels = randint(0, 2, {16, 1}, kFloat32);
  RankRun run;
  for (int step = 0; step < kRankThreadSteps; ++step) {
    adam.zero_grad();
    Tensor loss = nn::binary_cross_entropy_with_logits(model->forward(images), labels);
    loss.backward();
    adam.step();
    run.losses.push_back(average_loss(loss.item<float>()));
  }
  for (const Tensor& p : model->parameters()) {
    const std::vector<float> v = p.contiguous().to_vector<float>();
    run.parameters.insert(run.parameters.end(), v.begin(), v.end());
  }
  return run;
}

TEST(RankThreads, FourRanksTrainExactlyAsFourSingleThreadedRuns) {
  const uint64_t seed = 20261201;
  const int omp_threads = 1;  // the reference below runs with the same OpenMP split

  // Side by side, the loss averaged over ranks through the group each step.
  manual_seed(seed);
  std::vector<RankRun> together(kRanks);
  dist::SpawnOptions options;
  options.cpu_threads_per_rank = omp_threads;
  dist::spawn(
      kRanks, kCPU,
      [&](dist::ProcessGroup& g) {
        together[static_cast<size_t>(g.rank())] = train_one_rank([&](float loss) {
          Tensor t = from_vector(std::vector<float>{loss});
          g.all_reduce(t, dist::ReduceOp::Avg)->wait();
          return t.item<float>();
        });
      },
      options);

  // One after another on this thread, each with the seed spawn gave its rank.
#if defined(_OPENMP)
  const int before = omp_get_max_threads();
  omp_set_num_threads(omp_threads);
#endif
  std::vector<RankRun> alone(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    Generator gen(dist::rank_seed(seed, r));
    GeneratorGuard guard(gen);
    alone[static_cast<size_t>(r)] = train_one_rank([](float loss) { return loss; });
  }
#if defined(_OPENMP)
  omp_set_num_threads(before);
#endif

  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(together[r].parameters, alone[r].parameters) << "rank " << r << "'s parameters";
  }
  // The averaged losses: the threads backend sums in rank order, then divides.
  for (int step = 0; step < kRankThreadSteps; ++step) {
    float sum = alone[0].losses[step];
    for (int r = 1; r < kRanks; ++r) sum += alone[r].losses[step];
    const float mean = sum / kRanks;
    for (int r = 0; r < kRanks; ++r) {
      ASSERT_EQ(together[r].losses[step], mean) << "rank " << r << " step " << step;
    }
  }
  // The ranks really were different runs.
  EXPECT_NE(alone[0].parameters, alone[1].parameters);
}

TEST(RankThreads, EachRankHasItsOwnGeneratorSeededFromTheSeedAndRank) {
  manual_seed(7);
  std::vector<float> first(3);
  std::mutex mutex;
  dist::spawn(3, kCPU, [&](dist::ProcessGroup& g) {
    const float v = randn({1}).item<float>();
    std::lock_guard<std::mutex> lock(mutex);
    first[static_cast<size_t>(g.rank())] = v;
  });
  manual_seed(7);
  EXPECT_EQ(first[0], randn({1}).item<float>()) << "rank 0 keeps the caller's seed";
  EXPECT_NE(first[1], first[0]);
  EXPECT_NE(first[2], first[1]);
  EXPECT_EQ(dist::rank_seed(7, 0), 7u);
  EXPECT_NE(dist::rank_seed(7, 1), dist::rank_seed(7, 2));
  EXPECT_NE(dist::rank_seed(7, 1), dist::rank_seed(8, 1));
}

TEST(RankThreads, ManualSeedInsideARankSeedsOnlyThatRank) {
  manual_seed(11);
  dist::spawn(2, kCPU, [&](dist::ProcessGroup&) {
    manual_seed(99);
    EXPECT_EQ(default_generator().seed(), 99u);
  });
  EXPECT_EQ(default_generator().seed(), 11u);
  EXPECT_EQ(default_generator().offset(), 0u);
}

}  // namespace
}  // namespace loom::testing
