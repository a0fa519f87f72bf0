// The alpha-beta all-reduce model (all_reduce_model.h): ring, tree and the two-level cluster
// all-reduce, a step's buckets back to back, and the weighted least-squares fit of the intra-node
// link to collectives_bench's all_reduce rows.
#include "all_reduce_model.h"

#include <loom/loom.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>

#include "text_helpers.h"

namespace loom::scaling {

namespace {

using nlohmann::json;
using text::bytes_text;
using text::fixed;
using text::optional_number;
using text::optional_string;

// Bytes per microsecond of a bus bandwidth in GB/s (1e9 B/s = 1e3 B/us); infinity stays.
double bytes_per_us(const LinkModel& link) { return link.busbw_gbps * 1e3; }

int log2_ceil(int n) {
  int levels = 0;
  while ((int64_t{1} << levels) < n) ++levels;
  return levels;
}

}  // namespace

void check_link(const LinkModel& link, const std::string& what) {
  LOOM_CHECK(link.busbw_gbps > 0, what, " bandwidth must be positive, got ", link.busbw_gbps,
             " GB/s");
  LOOM_CHECK(link.alpha_us >= 0, what, " latency must be at least 0, got ", link.alpha_us, " us");
}

LinkModel network_link(double gbit_per_s, double alpha_us, const std::string& source) {
  LinkModel link;
  link.busbw_gbps = gbit_per_s / 8;
  link.alpha_us = alpha_us;
  link.source = source;
  check_link(link, "inter-node");
  return link;
}

double ring_all_reduce_us(int n, double bytes, const LinkModel& link) {
  LOOM_CHECK(n >= 1, "all-reduce over ", n, " ranks");
  if (n == 1) return 0;
  return 2.0 * (n - 1) * link.alpha_us + 2.0 * (n - 1) / n * bytes / bytes_per_us(link);
}

double tree_all_reduce_us(int n, double bytes, const LinkModel& link) {
  LOOM_CHECK(n >= 1, "all-reduce over ", n, " ranks");
  if (n == 1) return 0;
  return 2.0 * log2_ceil(n) * link.alpha_us + 2.0 * bytes / bytes_per_us(link);
}

AllReduceTime all_reduce_us(int n, double bytes, const ClusterModel& model) {
  const int g = model.gpus_per_node;
  LOOM_CHECK(g >= 1, "gpus per node must be at least 1, got ", g);
  if (n <= g) return {ring_all_reduce_us(n, bytes, model.intra), "ring", 1};
  LOOM_CHECK(n % g == 0, "--gpus ", n, ": above one node (", g,
             " GPUs) a count must be a whole number of nodes");
  const int nodes = n / g;
  const double ring = ring_all_reduce_us(nodes, bytes / g, model.inter);
  const double tree = tree_all_reduce_us(nodes, bytes / g, model.inter);
  const double intra = ring_all_reduce_us(g, bytes, model.intra);  // reduce-scatter + all-gather
  return {intra + std::min(ring, tree), tree < ring ? "tree" : "ring", nodes};
}

StepComm step_comm(int n, const std::vector<int64_t>& buckets, const ClusterModel& model) {
  StepComm step;
  std::set<std::string> algorithms;
  for (int64_t bytes : buckets) {
    const AllReduceTime t = all_reduce_us(n, static_cast<double>(bytes), model);
    step.total_us += t.us;
    step.last_us = t.us;
    step.nodes = t.nodes;
    algorithms.insert(t.algorithm);
  }
  step.algorithm = algorithms.size() == 1 ? *algorithms.begin() : "ring+tree";
  return step;
}

LinkModel fit_all_reduce(const std::string& text, const std::string& source, int world_size) {
  std::vector<json> rows;
  std::set<std::string> ops;
  std::istringstream lines(text);
  int line_number = 0;
  for (std::string line; std::getline(lines, line);) {
    ++line_number;
    const size_t start = line.find_first_not_of(" \t\r");
    if (start == std::string::npos || line[start] == '#') continue;
    json j;
    try {
      j = json::parse(line);
    } catch (const json::parse_error& e) {
      LOOM_FAIL(source, " line ", line_number, ": not JSON (", e.what(), ")");
    }
    const std::string op = j.is_object() ? optional_string(j, "op") : "";
    ops.insert(op.empty() ? "(none)" : op);
    if (op == "all_reduce") rows.push_back(j);
  }
  std::string found;
  for (const auto& op : ops) found += (found.empty() ? "" : ", ") + op;
  LOOM_CHECK(!rows.empty(), source,
             ": no all_reduce rows (ops found: ", found.empty() ? "none" : found,
             "); run collectives_bench --op all_reduce --json");
  const bool any_nccl = std::any_of(rows.begin(), rows.end(), [](const json& r) {
    return optional_string(r, "backend") == "nccl";
  });
  std::map<int, std::vector<std::pair<double, double>>> by_world;  // world -> (size_bytes, time_us)
  for (const json& r : rows) {
    if (any_nccl && optional_string(r, "backend") != "nccl") continue;
    if (optional_number(r, "wrong").value_or(0) > 0) continue;
    const auto world = optional_number(r, "world_size");
    const auto size = optional_number(r, "size_bytes");
    const auto time = optional_number(r, "time_us");
    LOOM_CHECK(world && size && time, source,
               ": an all_reduce row without world_size, size_bytes and time_us: ", r.dump());
    if (*size > 0 && *time > 0) by_world[static_cast<int>(*world)].emplace_back(*size, *time);
  }
  LOOM_CHECK(!by_world.empty(), source,
             ": no usable all_reduce rows (every one had wrong > 0 or size 0)");
  const int w = world_size > 0 ? world_size : by_world.rbegin()->first;
  LOOM_CHECK(by_world.count(w), source, ": no all_reduce rows of world size ", w);
  LOOM_CHECK(w >= 2, source,
             ": all_reduce rows only for world size 1, where no data moves; the fit needs ",
             "world_size >= 2");
  const auto& points = by_world.at(w);
  std::set<double> sizes;
  for (const auto& p : points) sizes.insert(p.first);
  LOOM_CHECK(sizes.size() >= 2, source, ": world ", w,
             " has all_reduce rows of only one size; the fit needs two");

  // Weighted least squares with weights 1/t^2: every size counts by its relative error, so the
  // small sizes fix the latency and the large ones the bandwidth. x = size / largest size.
  const double scale = *sizes.rbegin();
  double sw = 0, sx = 0, sxx = 0, st = 0, sxt = 0;
  for (const auto& [size, t] : points) {
    const double wt = 1 / (t * t), x = size / scale;
    sw += wt, sx += wt * x, sxx += wt * x * x, st += wt * t, sxt += wt * x * t;
  }
  double a = (st * sxx - sx * sxt) / (sw * sxx - sx * sx);
  double b = (sw * sxt - sx * st) / (sw * sxx - sx * sx);
  if (a < 0) {  // through the origin
    a = 0;
    b = sxt / sxx;
  }
  LOOM_CHECK(b > 0, source, ": the fitted bandwidth is not positive (world ", w,
             " all_reduce time does not grow with size)");
  b /= scale;  // us per byte
  LinkModel link;
  link.alpha_us = a / (2.0 * (w - 1));
  link.busbw_gbps = 2.0 * (w - 1) / w / b / 1e3;
  link.fitted_world = w;
  link.fitted_points = static_cast<int>(points.size());
  for (const auto& [size, t] : points) {
    link.worst_residual = std::max(link.worst_residual, std::abs(a + b * size - t) / t);
  }
  link.source = "fitted to " + source + " (all_reduce" + (any_nccl ? ", nccl" : "") + ", world " +
                std::to_string(w) + ", " + std::to_string(points.size()) + " rows " +
                bytes_text(*sizes.begin()) + ".." + bytes_text(scale) + ", worst residual " +
                fixed(100 * link.worst_residual, 1) + "%)";
  return link;
}

}  // namespace loom::scaling
