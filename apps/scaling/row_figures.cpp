// A report row's derived figures (row_figures.h).
#include "row_figures.h"

#include <algorithm>

namespace loom::scaling {

void fill_row(Row& row, const RankResult& r, const Config& c) {
  std::vector<double> ms = r.step_ms;
  std::sort(ms.begin(), ms.end());
  row.median_ms = quantile(ms, 0.5);
  row.p10_ms = quantile(ms, 0.1);
  row.p90_ms = quantile(ms, 0.9);
  row.images_per_s = static_cast<double>(row.global_batch) / (row.median_ms / 1e3);
  row.comm_ms = r.comm_ms;
  if (!r.exposed_comm_ms.empty()) {
    row.exposed_comm_ms = median(r.exposed_comm_ms);
    row.exposed_measure = "stall";
  }
  row.loader_wait_ms = median(r.loader_wait_ms);
  row.differing_ranks = r.differing_ranks;
  row.step_mode = r.step_mode;
  row.rank_median_ms = r.rank_median_ms;
  row.ddp_step = r.ddp_step;
  if (r.timed_eager_steps > 0) {  // a graph row whose replays fell back (ranks' batches differed)
    row.note += detail::concat(row.note.empty() ? "" : "; ", r.timed_eager_steps, " of ",
                               r.step_ms.size(), " timed steps ran eagerly");
  }
  const int gpus = gpus_used(c, row.world_size);
  if (c.price_per_gpu_hour && gpus > 0) {
    const double seconds_per_million = 1e6 / row.images_per_s;
    row.usd_per_million_images = *c.price_per_gpu_hour * gpus * seconds_per_million / 3600.0;
  }
  row.ran = true;
}

std::optional<RankSpread> rank_spread(const std::vector<double>& medians) {
  if (medians.empty()) return std::nullopt;
  const auto slowest = std::max_element(medians.begin(), medians.end());  // the first of equals
  return RankSpread{medians.front(), *slowest, static_cast<int>(slowest - medians.begin())};
}

void set_exposed_from_plain(Row& ddp, const Row& plain) {
  ddp.exposed_comm_ms = ddp.median_ms - plain.median_ms;
  ddp.exposed_measure = "ddp_minus_plain";
}

std::optional<double> exposed_share(const Row& row) {
  if (!row.ran || !row.exposed_comm_ms || row.median_ms <= 0) return std::nullopt;
  return *row.exposed_comm_ms / row.median_ms;
}

std::vector<double> rank_images_per_s(const Row& row) {
  std::vector<double> out;
  if (row.world_size < 1) return out;
  const double batch = static_cast<double>(row.global_batch) / row.world_size;
  for (double ms : row.rank_median_ms) out.push_back(ms > 0 ? batch / (ms / 1e3) : 0.0);
  return out;
}

}  // namespace loom::scaling
