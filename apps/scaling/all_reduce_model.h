// The alpha-beta model of all-reduce on a cluster of nodes: ring and tree on one link level, the
// hierarchical (intra-node ring + inter-node ring or tree) cost of a step's buckets, and the fit
// of the intra-node link to bench/collectives_bench's JSON lines. The equations: docs/scaling.md.
#pragma once

#include <cstdint>
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

// Throws loom::Error unless busbw_gbps > 0 and alpha_us >= 0; `what` names the link in the
// message ("intra-node").
void check_link(const LinkModel& link, const std::string& what);

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

}  // namespace loom::scaling
