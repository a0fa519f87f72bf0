// The plan of a pipeline, apart from any tensor: where to cut a chain of layers into stages
// (balanced by a per-layer cost: parameter count or measured time), and in what order each
// stage runs its micro-batches' forwards and backwards (GPipe: all forwards, then all
// backwards; 1F1B: a few forwards, then one backward per forward, so at most `stages`
// micro-batches are in flight on a stage). dist::PipelineParallel runs such a plan.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace loom::dist {

enum class PipelineSchedule { GPipe, OneFOneB };

const char* schedule_name(PipelineSchedule schedule);

// The first layer of each stage but the first: cuts[k] is where stage k + 1 begins, so stage
// k holds layers [cuts[k-1], cuts[k]) (with cuts[-1] = 0, cuts[stages-1] = layers). The cuts
// minimise the costliest stage, then the sum of squared stage costs, then the spread of layer
// counts (so that layers without parameters are dealt out evenly). Every stage gets at least
// one layer.
std::vector<int64_t> balanced_cuts(const std::vector<double>& layer_costs, int stages);

// Throws loom::Error unless `cuts` (stages - 1 of them) rise strictly inside (0, layers).
void check_cuts(const std::vector<int64_t>& cuts, int64_t layers, int stages);

struct PipelineOp {
  enum Kind { Forward, Backward } kind;
  int stage;
  int micro_batch;
  bool operator==(const PipelineOp& other) const {
    return kind == other.kind && stage == other.stage && micro_batch == other.micro_batch;
  }
};

std::string op_str(const PipelineOp& op);  // "F2@1": forward of micro-batch 2 on stage 1

// Each stage's own order of ops: per_stage[s] lists stage s's forwards and backwards.
std::vector<std::vector<PipelineOp>> stage_orders(PipelineSchedule schedule, int stages,
                                                  int micro_batches);

// One host order for all stages' ops that keeps every stage's own order and issues an op only
// after what it needs: F(m) on stage s after F(m) on s - 1, B(m) on s after B(m) on s + 1 (the
// last stage's B(m) after its F(m)). The host issues ops asynchronously, each stage on its own
// stream, so this order decides nothing about overlap; it only has to be valid.
std::vector<PipelineOp> issue_order(PipelineSchedule schedule, int stages, int micro_batches);

// The idle share of a stage's time under the schedule with equal stage times and the backward
// twice the forward: (stages - 1) / (micro_batches + stages - 1), the same for GPipe and 1F1B.
double theoretical_bubble(int stages, int micro_batches);

}  // namespace loom::dist
