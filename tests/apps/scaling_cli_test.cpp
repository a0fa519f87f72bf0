// loom-scaling as users run it: the CI command on CPU thread ranks and on rank processes, its
// JSON with every field of the schema and 0 differing ranks, its chart; the rank processes'
// failures, hangs and missing results; and time to accuracy on the photographs when present.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "scaling/process_launch.h"
#include "scaling/time_to_accuracy.h"
#include "testing.h"

namespace loom::testing {
namespace {

namespace fs = std::filesystem;

std::string scaling_binary() { return LOOM_SCALING_BIN; }

// Runs loom-scaling with `flags` (after the environment assignments `env`); returns its exit
// status, stdout and stderr together in *output.
int run_scaling_with(const std::string& env, const std::string& flags, std::string* output) {
  const std::string command = env + scaling_binary() + " " + flags + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return -1;
  char buffer[4096];
  while (size_t got = std::fread(buffer, 1, sizeof(buffer), pipe)) output->append(buffer, got);
  const int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int run_scaling(const std::string& flags, std::string* output) {
  return run_scaling_with("", flags, output);
}

fs::path fresh_dir(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("loom_scaling_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(dir);
  return dir;
}

void expect_schema(const nlohmann::json& j, int worlds) {
  for (const char* key : {"tool",           "date",     "model",          "parameters",
                          "gradient_bytes", "device",   "gpu_name",       "gpus_present",
                          "placement",      "launch",   "graph",          "precision",
                          "scaling",        "data",     "batch_per_rank", "steps",
                          "warmup",         "versions", "buckets",        "price_per_gpu_hour",
                          "baseline",       "rows",     "pipeline_rows",  "time_to_accuracy"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  ASSERT_EQ(j.at("rows").size(), static_cast<size_t>(worlds));
  for (const auto& row : j.at("rows")) {
    for (const char* key : {"world_size",
                            "ran",
                            "note",
                            "global_batch",
                            "median_ms",
                            "p10_ms",
                            "p90_ms",
                            "images_per_s",
                            "speedup",
                            "efficiency",
                            "comm_ms",
                            "exposed_comm_ms",
                            "loader_wait_ms",
                            "differing_ranks",
                            "usd_per_million_images",
                            "step_mode",
                            "launch",
                            "exposed_measure",
                            "exposed_share",
                            "rank_median_ms",
                            "rank_images_per_s",
                            "slowest_rank_ms",
                            "slowest_rank",
                            "ddp_step"}) {
      EXPECT_TRUE(row.contains(key)) << key;
    }
    EXPECT_EQ(row.at("rank_median_ms").size(), row.at("world_size").get<size_t>());
    EXPECT_EQ(row.at("step_mode"), "eager") << "the CPU";
    EXPECT_TRUE(row.at("ddp_step").at("held_back").is_number());
    EXPECT_TRUE(row.at("ran").get<bool>());
    EXPECT_EQ(row.at("differing_ranks"), 0);
    EXPECT_GT(row.at("median_ms").get<double>(), 0.0);
    EXPECT_TRUE(row.at("exposed_comm_ms").is_number());
  }
}

TEST(ScalingCli, TheCiCommandWritesEveryFieldWithZeroDifferingRanks) {
  const fs::path out = fresh_dir("ci");
  std::string output;
  ASSERT_EQ(run_scaling("--device cpu --world-sizes 1,2 --steps 5 --warmup 2 --out " + out.string(),
                        &output),
            0)
      << output;
  EXPECT_NE(output.find("# ranks   global"), std::string::npos) << output;
  const nlohmann::json j = nlohmann::json::parse(io::read_file((out / "report.json").string()));
  expect_schema(j, 2);
  EXPECT_EQ(j.at("launch"), "threads");
  const std::string png = io::read_file((out / "speedup.png").string());
  EXPECT_EQ(png.substr(1, 3), "PNG");
  EXPECT_GT(png.size(), 2000u);
  EXPECT_TRUE(fs::exists(out / "report.csv"));
  EXPECT_TRUE(fs::exists(out / "report.txt"));
  fs::remove_all(out);
}

TEST(ScalingCli, PipelineFlagsAddRowsBesideTheDdpOnes) {
  const fs::path out = fresh_dir("pipeline");
  std::string output;
  ASSERT_EQ(run_scaling("--device cpu --world-sizes 2 --pipeline 2 --micro-batches 3 "
                        "--pipeline-schedule 1f1b --steps 3 "
                        "--warmup 1 --warmup-seconds 0 --batch-per-gpu 4 --out " +
                            out.string(),
                        &output),
            0)
      << output;
  EXPECT_NE(output.find("pipeline 2 stages, 3 micro-batches, 1f1b"), std::string::npos) << output;
  const nlohmann::json j = nlohmann::json::parse(io::read_file((out / "report.json").string()));
  expect_schema(j, 1);
  ASSERT_EQ(j.at("pipeline_rows").size(), 1u);
  const nlohmann::json& p = j.at("pipeline_rows")[0];
  EXPECT_TRUE(p.at("ran").get<bool>());
  EXPECT_EQ(p.at("global_batch"), j.at("rows")[0].at("global_batch"));
  EXPECT_EQ(p.at("micro_batches"), 3);
  EXPECT_EQ(p.at("schedule"), "1f1b");
  EXPECT_EQ(p.at("stage_layout").size(), 2u);
  EXPECT_NE(io::read_file((out / "report.csv").string()).find("\npipeline,2,1,8,"),
            std::string::npos);
  EXPECT_EQ(io::read_file((out / "speedup.png").string()).substr(1, 3), "PNG");
  fs::remove_all(out);
}

TEST(ScalingCli, RankProcessesMeasureTheSameWay) {
  const fs::path out = fresh_dir("processes");
  std::string output;
  ASSERT_EQ(run_scaling("--device cpu --world-sizes 1,2 --steps 4 --warmup 1 --warmup-seconds 0.2 "
                        "--batch-per-gpu 8 --launch processes --out " +
                            out.string(),
                        &output),
            0)
      << output;
  const nlohmann::json j = nlohmann::json::parse(io::read_file((out / "report.json").string()));
  expect_schema(j, 2);
  EXPECT_EQ(j.at("launch"), "processes");
  EXPECT_EQ(j.at("rows")[1].at("global_batch"), 16);
  EXPECT_EQ(j.at("rows")[0].at("launch"), "in_process")
      << "a world of one runs beside the plain model";
  EXPECT_EQ(j.at("rows")[1].at("launch"), "processes");
  EXPECT_EQ(j.at("rows")[1].at("rank_images_per_s").size(), 2u)
      << "every rank's median crosses from the rank process";
  for (const auto& entry : fs::directory_iterator(out)) {
    EXPECT_EQ(entry.path().string().find("world"), std::string::npos)
        << "a rank result left behind: " << entry.path();
  }
  fs::remove_all(out);
}

TEST(ScalingCli, UnderALauncherItMeasuresTheJobsOwnSize) {
  const fs::path out = fresh_dir("job");
  std::string output;
  const std::string job = "RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=" +
                          std::to_string(29000 + getpid() % 1000) + " ";
  ASSERT_EQ(run_scaling_with(
                job, "--device cpu --steps 3 --warmup 1 --warmup-seconds 0 --out " + out.string(),
                &output),
            0)
      << output;
  const nlohmann::json j = nlohmann::json::parse(io::read_file((out / "report.json").string()));
  expect_schema(j, 1);
  EXPECT_EQ(j.at("launch"), "env");
  EXPECT_NE(output.find("a job of processes started by env"), std::string::npos) << output;
  output.clear();
  EXPECT_EQ(run_scaling_with(job, "--device cpu --world-sizes 1,2", &output), 1);
  EXPECT_NE(output.find("under a launcher measures the job's own size"), std::string::npos)
      << output;
  fs::remove_all(out);
}

TEST(ScalingCli, BadFlagsAreClearErrorsBeforeAnyMeasuring) {
  const std::pair<const char*, const char*> cases[] = {
      {"--device cpu --gpus 2", "--gpus counts GPUs; with --device cpu use --world-sizes"},
      {"--device cpu --world-sizes 1 --compare /nonexistent.json", "/nonexistent.json"},
      {"--device cpu --world-sizes 1 --time-to-accuracy 0.75 --out /tmp",
       "--time-to-accuracy trains on photographs: give --data DIR"},
      {"--device cpu --world-sizes 1 --pipeline 1",
       "--pipeline 1: a pipeline needs at least 2 stages"},
      {"--device cpu --world-sizes 1 --micro-batches 4",
       "shape the --pipeline rows: give --pipeline too"},
      {"--device cpu --world-sizes 1 --graph maybe",
       "--graph: expected auto, on or off, got 'maybe'"},
      {"--device cpu --world-sizes 1 --graph on", "--graph on: CUDA graphs need --device cuda"},
      {"--device cpu --world-sizes 1 --launch ssh",
       "--launch: expected auto, threads or processes, got 'ssh'"},
  };
  for (const auto& [flags, message] : cases) {
    std::string output;
    EXPECT_EQ(run_scaling(flags, &output), 1) << flags;
    EXPECT_NE(output.find(message), std::string::npos) << flags << ":\n" << output;
  }
}

// run_rank_processes with a shell for the rank program: "$RANK" picks what each rank does
// ("exec sleep": the process stopped is the one that sleeps, as a rank's is).
std::vector<std::string> shell_ranks(const std::string& script) {
  return {"/bin/sh", "-c", script, "rank"};
}

TEST(ScalingRankProcesses, OneRankFailingStopsTheOthersAndNamesIt) {
  const auto start = std::chrono::steady_clock::now();
  EXPECT_LOOM_ERROR(
      scaling::run_rank_processes(shell_ranks("[ \"$RANK\" = 1 ] && exit 3; exec sleep 60"), 2,
                                  (fresh_dir("fail") += ".json").string(), 120),
      "rank 1 of 2 exited with status 3");
  // Scaled, but below rank 0's 60 s sleep.
  EXPECT_LT(std::chrono::steady_clock::now() - start,
            scaled(std::chrono::seconds(20), std::chrono::seconds(50)))
      << "rank 0 was not left to sleep";
}

TEST(ScalingRankProcesses, ARankKilledByASignalIsNamedAsTheCauseNotThePeerThatHeardOfIt) {
  // Rank 1 dies of SIGKILL; rank 0, as a real rank does once its store tells it, exits 1 at
  // once after (when rank 1 is a zombie or reaped), so that the launcher mostly finds both
  // ended in one look, rank 0 first in rank order.
  const std::string pid_file = fresh_dir("signal-pid").string();
  const std::string script =
      "p=" + pid_file +
      "; if [ \"$RANK\" = 1 ]; then echo $$ > $p.tmp && mv $p.tmp $p; kill -KILL $$; fi; "
      "until [ -s $p ] && { [ ! -e /proc/$(cat $p) ] || grep -q 'State:.*Z' /proc/$(cat "
      "$p)/status; "
      "}; do :; done; exit 1";
  try {
    scaling::run_rank_processes(shell_ranks(script), 2, (fresh_dir("signal") += ".json").string(),
                                120);
    ADD_FAILURE() << "a killed rank went unnoticed";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("rank 1 of 2 was killed by signal 9"), std::string::npos) << m;
    EXPECT_EQ(m.find("rank 0 of 2 exited"), std::string::npos) << m;
  }
}

TEST(ScalingRankProcesses, EachLaunchGivesItsRanksANewJobSecret) {
  auto token_of_a_launch = [](const std::string& name) {
    const std::string path = (fresh_dir(name) += ".json").string();
    return scaling::run_rank_processes(
        shell_ranks("[ \"$RANK\" = 0 ] && printf %s \"$LOOM_DIST_TOKEN\" > \"$4\"; exit 0"), 2,
        path, 60);
  };
  const std::string first = token_of_a_launch("token1"), second = token_of_a_launch("token2");
  EXPECT_EQ(first.size(), 32u) << first;
  EXPECT_NE(first, second);
}

TEST(ScalingRankProcesses, AHangIsStoppedAtTheTimeout) {
  EXPECT_LOOM_ERROR(scaling::run_rank_processes(shell_ranks("exec sleep 60"), 2,
                                                (fresh_dir("hang") += ".json").string(), 1),
                    "did not finish within 1 s");
}

TEST(ScalingRankProcesses, RanksSeeTheLaunchVariablesAndRankZeroWritesTheResult) {
  const std::string path = (fresh_dir("vars") += ".json").string();
  // Rank 0 writes its variables where --rank-result (the script's $4) says.
  const std::string text =
      scaling::run_rank_processes(shell_ranks("[ \"$RANK\" = 0 ] && echo \"$RANK $WORLD_SIZE "
                                              "$LOCAL_RANK $MASTER_ADDR $2\" > \"$4\"; exit 0"),
                                  3, path, 60);
  EXPECT_EQ(text, "0 3 0 127.0.0.1 3\n");
  EXPECT_FALSE(fs::exists(path)) << "the result file is removed once read";
  EXPECT_LOOM_ERROR(scaling::run_rank_processes(shell_ranks("exit 0"), 2, path, 60),
                    "wrote no result to");
}

// The photographs, when this machine has them (the reference accuracies are in their README).
std::string cats_dogs() {
  for (const char* dir :
       {"../shared/data/cats_dogs", "../../shared/data/cats_dogs", "/work/shared/data/cats_dogs"}) {
    if (fs::is_directory(fs::path(dir) / "train")) return fs::absolute(dir).string();
  }
  return "";
}

TEST(ScalingTimeToAccuracy, EachWorldTrainsOnThePhotographsAndReportsWhenItReachedTheTarget) {
  const std::string data = cats_dogs();
  if (data.empty())
    GTEST_SKIP() << "no ../shared/data/cats_dogs: the time-to-accuracy run needs the photographs";
  scaling::Config c;
  c.placement = scaling::Placement::Cpu;
  c.world_sizes = {1, 2};
  c.data = data;
  c.batch_per_rank = 32;
  c.price_per_gpu_hour = 3.06;
  scaling::AccuracyConfig a;
  a.epochs = 1;
  a.limit = 640;    // a quick epoch: 640 training photographs, all 2,000 for validation
  a.target = 0.01;  // any trained model gets there in its first epoch
  const fs::path out = fresh_dir("tta");
  fs::create_directories(out);
  a.out_dir = out.string();
  const scaling::AccuracyRun run = scaling::run_time_to_accuracy(c, a);
  ASSERT_EQ(run.rows.size(), 2u);
  for (const auto& r : run.rows) {
    SCOPED_TRACE(r.world_size);
    EXPECT_TRUE(r.ran);
    EXPECT_EQ(r.epochs_to_target, 1);
    EXPECT_GT(r.final_accuracy, 0.3);
    EXPECT_GT(r.seconds, 0.0);
    EXPECT_DOUBLE_EQ(*r.seconds_to_target, r.seconds);
    EXPECT_FALSE(r.usd_to_target.has_value()) << "CPU ranks use no GPU to price";
    EXPECT_TRUE(fs::exists(out / ("tta_world" + std::to_string(r.world_size) + ".safetensors")));
    EXPECT_EQ(r.step_mode, "eager") << "loom-catdog's default on the CPU";
  }
  EXPECT_EQ(run.rows[1].global_batch, 64);
  EXPECT_DOUBLE_EQ(run.rows[1].lr, 2e-3);
  EXPECT_NE(run.lr_rule.find("Goyal"), std::string::npos);
  a.target = 1.0;  // never, on real photographs after one epoch
  c.world_sizes = {1};
  const scaling::AccuracyRun never = scaling::run_time_to_accuracy(c, a);
  EXPECT_FALSE(never.rows[0].epochs_to_target.has_value());
  EXPECT_FALSE(never.rows[0].seconds_to_target.has_value());
  fs::remove_all(out);
}

}  // namespace
}  // namespace loom::testing
