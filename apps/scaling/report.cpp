// loom-scaling's report: '#' lines stating the setup, one row per world size (nccl-tests' way),
// the pipeline rows in a block of their own, and the same figures as JSON (schema in
// apps/scaling/README.md) and CSV.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "outputs.h"
#include "rank_run.h"
#include "row_figures.h"
#include "scaling.h"

namespace loom::scaling {

namespace {

// A command's output, "" when it cannot run (no nvidia-smi on a CPU machine).
std::string command_output(const char* command) {
  std::string out;
  if (FILE* pipe = popen(command, "r")) {
    char buffer[512];
    while (fgets(buffer, sizeof(buffer), pipe) && out.size() < 8192) out += buffer;
    pclose(pipe);
  }
  return out;
}

// nvidia-smi topo -m's matrix without its terminal colour codes and without the legend that
// follows it.
std::string topology_lines() {
  const std::string raw = command_output("nvidia-smi topo -m 2>/dev/null");
  std::string plain;
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] == '\x1b') {  // ESC [ ... m
      while (i < raw.size() && raw[i] != 'm') ++i;
      continue;
    }
    plain += raw[i];
  }
  return plain.substr(0, plain.find("Legend"));
}

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

// "NVIDIA H200, 580.65" per GPU.
std::string gpu_lines() {
  return command_output(
      "nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader 2>/dev/null");
}

std::string fixed(const std::optional<double>& v, int digits) {
  if (!v) return "-";
  char text[32];
  std::snprintf(text, sizeof(text), "%.*f", digits, *v);
  return text;
}

std::optional<double> slowest_ms(const Row& r) {
  const std::optional<RankSpread> spread = rank_spread(r.rank_median_ms);
  return spread ? std::optional<double>(spread->slowest_ms) : std::nullopt;
}

std::optional<double> percent(const std::optional<double>& share) {
  return share ? std::optional<double>(100.0 * *share) : std::nullopt;
}

std::string row_text(const Row& r, bool plain) {
  char line[400];
  if (!r.ran) {
    std::snprintf(line, sizeof(line), "%6d  %s\n", r.world_size, r.note.c_str());
    return line;
  }
  std::snprintf(line, sizeof(line),
                "%6s  %7lld  %9.3f  %8s  %8.3f  %8.3f  %10.1f  %6.2fx  %6.1f%%  %8s  %8s  %6s  "
                "%8.3f  %6d  %8s  %-5s  "
                "%-10s  %s\n",
                plain ? "plain" : std::to_string(r.world_size).c_str(),
                static_cast<long long>(r.global_batch), r.median_ms,
                fixed(slowest_ms(r), 3).c_str(), r.p10_ms, r.p90_ms, r.images_per_s, r.speedup,
                100.0 * r.efficiency, fixed(r.comm_ms, 3).c_str(),
                fixed(r.exposed_comm_ms, 3).c_str(), fixed(percent(exposed_share(r)), 1).c_str(),
                r.loader_wait_ms, r.differing_ranks, fixed(r.usd_per_million_images, 3).c_str(),
                r.step_mode.c_str(), r.launch.c_str(), r.note.c_str());
  return line;
}

std::string csv(const std::optional<double>& v) { return v ? fixed(v, 6) : ""; }

nlohmann::json optional_json(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

nlohmann::json row_json(const Row& r) {
  nlohmann::json j = {
      {"world_size", r.world_size},
      {"ran", r.ran},
      {"note", r.note},
      {"global_batch", r.global_batch},
      {"step_mode", r.step_mode},
      {"launch", r.launch},
      {"median_ms", r.median_ms},
      {"p10_ms", r.p10_ms},
      {"p90_ms", r.p90_ms},
      {"images_per_s", r.images_per_s},
      {"speedup", r.speedup},
      {"efficiency", r.efficiency},
      {"comm_ms", optional_json(r.comm_ms)},
      {"exposed_comm_ms", optional_json(r.exposed_comm_ms)},
      {"exposed_measure",
       r.exposed_measure.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.exposed_measure)},
      {"exposed_share", optional_json(exposed_share(r))},
      {"loader_wait_ms", r.loader_wait_ms},
      {"differing_ranks", r.differing_ranks},
      {"usd_per_million_images", optional_json(r.usd_per_million_images)},
      {"rank_median_ms", r.rank_median_ms},
      {"rank_images_per_s", rank_images_per_s(r)},
      {"slowest_rank_ms", optional_json(slowest_ms(r))}};
  const std::optional<RankSpread> spread = rank_spread(r.rank_median_ms);
  j["slowest_rank"] = spread ? nlohmann::json(spread->slowest_rank) : nlohmann::json(nullptr);
  j["ddp_step"] = r.ddp_step ? ddp_step_json(*r.ddp_step) : nlohmann::json(nullptr);
  return j;
}

