// loom-catdog train over ranks on the CPU: --world-size 2 with batch B gives, step by step, the
// losses of --world-size 1 with batch 2B, the same metrics and the same model; a run killed on 2
// ranks resumes as the uninterrupted 2-rank run; --scale-lr linear warms up to world size x
// --lr; two processes of a RANK/WORLD_SIZE launch train as the two thread ranks do; and every
// bad --gpus/--world-size/--device/--backend combination ends with one clear message, no file.
#include <cmath>
#include <limits>
#include <map>

#include "app_runner.h"
#include "testing.h"

namespace loom {
namespace {

using testing::Child;
using testing::step_losses;
namespace fs = std::filesystem;

// The CSV's columns by name, one vector of values per column.
std::map<std::string, std::vector<double>> csv_columns(const std::string& text) {
  std::istringstream lines(text);
  std::string header, line;
  std::getline(lines, header);
  std::vector<std::string> names;
  std::istringstream h(header);
  for (std::string name; std::getline(h, name, ',');) names.push_back(name);
  std::map<std::string, std::vector<double>> columns;
  while (std::getline(lines, line)) {
    std::istringstream cells(line);
    std::string cell;
    for (size_t i = 0; i < names.size() && std::getline(cells, cell, ','); ++i)
      columns[names[i]].push_back(std::stod(cell));
  }
  return columns;
}

void expect_relative(double got, double want, double tolerance, const std::string& what) {
  EXPECT_LE(std::abs(got - want), tolerance * std::abs(want))
      << what << ": " << got << " vs " << want;
}

class CatdogRanks : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = (fs::temp_directory_path() /
             ("loom_catdog_ranks_" + std::to_string(::getpid()) + "_" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name()))
                .string();
    fs::remove_all(root_);
    testing::make_photo_folder(root_ + "/data", 24, 6, 3);  // 48 training, 12 validation images
  }
  void TearDown() override { fs::remove_all(root_); }

  // seed_cnn has neither dropout nor BatchNorm, and the augmentation of a sample is keyed by
  // (seed, epoch, sample index), so 2 ranks of batch b and 1 rank of batch 2b do the same maths:
  // DistributedSampler deals each global batch of the one rank's order to the two ranks, whose
  // averaged gradient is the global batch's mean gradient.
  std::vector<std::string> args(const std::string& name, int world, int64_t batch,
                                int64_t epochs = 3) const {
    return {"train",
            "--data",
            root_ + "/data",
            "--epochs",
            std::to_string(epochs),
            "--batch-size",
            std::to_string(batch),
            "--world-size",
            std::to_string(world),
            "--device",
            "cpu",
            "--workers",
            "0",
            "--seed",
            "3",
            "--print-losses",
            "--out",
            root_ + "/" + name + ".st"};
  }
  std::string root_;
};

TEST_F(CatdogRanks, TwoRanksOfBatchBEqualOneRankOfBatch2B) {
  const auto [s2, two] = testing::run_to_end(args("two", 2, 4), root_ + "/two");
  ASSERT_EQ(s2, 0) << two;
  const auto [s1, one] = testing::run_to_end(args("one", 1, 8), root_ + "/one");
  ASSERT_EQ(s1, 0) << one;
  EXPECT_NE(two.find("world size 2 (threads, threads), batch 4 per rank, 8 global"),
            std::string::npos)
      << two;
  EXPECT_NE(one.find("world size 1, batch 8 per rank, 8 global"), std::string::npos) << one;

  const std::map<int, std::string> l2 = step_losses(two), l1 = step_losses(one);
  ASSERT_EQ(l1.size(), 18u) << one;  // 3 epochs of 48 / 8 steps
  ASSERT_EQ(l2.size(), l1.size()) << two;
  EXPECT_NE(l1.at(1), l1.at(18));
  for (const auto& [step, loss] : l1) {
    expect_relative(std::strtod(l2.at(step).c_str(), nullptr), std::strtod(loss.c_str(), nullptr),
                    1e-5, "step " + std::to_string(step));
  }
  auto m2 = csv_columns(testing::read_text(root_ + "/two.metrics.csv"));
  auto m1 = csv_columns(testing::read_text(root_ + "/one.metrics.csv"));
  for (const char* column : {"loss", "val_loss"}) {
    ASSERT_EQ(m2[column].size(), 3u) << column;
    for (size_t e = 0; e < 3; ++e) expect_relative(m2[column][e], m1[column][e], 1e-5, column);
  }
  EXPECT_EQ(m2["val_accuracy"], m1["val_accuracy"]);
  // The model file of the 2-rank run is the wrapped model, with the 1-rank run's weights. To
  // 1e-4 of each tensor's largest weight, not 1e-5: Adam's update m / sqrt(v) is about +-lr
  // whatever a gradient's size, so the float32 summation-order differences of gradients near
  // zero (one mean over 8 samples against two over 4) move such weights by a fraction of lr
  // per step; over 18 steps of the 3200-input dense layer that reaches 3e-5.
  const io::LoadedModel a = io::load_model(root_ + "/two.st"),
                        b = io::load_model(root_ + "/one.st");
  for (const auto& [name, t] : b.model->state_dict()) {
    const Tensor other = a.model->state_dict().at(name);
    const double scale = std::max(max(abs(t)).item<double>(), 1e-3);
    EXPECT_LE(max(abs(other - t)).item<double>() / scale, 1e-4) << name;
  }
}

