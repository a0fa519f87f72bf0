// loom-scaling simulate: the alpha-beta all-reduce model, its fit to collectives_bench's rows,
// and the step time it predicts for larger clusters from a run's report.json.
#include "simulate.h"

#include <loom/loom.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

namespace loom::scaling {

namespace {

using nlohmann::json;

void check_link(const LinkModel& link, const char* what) {
  LOOM_CHECK(link.busbw_gbps > 0, what, " bandwidth must be positive, got ", link.busbw_gbps,
             " GB/s");
  LOOM_CHECK(link.alpha_us >= 0, what, " latency must be at least 0, got ", link.alpha_us, " us");
}

// Bytes per microsecond of a bus bandwidth in GB/s (1e9 B/s = 1e3 B/us); infinity stays.
double bytes_per_us(const LinkModel& link) { return link.busbw_gbps * 1e3; }

std::string bytes_text(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (u < 3 && bytes >= 1024) bytes /= 1024, ++u;
  char text[32];
  std::snprintf(text, sizeof(text), "%.4g %s", bytes, units[u]);
  return text;
}

std::string fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.*f", digits, value);
  return text;
}

// run.json field access that names the field ("baseline.median_ms") when it is wrong.
const json& member(const json& object, const std::string& key, const std::string& path,
                   const std::string& source) {
  LOOM_CHECK(object.is_object() && object.contains(key), source, ": \"", path, "\" is missing");
  return object.at(key);
}

double positive_number(const json& object, const std::string& key, const std::string& path,
                       const std::string& source) {
  const json& v = member(object, key, path, source);
  LOOM_CHECK(v.is_number() && v.get<double>() > 0, source, ": \"", path,
             "\" must be a positive number, got ", v.dump());
  return v.get<double>();
}

std::optional<double> optional_number(const json& object, const std::string& key) {
  if (!object.is_object() || !object.contains(key) || !object.at(key).is_number())
    return std::nullopt;
  return object.at(key).get<double>();
}

std::string optional_string(const json& object, const std::string& key) {
  if (!object.contains(key) || !object.at(key).is_string()) return "";
  return object.at(key).get<std::string>();
}

bool ran(const json& row) {
  return row.is_object() && row.contains("ran") && row.at("ran") == true;
}

struct Run {
  json j;
  std::vector<int64_t> buckets;
};

Run parse_run(const std::string& text, const std::string& source) {
  Run run;
  try {
    run.j = json::parse(text);
  } catch (const json::parse_error& e) {
    LOOM_FAIL(source, ": not JSON (", e.what(), ")");
  }
  LOOM_CHECK(run.j.is_object(), source, ": expected a loom-scaling report.json object");
  positive_number(member(run.j, "baseline", "baseline", source), "median_ms", "baseline.median_ms",
                  source);
  const json& buckets = member(run.j, "buckets", "buckets", source);
  LOOM_CHECK(buckets.is_array() && !buckets.empty(), source,
             ": \"buckets\" must be a non-empty array");
  for (size_t i = 0; i < buckets.size(); ++i) {
    const std::string path = "buckets[" + std::to_string(i) + "].bytes";
    const json& b = member(buckets[i], "bytes", path, source);
    LOOM_CHECK(b.is_number_integer() && b.get<int64_t>() > 0, source, ": \"", path,
               "\" must be a positive integer, got ", b.dump());
    run.buckets.push_back(b.get<int64_t>());
  }
  return run;
}

int log2_ceil(int n) {
  int levels = 0;
  while ((int64_t{1} << levels) < n) ++levels;
  return levels;
}

// A row of the run as it was measured (the fields simulate does not know stay empty).
SimRow measured_row(const json& row, int gpus_per_node) {
  SimRow m;
  m.simulated = false;
  m.gpus = static_cast<int>(optional_number(row, "world_size").value_or(0));
  m.nodes = (m.gpus + gpus_per_node - 1) / gpus_per_node;
  m.batch_per_gpu = optional_number(row, "global_batch").value_or(0) / std::max(m.gpus, 1);
  m.comm_ms = optional_number(row, "comm_ms");
  m.exposed_comm_ms = optional_number(row, "exposed_comm_ms");
  m.step_ms = optional_number(row, "median_ms").value_or(0);
  m.images_per_s = optional_number(row, "images_per_s").value_or(0);
  m.speedup = optional_number(row, "speedup").value_or(0);
  m.efficiency = optional_number(row, "efficiency").value_or(0);
  m.note = optional_string(row, "note");
  return m;
}

}  // namespace

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

