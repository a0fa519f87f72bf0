// A kernel that waits on the device, then writes to an address no allocation has: an illegal
// address, a sticky CUDA error (every later CUDA call of the process fails with it). For
// nccl_worker's sticky-error scenario: the NCCL watchdog must turn it into an abort of the group,
// not let it escape its thread and std::terminate the process.
#include <cuda_runtime.h>

#include <cstdint>

namespace {

__device__ uint64_t device_nanoseconds() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void spin_then_fault(uint64_t wait_ns, int* nowhere) {
  const uint64_t start = device_nanoseconds();
  while (device_nanoseconds() - start < wait_ns) {
  }
  *nowhere = 1;
}

}  // namespace

// Queues the kernel on `stream` (of the current device); returns the launch's cudaError_t.
int launch_spin_then_fault(CUstream_st* stream, double seconds) {
  int* nowhere = reinterpret_cast<int*>(static_cast<uintptr_t>(8));
  spin_then_fault<<<1, 1, 0, stream>>>(static_cast<uint64_t>(seconds * 1e9), nowhere);
  return static_cast<int>(cudaGetLastError());
}
