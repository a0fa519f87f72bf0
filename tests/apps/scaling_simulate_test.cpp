// loom-scaling simulate: the alpha-beta fit recovers a known link from collectives_bench-style
// rows and reproduces them, the model meets its closed forms (one GPU, infinite bandwidth, no
// overlap, the ring/tree crossing, two nodes by hand), DDP's own cost comes from the world-1 row,
// the report marks every row, and bad inputs are errors naming what is wrong.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "scaling/simulate.h"
#include "testing.h"

namespace loom::testing {
namespace {

using scaling::LinkModel;

// A report.json in the schema of apps/scaling/README.md: 10 ms plain step, batch 32, three
// buckets (16 MiB, 16 MiB, 1 MiB, the last small as a model's first layers), DDP at world 1 in
// 10.5 ms (w = 0.5 ms, exact in binary), and world 8 measured in 10.8 ms with 0.4 ms of
// all-reduce of which 0.1 ms was exposed.
const char* kRun = R"({
  "tool": "loom", "date": "2026-12-01 10:00 UTC", "model": "resnet_like", "parameters": 8650752,
  "gradient_bytes": 34603008, "device": "cuda", "gpu_name": "NVIDIA H200", "gpus_present": 8,
  "placement": "gpus", "launch": "threads", "precision": "tf32", "scaling": "weak", "data": "synthetic",
  "batch_per_rank": 32, "steps": 300, "warmup": 50,
  "versions": {"driver": "", "cuda": "", "cudnn": "", "nccl": "2.28.3", "framework": ""},
  "buckets": [{"numel": 4194304, "bytes": 16777216, "dtype": "float32"},
              {"numel": 4194304, "bytes": 16777216, "dtype": "float32"},
              {"numel": 262144, "bytes": 1048576, "dtype": "float32"}],
  "price_per_gpu_hour": null,
  "baseline": {"world_size": 1, "ran": true, "note": "plain model", "global_batch": 32, "median_ms": 10.0,
               "p10_ms": 9.9, "p90_ms": 10.1, "images_per_s": 3200, "speedup": 1, "efficiency": 1,
               "comm_ms": null, "exposed_comm_ms": null, "loader_wait_ms": 0, "differing_ranks": 0,
               "usd_per_million_images": null},
  "rows": [
    {"world_size": 1, "ran": true, "note": "", "global_batch": 32, "median_ms": 10.5, "p10_ms": 10.4,
     "p90_ms": 10.6, "images_per_s": 3047.6, "speedup": 0.952, "efficiency": 0.952, "comm_ms": 0.001,
     "exposed_comm_ms": 0.001, "loader_wait_ms": 0, "differing_ranks": 0, "usd_per_million_images": null},
    {"world_size": 8, "ran": true, "note": "", "global_batch": 256, "median_ms": 10.8, "p10_ms": 10.7,
     "p90_ms": 11.0, "images_per_s": 23704, "speedup": 7.41, "efficiency": 0.926, "comm_ms": 0.4,
     "exposed_comm_ms": 0.1, "loader_wait_ms": 0, "differing_ranks": 0, "usd_per_million_images": null},
    {"world_size": 16, "ran": false, "note": "not run: needs 16 GPUs, this machine has 8", "global_batch": 512,
     "median_ms": 0, "p10_ms": 0, "p90_ms": 0, "images_per_s": 0, "speedup": 0, "efficiency": 0,
     "comm_ms": null, "exposed_comm_ms": null, "loader_wait_ms": 0, "differing_ranks": 0,
     "usd_per_million_images": null}],
  "time_to_accuracy": null
})";

nlohmann::json run_json() { return nlohmann::json::parse(kRun); }

const double kPlainMs = 10.0, kDdpMs = 0.5;  // t_c and w of kRun

// kRun without its DDP world-1 row: w = 0.
std::string run_without_world_one() {
  auto run = run_json();
  run["rows"].erase(0);
  return run.dump();
}

const double kInf = std::numeric_limits<double>::infinity();

LinkModel link(double alpha_us, double busbw_gbps) {
  return {alpha_us, busbw_gbps, "given: test", 0, 0, 0};
}