TEST_F(CatdogRanks, KilledOnTwoRanksResumesAsTheUninterruptedRun) {
  auto with_checkpoints = [&](const std::string& name) {
    std::vector<std::string> a = args(name, 2, 4);
    a.insert(a.end(), {"--checkpoint-every-steps", "4", "--checkpoint", root_ + "/run.ckpt"});
    return a;
  };
  Child straight(with_checkpoints("straight"), root_ + "/straight");
  ASSERT_EQ(straight.wait(), 0) << straight.err();
  const std::map<int, std::string> losses = step_losses(straight.out());
  ASSERT_EQ(losses.size(), 18u);
  fs::remove(root_ + "/run.ckpt");

  // The second checkpoint write (step 8's, the first to replace a file) pauses halfway, so the
  // kill lands mid-run for sure: step 4's checkpoint, mid-epoch 1, is the last complete one.
  Child killed(with_checkpoints("killed"), root_ + "/killed",
               {std::string(io::kCheckpointPauseEnv) + "=20000"});
  ASSERT_TRUE(killed.wait_for(true, "checkpoint write paused")) << killed.out() << killed.err();
  killed.kill();
  const int from = static_cast<int>(io::read_checkpoint(root_ + "/run.ckpt").state.global_step);
  ASSERT_EQ(from, 4);
  std::vector<std::string> resume = with_checkpoints("resumed");
  resume.insert(resume.end(), {"--resume", root_ + "/run.ckpt"});
  Child resumed(resume, root_ + "/resumed");
  ASSERT_EQ(resumed.wait(), 0) << resumed.err();
  const std::map<int, std::string> after = step_losses(resumed.out());
  ASSERT_EQ(after.size(), losses.size() - from) << resumed.out();
  for (const auto& [step, loss] : after) EXPECT_EQ(loss, losses.at(step)) << "step " << step;
  EXPECT_EQ(testing::read_text(root_ + "/resumed.metrics.csv"),
            testing::read_text(root_ + "/straight.metrics.csv"));

  // The world size sets the global batch: another one is another recipe.
  std::vector<std::string> alone = args("alone", 1, 4);
  alone.insert(alone.end(), {"--resume", root_ + "/run.ckpt"});
  testing::expect_clear_error(alone, root_ + "/alone", "world_size = 2, this run has 1");
}

