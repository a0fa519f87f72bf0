// The figures of a report row derived from what the ranks measured: the step's quantiles and
// throughput, the straggler (the slowest rank's median beside rank 0's), the exposed
// communication of a captured step and its share of the step, and the step from one rank to two
// explained. One definition each, which the text, JSON and CSV reports and the tests share.
#pragma once

#include <optional>
#include <vector>

#include "rank_run.h"
#include "scaling.h"

namespace loom::scaling {

// The row's step columns from rank 0's result (median, p10, p90, images/s, comm, exposed stall,
// loader, differing ranks, cost, step mode, every rank's median, DDP's bucket launches).
void fill_row(Row& row, const RankResult& result, const Config& config);

// Rank 0's median step and the slowest rank's (the largest median; rank 0 on a tie), from the
// medians of every rank in rank order. Every rank waits for the others each step, so a gap
// between the two says which rank the others wait for, not that rank 0's step is wrong.
struct RankSpread {
  double rank0_ms = 0;
  double slowest_ms = 0;
  int slowest_rank = 0;
};
std::optional<RankSpread> rank_spread(const std::vector<double>& rank_median_ms);

// A graph row's exposed communication: a replayed step cannot read DDP's stall events on the
// host, so it is the DDP step's median minus the plain step's, ddp.median_ms - plain.median_ms
// (signed: noise can make it negative). It holds DDP's own work per step (the whole gap at world
// 1, where nothing moves), the all-reduces backward did not hide and the wait for slower ranks.
void set_exposed_from_plain(Row& ddp, const Row& plain);

// exposed_comm_ms / median_ms: the share of the step the compute stream spent on communication
// backward did not hide; none without an exposed time or a step.
std::optional<double> exposed_share(const Row& row);

// Each rank's images/s: its batch (global_batch / world_size) over its median step.
std::vector<double> rank_images_per_s(const Row& row);

// Where the speedup from one rank to the first larger world that ran went, from the figures the
// rows already hold (nothing else is measured). The reference is the world of one (the plain
// step, exposing nothing, when no world of one ran); its step scaled to the larger world's batch
// per rank (weak scaling: the same step; strong: linear in the batch) is the ideal step. The
// larger world's step is its slowest rank's median, the step every rank waits for, and
//   growth = slowest - ideal = exposed_growth + straggler + unexplained, where
//   exposed_growth = exposed_to - exposed_from (0 where either row has none),
//   straggler = slowest - rank 0's median, and unexplained is what is left: DDP's host work that
//   grows with the ranks (an NCCL collective with two ranks or more costs host time that the
//   one-rank path does not), clocks and noise; and under strong scaling the compute that did
//   not shrink with the batch.
struct StepGrowth {
  int from_world = 1, to_world = 2;
  bool from_plain = false;  // the reference is the plain step: no world of one ran
  double from_ms = 0, ideal_ms = 0, to_ms = 0, slowest_ms = 0;
  int slowest_rank = 0;
  double plain_ms = 0;            // the plain model's step (compute alone, no DDP)
  std::optional<double> comm_ms;  // the larger world's all-reduces alone, back to back
  std::optional<double> exposed_from_ms, exposed_to_ms;
  double growth_ms = 0, exposed_growth_ms = 0, straggler_ms = 0, unexplained_ms = 0;
  double speedup = 0;  // rank 0's images/s in the larger world over the reference's
  Placement placement = Placement::Gpus;
};
std::optional<StepGrowth> step_growth(const Report& report);

}  // namespace loom::scaling
