// copy_all_cuda: up to kBatch copies per launch, one row of blocks (blockIdx.y) per copy; a
// copy whose ends are 16-byte aligned moves 16 bytes per access, any other one byte at a time.
#include <algorithm>
#include <cstdint>

#include "loom/distributed/flat_copy.h"
#include "loom/tensor/cuda/check.h"
#include "loom/tensor/cuda/runtime.h"

namespace loom::dist {

namespace {

constexpr int kBatch = 64;
constexpr int kThreads = 256;

struct Batch {
  FlatCopy copies[kBatch];
};

__global__ void copy_batch_kernel(Batch batch) {
  const FlatCopy c = batch.copies[blockIdx.y];
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  const uint64_t first = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const bool wide =
      ((reinterpret_cast<uintptr_t>(c.src) | reinterpret_cast<uintptr_t>(c.dst) | c.bytes) & 15) ==
      0;
  if (wide) {
    const uint4* src = static_cast<const uint4*>(c.src);
    uint4* dst = static_cast<uint4*>(c.dst);
    for (uint64_t i = first; i < c.bytes / 16; i += stride) dst[i] = src[i];
  } else {
    const unsigned char* src = static_cast<const unsigned char*>(c.src);
    unsigned char* dst = static_cast<unsigned char*>(c.dst);
    for (uint64_t i = first; i < c.bytes; i += stride) dst[i] = src[i];
  }
}

}  // namespace

void copy_all_cuda(const std::vector<FlatCopy>& copies, int device) {
  cuda::DeviceGuard guard(device);
  cudaStream_t stream = cuda::current_stream(device);
  for (size_t begin = 0; begin < copies.size(); begin += kBatch) {
    Batch batch{};
    const size_t count = std::min<size_t>(kBatch, copies.size() - begin);
    size_t largest = 0;
    for (size_t k = 0; k < count; ++k) {
      batch.copies[k] = copies[begin + k];
      largest = std::max(largest, copies[begin + k].bytes);
    }
    // Enough blocks for the largest copy at 16 bytes a thread, capped: the loops stride.
    const uint64_t blocks = std::min<uint64_t>((largest / 16 + kThreads - 1) / kThreads + 1, 256);
    copy_batch_kernel<<<dim3(static_cast<unsigned>(blocks), static_cast<unsigned>(count)), kThreads,
                        0, stream>>>(batch);
    LOOM_CUDA_KERNEL_CHECK();
  }
}

}  // namespace loom::dist
