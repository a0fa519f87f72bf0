// The speedup chart's series (outputs.h), drawn by chart.h: loom's DDP and pipeline rows,
// PyTorch's, and beside GPU rows only the ideal and the seed's published GPU figures (CPU ranks
// and ranks sharing one GPU are not a multi-GPU speedup: their chart says so and shows no GPU
// reference to be read against).
#include "outputs.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace loom::scaling {

namespace {

// (world size, speedup) of the rows that ran in a report.json of the shared schema.
std::vector<std::pair<double, double>> compare_points(const std::string& text) {
  std::vector<std::pair<double, double>> points;
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    for (const auto& row : j.at("rows")) {
      if (row.at("ran").get<bool>())
        points.emplace_back(row.at("world_size").get<double>(), row.at("speedup").get<double>());
    }
  } catch (const std::exception& e) {
    LOOM_FAIL("--compare: not a report.json of bench/scaling_torch.py or loom-scaling: ", e.what());
  }
  return points;
}

}  // namespace

std::string computed_precision(const Config& c) {
  return c.placement == Placement::Cpu ? "fp32" : c.precision;
}

ChartSpec speedup_chart(const Report& report, const std::optional<std::string>& compare_json) {
  const Config& c = report.config;
  ChartSpec spec;
  const bool gpus = c.placement == Placement::Gpus;
  spec.title = detail::concat(
      c.model, ", ",
      c.strong ? "strong scaling"
               : detail::concat("batch ", c.batch_per_rank, gpus ? " per GPU" : " per rank"),
      ", ", computed_precision(c),
      gpus                               ? ": speedup against GPU count"
      : c.placement == Placement::OneGpu ? ", ranks sharing one GPU: not a multi-GPU speedup"
                                         : " on the CPU: thread ranks, not a multi-GPU speedup");
  spec.x_label = c.placement == Placement::Gpus ? "GPUs" : "ranks";
  spec.y_label = "speedup over the plain model on one device";

  ChartSeries loom_points;
  loom_points.label = c.placement == Placement::Gpus ? "loom DDP"
                      : c.placement == Placement::OneGpu
                          ? "loom DDP, ranks sharing ONE GPU (not a speedup)"
                          : "loom DDP, CPU thread ranks";
  loom_points.r = 31, loom_points.g = 119, loom_points.b = 180;
  for (const Row& r : report.rows) {
    if (r.ran) loom_points.points.emplace_back(r.world_size, r.speedup);
  }
  ChartSeries pipeline_points;  // x = stages (GPUs with one stage per GPU)
  if (!report.pipeline_rows.empty()) {
    const PipelineRow& first = report.pipeline_rows.front();
    pipeline_points.label = detail::concat(
        "loom pipeline (", first.schedule, ", ",
        c.micro_batches ? std::to_string(*c.micro_batches) : "2 x stages", " micro-batches)",
        c.placement == Placement::Gpus     ? ""
        : c.placement == Placement::OneGpu ? ", stages sharing ONE GPU"
                                           : ", CPU");
  }
  pipeline_points.r = 44, pipeline_points.g = 160, pipeline_points.b = 44;
  for (const PipelineRow& p : report.pipeline_rows) {
    if (p.row.ran) pipeline_points.points.emplace_back(p.stages, p.row.speedup);
  }
  std::vector<std::pair<double, double>> torch_points;
  if (compare_json) torch_points = compare_points(*compare_json);

  double largest = 8;  // the seed's points reach 8 GPUs
  for (const auto& p : loom_points.points) largest = std::max(largest, p.first);
  for (const auto& p : pipeline_points.points) largest = std::max(largest, p.first);
  for (const auto& p : torch_points) largest = std::max(largest, p.first);
  ChartSeries ideal;
  ideal.label = "ideal (speedup = GPUs)";
  ideal.r = ideal.g = ideal.b = 140;
  ideal.dashed = true;
  ideal.markers = false;
  ideal.points = {{1, 1}, {largest, largest}};
  ChartSeries seed;
  seed.label = "Krizhevsky et al. (the seed's figures)";
  seed.r = 255, seed.g = 127, seed.b = 14;
  seed.points = {{1, 1}, {2, 1.7}, {4, 3.5}, {8, 6.2}};
  if (gpus) spec.series = {ideal, seed};  // GPU references only beside GPU rows
  if (!loom_points.points.empty()) spec.series.push_back(loom_points);
  if (!pipeline_points.points.empty()) spec.series.push_back(pipeline_points);
  if (!torch_points.empty()) {
    ChartSeries torch;
    torch.label = "PyTorch DDP, same machine";
    torch.r = 214, torch.g = 39, torch.b = 40;
    torch.points = torch_points;
    spec.series.push_back(torch);
  }
  return spec;
}

std::vector<uint8_t> speedup_chart_png(const Report& report,
                                       const std::optional<std::string>& compare_json) {
  return chart_png(speedup_chart(report, compare_json));
}

}  // namespace loom::scaling