// The links of the hand computations: NVLink alpha 1 us, 100 GB/s; the network 400 Gb/s, 5 us.
scaling::SimulateConfig hand_config(std::vector<int> gpus) {
  scaling::SimulateConfig c;
  c.gpus = std::move(gpus);
  c.run_json_text = kRun;
  c.intra = link(1.0, 100.0);
  c.inter_gbit_per_s = 400;
  c.inter_alpha_us = 5;
  return c;
}

scaling::ClusterModel hand_model() {
  return {8, link(1.0, 100.0), scaling::network_link(400, 5, "given: test")};
}

const scaling::SimRow& simulated(const scaling::SimReport& r, int gpus) {
  for (const auto& row : r.rows) {
    if (row.simulated && row.gpus == gpus) return row;
  }
  throw std::runtime_error("no simulated row for " + std::to_string(gpus) + " GPUs");
}

// collectives_bench --json rows of a ring all-reduce with the given alpha and busbw, each time
// off by a deterministic relative noise of up to `noise`.
std::string bench_lines(int world, double alpha_us, double busbw_gbps, double noise,
                        const std::string& backend = "nccl", const std::string& op = "all_reduce") {
  std::ostringstream out;
  int i = 0;
  for (int64_t size = 8; size <= (int64_t{256} << 20); size *= 2, ++i) {
    const double t =
        scaling::ring_all_reduce_us(world, static_cast<double>(size), link(alpha_us, busbw_gbps)) *
        (1 + noise * std::sin(1.7 * i));
    const double algbw = static_cast<double>(size) / t / 1e3;
    out << nlohmann::json{{"framework", "loom"}, {"backend", backend},
                          {"world_size", world}, {"device", "cuda:0"},
                          {"nccl", "2.28.3"},    {"op", op},
                          {"dtype", "float32"},  {"redop", "sum"},
                          {"root", -1},          {"size_bytes", size},
                          {"count", size / 4},   {"time_us", t},
                          {"algbw_gbps", algbw}, {"busbw_gbps", algbw * 2 * (world - 1) / world},
                          {"wrong", 0},          {"iters", 20},
                          {"warmup", 5}}
               .dump()
        << "\n";
  }
  return out.str();
}

TEST(ScalingSimulate, FitRecoversTheLinkAndReproducesItsPoints) {
  const double alpha = 1.5, busbw = 300;
  const std::string fitted = bench_lines(8, alpha, busbw, 0.015);
  // Rows the fit must leave out: a smaller world, another op, the threads backend, a wrong row.
  std::string lines = "# a comment line\n\n" + bench_lines(4, 9.0, 50, 0) +
                      bench_lines(8, 50, 10, 0, "nccl", "broadcast") +
                      bench_lines(8, 80, 5, 0, "threads") + fitted;
  auto bad = nlohmann::json::parse(fitted.substr(0, fitted.find('\n')));
  bad["time_us"] = 1e6;
  bad["wrong"] = 3;
  lines += bad.dump() + "\n";

  const LinkModel l = scaling::fit_all_reduce(lines, "bench.jsonl");
  EXPECT_EQ(l.fitted_world, 8);
  EXPECT_EQ(l.fitted_points, 26);  // 8 B .. 256 MiB, doubling
  EXPECT_NEAR(l.alpha_us, alpha, 0.03 * alpha);
  EXPECT_NEAR(l.busbw_gbps, busbw, 0.02 * busbw);
  EXPECT_LT(l.worst_residual, 0.03);
  EXPECT_NE(l.source.find("fitted to bench.jsonl (all_reduce, nccl, world 8, 26 rows"),
            std::string::npos)
      << l.source;
  std::istringstream rows(fitted);
  for (std::string line; std::getline(rows, line);) {
    const auto row = nlohmann::json::parse(line);
    const double measured = row["time_us"].get<double>();
    const double predicted = scaling::ring_all_reduce_us(8, row["size_bytes"].get<double>(), l);
    EXPECT_NEAR(predicted, measured, 0.03 * measured) << line;
  }
  EXPECT_NEAR(scaling::fit_all_reduce(lines, "bench.jsonl", 4).alpha_us, 9.0, 1e-6);  // exact rows

  // The simulator at the fitted world reproduces the benchmark's times at the buckets' sizes.
  scaling::SimulateConfig c;
  c.gpus = {8};
  c.run_json_text = kRun;
  c.collectives_jsonl_text = lines;
  const scaling::SimReport r = scaling::simulate(c);
  auto bench_us = [&](int64_t size) {
    std::istringstream in(fitted);
    for (std::string line; std::getline(in, line);) {
      const auto row = nlohmann::json::parse(line);
      if (row["size_bytes"].get<int64_t>() == size) return row["time_us"].get<double>();
    }
    return 0.0;
  };
  const double measured_ms = (2 * bench_us(16 << 20) + bench_us(1 << 20)) / 1e3;
  EXPECT_NEAR(*simulated(r, 8).comm_ms, measured_ms, 0.03 * measured_ms);
}