SimReport simulate(const SimulateConfig& c) {
  LOOM_CHECK(!c.gpus.empty(), "--gpus: no GPU counts given");
  for (int n : c.gpus) LOOM_CHECK(n >= 1, "--gpus: a GPU count must be at least 1, got ", n);
  LOOM_CHECK(c.gpus_per_node >= 1, "--gpus-per-node must be at least 1, got ", c.gpus_per_node);
  LOOM_CHECK(!c.overlap || (*c.overlap >= 0 && *c.overlap <= 1),
             "--overlap must be in [0, 1], got ", c.overlap.value_or(0));
  const Run run = parse_run(c.run_json_text, c.run_source);
  const json& j = run.j;
  SimReport r;
  r.run_source = c.run_source;
  r.run_tool = optional_string(j, "tool");
  r.run_model = optional_string(j, "model");
  r.gpu_name = optional_string(j, "gpu_name");
  r.precision = optional_string(j, "precision");
  r.device = optional_string(j, "device");
  r.placement = optional_string(j, "placement");
  const std::string scaling = j.contains("scaling") ? optional_string(j, "scaling") : "weak";
  LOOM_CHECK(scaling == "weak" || scaling == "strong", c.run_source,
             ": \"scaling\" must be weak or strong, got ", j.value("scaling", json()).dump());
  r.strong = scaling == "strong";
  r.compute_ms = j.at("baseline").at("median_ms").get<double>();
  if (r.strong) {
    r.global_batch = static_cast<int64_t>(
        positive_number(j.at("baseline"), "global_batch", "baseline.global_batch", c.run_source));
  } else {
    r.batch_per_rank =
        static_cast<int64_t>(positive_number(j, "batch_per_rank", "batch_per_rank", c.run_source));
  }
  r.bucket_bytes = run.buckets;

  ClusterModel& m = r.model;
  m.gpus_per_node = c.gpus_per_node;
  if (c.intra) {
    m.intra = *c.intra;
  } else if (c.collectives_jsonl_text) {
    m.intra = fit_all_reduce(*c.collectives_jsonl_text, c.collectives_source);
  } else {
    m.intra = {kDefaultIntraAlphaUs, kDefaultIntraBusbwGBps,
               "default: H100/H200 NVLink 4 through NVSwitch, ring all_reduce bus bandwidth (no "
               "collectives file given)"};
  }
  check_link(m.intra, "intra-node");
  const double gbit = c.inter_gbit_per_s.value_or(kDefaultInterGbitPerS);
  LOOM_CHECK(gbit > 0, "inter-node bandwidth must be positive, got ", gbit, " Gb/s");
  const double inter_alpha = c.inter_alpha_us.value_or(kDefaultInterAlphaUs);
  m.inter =
      network_link(gbit, inter_alpha,
                   (c.inter_gbit_per_s
                        ? "given: " + fixed(gbit, 0) + " Gb/s per GPU"
                        : "default: 400 Gb/s per GPU, one NDR InfiniBand NIC each (DGX H100, p5)") +
                       " at line rate; " + fixed(inter_alpha, 2) + " us per network step (" +
                       (c.inter_alpha_us ? "given" : "default") + ")");

  // The overlap: measured at the largest world that measured both times, else given, else none.
  const json rows = j.contains("rows") && j.at("rows").is_array() ? j.at("rows") : json::array();
  int measured_world = 0, largest_ran = 0;
  double comm = 0, exposed = 0;
  for (const json& row : rows) {
    const int n = static_cast<int>(optional_number(row, "world_size").value_or(0));
    if (!ran(row) || n < 2) continue;
    largest_ran = std::max(largest_ran, n);
    const auto cm = optional_number(row, "comm_ms"), ex = optional_number(row, "exposed_comm_ms");
    if (cm && ex && *cm > 0 && n > measured_world) {
      measured_world = n, comm = *cm, exposed = *ex;
      r.measured_step_ms = optional_number(row, "median_ms");
    }
  }
  r.reference_world = measured_world ? measured_world : largest_ran ? largest_ran : c.gpus_per_node;
  if (measured_world) r.measured_comm_ms = comm, r.measured_exposed_ms = exposed;
  if (c.overlap) {
    r.overlap = *c.overlap;
    r.overlap_source = "given (--overlap)";
  } else if (measured_world) {
    r.overlap = std::clamp(1 - exposed / comm, 0.0, 1.0);
    r.overlap_source = "measured at world " + std::to_string(measured_world) +
                       ": 1 - exposed_comm_ms " + fixed(exposed, 3) + " / comm_ms " +
                       fixed(comm, 3);
  } else {
    r.overlap = 0;
    r.overlap_source =
        "default: " + c.run_source + " measured no comm_ms and exposed_comm_ms, so none is assumed";
  }
  const auto compute_ms = [&](int n) { return r.strong ? r.compute_ms / n : r.compute_ms; };
  r.hidden_ms = r.overlap * step_comm(r.reference_world, r.bucket_bytes, m).total_us / 1e3;

  for (int n : c.gpus) {
    SimRow row;
    row.gpus = n;
    const StepComm comm_n = step_comm(n, r.bucket_bytes, m);
    row.nodes = comm_n.nodes;
    row.algorithm = n == 1 ? "none" : comm_n.algorithm;
    const double hidden = r.hidden_ms * compute_ms(n) / compute_ms(r.reference_world);
    row.compute_ms = compute_ms(n);
    row.comm_ms = comm_n.total_us / 1e3;
    row.exposed_comm_ms = std::max(comm_n.last_us / 1e3, *row.comm_ms - hidden);
    row.step_ms = *row.compute_ms + *row.exposed_comm_ms;
    const double global =
        r.strong ? static_cast<double>(r.global_batch) : static_cast<double>(n * r.batch_per_rank);
    row.batch_per_gpu = global / n;
    row.images_per_s = global / (row.step_ms / 1e3);
    const double base_images_per_s =
        (r.strong ? r.global_batch : r.batch_per_rank) / (r.compute_ms / 1e3);
    row.speedup = row.images_per_s / base_images_per_s;
    row.efficiency = row.speedup / n;
    if (r.strong && row.batch_per_gpu < 1)
      row.note = "fewer than one image per GPU: not meaningful";
    r.rows.push_back(row);
  }
  if (c.include_measured) {
    for (const json& row : rows) {
      const SimRow measured = measured_row(row, c.gpus_per_node);
      if (ran(row) && measured.gpus >= 1) r.rows.push_back(measured);
    }
  }
  std::stable_sort(r.rows.begin(), r.rows.end(), [](const SimRow& a, const SimRow& b) {
    return a.gpus != b.gpus ? a.gpus < b.gpus : !a.simulated && b.simulated;
  });
  return r;
}

