// loom-scaling's report: '#' lines stating the setup, one row per world size (nccl-tests' way),
// and the same figures as JSON.
#include <cstdio>
#include <ctime>
#include <sstream>

#include <nlohmann/json.hpp>

#include "scaling.h"

namespace loom::scaling {

namespace {

// The first lines a command prints, or "" when it cannot run (no nvidia-smi on a CPU machine).
std::string command_output(const char* command) {
  std::string out;
  if (FILE* pipe = popen(command, "r")) {
    char buffer[512];
    while (fgets(buffer, sizeof(buffer), pipe) && out.size() < 8192) out += buffer;
    pclose(pipe);
  }
  return out;
}

std::string today() {
  const std::time_t t = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M", std::gmtime(&t));
  return text;
}

std::string row_text(const Row& r) {
  char line[256];
  if (!r.ran) {
    std::snprintf(line, sizeof(line), "%6d  %s\n", r.world_size, r.note.c_str());
  } else {
    std::snprintf(line, sizeof(line), "%6d  %8lld  %10.3f  %8.3f  %8.3f  %10.1f  %7.2fx  %9.1f%%  %s\n",
                  r.world_size, static_cast<long long>(r.global_batch), r.median_ms, r.p10_ms, r.p90_ms,
                  r.images_per_s, r.speedup, 100.0 * r.efficiency, r.note.c_str());
  }
  return line;
}

}  // namespace

std::string report_text(const Report& report) {
  const Config& c = report.config;
  std::ostringstream out;
  out << "# loom-scaling: data-parallel training steps (forward, BCE, backward, DDP all-reduce, Adam) "
      << today() << " UTC\n";
  out << "# device " << (c.device.is_cuda() ? "cuda, one rank per GPU over NCCL" : "cpu, thread ranks over the threads backend")
      << "; " << cuda_device_count() << " CUDA devices visible; NCCL " << dist::nccl_version() << "\n";
  for (const char* command : {"nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader 2>/dev/null",
                              "nvidia-smi topo -m 2>/dev/null"}) {
    std::istringstream lines(command_output(command));
    for (std::string line; std::getline(lines, line);) out << "#   " << line << "\n";
  }
  out << "# model " << c.model << " (" << report.parameters << " parameters), precision " << c.precision
      << ", synthetic 64x64 images, " << (c.strong ? "strong" : "weak") << " scaling, "
      << (c.strong ? "global batch split over the ranks" : "batch " + std::to_string(c.batch_per_rank) + " per rank")
      << "\n";
  out << "# " << c.steps << " timed steps after " << c.warmup << " warm-up steps; step time: "
      << (c.device.is_cuda() ? "CUDA events on rank 0's stream" : "rank 0's host clock")
      << "; speedup: images/s against loom's plain model (no DDP) on one device\n";
  out << "# buckets of the largest world run: " << report.buckets.size();
  for (const auto& b : report.buckets) out << " [" << b.numel << " " << dtype_name(b.dtype) << "]";
  out << "\n#\n";
  out << "# ranks    global   median_ms   p10_ms   p90_ms    images/s  speedup  efficiency\n";
  for (const Row& r : report.rows) out << row_text(r);
  return out.str();
}

std::string report_json(const Report& report) {
  nlohmann::json j;
  const Config& c = report.config;
  j["model"] = c.model;
  j["device"] = c.device.str();
  j["precision"] = c.precision;
  j["scaling"] = c.strong ? "strong" : "weak";
  j["batch_per_rank"] = c.batch_per_rank;
  j["steps"] = c.steps;
  j["warmup"] = c.warmup;
  j["parameters"] = report.parameters;
  j["nccl"] = dist::nccl_version();
  j["rows"] = nlohmann::json::array();
  for (const Row& r : report.rows) {
    j["rows"].push_back({{"world_size", r.world_size}, {"ran", r.ran}, {"note", r.note},
                         {"global_batch", r.global_batch}, {"median_ms", r.median_ms},
                         {"p10_ms", r.p10_ms}, {"p90_ms", r.p90_ms}, {"images_per_s", r.images_per_s},
                         {"speedup", r.speedup}, {"efficiency", r.efficiency}});
  }
  return j.dump(2) + "\n";
}

}  // namespace loom::scaling