// Preemption of a job of two processes (TCP launch) where only rank 1 gets the SIGTERM: the
// ranks agree (an all_reduce of the flag every 10 steps and after each epoch) to stop after the
// same step, rank 0 writes that step's checkpoint, both exit 143, and the resumed pair continues
// as the uninterrupted pair, bit for bit.
TEST_F(CatdogRanks, ASigtermToOneProcessStopsTheJobAtOneStepAndResumesExactly) {
  const std::string ckpt = root_ + "/run.ckpt";
  auto launch = [&](const std::string& name, bool resume) {
    const std::string port = std::to_string(25000 + (::getpid() + name.size()) % 20000);
    std::vector<std::unique_ptr<Child>> ranks;
    for (int r = 0; r < 2; ++r) {
      std::vector<std::string> a = args(name + std::to_string(r), 1, 4, 3);
      a.erase(a.begin() + 7, a.begin() + 9);  // no --world-size: the launcher's
      a.insert(a.end(), {"--backend", "tcp", "--checkpoint", ckpt});
      if (resume) a.insert(a.end(), {"--resume", ckpt});
      ranks.push_back(std::make_unique<Child>(
          a, root_ + "/" + name + std::to_string(r),
          std::vector<std::string>{"RANK=" + std::to_string(r), "WORLD_SIZE=2",
                                   "MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + port}));
    }
    return ranks;
  };
  auto straight = launch("straight", false);
  for (auto& c : straight) ASSERT_EQ(c->wait(), 0) << c->out() << c->err();
  const std::map<int, std::string> losses = step_losses(straight[0]->out());
  ASSERT_EQ(losses.size(), 18u);  // 3 epochs of 6 steps
  fs::remove(ckpt);

  auto preempted = launch("preempted", false);
  ASSERT_TRUE(preempted[0]->wait_for(false, "step 2 ")) << preempted[0]->err();
  preempted[1]->signal(SIGTERM);
  for (auto& c : preempted) EXPECT_EQ(c->wait(), 143) << c->out() << c->err();
  const std::map<int, std::string> done = step_losses(preempted[0]->out());
  ASSERT_FALSE(done.empty());
  const int from = static_cast<int>(io::read_checkpoint(ckpt).state.global_step);
  EXPECT_EQ(from, done.rbegin()->first);
  EXPECT_LT(from, 18);
  EXPECT_NE(preempted[0]->out().find("preempted by SIGTERM"), std::string::npos);
  for (const auto& entry : fs::directory_iterator(root_)) {
    const std::string name = entry.path().filename().string();
    EXPECT_EQ(name.find(".tmp-"), std::string::npos) << name;
    EXPECT_EQ(name.find(".lock"), std::string::npos) << name;
  }

  auto resumed = launch("resumed", true);
  for (auto& c : resumed) ASSERT_EQ(c->wait(), 0) << c->out() << c->err();
  const std::map<int, std::string> after = step_losses(resumed[0]->out());
  ASSERT_EQ(after.size(), losses.size() - from) << resumed[0]->out();
  for (const auto& [step, loss] : after) EXPECT_EQ(loss, losses.at(step)) << "step " << step;
  EXPECT_EQ(testing::read_text(root_ + "/resumed0.metrics.csv"),
            testing::read_text(root_ + "/straight0.metrics.csv"));
}

// Issue 38 item 4: SIGTERM to mpirun itself (what a scheduler sends the job first) left a
// checkpoint temporary and its .lock behind. mpirun passes the signal to its ranks, which stop
// at one step boundary: rank 0 checkpoints that step and nothing else is left.
// Each rank writes its output to a file of its own, as a batch job's ranks do: from the moment
// Open MPI's mpirun gets SIGTERM it stops relaying the ranks' output (it sends SIGCONT, SIGTERM a
// second later, then SIGKILL after odls_base_sigkill_timeout, 1 s), so a rank printing a line a
// step into mpirun's terminal fills it, blocks in write() and is killed before it can stop
// (docs/distributed.md).
TEST_F(CatdogRanks, ASigtermToMpirunCheckpointsAndLeavesNoTemporaries) {
  if (std::system("command -v mpirun > /dev/null 2>&1") != 0) GTEST_SKIP() << "no mpirun";
  const std::string ckpt = root_ + "/run.ckpt";
  const std::string rank_out = root_ + "/rank";  // rank R writes rank.R
  std::vector<std::string> a = {
      "--allow-run-as-root",
      "--oversubscribe",
      "--bind-to",
      "none",
      "--mca",
      "btl",
      "self,vader",
      "-np",
      "2",
      "sh",
      "-c",
      "exec \"$0\" \"$@\" > \"" + rank_out + ".$OMPI_COMM_WORLD_RANK\" 2>&1",
      testing::catdog_binary()};
  // Long enough that the signal comes mid-run however loaded the machine is.
  constexpr int kEpochs = 300;
  std::vector<std::string> train = args("mpi", 1, 4, kEpochs);
  train.erase(train.begin() + 7, train.begin() + 9);  // no --world-size: mpirun's
  a.insert(a.end(), train.begin(), train.end());
  a.insert(a.end(), {"--backend", "mpi", "--checkpoint", ckpt});
  // Open MPI leaks at exit by design: under AddressSanitizer the ranks check errors, not leaks.
  Child job(a, root_ + "/mpirun", {"OMP_NUM_THREADS=1", "ASAN_OPTIONS=detect_leaks=0"}, "mpirun");
  const auto rank0 = [&] { return testing::read_text(rank_out + ".0"); };
  const auto end = std::chrono::steady_clock::now() + testing::scaled(std::chrono::seconds(60));
  while (rank0().find("step 2 ") == std::string::npos && std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_NE(rank0().find("step 2 "), std::string::npos) << rank0() << job.out() << job.err();
  job.signal(SIGTERM);
  EXPECT_NE(job.wait(), 0);
  const std::string out = rank0();
  EXPECT_NE(out.find("preempted by SIGTERM"), std::string::npos) << out << job.out() << job.err();
  const std::map<int, std::string> done = step_losses(out);
  ASSERT_FALSE(done.empty());
  EXPECT_EQ(io::read_checkpoint(ckpt).state.global_step, done.rbegin()->first);
  EXPECT_LT(done.rbegin()->first, 6 * kEpochs) << "the run finished before the signal came";
  for (const auto& entry : fs::directory_iterator(root_)) {
    const std::string name = entry.path().filename().string();
    EXPECT_EQ(name.find(".tmp-"), std::string::npos) << name;
    EXPECT_EQ(name.find(".lock"), std::string::npos) << name;
  }
}

TEST_F(CatdogRanks, EarlyStoppingStopsEveryRankAtTheSameEpoch) {
  // Every rank decides from the same metrics (summed over the ranks), so all stop together, where
  // one rank of the global batch stops; a rank that went on would wait in a collective.
  std::vector<std::string> two = args("two", 2, 4, 8), one = args("one", 1, 8, 8);
  for (auto* a : {&two, &one}) a->insert(a->end(), {"--early-stopping", "1"});
  const auto [s2, t2] = testing::run_to_end(two, root_ + "/two");
  ASSERT_EQ(s2, 0) << t2;
  const auto [s1, t1] = testing::run_to_end(one, root_ + "/one");
  ASSERT_EQ(s1, 0) << t1;
  const std::vector<double> acc2 = csv_columns(
                                testing::read_text(root_ + "/two.metrics.csv"))["val_accuracy"],
                            acc1 = csv_columns(
                                testing::read_text(root_ + "/one.metrics.csv"))["val_accuracy"];
  EXPECT_EQ(acc2, acc1);
  ASSERT_LT(acc2.size(), 8u) << t2;
  const std::string said = "early stopping after epoch " + std::to_string(acc2.size()) + " of 8";
  EXPECT_NE(t2.find(said), std::string::npos) << t2;
  EXPECT_NE(t1.find(said), std::string::npos) << t1;
  EXPECT_EQ(io::load_model(root_ + "/two.st").metadata.at("loom.saved_epoch"),
            io::load_model(root_ + "/one.st").metadata.at("loom.saved_epoch"));
}

TEST_F(CatdogRanks, ScaleLrLinearWarmsUpToWorldSizeTimesLr) {
  std::vector<std::string> a = args("scaled", 2, 8);  // 3 steps of each rank's 24 samples per epoch
  a.insert(a.end(), {"--lr", "0.001", "--scale-lr", "linear", "--warmup-epochs", "2"});
  const auto [status, text] = testing::run_to_end(a, root_ + "/scaled");
  ASSERT_EQ(status, 0) << text;
  EXPECT_NE(text.find("lr 0.001 x 2 = 0.002 after a linear warmup over 2 epochs"),
            std::string::npos)
      << text;
  // Goyal et al.'s warmup, per step s of 6: lr = 0.002 * (1/2 + (1/2) s / 6); the epochs' ends
  // are steps 3 (0.0015) and 6 (the full 0.002).
  const std::vector<double> lrs =
      csv_columns(testing::read_text(root_ + "/scaled.metrics.csv"))["lr"];
  ASSERT_EQ(lrs.size(), 3u);
  EXPECT_NEAR(lrs[0], 0.0015, 1e-12);
  EXPECT_NEAR(lrs[1], 0.002, 1e-12);
  EXPECT_NEAR(lrs[2], 0.002, 1e-12);
}

TEST_F(CatdogRanks, TwoProcessesOfARankLaunchTrainAsTwoThreadRanks) {
  const auto [status, threads] = testing::run_to_end(args("threads", 2, 4, 1), root_ + "/threads");
  ASSERT_EQ(status, 0) << threads;
  // As torchrun would start them; rank 1's own file names show that it writes none.
  const std::string port = std::to_string(21000 + ::getpid() % 20000);
  std::vector<std::unique_ptr<Child>> ranks;
  for (int r = 0; r < 2; ++r) {
    std::vector<std::string> a = args("proc" + std::to_string(r), 1, 4, 1);
    a.erase(a.begin() + 7, a.begin() + 9);  // no --world-size: the launcher's
    a.insert(a.end(), {"--backend", "tcp"});
    ranks.push_back(std::make_unique<Child>(
        a, root_ + "/proc" + std::to_string(r),
        std::vector<std::string>{"RANK=" + std::to_string(r), "WORLD_SIZE=2",
                                 "LOCAL_RANK=" + std::to_string(r), "MASTER_ADDR=127.0.0.1",
                                 "MASTER_PORT=" + port}));
  }
  for (auto& c : ranks) ASSERT_EQ(c->wait(), 0) << c->out() << c->err();
  const std::map<int, std::string> launched = step_losses(ranks[0]->out()),
                                   spawned = step_losses(threads);
  ASSERT_EQ(launched.size(), 6u) << ranks[0]->out();
  for (const auto& [step, loss] : spawned) {
    expect_relative(std::strtod(launched.at(step).c_str(), nullptr),
                    std::strtod(loss.c_str(), nullptr), 1e-6, "step " + std::to_string(step));
  }
  EXPECT_NE(ranks[0]->out().find("world size 2 (launched, tcp)"), std::string::npos)
      << ranks[0]->out();
  EXPECT_EQ(ranks[1]->out(), "");
  EXPECT_TRUE(fs::exists(root_ + "/proc0.st"));
  for (const char* file : {"/proc1.st", "/proc1.st.ckpt", "/proc1.metrics.csv"})
    EXPECT_FALSE(fs::exists(root_ + file)) << file;
}

// Issue 38 item 8: the group timeout was 600 s, compiled in. --dist-timeout 1 (or
// LOOM_DIST_TIMEOUT=1) makes a rank whose peer never comes fail in about 1 s, naming the
// timeout: rank 0 waiting for rank 1 in its first collective, rank 1 waiting for rank 0's store.
TEST_F(CatdogRanks, DistTimeoutEndsARankWhosePeerNeverComesInSeconds) {
  const std::string port = std::to_string(41000 + ::getpid() % 20000);
  for (const auto& [rank, flag] : {std::pair<int, bool>{0, true}, {1, true}, {1, false}}) {
    {
      std::vector<std::string> a = args("alone" + std::to_string(rank), 1, 4, 1);
      a.erase(a.begin() + 7, a.begin() + 9);  // no --world-size: the launcher's
      a.insert(a.end(), {"--backend", "tcp"});
      if (flag) a.insert(a.end(), {"--dist-timeout", "1"});
      std::vector<std::string> env{"RANK=" + std::to_string(rank), "WORLD_SIZE=2",
                                   "MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + port};
      if (!flag) env.push_back("LOOM_DIST_TIMEOUT=1");
      const auto start = std::chrono::steady_clock::now();
      Child c(a, root_ + "/alone", env);
      const int status = c.wait();
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const std::string what = "rank " + std::to_string(rank) + (flag ? " (flag)" : " (env)");
      EXPECT_GT(status, 0) << what << c.err();
      EXPECT_LT(status, 128) << what << c.err();
      EXPECT_GE(seconds, 0.95) << what;
      EXPECT_LT(
          seconds,
          testing::scaled(std::chrono::seconds(15), std::chrono::seconds(60)).count() / 1000.0)
          << what << c.err();
      // Rank 1's store connection names 1000 ms; rank 0's first collective 1.000... s.
      const std::string err = c.err();
      EXPECT_TRUE(err.find("1000 ms") != std::string::npos ||
                  err.find("timed out after 1.0") != std::string::npos)
          << what << err;
    }
  }
}

// Issue 38 item 6: RANK=1 WORLD_SIZE=2 with --backend mpi but no mpirun made MPI a world of one
// that trained alone on all the data and wrote the model files; now an error before anything is
// read or written.
TEST_F(CatdogRanks, AnMpiBackendWithoutMpirunInATorchrunEnvironmentIsRefused) {
  std::vector<std::string> a = args("mpi", 1, 4, 1);
  a.erase(a.begin() + 7, a.begin() + 9);  // no --world-size: the launcher's
  a.insert(a.end(), {"--backend", "mpi"});
  Child c(a, root_ + "/mpi",
          {"RANK=1", "WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1",
           "MASTER_PORT=" + std::to_string(43000 + ::getpid() % 20000)});
  EXPECT_EQ(c.wait(), 1) << c.out() << c.err();
  EXPECT_NE(c.err().find("--backend mpi: MPI's ranks come from mpirun or srun, but this process "
                         "was started as rank 1 of 2 ranks (env)"),
            std::string::npos)
      << c.err();
  EXPECT_EQ(c.out(), "");
  for (const char* file : {"/mpi.st", "/mpi.st.ckpt", "/mpi.metrics.csv"})
    EXPECT_FALSE(fs::exists(root_ + file)) << file;
}

// A timeout that is not one is refused before anything runs, naming the flag or the variable.
TEST_F(CatdogRanks, BadDistTimeoutsAreRefusedNamingTheFlag) {
  for (const char* bad : {"0", "-1", "abc", "nan", "1e9", "2s"}) {
    std::vector<std::string> a = args("bad", 2, 4, 1);
    a.insert(a.end(), {"--dist-timeout", bad});
    testing::expect_prompt_error(a, root_ + "/bad",
                                 {"--dist-timeout must be a number of seconds", bad});
  }
  Child c(args("bad", 2, 4, 1), root_ + "/bad", {"LOOM_DIST_TIMEOUT=soon"});
  EXPECT_EQ(c.wait(), 1);
  EXPECT_NE(c.err().find("LOOM_DIST_TIMEOUT must be a number of seconds"), std::string::npos)
      << c.err();
  EXPECT_FALSE(fs::exists(root_ + "/bad.st"));
}

TEST_F(CatdogRanks, BadRankFlagsEndWithAClearMessageAndWriteNothing) {
  const std::string out = root_ + "/bad.st";
  auto bad = [&](const std::vector<std::string>& flags, const std::string& fragment) {
    std::vector<std::string> a = {"train",     "--data", root_ + "/data", "--epochs", "1",
                                  "--workers", "0",      "--out",         out};
    a.insert(a.end(), flags.begin(), flags.end());
    testing::expect_clear_error(a, root_ + "/bad", fragment);
    for (const std::string& file : {out, out + ".ckpt", root_ + "/bad.metrics.csv"}) {
      EXPECT_FALSE(fs::exists(file)) << file << " written by " << fragment;
    }
  };
  const int gpus = cuda_device_count();
  bad({"--gpus", std::to_string(gpus + 3)},
      "--gpus " + std::to_string(gpus + 3) + ": this machine has " + std::to_string(gpus) + " GPU");
  bad({"--world-size", "0", "--device", "cpu"}, "--world-size must be at least 1, got 0");
  bad({"--gpus", "2", "--world-size", "3"}, "--gpus 2 and --world-size 3 disagree");
  bad({"--gpus", "1", "--device", "cpu"}, "--gpus 1 trains on cuda:0 but --device is cpu");
  bad({"--world-size", "2", "--device", "cpu", "--backend", "mpi"},
      "--backend mpi joins processes");
  bad({"--world-size", "2", "--device", "cpu", "--backend", "nccl"},
      "--backend nccl needs --device cuda");
  bad({"--world-size", "2", "--device", "cpu", "--backend", "gloo"},
      "--backend: unknown distributed backend 'gloo'");
  bad({"--backend", "threads", "--device", "cpu"}, "--backend threads: one rank has no backend");
  // Issue 38 item 5: thread ranks past what the machine holds, and 2^31 - 1 (a bad_alloc).
  for (const int world : {dist::max_thread_ranks() + 1, std::numeric_limits<int>::max()}) {
    bad({"--world-size", std::to_string(world), "--device", "cpu"},
        "--world-size " + std::to_string(world) +
            ": more thread ranks than this machine can hold (at most " +
            std::to_string(dist::max_thread_ranks()));
  }
  bad({"--world-size", "2", "--device", "cpu", "--scale-lr", "square"}, "--scale-lr");
  if (gpus < 2) {  // NCCL needs a GPU per rank; sharing one takes an explicit --backend threads
    // Without CUDA, or without any GPU, --device cuda itself is what is refused.
    bad({"--world-size", "2", "--device", "cuda"},
        !built_with_cuda() ? "--device cuda: this loom-catdog was built without CUDA"
        : gpus == 0        ? "--device cuda: this machine has 0 CUDA devices"
                           : "add --backend threads");
  }
}

}  // namespace
}  // namespace loom
