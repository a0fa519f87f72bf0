// Internal: where fit stops for a preemption. At a step boundary every rank must make the same
// choice (a rank that stopped alone would leave the others waiting in their next collective), so
// the choice is agreed, as cheaply as the group allows; then the callbacks write their
// checkpoint (Callback::on_preempted) and fit returns the history that says so.
#pragma once

#include "loom/train/callback.h"
#include "loom/train/fit.h"

namespace loom::train {

// Whether every rank stops here: after an optimizer step (not between accumulated
// micro-steps), at a boundary the ranks can agree on (one rank, or thread ranks comparing through
// shared memory: after every step; ranks in several processes: every
// options.preemption_check_steps steps), or after an epoch's end, whose callbacks have written
// its checkpoint (ctx.epoch_finished). False when options.stop_on_preemption is off.
bool preempted_here(const TrainContext& ctx, const FitOptions& options);

// The callbacks' on_preempted at this step boundary; returns ctx's history, marked preempted.
History& stop_for_preemption(TrainContext& ctx, const FitOptions& options);

}  // namespace loom::train