namespace {

std::string link_text(const LinkModel& l) {
  return "alpha " + fixed(l.alpha_us, 3) + " us/step, busbw " + fixed(l.busbw_gbps, 1) +
         " GB/s: " + l.source;
}

std::string cell(const std::optional<double>& v, int width, int digits) {
  char text[64];
  if (v)
    std::snprintf(text, sizeof(text), "%*.*f", width, digits, *v);
  else
    std::snprintf(text, sizeof(text), "%*s", width, "-");
  return text;
}

}  // namespace

std::string simulate_text(const SimReport& r) {
  const ClusterModel& m = r.model;
  const int g = m.gpus_per_node;
  std::ostringstream out;
  out << "# loom-scaling simulate: data-parallel steps on larger clusters, predicted from "
      << r.run_source << " by an alpha-beta all-reduce model (docs/scaling.md)\n";
  out << "# run: " << (r.run_tool.empty() ? "?" : r.run_tool) << " "
      << (r.run_model.empty() ? "?" : r.run_model)
      << (r.gpu_name.empty() ? "" : " on " + r.gpu_name)
      << (r.precision.empty() ? "" : ", " + r.precision) << ", "
      << (r.strong ? "strong scaling, global batch " + std::to_string(r.global_batch) +
                         " split over the GPUs"
                   : "weak scaling, batch " + std::to_string(r.batch_per_rank) + " per GPU")
      << "\n";
  if ((!r.device.empty() && r.device != "cuda") ||
      (!r.placement.empty() && r.placement != "gpus")) {
    out << "# warning: the run was on device " << r.device << ", placement " << r.placement
        << ", not one rank per GPU: its compute and communication times are not a GPU cluster's\n";
  }
  out << "# compute per step t_c = " << fixed(r.compute_ms, 3)
      << " ms (baseline.median_ms: the plain model on one GPU"
      << (r.strong ? "; strong scaling: t_c / n, an ideal split"
                   : "; weak scaling: the same at every count")
      << ")\n";
  int64_t total = 0;
  for (int64_t b : r.bucket_bytes) total += b;
  out << "# gradients: " << r.bucket_bytes.size() << " bucket"
      << (r.bucket_bytes.size() == 1 ? "" : "s") << ", " << bytes_text(static_cast<double>(total))
      << " [";
  for (size_t i = 0; i < r.bucket_bytes.size(); ++i) out << (i ? " " : "") << r.bucket_bytes[i];
  out << " bytes], all-reduced back to back in bucket order on one stream\n";
  out << "# intra-node, " << g << " GPUs per node: " << link_text(m.intra) << "\n";
  if (m.intra.fitted_world && m.intra.fitted_world != g) {
    out << "#   (fitted at world " << m.intra.fitted_world << ", used for " << g << "-GPU nodes)\n";
  }
  out << "# inter-node, per GPU: " << link_text(m.inter) << "\n";
  out << "# all-reduce of S bytes, n GPUs: n <= " << g << ": ring 2(n-1)a + 2(n-1)/n S/B; n = N x "
      << g << ": intra ring reduce-scatter + all-gather 2(" << g << "-1)a + 2(" << g << "-1)/" << g
      << " S/B, between nodes the faster (per bucket, as NCCL's tuner) of ring 2(N-1)a + 2(N-1)/N "
         "s/B and tree "
         "2 ceil(log2 N) a + 2 s/B over s = S/"
      << g << "\n";
  out << "# overlap f = " << fixed(r.overlap, 3) << ": " << r.overlap_source
      << "; hidden window H = f x T(" << r.reference_world << ") = " << fixed(r.hidden_ms, 4)
      << " ms of backward" << (r.strong ? ", scaled with t_c" : "") << "\n";
  if (r.measured_comm_ms) {
    const double model_us = step_comm(r.reference_world, r.bucket_bytes, m).total_us;
    out << "#   the model's T(" << r.reference_world << ") = " << fixed(model_us / 1e3, 4)
        << " ms against the run's measured comm_ms " << fixed(*r.measured_comm_ms, 4) << " ms\n";
  }
  if (r.measured_step_ms && r.measured_exposed_ms) {
    out << "#   the run's world " << r.reference_world << " step " << fixed(*r.measured_step_ms, 3)
        << " ms = t_c " << fixed(r.compute_ms, 3) << " + exposed "
        << fixed(*r.measured_exposed_ms, 3) << " + "
        << fixed(*r.measured_step_ms - r.compute_ms - *r.measured_exposed_ms, 3)
        << " ms that the model leaves out (DDP's own work, waiting for the slowest rank)\n";
  }
  out << "# exposed(n) = max(T_last(n), T(n) - H): the last bucket waits for the end of backward; "
         "step(n) = t_c + exposed(n), no DDP wrapper cost (the measured rows have it)\n";
  out << "# speedup = images/s over the plain model's on one GPU; efficiency = speedup / gpus\n#\n";
  out << "#  gpus  nodes  batch/gpu  compute_ms     comm_ms  exposed_ms     step_ms      images/s  "
         " speedup  "
         "efficiency  algorithm  kind\n";
  for (const SimRow& row : r.rows) {
    char line[320];
    std::snprintf(line, sizeof(line),
                  "%7d  %5d  %9.2f  %s  %s  %s  %10.4f  %12.1f  %7.2fx  %9.1f%%  %9s  %s%s%s\n",
                  row.gpus, row.nodes, row.batch_per_gpu, cell(row.compute_ms, 10, 4).c_str(),
                  cell(row.comm_ms, 10, 4).c_str(), cell(row.exposed_comm_ms, 10, 4).c_str(),
                  row.step_ms, row.images_per_s, row.speedup, 100 * row.efficiency,
                  row.algorithm.empty() ? "-" : row.algorithm.c_str(),
                  row.simulated ? "simulated" : "measured", row.note.empty() ? "" : "  ",
                  row.note.c_str());
    out << line;
  }
  return out.str();
}