TEST(ScalingSimulate, OneGpuIsTheDdpWorldOneStep) {
  const scaling::SimReport r = scaling::simulate(hand_config({1}));
  const scaling::SimRow& one = simulated(r, 1);
  EXPECT_EQ(*one.comm_ms, 0.0);
  EXPECT_EQ(*one.exposed_comm_ms, 0.0);
  EXPECT_EQ(one.step_ms, 10.5);  // t_c + w: the run's DDP world-1 step, by construction
  EXPECT_DOUBLE_EQ(one.speedup, kPlainMs / (kPlainMs + kDdpMs));
  EXPECT_EQ(one.algorithm, "none");
  // Without the world-1 row there is no wrapper cost: the plain model's step, speedup 1.
  scaling::SimulateConfig c = hand_config({1});
  c.run_json_text = run_without_world_one();
  const scaling::SimReport without = scaling::simulate(c);  // the row below refers into it
  const scaling::SimRow& plain = simulated(without, 1);
  EXPECT_EQ(plain.step_ms, 10.0);
  EXPECT_EQ(plain.speedup, 1.0);
  EXPECT_EQ(plain.efficiency, 1.0);
}

TEST(ScalingSimulate, InfiniteBandwidthAndZeroLatencyLeaveOnlyTheDdpCost) {
  // step(n) = t_c(n) + w: weak speedup n t_c / (t_c + w), strong t_c / (t_c / n + w) (w is not
  // split), and exactly n without the world-1 row (w = 0).
  for (const bool with_world_one : {true, false}) {
    for (const char* scaling_kind : {"weak", "strong"}) {
      auto run = nlohmann::json::parse(with_world_one ? kRun : run_without_world_one());
      run["scaling"] = scaling_kind;
      const bool strong = std::string(scaling_kind) == "strong";
      scaling::SimulateConfig c = hand_config({1, 2, 8, 16, 64, 256, 1024});
      c.run_json_text = run.dump();
      c.intra = link(0, kInf);
      c.inter_gbit_per_s = kInf;
      c.inter_alpha_us = 0;
      const scaling::SimReport r = scaling::simulate(c);
      const double w = with_world_one ? kDdpMs : 0.0;
      EXPECT_EQ(r.ddp_ms, w);
      for (int n : c.gpus) {
        const std::string what = std::string(scaling_kind) + " " + std::to_string(n) +
                                 (with_world_one ? " with" : " without") + " the world-1 row";
        const scaling::SimRow& row = simulated(r, n);
        EXPECT_EQ(*row.comm_ms, 0.0) << what;
        EXPECT_EQ(*row.ddp_ms, w) << what;
        const double t_c = strong ? kPlainMs / n : kPlainMs;
        EXPECT_EQ(row.step_ms, t_c + w) << what;
        if (with_world_one) {
          const double speedup =
              strong ? kPlainMs / (kPlainMs / n + w) : n * kPlainMs / (kPlainMs + w);
          EXPECT_DOUBLE_EQ(row.speedup, speedup) << what;
          EXPECT_DOUBLE_EQ(row.efficiency, speedup / n) << what;
        } else {
          EXPECT_DOUBLE_EQ(row.speedup, n) << what;
          EXPECT_DOUBLE_EQ(row.efficiency, 1.0) << what;
        }
      }
      if (strong) {  // global batch 32 split: t_c / n
        EXPECT_DOUBLE_EQ(*simulated(r, 16).compute_ms, 10.0 / 16);
        EXPECT_DOUBLE_EQ(simulated(r, 16).batch_per_gpu, 2.0);
        EXPECT_NE(simulated(r, 64).note.find("fewer than one image per GPU"), std::string::npos);
      }
    }
  }
}

