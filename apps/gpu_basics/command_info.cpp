// `info`: the machine as the seed's checklist saw it through nvidia-smi and lspci, and the
// '#' setup lines the other subcommands share.
#include <thread>

#include "commands.h"
#include "device_info.h"

namespace loom::gpu_basics {
namespace {

// "12.4" from 12040 (CUDA) and "9.1.0" from 90100 (cuDNN 9, NCCL 2.x): major*10000 + minor*100
// + patch for cuDNN >= 9 and NCCL >= 2.9; CUDA is major*1000 + minor*10.
std::string cuda_version_str(int v) {
  return v == 0 ? "unknown" : strf("%d.%d", v / 1000, (v % 1000) / 10);
}
std::string library_version_str(int64_t v) {
  if (v == 0) return "unknown";
  return strf("%lld.%lld.%lld", static_cast<long long>(v / 10000),
              static_cast<long long>((v % 10000) / 100), static_cast<long long>(v % 100));
}

double gib(int64_t bytes) { return static_cast<double>(bytes) / (1 << 30); }

}  // namespace

Report run_info() {
  const SystemInfo info = query_system();
  Report report("info");
  auto& j = report.json();
  report.row(strf("CPU: %s, %d hardware threads, %.1f GiB memory", info.cpu_model.c_str(),
                  info.cpu_threads, gib(info.host_memory_bytes)));
  j["cpu"] = {{"model", info.cpu_model},
              {"threads", info.cpu_threads},
              {"memory_bytes", info.host_memory_bytes}};
  j["built_with_cuda"] = info.built_with_cuda;
  if (info.built_with_cuda) {
    report.row("CUDA runtime " + cuda_version_str(info.cuda_runtime_version) +
               ", driver supports " + cuda_version_str(info.cuda_driver_version) + ", cuDNN " +
               library_version_str(info.cudnn_version) + ", NCCL " +
               library_version_str(info.nccl_version));
    j["versions"] = {{"cuda_runtime", cuda_version_str(info.cuda_runtime_version)},
                     {"cuda_driver", cuda_version_str(info.cuda_driver_version)},
                     {"cudnn", library_version_str(info.cudnn_version)},
                     {"nccl", library_version_str(info.nccl_version)}};
  }
  j["gpus"] = nlohmann::json::array();
  if (info.gpus.empty()) {
    report.row("No GPU: " + info.no_gpu_reason + ". Every subcommand runs on the CPU.");
    j["no_gpu_reason"] = info.no_gpu_reason;
    return report;
  }
  for (const GpuInfo& g : info.gpus) {
    report.row(
        strf("GPU %d: %s, compute capability %d.%d, %d SMs, %.1f GiB, SM clock %d MHz, "
             "memory clock %d MHz x %d bits, L2 %.1f MiB",
             g.index, g.name.c_str(), g.compute_major, g.compute_minor, g.multiprocessors,
             gib(g.memory_bytes), g.clock_mhz, g.memory_clock_mhz, g.memory_bus_bits,
             static_cast<double>(g.l2_bytes) / (1 << 20)));
    j["gpus"].push_back({{"index", g.index},
                         {"name", g.name},
                         {"compute_capability", strf("%d.%d", g.compute_major, g.compute_minor)},
                         {"multiprocessors", g.multiprocessors},
                         {"memory_bytes", g.memory_bytes},
                         {"clock_mhz", g.clock_mhz},
                         {"memory_clock_mhz", g.memory_clock_mhz},
                         {"memory_bus_bits", g.memory_bus_bits},
                         {"l2_bytes", g.l2_bytes}});
  }
  // A matrix like `nvidia-smi topo -p2p r`: Y where device i can read j's memory directly.
  const size_t count = info.gpus.size();
  std::string header = "peer access  ";
  for (size_t d = 0; d < count; ++d) header += strf(" %3zu", d);
  report.row(header);
  j["peer_access"] = info.peer_access;
  for (size_t i = 0; i < count; ++i) {
    std::string line = strf("  GPU %3zu   ", i);
    for (size_t d = 0; d < count; ++d)
      line += i == d ? "   -" : (info.peer_access[i][d] ? "   Y" : "   N");
    report.row(line);
  }
  return report;
}

void describe_run(Report& report, const RunOptions& options) {
  auto& j = report.json();
  if (options.device.is_cuda()) {
    const SystemInfo info = query_system();
    const GpuInfo& g = info.gpus.at(options.device.index);
    report.setup(strf("device %s: %s, %d SMs, %.0f GiB", options.device.str().c_str(),
                      g.name.c_str(), g.multiprocessors, gib(g.memory_bytes)));
    report.setup(
        "timing: CUDA events on the current stream, " +
        strf("%d warm-up runs, median of %d", options.timing.warmup, options.timing.repeats));
    j["device_name"] = g.name;
  } else {
    const SystemInfo info = query_system();
    report.setup(strf("device cpu: %s, %d threads", info.cpu_model.c_str(), info.cpu_threads));
    report.setup(strf("timing: steady_clock, %d warm-up runs, median of %d", options.timing.warmup,
                      options.timing.repeats));
    j["device_name"] = info.cpu_model;
  }
  j["device"] = options.device.str();
  j["warmup"] = options.timing.warmup;
  j["repeats"] = options.timing.repeats;
}

int64_t default_vector_length(Device device) {
  return device.is_cuda() ? int64_t{1} << 28 : int64_t{1} << 24;
}

int64_t default_matmul_size(Device device) { return device.is_cuda() ? 4096 : 512; }

}  // namespace loom::gpu_basics
