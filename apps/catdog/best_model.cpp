// --save, --early-stopping and --min-delta of best_model.h.
#include "best_model.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <filesystem>

namespace loom::catdog {

namespace {
// Where the checkpoint's extra records the run's --out (absolute) under --save best.
constexpr const char* kBestModelExtra = "best_model";
}  // namespace

void check_save_args(const TrainArgs& a) {
  LOOM_CHECK(a.save == "best" || a.save == "last", "--save: expected best or last, got \"", a.save,
             "\"");
  LOOM_CHECK(a.early_stopping >= 0, "--early-stopping must be >= 0 (0: off), got ",
             a.early_stopping);
  LOOM_CHECK(std::isfinite(a.min_delta) && a.min_delta >= 0.0 && a.min_delta <= 1.0,
             "--min-delta must be a finite number in [0, 1] (an improvement of ", kMonitor,
             "), got ", a.min_delta);
  LOOM_CHECK(a.min_delta == 0.0 || a.early_stopping > 0, "--min-delta ", a.min_delta,
             " needs --early-stopping PATIENCE (it is the improvement early stopping waits for)");
}

void set_best_model(const TrainArgs& a, const std::map<std::string, std::string>* resumed_extra,
                    train::CheckpointOptions& o) {
  if (a.save != "best") return;
  o.best_model_path = a.out;
  o.monitor = kMonitor;
  o.mode = train::Mode::Max;
  std::error_code ec;
  const std::filesystem::path absolute = std::filesystem::absolute(a.out, ec);
  o.extra[kBestModelExtra] = ec ? a.out : absolute.lexically_normal().string();
  if (resumed_extra == nullptr) return;
  const auto it = resumed_extra->find(kBestModelExtra);
  if (it != resumed_extra->end() && it->second != o.extra[kBestModelExtra])
    o.resumed_best_model_path = it->second;
}

void check_resume_best(const TrainArgs& a, const io::Checkpoint& checkpoint) {
  if (a.save != "best") return;
  train::CheckpointOptions o;
  set_best_model(a, &checkpoint.state.extra, o);
  const std::string where = "--resume " + a.resume;
  const train::History history = train::History::from_json(checkpoint.state.history_json, where);
  try {
    train::ModelCheckpoint(o).find_best_on_resume(history, checkpoint.state.step_in_epoch);
  } catch (const Error& e) {
    throw Error(where + ": " + e.what() + " (--save last keeps the last epoch instead)");
  }
}

std::shared_ptr<train::EarlyStopping> early_stopping(const TrainArgs& a) {
  if (a.early_stopping == 0) return nullptr;
  return std::make_shared<train::EarlyStopping>(kMonitor, a.early_stopping, a.min_delta,
                                                train::Mode::Max);
}

int64_t saved_epoch_of(const TrainArgs& a, const train::History& history) {
  if (a.save == "last") return static_cast<int64_t>(history.epochs.size()) - 1;
  return train::BestTracker(kMonitor, train::Mode::Max).replay(history);
}

void save_last(const TrainArgs& a, const nn::Module& model, const io::Preprocessing& prep,
               const train::History& history) {
  if (a.save != "last") return;
  LOOM_ASSERT(!history.epochs.empty());
  train::save_epoch_model(a.out, model, prep,
                          {static_cast<int64_t>(history.epochs.size()) - 1, history.epochs.back()});
}

std::string saved_summary(const TrainArgs& a, const train::History& history) {
  const int64_t epoch = saved_epoch_of(a, history);
  if (epoch < 0) return "";
  char text[128];
  std::snprintf(text, sizeof text, " (%s epoch %" PRId64 " of %zu, %s %.4f)", a.save.c_str(),
                epoch + 1, history.epochs.size(), kMonitor,
                history.epochs[static_cast<size_t>(epoch)].at(kMonitor));
  return text;
}

std::string early_stop_line(const TrainArgs& a, int64_t epochs, const train::History& history,
                            int64_t stopped_epoch) {
  if (stopped_epoch < 0) return "";
  // EarlyStopping's best: improvements by more than --min-delta only.
  const int64_t best = train::BestTracker(kMonitor, train::Mode::Max, a.min_delta).replay(history);
  char by[48] = "";
  if (a.min_delta > 0.0) std::snprintf(by, sizeof by, " by more than %g", a.min_delta);
  // The patience counts the epochs that validated (--validation-freq, --validation-from).
  int64_t validated = 0;
  for (int64_t e = best + 1; e <= stopped_epoch; ++e)
    validated += history.epochs[static_cast<size_t>(e)].count(kMonitor) ? 1 : 0;
  const bool all = validated == stopped_epoch - best;
  char text[256];
  std::snprintf(text, sizeof text,
                "loom-catdog: early stopping after epoch %" PRId64 " of %" PRId64
                ": %s has not improved%s on "
                "epoch %" PRId64 "'s %.4f for %" PRId64 "%s epoch%s",
                stopped_epoch + 1, epochs, kMonitor, by, best + 1,
                history.epochs[static_cast<size_t>(best)].at(kMonitor), validated,
                all ? "" : " validated", validated == 1 ? "" : "s");
  return text;
}

}  // namespace loom::catdog
