// loom-scaling simulate (simulate.h): reads a run's report.json, predicts each GPU count's step
// from t_c, DDP's own work w and the all-reduce model's exposed communication, and writes the
// result as nccl-tests style text and as JSON.
#include "simulate.h"

#include <loom/loom.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "text_helpers.h"

namespace loom::scaling {

namespace {

using nlohmann::json;
using text::bytes_text;
using text::fixed;
using text::optional_number;
using text::optional_string;

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

  const json rows = j.contains("rows") && j.at("rows").is_array() ? j.at("rows") : json::array();
  // DDP's own work per step: the DDP row at world 1 (one rank, NCCL moves nothing) against the
  // plain model. Fixed per-step work, mostly launches, so the same at every n, strong or weak.
  for (const json& row : rows) {
    const auto step = optional_number(row, "median_ms");
    if (ran(row) && optional_number(row, "world_size") == 1.0 && step && *step > 0) {
      r.world1_step_ms = step;
      break;
    }
  }
  if (r.world1_step_ms) {
    r.ddp_ms = std::max(0.0, *r.world1_step_ms - r.compute_ms);
    r.ddp_source = "measured: the run's DDP world-1 step " + fixed(*r.world1_step_ms, 3) +
                   " ms - baseline.median_ms " + fixed(r.compute_ms, 3) + " ms" +
                   (r.ddp_ms > 0 ? "" : ", not positive, so 0");
  } else {
    r.ddp_source = "default: " + c.run_source +
                   " has no DDP row at world 1 that ran, so 0 (the simulated steps leave DDP's own "
                   "work out)";
  }
  // The overlap: measured at the largest world that measured both times, else given, else none.
  int measured_world = 0, largest_ran = 0;
  double comm = 0, exposed = 0;
  bool from_steps = false;  // the reference row was captured: its exposed time is step - plain - w
  for (const json& row : rows) {
    const int n = static_cast<int>(optional_number(row, "world_size").value_or(0));
    if (!ran(row) || n < 2) continue;
    largest_ran = std::max(largest_ran, n);
    const auto cm = optional_number(row, "comm_ms");
    auto ex = optional_number(row, "exposed_comm_ms");
    // A captured row's exposed time is its step minus the plain one's, w included: w comes apart.
    const bool steps = optional_string(row, "exposed_measure") == "ddp_minus_plain";
    if (ex && steps) ex = std::max(0.0, *ex - r.ddp_ms);
    if (cm && ex && *cm > 0 && n > measured_world) {
      measured_world = n, comm = *cm, exposed = *ex, from_steps = steps;
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
    r.overlap_source =
        "measured at world " + std::to_string(measured_world) + ": 1 - exposed_comm_ms " +
        fixed(exposed, 3) + " / comm_ms " + fixed(comm, 3) +
        (from_steps ? " (a captured row: exposed = its step - the plain step - w)" : "");
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
    row.ddp_ms = r.ddp_ms;
    row.comm_ms = comm_n.total_us / 1e3;
    row.exposed_comm_ms = std::max(comm_n.last_us / 1e3, *row.comm_ms - hidden);
    row.step_ms = *row.compute_ms + *row.ddp_ms + *row.exposed_comm_ms;
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
  out << "# DDP's own work per step w = " << fixed(r.ddp_ms, 3) << " ms: " << r.ddp_source
      << "; the same at every count (fixed per-step work, mostly launches: not split under strong "
         "scaling)\n";
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
    const int n_ref = r.reference_world;
    const double t_c = r.strong ? r.compute_ms / n_ref : r.compute_ms;
    out << "#   the run's world " << n_ref << " step " << fixed(*r.measured_step_ms, 3)
        << " ms = t_c(" << n_ref << ") " << fixed(t_c, 3) << " + w " << fixed(r.ddp_ms, 3)
        << " + exposed " << fixed(*r.measured_exposed_ms, 3) << " + "
        << fixed(*r.measured_step_ms - t_c - r.ddp_ms - *r.measured_exposed_ms, 3)
        << " ms that the model leaves out (waiting for the slowest rank, DDP work that grows with "
           "the world)\n";
  }
  out << "# exposed(n) = max(T_last(n), T(n) - H): the last bucket waits for the end of backward; "
         "step(n) = t_c(n) + w + exposed(n)\n";
  out << "# speedup = images/s over the plain model's on one GPU; efficiency = speedup / gpus\n#\n";
  out << "#  gpus  nodes  batch/gpu  compute_ms      ddp_ms     comm_ms  exposed_ms     step_ms  "
         "    images/s   speedup  efficiency  algorithm  kind\n";
  for (const SimRow& row : r.rows) {
    char line[320];
    std::snprintf(
        line, sizeof(line),
        "%7d  %5d  %9.2f  %s  %s  %s  %s  %10.4f  %12.1f  %7.2fx  %9.1f%%  %9s  %s%s%s\n", row.gpus,
        row.nodes, row.batch_per_gpu, cell(row.compute_ms, 10, 4).c_str(),
        cell(row.ddp_ms, 10, 4).c_str(), cell(row.comm_ms, 10, 4).c_str(),
        cell(row.exposed_comm_ms, 10, 4).c_str(), row.step_ms, row.images_per_s, row.speedup,
        100 * row.efficiency, row.algorithm.empty() ? "-" : row.algorithm.c_str(),
        row.simulated ? "simulated" : "measured", row.note.empty() ? "" : "  ", row.note.c_str());
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
  j["ddp"] = {
      {"ms", r.ddp_ms}, {"source", r.ddp_source}, {"world1_step_ms", optional(r.world1_step_ms)}};
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
                         {"ddp_ms", optional(row.ddp_ms)},
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
