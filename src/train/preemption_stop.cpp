// Where fit stops for a preemption (preemption_stop.h).
#include "loom/train/preemption_stop.h"

#include <algorithm>
#include <csignal>

#include "loom/distributed/agreement.h"
#include "loom/train/preemption.h"
#include "loom/train/ranks.h"

namespace loom::train {

bool preempted_here(const TrainContext& ctx, const FitOptions& options) {
  if (!options.stop_on_preemption) return false;
  if (!ctx.epoch_finished) {
    // An epoch's last step is followed by its end: stop after that instead.
    if (ctx.step_in_epoch >= ctx.steps_per_epoch) return false;
    if (ctx.step_in_epoch % std::max<int64_t>(1, options.accumulate_steps) != 0) return false;
    const int64_t every = std::max<int64_t>(1, options.preemption_check_steps);
    const bool cheap = ctx.group == nullptr || ctx.group->shared_memory() != nullptr;
    if (!cheap && ctx.global_step % every != 0) return false;
  }
  const bool mine = preemption_signal() != 0;
  if (ctx.group == nullptr) return mine;
  // Thread ranks: microseconds, the device not waited for. A flag only ever goes from clear to
  // set, so ranks that differ have seen a signal between them.
  if (ctx.group->shared_memory() != nullptr) return !dist::all_equal(*ctx.group, mine) || mine;
  // A rank that stopped alone would leave the others waiting in their next collective.
  return all_reduce_value(*ctx.group, preemption_signal(), dist::ReduceOp::Max) != 0;
}

History& stop_for_preemption(TrainContext& ctx, const FitOptions& options) {
  // Every rank stops here; one whose own flag is not set yet stopped for another's SIGTERM.
  const int signal = preemption_signal();
  ctx.history.preempted_by = signal != 0 ? signal : SIGTERM;
  for (const CallbackPtr& cb : options.callbacks) cb->on_preempted(ctx);
  return ctx.history;
}

}  // namespace loom::train