// step_growth's lines: the steps, then the growth split into its parts (each printed to the
// microsecond, so the printed parts add up to the printed growth within rounding).
std::string step_growth_text(const StepGrowth& g) {
  const char* reference = g.from_plain ? "the plain step (no world of one ran)" : "1 rank";
  std::string text = detail::concat(
      "# 1 -> ", g.to_world, " ranks: where the speedup went; ideal = ", reference, "'s step ",
      fixed(g.from_ms, 3), " ms", g.ideal_ms != g.from_ms ? " scaled to the batch per rank, " : "",
      g.ideal_ms != g.from_ms ? fixed(g.ideal_ms, 3) + " ms" : "", "; at ", g.to_world,
      " ranks the slowest rank's step ", fixed(g.slowest_ms, 3), " ms (rank ", g.slowest_rank,
      "; rank 0 ", fixed(g.to_ms, 3), " ms); speedup ", fixed(g.speedup, 2), "x of ", g.to_world,
      "\n");
  char line[256];
  std::snprintf(line, sizeof(line),
                "#   %+.3f ms = exposed communication %+.3f + straggler %+.3f + unexplained "
                "%+.3f\n",
                g.growth_ms, g.exposed_growth_ms, g.straggler_ms, g.unexplained_ms);
  text += line;
  text += detail::concat(
      "#   exposed ", fixed(g.exposed_from_ms, 3), " -> ", fixed(g.exposed_to_ms, 3),
      " ms (of an all-reduce of ", fixed(g.comm_ms, 3), " ms alone); compute (the plain step) ",
      fixed(g.plain_ms, 3),
      " ms; unexplained: DDP's host work that grows with the ranks, "
      "clocks, noise",
      g.ideal_ms != g.from_ms ? ", compute that did not shrink with the batch" : "", "\n");
  if (g.placement == Placement::OneGpu)
    text += "#   the ranks share cuda:0 and take turns on it: this is NOT a multi-GPU speedup\n";
  if (g.placement == Placement::Cpu)
    text += "#   CPU thread ranks share this machine's cores: this is NOT a multi-device speedup\n";
  return text;
}

nlohmann::json step_growth_json(const std::optional<StepGrowth>& growth) {
  if (!growth) return nullptr;
  const StepGrowth& g = *growth;
  return {{"from_world", g.from_world},
          {"to_world", g.to_world},
          {"from", g.from_plain ? "plain" : "world_of_one"},
          {"from_ms", g.from_ms},
          {"ideal_ms", g.ideal_ms},
          {"to_ms", g.to_ms},
          {"slowest_ms", g.slowest_ms},
          {"slowest_rank", g.slowest_rank},
          {"plain_ms", g.plain_ms},
          {"comm_ms", optional_json(g.comm_ms)},
          {"exposed_from_ms", optional_json(g.exposed_from_ms)},
          {"exposed_to_ms", optional_json(g.exposed_to_ms)},
          {"growth_ms", g.growth_ms},
          {"exposed_growth_ms", g.exposed_growth_ms},
          {"straggler_ms", g.straggler_ms},
          {"unexplained_ms", g.unexplained_ms},
          {"speedup", g.speedup},
          {"multi_device", g.placement == Placement::Gpus}};
}

// "pipeline 2 stages, 4 micro-batches, gpipe".
std::string pipeline_label(const PipelineRow& p) {
  return detail::concat("pipeline ", p.stages, " stages, ", p.micro_batches,
                        p.micro_batches == 1 ? " micro-batch, " : " micro-batches, ", p.schedule);
}

// "layers 0-3 on cpu (896 parameters; 1.234 ms busy) | layers 4-6 ...": no commas (a CSV field).
std::string stage_layout_text(const PipelineRow& p) {
  std::string text;
  for (size_t s = 0; s < p.layout.size(); ++s) {
    const dist::PipelineStage& stage = p.layout[s];
    text += detail::concat(s > 0 ? " | " : "", "layers ", stage.first_layer, "-",
                           stage.end_layer - 1, " on ", stage.device.str(), " (", stage.parameters,
                           " parameters; ", fixed(p.stage_busy_ms.at(s), 3), " ms busy)");
  }
  return text;
}