TEST(ScalingSimulate, DdpCostIsTheWorldOneRowOverThePlainModel) {
  const scaling::SimReport r = scaling::simulate(hand_config({1, 16, 1024}));
  EXPECT_EQ(r.ddp_ms, 0.5);  // 10.5 - 10.0
  EXPECT_EQ(*r.world1_step_ms, 10.5);
  EXPECT_NE(r.ddp_source.find("measured: the run's DDP world-1 step 10.500 ms - baseline.median_ms "
                              "10.000 ms"),
            std::string::npos)
      << r.ddp_source;
  for (const auto& row : r.rows) {  // the same at every count; not known for measured rows
    EXPECT_EQ(row.ddp_ms.value_or(-1), row.simulated ? 0.5 : -1) << row.gpus;
  }
  const auto j = nlohmann::json::parse(scaling::simulate_json(r));
  EXPECT_EQ(j["ddp"]["ms"], 0.5);
  EXPECT_EQ(j["ddp"]["world1_step_ms"], 10.5);
  EXPECT_EQ(j["rows"][0]["kind"], "measured");
  EXPECT_TRUE(j["rows"][0]["ddp_ms"].is_null());
  EXPECT_EQ(j["rows"][1]["ddp_ms"], 0.5);

  // A DDP row faster than the plain model (timing noise) gives w = 0, not a negative cost.
  auto faster = run_json();
  faster["rows"][0]["median_ms"] = 9.8;
  scaling::SimulateConfig c = hand_config({16});
  c.run_json_text = faster.dump();
  const scaling::SimReport f = scaling::simulate(c);
  EXPECT_EQ(f.ddp_ms, 0.0);
  EXPECT_EQ(*simulated(f, 16).ddp_ms, 0.0);
  EXPECT_NE(f.ddp_source.find("world-1 step 9.800 ms - baseline.median_ms 10.000 ms, not "
                              "positive, so 0"),
            std::string::npos)
      << f.ddp_source;

  // No world-1 row that ran: w = 0, said so.
  auto not_run = run_json();
  not_run["rows"][0]["ran"] = false;
  for (const std::string& text : {not_run.dump(), run_without_world_one()}) {
    c.run_json_text = text;
    const scaling::SimReport none = scaling::simulate(c);
    EXPECT_EQ(none.ddp_ms, 0.0);
    EXPECT_FALSE(none.world1_step_ms.has_value());
    EXPECT_NE(none.ddp_source.find("default: RUN.json has no DDP row at world 1 that ran, so 0"),
              std::string::npos)
        << none.ddp_source;
    EXPECT_NE(scaling::simulate_text(none).find("# DDP's own work per step w = 0.000 ms: default"),
              std::string::npos);
  }
}

TEST(ScalingSimulate, NoOverlapExposesAllCommunication) {
  scaling::SimulateConfig c = hand_config({8, 16, 1024});
  c.overlap = 0.0;
  const scaling::SimReport r = scaling::simulate(c);
  // n = 8, one node: per bucket 2*7*1 us + 2*7/8 * S / (1e5 B/us).
  const double big = 14 + 1.75 * 16777216 / 1e5, small = 14 + 1.75 * 1048576 / 1e5;
  EXPECT_NEAR(*simulated(r, 8).comm_ms, (2 * big + small) / 1e3, 1e-12);
  for (int n : c.gpus) {
    const scaling::SimRow& row = simulated(r, n);
    double total_us = 0;
    for (int64_t b : r.bucket_bytes)
      total_us += scaling::all_reduce_us(n, static_cast<double>(b), r.model).us;
    EXPECT_EQ(*row.exposed_comm_ms, *row.comm_ms) << n;
    EXPECT_NEAR(*row.comm_ms, total_us / 1e3, 1e-12) << n;
    EXPECT_EQ(row.step_ms, 10.0 + 0.5 + *row.comm_ms) << n;  // t_c + w + T(n)
    EXPECT_NEAR(row.speedup, n * 10.0 / row.step_ms, 1e-12 * n) << n;
    EXPECT_NEAR(row.images_per_s, n * 32 / (row.step_ms / 1e3), 1e-9 * row.images_per_s) << n;
  }
}

