// The host half of `info` (CPU model, threads, memory), device selection and memory checks;
// the GPU half is in cuda/device_info.cpp.
#include "device_info.h"

#include <loom/ops/dispatch.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include "cuda/launchers.h"

namespace loom::gpu_basics {
namespace {

std::string cpu_model_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "unknown";
}

int64_t host_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  return pages > 0 && page_size > 0 ? static_cast<int64_t>(pages) * page_size : 0;
}

}  // namespace

SystemInfo query_system() {
  SystemInfo info;
  info.cpu_model = cpu_model_name();
  info.cpu_threads = static_cast<int>(std::thread::hardware_concurrency());
  info.host_memory_bytes = host_memory_bytes();
  info.built_with_cuda = built_with_cuda();
  if (!info.built_with_cuda) {
    info.no_gpu_reason = "loom was built without CUDA";
    return info;
  }
  LOOM_CUDA_DISPATCH("info", cuda_impl::query_gpus(info));
  if (info.gpus.empty() && info.no_gpu_reason.empty()) {
    info.no_gpu_reason = "no CUDA device is visible on this machine";
  }
  return info;
}

Device pick_device(const std::string& spec) {
  if (spec == "auto") return cuda_is_available() ? kCUDA : kCPU;
  LOOM_CHECK(spec == "cpu" || spec.rfind("cuda", 0) == 0,
             "--device must be auto, cpu, cuda or cuda:N, got '", spec, "'");
  const Device device(spec);
  if (device.is_cuda()) {
    LOOM_CHECK(built_with_cuda(), "--device ", spec, ": loom was built without CUDA");
    LOOM_CHECK(device.index < cuda_device_count(), "--device ", spec, ": this machine has ",
               cuda_device_count(), " CUDA device(s)");
  }
  return device;
}

int64_t memory_of(Device device) {
  if (device.is_cpu()) return host_memory_bytes();
  LOOM_CUDA_DISPATCH("memory_of", return cuda_impl::total_memory(device.index));
}

void check_fits(int64_t bytes, Device device, const char* op) {
  LOOM_CHECK(bytes > 0, op, ": nothing to compute (", bytes, " bytes)");
  const int64_t total = memory_of(device);
  LOOM_CHECK(total == 0 || bytes <= total, op, ": needs ", bytes / (1 << 20), " MiB but ",
             device.str(), " has only ", total / (1 << 20), " MiB");
}

}  // namespace loom::gpu_basics