// The row, then a '#' line with its stages.
std::string pipeline_row_text(const PipelineRow& p) {
  const Row& r = p.row;
  const std::string label = pipeline_label(p) + (r.note.empty() ? "" : "; " + r.note);
  char line[512];
  if (!r.ran) {
    std::snprintf(line, sizeof(line), "%8d  %s\n", p.stages, label.c_str());
    return line;
  }
  std::snprintf(line, sizeof(line),
                "%8d  %7lld  %9.3f  %8.3f  %8.3f  %10.1f  %6.2fx  %6.1f%%  %6.3f  %6.3f  %8s  %s\n",
                p.stages, static_cast<long long>(r.global_batch), r.median_ms, r.p10_ms, r.p90_ms,
                r.images_per_s, r.speedup, 100.0 * r.efficiency, p.bubble, p.theoretical_bubble,
                fixed(r.usd_per_million_images, 3).c_str(), label.c_str());
  return line + ("#         " + stage_layout_text(p) + "\n");
}

nlohmann::json pipeline_row_json(const PipelineRow& p) {
  nlohmann::json j = row_json(p.row);
  j["stages"] = p.stages;
  j["micro_batches"] = p.micro_batches;
  j["schedule"] = p.schedule;
  j["bubble"] = p.row.ran ? nlohmann::json(p.bubble) : nlohmann::json(nullptr);
  j["theoretical_bubble"] = p.theoretical_bubble;
  j["stage_layout"] = nlohmann::json::array();
  for (size_t s = 0; s < p.layout.size(); ++s) {
    const dist::PipelineStage& stage = p.layout[s];
    j["stage_layout"].push_back({{"first_layer", stage.first_layer},
                                 {"end_layer", stage.end_layer},
                                 {"device", stage.device.str()},
                                 {"parameters", stage.parameters},
                                 {"busy_ms", p.stage_busy_ms.at(s)}});
  }
  return j;
}

// Where a pipeline row's stages run, for its block's header.
std::string pipeline_placement_text(const Config& c) {
  switch (c.placement) {
    case Placement::Gpus:
      return "cuda:0, cuda:1, ... (stage s on cuda:s), activations and gradients passed by device "
             "copies";
    case Placement::OneGpu:
      return "cuda:0, all of them, each on its own stream: NOT a multi-GPU speedup";
    case Placement::Cpu:
      return "the CPU, taking turns on one thread: no overlap, so the bubble is at least 1 - "
             "1/stages";
  }
  return "";
}

int64_t bucket_bytes(const dist::BucketInfo& b) {
  return b.numel * static_cast<int64_t>(element_size(b.dtype));
}

std::string placement_text(const Config& c) {
  if (c.launch != "threads" && c.launch != "processes") {  // one rank of a launcher's job
    return detail::concat("a job of processes started by ", c.launch, ", one rank per ",
                          c.placement == Placement::Cpu ? "process on the CPU" : "GPU over NCCL");
  }
  switch (c.placement) {
    case Placement::Gpus:
      return c.launch == "processes"
                 ? "one rank per GPU over NCCL, a process per rank (TCP rendezvous)"
                 : "one rank per GPU over NCCL, a thread per rank";
    case Placement::OneGpu:
      return "every rank on cuda:0 (threads backend): shows N ranks working, NOT a multi-GPU "
             "speedup";
    case Placement::Cpu:
      return c.launch == "processes"
                 ? "CPU ranks, a process per rank (TCP backend): slow, for checking only"
                 : "CPU thread ranks (threads backend): slow, for checking only";
  }
  return "";
}

// Each row's label and a field of it: "plain graph, 1 graph, 2 eager".
std::string per_row(const Report& report, const std::string Row::*field) {
  std::string text = report.baseline.ran ? "plain " + report.baseline.*field : "";
  for (const Row& r : report.rows) {
    if (r.ran) text += detail::concat(text.empty() ? "" : ", ", r.world_size, " ", r.*field);
  }
  for (const PipelineRow& p : report.pipeline_rows) {
    if (p.row.ran)
      text += detail::concat(text.empty() ? "" : ", ", "pipeline ", p.stages, " ", p.row.*field);
  }
  return text.empty() ? "no row ran" : text;
}