TEST(ScalingSimulate, ExposedIsTheLastBucketOrWhatTheHiddenWindowCannotHold) {
  const scaling::SimReport r = scaling::simulate(hand_config({8, 64}));
  // The run measured f = 1 - 0.1 / 0.4 at world 8; H = f * T(8) of the model.
  EXPECT_DOUBLE_EQ(r.overlap, 0.75);
  EXPECT_EQ(r.reference_world, 8);
  EXPECT_NE(r.overlap_source.find("measured at world 8"), std::string::npos);
  const scaling::ClusterModel m = hand_model();
  auto T = [&](int n, int64_t bytes) {
    return scaling::all_reduce_us(n, static_cast<double>(bytes), m).us / 1e3;
  };
  const double t8 = 2 * T(8, 16 << 20) + T(8, 1 << 20), t64 = 2 * T(64, 16 << 20) + T(64, 1 << 20);
  EXPECT_NEAR(r.hidden_ms, 0.75 * t8, 1e-12);
  // At the reference world the measured fraction stays exposed (above the last bucket's time) ...
  EXPECT_NEAR(*simulated(r, 8).exposed_comm_ms, 0.25 * t8, 1e-12);
  // ... on 8 nodes the window holds the same milliseconds, and the rest is exposed.
  EXPECT_NEAR(*simulated(r, 64).exposed_comm_ms, t64 - 0.75 * t8, 1e-12);
  // Full overlap: only the last bucket, which starts when backward ends, is exposed.
  scaling::SimulateConfig c = hand_config({8});
  c.overlap = 1.0;
  EXPECT_NEAR(*simulated(scaling::simulate(c), 8).exposed_comm_ms, T(8, 1 << 20), 1e-12);
}

// A captured run's exposed time is its step minus the plain step's, DDP's own work w included:
// the overlap takes w back out, so the same stall as kRun's gives the same f.
TEST(ScalingSimulate, ACapturedRowsExposedTimeLeavesDdpsOwnWorkOut) {
  auto captured = run_json();
  captured["rows"][1]["exposed_comm_ms"] = 0.6;  // 0.5 of w + kRun's 0.1 of stall
  captured["rows"][1]["exposed_measure"] = "ddp_minus_plain";
  scaling::SimulateConfig c = hand_config({8});
  c.run_json_text = captured.dump();
  const scaling::SimReport r = scaling::simulate(c);
  EXPECT_DOUBLE_EQ(r.overlap, 0.75);
  EXPECT_DOUBLE_EQ(*r.measured_exposed_ms, 0.1);
  EXPECT_NE(r.overlap_source.find("a captured row: exposed = its step - the plain step - w"),
            std::string::npos)
      << r.overlap_source;
  captured["rows"][1]["exposed_comm_ms"] =
      0.3;  // less than w: nothing exposed, not a negative stall
  c.run_json_text = captured.dump();
  EXPECT_DOUBLE_EQ(scaling::simulate(c).overlap, 1.0);
}

TEST(ScalingSimulate, TwoNodesMatchTheHandComputation) {
  // 80 MB over 2 nodes x 8: intra ring 2*7*1 + 2*7/8 * 8e7 / 1e5 = 1414 us; between the nodes
  // 10 MB per GPU at 50 GB/s: ring 2*1*5 + 2*1/2 * 1e7 / 5e4 = 210 us, tree 2*1*5 + 2 * 1e7 / 5e4
  // = 410 us: ring. 1624 us in all.
  const scaling::AllReduceTime t = scaling::all_reduce_us(16, 8e7, hand_model());
  EXPECT_NEAR(t.us, 1624.0, 1e-9);
  EXPECT_EQ(t.algorithm, "ring");
  EXPECT_EQ(t.nodes, 2);
  EXPECT_NEAR(scaling::tree_all_reduce_us(2, 1e7, hand_model().inter), 410.0, 1e-9);
}

