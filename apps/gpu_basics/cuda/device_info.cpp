// The GPU half of `info`: library versions, each device's properties, and which pairs of
// devices can reach each other's memory directly (peer access over NVLink or PCIe).
#include <cuda_runtime.h>
#include <cudnn.h>
#include <nccl.h>

#include "cuda/cuda_check.h"
#include "cuda/launchers.h"

namespace loom::gpu_basics::cuda_impl {
namespace {

int attribute(cudaDeviceAttr what, int device) {
  int value = 0;
  GPU_BASICS_CUDA_CHECK(cudaDeviceGetAttribute(&value, what, device));
  return value;
}

}  // namespace

void query_gpus(SystemInfo& info) {
  info.cudnn_version = static_cast<int64_t>(cudnnGetVersion());
  if (ncclGetVersion(&info.nccl_version) != ncclSuccess) info.nccl_version = 0;
  // The driver version says what the installed driver supports even when no device is usable.
  cudaDriverGetVersion(&info.cuda_driver_version);
  cudaRuntimeGetVersion(&info.cuda_runtime_version);
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();  // clear it: a machine without a GPU is not an error for `info`
    info.no_gpu_reason = std::string("no usable CUDA device: ") + cudaGetErrorString(status);
    return;
  }
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp prop{};
    GPU_BASICS_CUDA_CHECK(cudaGetDeviceProperties(&prop, d));
    GpuInfo gpu;
    gpu.index = d;
    gpu.name = prop.name;
    gpu.compute_major = prop.major;
    gpu.compute_minor = prop.minor;
    gpu.multiprocessors = prop.multiProcessorCount;
    gpu.memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
    gpu.l2_bytes = prop.l2CacheSize;
    gpu.memory_bus_bits = prop.memoryBusWidth;
    gpu.clock_mhz = attribute(cudaDevAttrClockRate, d) / 1000;  // reported in kHz
    gpu.memory_clock_mhz = attribute(cudaDevAttrMemoryClockRate, d) / 1000;
    info.gpus.push_back(gpu);
  }
  info.peer_access.assign(count, std::vector<bool>(count, false));
  for (int i = 0; i < count; ++i) {
    for (int j = 0; j < count; ++j) {
      int can = 0;
      if (i != j) GPU_BASICS_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, i, j));
      info.peer_access[i][j] = can != 0;
    }
  }
}

}  // namespace loom::gpu_basics::cuda_impl
