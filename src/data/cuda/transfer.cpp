// DeviceTransfer and pinned memory with the CUDA runtime.
#include "loom/data/transfer.h"

#include <cuda_runtime.h>

#include "loom/data/host_buffer.h"
#include "loom/tensor/cuda/check.h"
#include "loom/tensor/cuda/runtime.h"

namespace loom::data {

namespace detail {

void* pinned_alloc(size_t nbytes, int device) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count <= device) {
    cudaGetLastError();  // reset the error state so later checks do not report this one
    return nullptr;
  }
  // For good, not a guard: restoring the thread's device 0 would make a context on GPU 0.
  if (cudaSetDevice(device) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  void* ptr = nullptr;
  if (cudaHostAlloc(&ptr, nbytes, cudaHostAllocPortable) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;  // out of page-locked memory: ordinary memory still works, just slower
  }
  return ptr;
}

void pinned_free(void* ptr) {
  if (ptr) cudaFreeHost(ptr);
}

}  // namespace detail

struct DeviceTransfer::Impl {
  int device = 0;
  cudaStream_t side = nullptr;
  cudaEvent_t compute_ready = nullptr;  // the compute stream's work before this upload
  std::vector<cudaEvent_t> copied;      // per slot: the upload has finished
};

DeviceTransfer::DeviceTransfer(int device, int slots) : impl_(new Impl) {
  impl_->device = device;
  cuda::DeviceGuard guard(device);
  impl_->side = cuda::create_stream(device);
  LOOM_CUDA_CHECK(cudaEventCreateWithFlags(&impl_->compute_ready, cudaEventDisableTiming));
  impl_->copied.resize(static_cast<size_t>(slots), nullptr);
  for (cudaEvent_t& e : impl_->copied)
    LOOM_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
}

DeviceTransfer::~DeviceTransfer() {
  if (!impl_) return;
  // Destructors must not throw: errors here are ignored, the process is shutting a loader down.
  cudaSetDevice(impl_->device);
  if (impl_->side) cudaStreamSynchronize(impl_->side);
  for (cudaEvent_t e : impl_->copied) {
    if (e) cudaEventDestroy(e);
  }
  if (impl_->compute_ready) cudaEventDestroy(impl_->compute_ready);
  if (impl_->side) {
    try {
      cuda::destroy_stream(impl_->device, impl_->side);
    } catch (...) {
    }
  }
  delete impl_;
}

void DeviceTransfer::upload(int slot, const std::vector<std::pair<const void*, Tensor>>& copies) {
  cuda::DeviceGuard guard(impl_->device);
  cudaStream_t compute = cuda::current_stream(impl_->device);
  // The destinations come from the compute stream's pool: earlier kernels there may still use
  // the blocks, so the side stream starts after them.
  LOOM_CUDA_CHECK(cudaEventRecord(impl_->compute_ready, compute));
  LOOM_CUDA_CHECK(cudaStreamWaitEvent(impl_->side, impl_->compute_ready, 0));
  for (const auto& [host, dst] : copies) {
    LOOM_ASSERT(dst.is_cuda() && dst.is_contiguous() && dst.device().index == impl_->device);
    LOOM_CUDA_CHECK(
        cudaMemcpyAsync(dst.raw_data(), host, dst.nbytes(), cudaMemcpyHostToDevice, impl_->side));
  }
  cudaEvent_t done = impl_->copied.at(static_cast<size_t>(slot));
  LOOM_CUDA_CHECK(cudaEventRecord(done, impl_->side));
  LOOM_CUDA_CHECK(cudaStreamWaitEvent(compute, done, 0));
}

void DeviceTransfer::wait_host_free(int slot) {
  // Called from the loader's workers, which serve this device only: set for good, since a guard
  // would put the thread back on cuda:0 and make this process a context there.
  cuda::set_device(impl_->device);
  LOOM_CUDA_CHECK(cudaEventSynchronize(impl_->copied.at(static_cast<size_t>(slot))));
}

}  // namespace loom::data
