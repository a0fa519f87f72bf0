// TrainContext's checkpoint state, both ways, and its file writes.
#include <utility>
#include <vector>

#include "loom/distributed/launch.h"
#include "loom/ops/ops.h"
#include "loom/tensor/random.h"
#include "loom/train/callback.h"

namespace loom::train {

io::TrainingState TrainContext::capture_state() const {
  io::TrainingState s;
  s.epoch = epoch_finished ? epoch + 1 : epoch;
  s.step_in_epoch = epoch_finished ? 0 : step_in_epoch;
  s.global_step = global_step;
  s.rng_seed = default_generator().seed();
  s.rng_offset = default_generator().offset();
  s.loader_seed = train_loader.options().seed;
  s.augment_seed = train_loader.options().augment.seed;
  if (!epoch_finished && group == nullptr) {
    s.loss_sum = loss_sum.clone();  // the running sums go on changing in place
    s.correct_sum = correct_sum.clone();
    s.samples_seen = samples_seen;
  } else if (!epoch_finished) {
    // Every rank's own float sums, so that each resumed rank goes on adding to exactly the
    // value it had (a sum over ranks, re-split, would round differently).
    const std::vector<double> all = all_gather_values(
        *group,
        {loss_sum.item<double>(), correct_sum.item<double>(), static_cast<double>(samples_seen)});
    std::vector<float> losses, corrects;
    for (int r = 0; r < world_size; ++r) {
      losses.push_back(static_cast<float>(all[3 * r]));
      corrects.push_back(static_cast<float>(all[3 * r + 1]));
      s.samples_seen += static_cast<int64_t>(all[3 * r + 2]);
    }
    s.loss_sum = from_vector(losses);
    s.correct_sum = from_vector(corrects);
  }
  s.history_json = history.to_json();
  return s;
}

void TrainContext::write_file(io::PreparedFile file) const {
  if (writer != nullptr) {
    writer->submit(std::move(file));
  } else {
    io::write_file_atomically(file);
  }
}

void TrainContext::flush_writes() const {
  if (writer != nullptr) writer->flush();
}

void TrainContext::restore_state(const io::TrainingState& s) {
  const data::DataLoaderOptions& o = train_loader.options();
  LOOM_CHECK(s.loader_seed == o.seed && s.augment_seed == o.augment.seed,
             "fit: cannot resume: the "
             "checkpoint's loader seeds (shuffle ",
             s.loader_seed, ", augment ", s.augment_seed, ") differ from the training loader's (",
             o.seed, ", ", o.augment.seed, ")");
  history = History::from_json(s.history_json, "checkpoint");
  LOOM_CHECK(static_cast<int64_t>(history.epochs.size()) == s.epoch,
             "fit: cannot resume: the "
             "checkpoint is in epoch ",
             s.epoch, " but holds the history of ", history.epochs.size(), " epochs");
  epoch = s.epoch;
  step_in_epoch = s.step_in_epoch;
  global_step = s.global_step;
  if (s.step_in_epoch > 0) {
    LOOM_CHECK(s.loss_sum.defined() && s.correct_sum.defined(),
               "fit: cannot resume mid-epoch: the "
               "checkpoint lacks the epoch's running sums");
    // One rank saves scalars, N ranks one sum per rank (capture_state).
    const int64_t saved_ranks = s.loss_sum.dim() == 0 ? 1 : s.loss_sum.numel();
    LOOM_CHECK(saved_ranks == world_size && s.correct_sum.numel() == saved_ranks,
               "fit: cannot resume "
               "mid-epoch on ",
               world_size, " ranks: the checkpoint was taken mid-epoch on ", saved_ranks,
               " (each rank's shard of the epoch depends on the number of ranks; resume on ",
               saved_ranks, " or from a checkpoint at an epoch's end)");
    if (world_size == 1) {
      loss_sum.copy_(s.loss_sum);
      correct_sum.copy_(s.correct_sum);
      samples_seen = s.samples_seen;
    } else {
      loss_sum.copy_(s.loss_sum.select(0, rank));
      correct_sum.copy_(s.correct_sum.select(0, rank));
      // Only the total divides the metrics; split evenly it is each rank's own count whenever
      // the shards are equal (DistributedSampler's).
      samples_seen = s.samples_seen / world_size + (rank < s.samples_seen % world_size ? 1 : 0);
    }
  }
  // load_checkpoint gave every rank rank 0's generator; each rank draws from its own.
  if (world_size > 1)
    default_generator().set_state(dist::rank_seed(s.rng_seed, rank), s.rng_offset);
}

}  // namespace loom::train
