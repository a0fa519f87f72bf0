// loom-scaling simulate: data-parallel step time, speedup and efficiency on clusters larger than
// the machine that measured them, from a run's report.json and an alpha-beta model of all-reduce
// fitted to bench/collectives_bench's JSON lines. The equations are in docs/scaling.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace loom::scaling {

// One link level of the all-reduce model. A ring step costs alpha_us plus its bytes at the bus
// bandwidth; busbw_gbps is in GB/s (1e9 bytes/s), the unit of nccl-tests' and
// collectives_bench's busbw column (not the Gb/s of a NIC's data sheet).
struct LinkModel {
  double alpha_us = 0;        // latency of one ring step (tree: one level), microseconds
  double busbw_gbps = 0;      // bus bandwidth, GB/s; +infinity is allowed (no bandwidth cost)
  std::string source;         // "fitted to <file> (...)", "default: ...", "given: ..."
  int fitted_world = 0;       // the fit's world size, 0 when not fitted
  int fitted_points = 0;      // the all_reduce rows it was fitted to
  double worst_residual = 0;  // max |predicted - measured| / measured over those rows
};

// The defaults (docs/scaling.md says where they come from).
inline constexpr int kDefaultGpusPerNode = 8;
inline constexpr double kDefaultIntraAlphaUs = 1.0;      // one NVLink ring step
inline constexpr double kDefaultIntraBusbwGBps = 360.0;  // 8x H100/H200 NVLink 4 ring busbw
inline constexpr double kDefaultInterGbitPerS = 400.0;   // one NDR InfiniBand NIC per GPU
inline constexpr double kDefaultInterAlphaUs = 5.0;      // one network step

struct ClusterModel {
  int gpus_per_node = kDefaultGpusPerNode;
  LinkModel intra;  // within a node (NVLink): the collectives fit, else the default
  LinkModel inter;  // between nodes, per GPU (its own NIC): bandwidth and latency
};

// The inter-node link from a NIC's line rate in Gb/s (bits): busbw = gbit / 8 GB/s.
LinkModel network_link(double gbit_per_s, double alpha_us, const std::string& source);

// All-reduce of `bytes` over n ranks on one link, in microseconds (n = 1: 0):
//   ring: 2(n-1) alpha + 2(n-1)/n * bytes / B
//   tree: 2 ceil(log2 n) alpha + 2 * bytes / B   (NCCL's double binary tree, pipelined)
double ring_all_reduce_us(int n, double bytes, const LinkModel& link);
double tree_all_reduce_us(int n, double bytes, const LinkModel& link);

struct AllReduceTime {
  double us = 0;
  std::string algorithm;  // "ring" within a node; "ring" or "tree" for the inter-node stage
  int nodes = 1;
};

// All-reduce of `bytes` over n GPUs of the cluster. n <= gpus_per_node: the intra-node ring.
// n = N nodes x g GPUs: intra-node ring reduce-scatter, the faster of ring and tree (ring on a
// tie) between the N nodes over bytes / g per GPU at the inter link, intra-node ring all-gather:
//   T = 2(g-1) a_intra + 2(g-1)/g * bytes / B_intra + min(ring, tree)(N, bytes / g, inter).
// Throws when n > g is not a whole number of nodes.
AllReduceTime all_reduce_us(int n, double bytes, const ClusterModel& model);

// The buckets' all-reduces of one step, back to back on one stream, over n GPUs: T(n) and the
// last bucket's T(n, S_K); algorithm "ring+tree" when the buckets' choices differ.
struct StepComm {
  double total_us = 0, last_us = 0;
  std::string algorithm;
  int nodes = 1;
};
StepComm step_comm(int n, const std::vector<int64_t>& bucket_bytes, const ClusterModel& model);

// The intra-node link fitted to collectives_bench --json lines: the all_reduce rows (nccl rows
// only when there are any; rows with wrong > 0 left out) of one world size (0: the largest
// present, at least 2), weighted least squares of time_us = a + b * size_bytes minimising the
// relative residuals, then alpha = a / (2(w-1)), busbw = 2(w-1)/w / b. A negative intercept is
// refitted through the origin (alpha 0). Throws on lines that are not JSON, no all_reduce rows,
// fewer than two sizes, or a bandwidth that comes out non-positive.
LinkModel fit_all_reduce(const std::string& collectives_jsonl_text, const std::string& source_name,
                         int world_size = 0);

struct SimulateConfig {
  std::vector<int> gpus{16, 64, 256, 1024};
  std::string run_json_text;                          // a loom-scaling report.json
  std::string run_source = "RUN.json";                // its name in messages and '#' lines
  std::optional<std::string> collectives_jsonl_text;  // collectives_bench --json output
  std::string collectives_source = "collectives.jsonl";
  int gpus_per_node = kDefaultGpusPerNode;
  std::optional<LinkModel> intra;          // replaces the fit and the default
  std::optional<double> inter_gbit_per_s;  // NIC line rate per GPU, Gb/s; default 400
  std::optional<double> inter_alpha_us;    // default 5
  std::optional<double> overlap;           // fraction of communication hidden, in [0, 1]
  bool include_measured = true;            // the run's own rows beside the simulated ones
};

struct SimRow {
  int gpus = 1;
  int nodes = 1;
  double batch_per_gpu = 0;
  std::optional<double> compute_ms;  // t_c(n); measured rows: not known
  std::optional<double> comm_ms;     // T(n): the buckets' all-reduces back to back
  std::optional<double> exposed_comm_ms;
  double step_ms = 0, images_per_s = 0, speedup = 0, efficiency = 0;
  std::string algorithm;  // see AllReduceTime; "ring+tree" when buckets differ; "none" (1 GPU);
                          // measured: ""
  bool simulated = true;
  std::string note;
};

struct SimReport {
  std::string run_source, run_tool, run_model, gpu_name, precision, device, placement;
  bool strong = false;
  int64_t batch_per_rank = 0;  // weak: every GPU's batch
  int64_t global_batch = 0;    // strong: the fixed global batch (the baseline's)
  double compute_ms = 0;       // t_c: the run's baseline.median_ms (one GPU)
  std::vector<int64_t> bucket_bytes;
  ClusterModel model;
  double overlap = 0;  // f
  std::string overlap_source;
  int reference_world = 0;  // n_ref, where f turns into the hidden window
  double hidden_ms = 0;     // H = f * T(n_ref) (strong scaling: at n_ref, scaled with t_c)
  std::optional<double> measured_comm_ms;  // the run's row at n_ref, for comparison
  std::optional<double> measured_exposed_ms;
  std::optional<double> measured_step_ms;
  std::vector<SimRow> rows;  // ordered by GPU count, a measured row before a simulated one
};

// Throws loom::Error naming the field of a malformed run, a GPU count below 1, a collectives
// file without all_reduce rows, a non-positive bandwidth, or an overlap outside [0, 1].
SimReport simulate(const SimulateConfig& config);

// nccl-tests style: '#' lines stating every input and assumption, one row per GPU count, each
// marked "simulated" or "measured".
std::string simulate_text(const SimReport& report);
std::string simulate_json(const SimReport& report);

}  // namespace loom::scaling