std::string step_mode_text(const Report& report) {
  return "step mode (--graph " + report.config.graph +
         "): graph = each rank's whole step (forward, BCE, backward "
         "with DDP's NCCL all-reduces, Adam) is one CUDA graph replay (train::CapturedStep; with "
         "2+ ranks each step "
         "first agrees on the batch shape over the group), eager = op by op; rows: " +
         per_row(report, &Row::step_mode);
}

std::string launch_text(const Report& report) {
  return "launch: in_process = loom-scaling's own thread (the plain model, and a world of one "
         "timed beside it), "
         "threads = a thread per rank (dist::spawn), processes = a process per rank (as torchrun); "
         "rows: " +
         per_row(report, &Row::launch);
}

}  // namespace

std::string report_text(const Report& report) {
  const Config& c = report.config;
  std::ostringstream out;
  out << "# loom-scaling " << report.date
      << ": data-parallel training steps (forward, BCE, backward with the DDP all-reduce, Adam)\n";
  out << "# placement: " << placement_text(c) << "\n";
  out << "# " << launch_text(report) << "\n";
  out << "# " << step_mode_text(report) << "\n";
  out << "# " << cuda_device_count() << " CUDA device" << (cuda_device_count() == 1 ? "" : "s")
      << " visible; " << (built_with_cuda() ? cuda_library_versions() + ", " : "") << "NCCL "
      << dist::nccl_version() << "\n";
  std::istringstream gpus(gpu_lines());
  for (std::string line; std::getline(gpus, line);) out << "#   GPU " << line << "\n";
  std::istringstream topology(topology_lines());
  for (std::string line; std::getline(topology, line);) {
    if (line.find_first_not_of(" \t") != std::string::npos) out << "#   " << line << "\n";
  }
  out << "# model " << c.model << " (" << report.parameters << " parameters), precision "
      << (c.placement == Placement::Cpu ? computed_precision(c) + " (the CPU path)" : c.precision)
      << (c.channels_last ? ", channels-last" : "") << ", "
      << (c.data == "synthetic"
              ? "synthetic 64x64 images"
              : "photographs from " + c.data + " (64x64, torchvision augmentation)")
      << ", " << (c.strong ? "strong" : "weak") << " scaling, "
      << (c.strong ? "the global batch of the largest world split over the ranks"
                   : "batch " + std::to_string(c.batch_per_rank) +
                         " per rank, global batch = ranks x that")
      << "\n";
  out << "# " << c.steps << " timed steps after " << c.warmup
      << " warm-up steps (the plain model's for at least " << c.warmup_seconds
      << (c.placement == Placement::Cpu ? " s, so the CPU's caches and allocator are warm"
                                        : " s, so the GPU is at its clocks")
      << "); step time: "
      << (c.placement == Placement::Cpu ? "rank 0's host clock"
                                        : "CUDA events on rank 0's compute stream")
      << " (every rank waits for the others each step)\n";
  out << "# buckets of the largest world run: " << report.buckets.size();
  for (const auto& b : report.buckets)
    out << " [" << b.numel << " " << dtype_name(b.dtype) << ", " << bucket_bytes(b) << " B]";
  out << "\n";
  out << "# speedup = images/s over loom's plain model (no DDP wrapper) on one device; efficiency "
         "= speedup / ranks\n"
      << "# median_ms is rank 0's step; slowest = the largest of every rank's median step (a "
         "straggler the others\n"
      << "#   wait for shows there)\n"
      << "# comm_ms = the step's bucket all-reduces alone, back to back; exposed: on eager rows "
         "the median stall of the\n"
      << "#   compute stream at the end of backward waiting for them (DDP's events; the CPU: host "
         "clock), on graph rows\n"
      << "#   DDP step median - plain step median (a replay cannot time its stall, so this also "
         "holds DDP's own work\n"
      << "#   and the wait for slower ranks); exp% = exposed / median_ms; loader = median host "
         "wait for a batch;\n"
      << "#   differ = ranks whose parameter hash differs from rank 0's after the run (must be "
         "0)\n";
  if (c.price_per_gpu_hour) out << "# cost: " << *c.price_per_gpu_hour << " $ per GPU hour\n";
  out << "#\n";
  if (report.baseline.ran) {  // not with --tta-only
    out << "# ranks   global  median_ms   slowest    p10_ms    p90_ms    images/s  speedup  effic. "
           "  comm_ms   exposed"
           "    exp%    loader  differ   $/M img  mode   launch      note\n";
    out << row_text(report.baseline, true);
    for (const Row& r : report.rows) out << row_text(r, false);
    if (const std::optional<StepGrowth> growth = step_growth(report))
      out << "#\n" << step_growth_text(*growth);
    if (!report.pipeline_rows.empty()) {
      out << "#\n# pipeline rows (model parallelism: dist::PipelineParallel in this process): the "
             "same model\n"
          << "#   cut into N contiguous stages balanced by parameter count, at the global batch of "
             "the DDP row\n"
          << "#   of N ranks cut into micro-batches, one Adam step per batch\n"
          << "# stages on " << pipeline_placement_text(c) << "\n"
          << "# step time as the DDP rows ("
          << (c.placement == Placement::Cpu
                  ? "the host clock"
                  : "CUDA events on cuda:0's compute stream, which the end of every step\n"
                    "#   waits for on every stage")
          << "); speedup and efficiency (= speedup / stages) against the same plain model\n"
          << "# bubble = 1 - busy / step averaged over the stages, from one more step with every "
             "stage op timed\n"
          << "#   (busy: the '#' line under each row); theory = (stages - 1) / (micro-batches + "
             "stages - 1),\n"
          << "#   the schedule's with equal stages\n"
          << "# stages   global  median_ms    p10_ms    p90_ms    images/s  speedup   effic.  "
             "bubble  theory"
             "   $/M img\n";
      for (const PipelineRow& p : report.pipeline_rows) out << pipeline_row_text(p);
    }
  }
  if (report.accuracy) {
    const AccuracyRun& a = *report.accuracy;
    out << "#\n# time to accuracy: validation accuracy >= " << a.target << " on " << c.data
        << "; lr rule: " << a.lr_rule << "\n";
    out << "# steps as loom-catdog's default --graph auto runs them: graph at one CUDA rank, eager "
           "otherwise\n";
    out << "# ranks   global        lr  epochs  to_target  seconds_to_target  final_acc   seconds  "
           "$_to_target  mode\n";
    for (const AccuracyRow& r : a.rows) {
      char line[256];
      if (!r.ran) {
        std::snprintf(line, sizeof(line), "%7d  %s\n", r.world_size, r.note.c_str());
      } else {
        std::snprintf(line, sizeof(line),
                      "%7d  %7lld  %8.4f  %6lld  %9s  %17s  %9.4f  %8.1f  %11s  %s\n", r.world_size,
                      static_cast<long long>(r.global_batch), r.lr,
                      static_cast<long long>(r.epochs),
                      r.epochs_to_target ? std::to_string(*r.epochs_to_target).c_str() : "never",
                      fixed(r.seconds_to_target, 1).c_str(), r.final_accuracy, r.seconds,
                      fixed(r.usd_to_target, 4).c_str(), r.step_mode.c_str());
      }
      out << line;
    }
  }
  return out.str();
}