std::string simulate_json(const SimReport& r) {
  const auto link = [](const LinkModel& l) {
    return json{{"alpha_us", l.alpha_us},
                {"busbw_gbps", l.busbw_gbps},
                {"source", l.source},
                {"fitted_world", l.fitted_world},
                {"fitted_points", l.fitted_points},
                {"worst_residual", l.worst_residual}};
  };
  const auto optional = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  json j;
  j["tool"] = "loom-scaling simulate";
  j["run"] = r.run_source;
  j["run_tool"] = r.run_tool;
  j["model"] = r.run_model;
  j["gpu_name"] = r.gpu_name;
  j["precision"] = r.precision;
  j["device"] = r.device;
  j["placement"] = r.placement;
  j["scaling"] = r.strong ? "strong" : "weak";
  j["batch_per_rank"] = r.strong ? json(nullptr) : json(r.batch_per_rank);
  j["global_batch"] = r.strong ? json(r.global_batch) : json(nullptr);
  j["compute_ms"] = r.compute_ms;
  j["bucket_bytes"] = r.bucket_bytes;
  j["cluster"] = {{"gpus_per_node", r.model.gpus_per_node},
                  {"intra", link(r.model.intra)},
                  {"inter", link(r.model.inter)}};
  j["overlap"] = {{"fraction", r.overlap},
                  {"source", r.overlap_source},
                  {"reference_world", r.reference_world},
                  {"hidden_ms", r.hidden_ms},
                  {"measured_comm_ms", optional(r.measured_comm_ms)},
                  {"measured_exposed_comm_ms", optional(r.measured_exposed_ms)},
                  {"measured_step_ms", optional(r.measured_step_ms)}};
  j["rows"] = json::array();
  for (const SimRow& row : r.rows) {
    j["rows"].push_back({{"gpus", row.gpus},
                         {"nodes", row.nodes},
                         {"batch_per_gpu", row.batch_per_gpu},
                         {"compute_ms", optional(row.compute_ms)},
                         {"comm_ms", optional(row.comm_ms)},
                         {"exposed_comm_ms", optional(row.exposed_comm_ms)},
                         {"step_ms", row.step_ms},
                         {"images_per_s", row.images_per_s},
                         {"speedup", row.speedup},
                         {"efficiency", row.efficiency},
                         {"algorithm", row.algorithm},
                         {"kind", row.simulated ? "simulated" : "measured"},
                         {"note", row.note}});
  }
  return j.dump(2) + "\n";
}

}  // namespace loom::scaling
