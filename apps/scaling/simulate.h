// loom-scaling simulate: data-parallel step time, speedup and efficiency on clusters larger than
// the machine that measured them, from a run's report.json and the all-reduce model of
// all_reduce_model.h. The equations are in docs/scaling.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "all_reduce_model.h"

namespace loom::scaling {

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
  std::optional<double> ddp_ms;      // w, DDP's own work per step; measured rows: not known
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
  // w = max(0, DDP world-1 median_ms - t_c): the wrapper's own work per step (gradient copies
  // into the flat buckets, hooks, launches), 0 when the run has no DDP row at world 1 that ran.
  double ddp_ms = 0;
  std::string ddp_source;
  std::optional<double> world1_step_ms;  // that row's median_ms
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

// step(n) = t_c(n) + w + exposed(n), w the same at every n (docs/scaling.md). Throws loom::Error
// naming the field of a malformed run, a GPU count below 1, a collectives file without
// all_reduce rows, a non-positive bandwidth, or an overlap outside [0, 1].
SimReport simulate(const SimulateConfig& config);

// nccl-tests style: '#' lines stating every input and assumption, one row per GPU count, each
// marked "simulated" or "measured".
std::string simulate_text(const SimReport& report);
std::string simulate_json(const SimReport& report);

}  // namespace loom::scaling