std::string report_json(const Report& report) {
  const Config& c = report.config;
  nlohmann::json j;
  j["tool"] = "loom";
  j["date"] = report.date;
  j["model"] = c.model;
  j["parameters"] = report.parameters;
  int64_t gradient_bytes = 0;
  j["buckets"] = nlohmann::json::array();
  for (const auto& b : report.buckets) {
    gradient_bytes += bucket_bytes(b);
    j["buckets"].push_back(
        {{"numel", b.numel}, {"bytes", bucket_bytes(b)}, {"dtype", dtype_name(b.dtype)}});
  }
  j["gradient_bytes"] = gradient_bytes;
  j["device"] = c.placement == Placement::Cpu ? "cpu" : "cuda";
  const std::string gpus = gpu_lines();
  const std::string first = first_line(gpus);
  const size_t a = first.find(", "), b = first.rfind(", ");
  j["gpu_name"] = a != std::string::npos && b > a ? first.substr(a + 2, b - a - 2) : "";
  j["gpus_present"] = cuda_device_count();
  j["placement"] = placement_name(c.placement);
  j["launch"] = c.launch;
  j["graph"] = c.graph;
  j["precision"] = computed_precision(c);  // fp32 on the CPU, whatever --precision said
  j["channels_last"] = c.channels_last;
  j["scaling"] = c.strong ? "strong" : "weak";
  j["data"] = c.data;
  j["batch_per_rank"] = c.batch_per_rank;
  j["steps"] = c.steps;
  j["warmup"] = c.warmup;
  // "CUDA runtime 13.0, cuDNN 9.14.0" into its two numbers.
  const std::string libraries = built_with_cuda() ? cuda_library_versions() : "";
  const size_t dnn = libraries.find(", cuDNN ");
  j["versions"] = {{"driver", b != std::string::npos ? first.substr(b + 2) : ""},
                   {"cuda", dnn != std::string::npos ? libraries.substr(13, dnn - 13) : ""},
                   {"cudnn", dnn != std::string::npos ? libraries.substr(dnn + 8) : ""},
                   {"nccl", dist::nccl_version()},
                   {"framework", "loom"}};
  j["price_per_gpu_hour"] = optional_json(c.price_per_gpu_hour);
  j["baseline"] = row_json(report.baseline);
  j["rows"] = nlohmann::json::array();
  for (const Row& r : report.rows) j["rows"].push_back(row_json(r));
  j["step_growth"] = step_growth_json(step_growth(report));
  j["pipeline_rows"] = nlohmann::json::array();
  for (const PipelineRow& p : report.pipeline_rows)
    j["pipeline_rows"].push_back(pipeline_row_json(p));
  j["time_to_accuracy"] = nullptr;
  if (report.accuracy) {
    nlohmann::json t = {{"target", report.accuracy->target},
                        {"model", c.model},
                        {"lr_rule", report.accuracy->lr_rule}};
    t["rows"] = nlohmann::json::array();
    for (const AccuracyRow& r : report.accuracy->rows) {
      auto opt_int = [](const std::optional<int64_t>& v) {
        return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
      };
      t["rows"].push_back({{"world_size", r.world_size},
                           {"ran", r.ran},
                           {"note", r.note},
                           {"global_batch", r.global_batch},
                           {"step_mode", r.step_mode},
                           {"lr", r.lr},
                           {"epochs", r.epochs},
                           {"epochs_to_target", opt_int(r.epochs_to_target)},
                           {"seconds_to_target", optional_json(r.seconds_to_target)},
                           {"final_accuracy", r.final_accuracy},
                           {"seconds", r.seconds},
                           {"usd_to_target", optional_json(r.usd_to_target)}});
    }
    j["time_to_accuracy"] = t;
  }
  return j.dump(2) + "\n";
}

