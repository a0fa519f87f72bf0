// What `loom-gpu-basics info` reports (the seed's nvidia-smi / lspci checklist) and the device
// choices every subcommand makes: which device to run on and whether a problem fits in it.
#pragma once

#include <loom/loom.h>

#include <cstdint>
#include <string>
#include <vector>

namespace loom::gpu_basics {

struct GpuInfo {
  int index = 0;
  std::string name;
  int compute_major = 0;
  int compute_minor = 0;
  int multiprocessors = 0;
  int64_t memory_bytes = 0;
  int clock_mhz = 0;         // peak SM clock
  int memory_clock_mhz = 0;  // peak memory clock
  int memory_bus_bits = 0;
  int64_t l2_bytes = 0;
};

struct SystemInfo {
  std::string cpu_model;
  int cpu_threads = 0;
  int64_t host_memory_bytes = 0;
  bool built_with_cuda = false;
  std::string no_gpu_reason;  // empty when GPUs were found
  // Versions as the libraries encode them (e.g. CUDA 12040 = 12.4); 0 when unknown.
  int cuda_runtime_version = 0;
  int cuda_driver_version = 0;
  int64_t cudnn_version = 0;
  int nccl_version = 0;
  std::vector<GpuInfo> gpus;
  std::vector<std::vector<bool>> peer_access;  // [i][j]: can device i access j's memory
};

SystemInfo query_system();

// "auto" (the first GPU when there is one, else the CPU), "cpu", "cuda" or "cuda:N".
// Throws loom::Error for an unknown spec or a GPU that is not there.
Device pick_device(const std::string& spec);

// Total memory of the device, or the host's physical memory for the CPU.
int64_t memory_of(Device device);
// Throws loom::Error naming `op` when `bytes` is not positive-sized or exceeds what the device
// could hold, before anything is allocated.
void check_fits(int64_t bytes, Device device, const char* op);

}  // namespace loom::gpu_basics
