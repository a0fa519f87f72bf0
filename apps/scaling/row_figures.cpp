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

std::optional<StepGrowth> step_growth(const Report& report) {
  const Row& plain = report.baseline;
  const Row* from = nullptr;
  const Row* to = nullptr;
  for (const Row& r : report.rows) {
    if (!r.ran) continue;
    if (r.world_size == 1 && !from) from = &r;
    if (r.world_size > 1 && !to) to = &r;
  }
  if (!to || (!from && !plain.ran)) return std::nullopt;
  StepGrowth g;
  g.from_plain = from == nullptr;
  if (!from) from = &plain;
  g.from_world = 1;
  g.to_world = to->world_size;
  g.placement = report.config.placement;
  g.from_ms = from->median_ms;
  const double from_batch = static_cast<double>(from->global_batch);
  const double to_batch = static_cast<double>(to->global_batch) / to->world_size;
  g.ideal_ms = from_batch > 0 ? g.from_ms * to_batch / from_batch : g.from_ms;
  g.to_ms = to->median_ms;
  const std::optional<RankSpread> spread = rank_spread(to->rank_median_ms);
  g.slowest_ms = spread ? std::max(spread->slowest_ms, g.to_ms) : g.to_ms;
  g.slowest_rank = spread ? spread->slowest_rank : 0;
  g.plain_ms = plain.ran ? plain.median_ms : 0;
  g.comm_ms = to->comm_ms;
  g.exposed_from_ms = g.from_plain ? std::optional<double>(0.0) : from->exposed_comm_ms;
  g.exposed_to_ms = to->exposed_comm_ms;
  g.growth_ms = g.slowest_ms - g.ideal_ms;
  if (g.exposed_from_ms && g.exposed_to_ms)
    g.exposed_growth_ms = *g.exposed_to_ms - *g.exposed_from_ms;
  g.straggler_ms = g.slowest_ms - g.to_ms;
  g.unexplained_ms = g.growth_ms - g.exposed_growth_ms - g.straggler_ms;
  g.speedup = from->images_per_s > 0 ? to->images_per_s / from->images_per_s : 0;
  return g;
}

}  // namespace loom::scaling