std::string report_csv(const Report& report) {
  std::ostringstream out;
  out << "kind,world_size,ran,global_batch,median_ms,p10_ms,p90_ms,images_per_s,speedup,efficiency,"
         "comm_ms,"
         "exposed_comm_ms,loader_wait_ms,differing_ranks,usd_per_million_images,micro_batches,"
         "schedule,bubble,"
         "theoretical_bubble,stage_layout,step_mode,launch,slowest_rank_ms,exposed_share,note\n";
  // One field, no quoting needed.
  const auto field = [](std::string text) {
    for (char& ch : text)
      if (ch == ',' || ch == '"') ch = ';';
    return text;
  };
  auto line = [&](const char* kind, const Row& r, const PipelineRow* p) {
    out << kind << "," << r.world_size << "," << (r.ran ? 1 : 0) << "," << r.global_batch << ","
        << r.median_ms << "," << r.p10_ms << "," << r.p90_ms << "," << r.images_per_s << ","
        << r.speedup << "," << r.efficiency << "," << csv(r.comm_ms) << ","
        << csv(r.exposed_comm_ms) << "," << r.loader_wait_ms << "," << r.differing_ranks << ","
        << csv(r.usd_per_million_images) << ",";
    if (p) {
      out << p->micro_batches << "," << p->schedule << "," << (r.ran ? fixed(p->bubble, 6) : "")
          << "," << fixed(p->theoretical_bubble, 6) << "," << field(stage_layout_text(*p)) << ",";
    } else {
      out << ",,,,,";
    }
    out << r.step_mode << "," << field(r.launch) << "," << csv(slowest_ms(r)) << ","
        << csv(exposed_share(r)) << "," << field(r.note) << "\n";
  };
  line("plain", report.baseline, nullptr);
  for (const Row& r : report.rows) line("ddp", r, nullptr);
  for (const PipelineRow& p : report.pipeline_rows) line("pipeline", p.row, &p);
  return out.str();
}

}  // namespace loom::scaling
