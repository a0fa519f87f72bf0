// History: per-epoch metrics and their JSON form.
#include "loom/train/history.h"

#include <nlohmann/json.hpp>

#include "loom/io/checkpoint.h"

namespace loom::train {

std::vector<double> History::values(const std::string& metric) const {
  std::vector<double> out;
  for (const EpochMetrics& m : epochs) {
    const auto it = m.find(metric);
    if (it != m.end()) out.push_back(it->second);
  }
  return out;
}

namespace {
// nlohmann's ordered_json keeps "epoch" in front for people reading the logs.
nlohmann::ordered_json epoch_object(int64_t epoch, const EpochMetrics& metrics) {
  nlohmann::ordered_json j;
  j["epoch"] = epoch;
  for (const auto& [name, value] : metrics) j[name] = value;
  return j;
}
}  // namespace

std::string metrics_json(int64_t epoch, const EpochMetrics& metrics) {
  return epoch_object(epoch, metrics).dump();
}

std::string History::to_json() const {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (size_t e = 0; e < epochs.size(); ++e)
    list.push_back(epoch_object(static_cast<int64_t>(e), epochs[e]));
  return list.dump();
}

History History::from_json(const std::string& text, const std::string& source) {
  History h;
  h.epochs = io::parse_epoch_metrics(text, source);  // the file may be a download: see there
  return h;
}

}  // namespace loom::train
