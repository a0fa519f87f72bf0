// The figures of a report row derived from what the ranks measured: the step's quantiles and
// throughput, the straggler (the slowest rank's median beside rank 0's), the exposed
// communication of a captured step and its share of the step. One definition each, which the
// text, JSON and CSV reports and the tests share.
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

}  // namespace loom::scaling
