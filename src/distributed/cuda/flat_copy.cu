// copy_all_cuda: up to kBatch copies per launch, cut into chunks of kChunkBytes with one block a
// chunk, so every block moves the same bytes whichever copy it serves (it used to give each copy
// a row of blocks sized for the largest, at most 256). resnet18's 62 gradients now move at the
// speed of one device-to-device copy of their bytes (bench/flat_copy_bench.cpp). A copy whose
// ends are 16-byte aligned moves 16 bytes per access, kUnroll loads in flight a thread before
// their stores; any other one byte at a time.
#include <algorithm>
#include <cstdint>

#include "loom/distributed/flat_copy.h"
#include "loom/tensor/cuda/check.h"
#include "loom/tensor/cuda/runtime.h"

namespace loom::dist {

namespace {

constexpr int kBatch = 64;
constexpr int kThreads = 256;
constexpr int kUnroll = 4;
constexpr uint64_t kChunkBytes = uint64_t{kThreads} * 16 * kUnroll;  // 16 KiB a block

struct Batch {
  FlatCopy copies[kBatch];
  uint32_t first_chunk[kBatch];  // copy k's chunks start here; each copy has at least one
  int count;
};

__global__ void copy_chunks_kernel(Batch batch) {
  const uint32_t chunk = blockIdx.x;
  // This chunk's copy: the last k whose first chunk is at or before it.
  int lo = 0, hi = batch.count - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (batch.first_chunk[mid] <= chunk) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  const FlatCopy c = batch.copies[lo];
  const uint64_t begin = uint64_t{chunk - batch.first_chunk[lo]} * kChunkBytes;
  const uint64_t end = begin + kChunkBytes < c.bytes ? begin + kChunkBytes : c.bytes;
  const unsigned char* src = static_cast<const unsigned char*>(c.src) + begin;
  unsigned char* dst = static_cast<unsigned char*>(c.dst) + begin;
  const bool wide =
      ((reinterpret_cast<uintptr_t>(c.src) | reinterpret_cast<uintptr_t>(c.dst) | c.bytes) & 15) ==
      0;
  if (wide) {
    const uint64_t n = (end - begin) / 16;
    const uint4* from = reinterpret_cast<const uint4*>(src);
    uint4* to = reinterpret_cast<uint4*>(dst);
    uint4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const uint64_t i = static_cast<uint64_t>(u) * kThreads + threadIdx.x;
      if (i < n) v[u] = from[i];
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const uint64_t i = static_cast<uint64_t>(u) * kThreads + threadIdx.x;
      if (i < n) to[i] = v[u];
    }
  } else {
    for (uint64_t i = threadIdx.x; i < end - begin; i += kThreads) dst[i] = src[i];
  }
}

}  // namespace

void copy_all_cuda(const std::vector<FlatCopy>& copies, int device) {
  cuda::DeviceGuard guard(device);
  cudaStream_t stream = cuda::current_stream(device);
  Batch batch{};
  uint64_t chunks = 0;
  auto launch = [&] {
    if (batch.count == 0) return;
    copy_chunks_kernel<<<static_cast<unsigned>(chunks), kThreads, 0, stream>>>(batch);
    LOOM_CUDA_KERNEL_CHECK();
    batch.count = 0;
    chunks = 0;
  };
  for (const FlatCopy& c : copies) {
    if (c.bytes == 0) continue;
    const uint64_t need = (c.bytes + kChunkBytes - 1) / kChunkBytes;
    // A grid's x extent is below 2^31 blocks: 2^30 chunks are 16 TiB, more than a GPU holds.
    if (batch.count == kBatch || chunks + need > (uint64_t{1} << 30)) launch();
    batch.copies[batch.count] = c;
    batch.first_chunk[batch.count] = static_cast<uint32_t>(chunks);
    ++batch.count;
    chunks += need;
  }
  launch();
}

}  // namespace loom::dist
