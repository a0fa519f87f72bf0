// History: the metrics of each finished epoch ("loss", "accuracy", "val_loss", "val_accuracy",
// "lr", "seconds"), as Keras' History.history, with a JSON form for checkpoints and logs.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace loom::train {

using EpochMetrics = std::map<std::string, double>;

struct History {
  std::vector<EpochMetrics> epochs;  // epochs[e] are the metrics of epoch e (from 0)
  // The signal that preempted fit (FitOptions::stop_on_preemption), 0 when it ran to its end.
  int preempted_by = 0;

  // The values of one metric over the epochs that have it.
  std::vector<double> values(const std::string& metric) const;
  // [{"epoch": 0, "loss": ...}, ...]: epoch is the position, from 0 (a checkpoint's form, which
  // io::parse_epoch_metrics reads back; the logs people read count from 1: metrics_json).
  std::string to_json() const;
  // Throws loom::Error naming `source` when the JSON is not such a list (io::parse_epoch_metrics:
  // depth-limited, no repeated keys, finite numbers, "epoch" the position).
  static History from_json(const std::string& json, const std::string& source);
};

// One line of JSON for one epoch's metrics, with "epoch" first (JsonLinesLogger passes the
// epoch counted from 1).
std::string metrics_json(int64_t epoch, const EpochMetrics& metrics);

}  // namespace loom::train
