// Pipeline plans (pipeline_plan.h): min-max partition by dynamic programming, and the two
// schedules as per-stage op sequences merged into one valid host order.
#include "loom/distributed/pipeline_plan.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "loom/tensor/error.h"

namespace loom::dist {

const char* schedule_name(PipelineSchedule schedule) {
  return schedule == PipelineSchedule::GPipe ? "gpipe" : "1f1b";
}

std::vector<int64_t> balanced_cuts(const std::vector<double>& layer_costs, int stages) {
  const int64_t n = static_cast<int64_t>(layer_costs.size());
  LOOM_CHECK(stages >= 1, "pipeline: the number of stages must be at least 1, got ", stages);
  LOOM_CHECK(stages <= n, "pipeline: ", stages, " stages for a model of ", n,
             " layers; each stage needs at least one layer");
  std::vector<double> prefix(n + 1, 0.0);
  for (int64_t i = 0; i < n; ++i) {
    LOOM_CHECK(layer_costs[i] >= 0.0, "pipeline: layer ", i, " has a negative cost ",
               layer_costs[i]);
    prefix[i + 1] = prefix[i] + layer_costs[i];
  }
  // Compared in turn: the costliest stage, the sum of squared stage costs, the sum of squared
  // layer counts (so that layers of no cost, such as activations, are dealt out evenly).
  struct Cost {
    double max = std::numeric_limits<double>::infinity();
    double squares = std::numeric_limits<double>::infinity();
    int64_t layer_squares = 0;
    bool operator<(const Cost& o) const {
      // Relative tolerances, so sums that differ only by rounding count as ties.
      if (!std::isfinite(o.max)) return std::isfinite(max);  // anything beats "not reached"
      const auto less = [](double a, double b) { return a < b - 1e-12 * std::max({1.0, a, b}); };
      if (less(max, o.max)) return true;
      if (less(o.max, max)) return false;
      if (less(squares, o.squares)) return true;
      if (less(o.squares, squares)) return false;
      return layer_squares < o.layer_squares;
    }
  };
  // best[k][i]: the first i layers in k stages; from[k][i]: where the k-th stage begins.
  std::vector<std::vector<Cost>> best(stages + 1, std::vector<Cost>(n + 1));
  std::vector<std::vector<int64_t>> from(stages + 1, std::vector<int64_t>(n + 1, 0));
  best[0][0] = Cost{0.0, 0.0};
  for (int k = 1; k <= stages; ++k) {
    for (int64_t i = k; i <= n - (stages - k); ++i) {
      for (int64_t j = k - 1; j < i; ++j) {
        if (!std::isfinite(best[k - 1][j].max)) continue;
        const double c = prefix[i] - prefix[j];
        const Cost candidate{std::max(best[k - 1][j].max, c), best[k - 1][j].squares + c * c,
                             best[k - 1][j].layer_squares + (i - j) * (i - j)};
        if (candidate < best[k][i]) {
          best[k][i] = candidate;
          from[k][i] = j;
        }
      }
    }
  }
  std::vector<int64_t> cuts(stages - 1);
  int64_t end = n;
  for (int k = stages; k >= 2; --k) {
    end = from[k][end];
    cuts[k - 2] = end;
  }
  return cuts;
}

void check_cuts(const std::vector<int64_t>& cuts, int64_t layers, int stages) {
  LOOM_CHECK(static_cast<int64_t>(cuts.size()) == stages - 1, "pipeline: ", stages, " stages need ",
             stages - 1, " cut points, got ", cuts.size());
  int64_t previous = 0;
  for (size_t k = 0; k < cuts.size(); ++k) {
    LOOM_CHECK(cuts[k] > previous && cuts[k] < layers, "pipeline: cut point ", k, " is ", cuts[k],
               "; cut points must rise strictly between 0 and the number of layers (", layers,
               "), so that every stage holds at least one layer");
    previous = cuts[k];
  }
}

std::string op_str(const PipelineOp& op) {
  return (op.kind == PipelineOp::Forward ? "F" : "B") + std::to_string(op.micro_batch) + "@" +
         std::to_string(op.stage);
}

std::vector<std::vector<PipelineOp>> stage_orders(PipelineSchedule schedule, int stages,
                                                  int micro_batches) {
  LOOM_CHECK(stages >= 1 && micro_batches >= 1, "pipeline: stages (", stages,
             ") and micro-batches (", micro_batches, ") must be at least 1");
  std::vector<std::vector<PipelineOp>> orders(stages);
  for (int s = 0; s < stages; ++s) {
    auto& order = orders[s];
    if (schedule == PipelineSchedule::GPipe) {
      for (int m = 0; m < micro_batches; ++m) order.push_back({PipelineOp::Forward, s, m});
      for (int m = micro_batches - 1; m >= 0; --m) order.push_back({PipelineOp::Backward, s, m});
    } else {
      // Warm-up: enough forwards that the last stage's first backward can come back in time;
      // then one forward and one backward in turn; then the remaining backwards.
      const int warmup = std::min(stages - s - 1, micro_batches);
      int forward = 0, backward = 0;
      for (; forward < warmup; ++forward) order.push_back({PipelineOp::Forward, s, forward});
      while (forward < micro_batches) {
        order.push_back({PipelineOp::Forward, s, forward++});
        order.push_back({PipelineOp::Backward, s, backward++});
      }
      while (backward < micro_batches) order.push_back({PipelineOp::Backward, s, backward++});
    }
  }
  return orders;
}

std::vector<PipelineOp> issue_order(PipelineSchedule schedule, int stages, int micro_batches) {
  const auto orders = stage_orders(schedule, stages, micro_batches);
  std::vector<std::vector<char>> forward_done(stages, std::vector<char>(micro_batches, 0));
  std::vector<std::vector<char>> backward_done(stages, std::vector<char>(micro_batches, 0));
  std::vector<size_t> next(stages, 0);
  std::vector<PipelineOp> order;
  const size_t total = 2 * static_cast<size_t>(stages) * micro_batches;
  while (order.size() < total) {
    bool progressed = false;
    // Round-robin over the stages, each issuing what it can, so stages advance together.
    for (int s = 0; s < stages; ++s) {
      while (next[s] < orders[s].size()) {
        const PipelineOp& op = orders[s][next[s]];
        const int m = op.micro_batch;
        const bool ready =
            op.kind == PipelineOp::Forward
                ? (s == 0 || forward_done[s - 1][m])
                : (forward_done[s][m] && (s == stages - 1 || backward_done[s + 1][m]));
        if (!ready) break;
        (op.kind == PipelineOp::Forward ? forward_done : backward_done)[s][m] = 1;
        order.push_back(op);
        ++next[s];
        progressed = true;
        if (op.kind == PipelineOp::Backward) break;  // let the stage below take it at once
      }
    }
    LOOM_ASSERT(progressed, "pipeline: the ", schedule_name(schedule), " schedule deadlocks");
  }
  return order;
}

double theoretical_bubble(int stages, int micro_batches) {
  return static_cast<double>(stages - 1) / static_cast<double>(micro_batches + stages - 1);
}

}  // namespace loom::dist