TEST(ScalingSimulate, RingAndTreeSwapWhereTheFormulasCross) {
  // Between N = 16 nodes (L = 4 tree levels), ring 2*15a + 2*15/16 s/B equals tree 2*4a + 2 s/B
  // at s* = a * B * N * (N - 1 - L) = 5 us * 5e4 B/us * 16 * 11 = 4.4e7 bytes per GPU.
  const scaling::ClusterModel m = hand_model();
  const double s_star = 5 * 5e4 * 16 * 11;
  EXPECT_NEAR(scaling::ring_all_reduce_us(16, s_star, m.inter),
              scaling::tree_all_reduce_us(16, s_star, m.inter), 1e-9);
  EXPECT_EQ(scaling::all_reduce_us(128, 8 * 0.99 * s_star, m).algorithm, "tree");
  EXPECT_EQ(scaling::all_reduce_us(128, 8 * 1.01 * s_star, m).algorithm, "ring");
  EXPECT_EQ(scaling::all_reduce_us(16, 8, m).algorithm, "ring");  // 2 nodes: tree never faster
  EXPECT_EQ(scaling::all_reduce_us(8, 8, m).algorithm, "ring");   // within a node: ring
  const double small = 1e6;  // below s*: the tree's time is the one taken
  EXPECT_NEAR(scaling::all_reduce_us(128, 8 * small, m).us,
              scaling::ring_all_reduce_us(8, 8 * small, m.intra) +
                  scaling::tree_all_reduce_us(16, small, m.inter),
              1e-9);
}

TEST(ScalingSimulate, TheReportMarksEveryRowAndStatesItsAssumptions) {
  const scaling::SimReport r = scaling::simulate(hand_config({16, 64, 256, 1024}));
  const std::string text = scaling::simulate_text(r);
  for (const char* part :
       {"# loom-scaling simulate", "# compute per step t_c = 10.000 ms", "3 buckets",
        "# intra-node, 8 GPUs per node: alpha 1.000 us/step, busbw 100.0 GB/s: given: test",
        "# inter-node, per GPU: alpha 5.000 us/step, busbw 50.0 GB/s: given: 400 Gb/s per GPU at "
        "line rate; 5.00 us per network step (given)",
        "# overlap f = 0.750: measured at world 8", "the run's measured comm_ms 0.4000 ms",
        "# DDP's own work per step w = 0.500 ms: measured: the run's DDP world-1 step 10.500 ms",
        "the run's world 8 step 10.800 ms = t_c(8) 10.000 + w 0.500 + exposed 0.100 + 0.200 ms "
        "that the model leaves out",
        "exposed(n) = max(T_last(n), T(n) - H)", "step(n) = t_c(n) + w + exposed(n)",
        "compute_ms      ddp_ms     comm_ms", "#  gpus  nodes"}) {
    EXPECT_NE(text.find(part), std::string::npos) << part << " not in:\n" << text;
  }
  std::istringstream lines(text);
  int simulated_rows = 0, measured_rows = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line[0] == '#') continue;
    const bool sim = line.find(" simulated") != std::string::npos;
    const bool meas = line.find(" measured") != std::string::npos;
    EXPECT_NE(sim, meas) << line;
    simulated_rows += sim;
    measured_rows += meas;
  }
  EXPECT_EQ(simulated_rows, 4);
  EXPECT_EQ(measured_rows, 2);  // worlds 1 and 8 ran; 16 did not
  const auto j = nlohmann::json::parse(scaling::simulate_json(r));
  ASSERT_EQ(j["rows"].size(), 6u);
  EXPECT_EQ(j["rows"][0]["kind"], "measured");
  EXPECT_EQ(j["rows"][0]["gpus"], 1);
  EXPECT_EQ(j["rows"][2]["kind"], "simulated");
  EXPECT_EQ(j["rows"][2]["gpus"], 16);
  EXPECT_EQ(j["rows"][2]["nodes"], 2);
  EXPECT_EQ(j["cluster"]["inter"]["busbw_gbps"], 50.0);
  EXPECT_EQ(text.find("# warning"), std::string::npos);
  auto cpu_run = run_json();
  cpu_run["device"] = "cpu";
  cpu_run["placement"] = "cpu";
  scaling::SimulateConfig on_cpu = hand_config({16});
  on_cpu.run_json_text = cpu_run.dump();
  EXPECT_NE(scaling::simulate_text(scaling::simulate(on_cpu))
                .find("# warning: the run was on device cpu, placement cpu, not one rank per GPU"),
            std::string::npos);
  // Without a collectives file and overrides, the defaults are stated as defaults.
  scaling::SimulateConfig c;
  c.run_json_text = kRun;
  const std::string defaults = scaling::simulate_text(scaling::simulate(c));
  EXPECT_NE(defaults.find("busbw 360.0 GB/s: default: H100/H200 NVLink 4"), std::string::npos)
      << defaults;
  EXPECT_NE(defaults.find("default: 400 Gb/s per GPU, one NDR InfiniBand NIC each"),
            std::string::npos)
      << defaults;
  EXPECT_NE(defaults.find("5.00 us per network step (default)"), std::string::npos) << defaults;
}

TEST(ScalingSimulate, BadInputsAreClearErrors) {
  auto with = [](const std::function<void(nlohmann::json&)>& edit) {
    auto run = run_json();
    edit(run);
    scaling::SimulateConfig c = hand_config({16});
    c.run_json_text = run.dump();
    return c;
  };
  scaling::SimulateConfig c = hand_config({16});
  c.run_json_text = "{\"baseline\": ";
  EXPECT_LOOM_ERROR(scaling::simulate(c), "RUN.json: not JSON");
  EXPECT_LOOM_ERROR(scaling::simulate(with([](auto& j) { j.erase("baseline"); })),
                    "\"baseline\" is missing");
  EXPECT_LOOM_ERROR(scaling::simulate(with([](auto& j) { j["baseline"].erase("median_ms"); })),
                    "\"baseline.median_ms\" is missing");
  EXPECT_LOOM_ERROR(scaling::simulate(with([](auto& j) { j["baseline"]["median_ms"] = -1; })),
                    "\"baseline.median_ms\" must be a positive number, got -1");
  EXPECT_LOOM_ERROR(scaling::simulate(with([](auto& j) { j.erase("buckets"); })),
                    "\"buckets\" is missing");
  EXPECT_LOOM_ERROR(scaling::simulate(with([](auto& j) { j["buckets"][1].erase("bytes"); })),
                    "\"buckets[1].bytes\" is missing");
  EXPECT_LOOM_ERROR(scaling::simulate(with([](auto& j) { j.erase("batch_per_rank"); })),
                    "\"batch_per_rank\" is missing");
  c = hand_config({16, 0});
  EXPECT_LOOM_ERROR(scaling::simulate(c), "--gpus: a GPU count must be at least 1, got 0");
  c = hand_config({12});
  EXPECT_LOOM_ERROR(scaling::simulate(c),
                    "--gpus 12: above one node (8 GPUs) a count must be a whole number of nodes");
  c = hand_config({16});
  c.inter_gbit_per_s = -1;
  EXPECT_LOOM_ERROR(scaling::simulate(c), "inter-node bandwidth must be positive, got -1 Gb/s");
  c = hand_config({16});
  c.intra = link(1, 0);
  EXPECT_LOOM_ERROR(scaling::simulate(c), "intra-node bandwidth must be positive, got 0");
  c = hand_config({16});
  c.overlap = 1.5;
  EXPECT_LOOM_ERROR(scaling::simulate(c), "--overlap must be in [0, 1], got 1.5");
  c = hand_config({16});
  c.intra.reset();
  c.collectives_jsonl_text = bench_lines(8, 1, 100, 0, "nccl", "broadcast");
  EXPECT_LOOM_ERROR(scaling::simulate(c),
                    "collectives.jsonl: no all_reduce rows (ops found: broadcast)");
  auto world_one = nlohmann::json::parse(
      bench_lines(2, 1, 100, 0).substr(0, bench_lines(2, 1, 100, 0).find('\n')));
  world_one["world_size"] = 1;
  EXPECT_LOOM_ERROR(scaling::fit_all_reduce(world_one.dump(), "one.jsonl"),
                    "only for world size 1");
  EXPECT_LOOM_ERROR(scaling::fit_all_reduce("{\"op\": \"all_reduce\"\n", "cut.jsonl"),
                    "cut.jsonl line 1: not JSON");
  EXPECT_LOOM_ERROR(scaling::fit_all_reduce(bench_lines(8, 1, 100, 0), "x.jsonl", 4),
                    "no all_reduce rows of world size 4");
}

}  // namespace
}  // namespace loom::testing
