// The CUDA caching allocator (see caching_allocator.h for the policy).
#include "tensor/cuda/caching_allocator.h"

#include <cuda_runtime.h>

#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "tensor/cuda/check.h"
#include "tensor/cuda/runtime.h"
#include "tensor/device.h"

namespace loom::cuda {

namespace {

struct Block {
  int device;
  StreamHandle stream;
  size_t size;  // the bin size actually obtained from cudaMalloc
};

struct DevicePool {
  std::mutex mutex;
  // Free blocks by (stream, bin size): a block only goes back to requests on its own stream.
  std::map<std::pair<StreamHandle, size_t>, std::vector<void*>> free_blocks;
  AllocatorStats stats;
};

struct Registry {
  std::mutex mutex;  // guards `live`
  std::unordered_map<void*, Block> live;  // every block obtained from cudaMalloc, free or not
  DevicePool pools[64];
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: tensors may outlive static teardown
  return *r;
}

// Releases every free block of one pool to CUDA; the caller holds pool.mutex.
void release_free_blocks(int device, DevicePool& pool) {
  if (pool.free_blocks.empty()) return;
  DeviceGuard guard(device);
  // Blocks freed on a stream may still be read by queued kernels.
  LOOM_CUDA_CHECK(cudaDeviceSynchronize());
  Registry& r = registry();
  for (auto& [key, ptrs] : pool.free_blocks) {
    for (void* p : ptrs) {
      LOOM_CUDA_CHECK(cudaFree(p));
      pool.stats.reserved_bytes -= static_cast<int64_t>(key.second);
      ++pool.stats.num_cuda_frees;
      std::lock_guard<std::mutex> lock(r.mutex);
      r.live.erase(p);
    }
  }
  pool.free_blocks.clear();
}

}  // namespace

void* allocate(size_t nbytes, int device) {
  LOOM_CHECK(device >= 0 && device < cuda_device_count() && device < 64, "CUDA device ", device,
             " does not exist (", cuda_device_count(), " visible)");
  const size_t size = bin_size(nbytes);
  StreamHandle stream = current_stream(device);
  Registry& r = registry();
  DevicePool& pool = r.pools[device];
  std::lock_guard<std::mutex> lock(pool.mutex);
  ++pool.stats.num_allocations;

  void* ptr = nullptr;
  auto it = pool.free_blocks.find({stream, size});
  if (it != pool.free_blocks.end() && !it->second.empty()) {
    ptr = it->second.back();
    it->second.pop_back();
  } else {
    DeviceGuard guard(device);
    cudaError_t status = cudaMalloc(&ptr, size);
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();  // clear the sticky-free error before retrying
      release_free_blocks(device, pool);
      status = cudaMalloc(&ptr, size);
    }
    if (status != cudaSuccess) {
      cudaGetLastError();
      size_t free_bytes = 0, total_bytes = 0;
      cudaMemGetInfo(&free_bytes, &total_bytes);
      LOOM_FAIL("CUDA out of memory: could not allocate ", nbytes, " bytes (", size,
                " with rounding) on cuda:", device, "; the device has ", free_bytes, " of ",
                total_bytes, " bytes free; loom's allocator: ", stats_str(pool.stats));
    }
    ++pool.stats.num_cuda_mallocs;
    pool.stats.reserved_bytes += static_cast<int64_t>(size);
    std::lock_guard<std::mutex> live_lock(r.mutex);
    r.live[ptr] = Block{device, stream, size};
  }
  pool.stats.allocated_bytes += static_cast<int64_t>(size);
  pool.stats.peak_allocated_bytes =
      std::max(pool.stats.peak_allocated_bytes, pool.stats.allocated_bytes);
  return ptr;
}

void deallocate(void* ptr) {
  if (!ptr) return;
  Registry& r = registry();
  Block block;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.live.find(ptr);
    LOOM_ASSERT(it != r.live.end(), "freeing a pointer the CUDA allocator does not own");
    block = it->second;
  }
  DevicePool& pool = r.pools[block.device];
  std::lock_guard<std::mutex> lock(pool.mutex);
  pool.free_blocks[{block.stream, block.size}].push_back(ptr);
  pool.stats.allocated_bytes -= static_cast<int64_t>(block.size);
}

AllocatorStats allocator_stats(int device) {
  LOOM_CHECK(device >= 0 && device < 64, "allocator_stats: bad device ", device);
  DevicePool& pool = registry().pools[device];
  std::lock_guard<std::mutex> lock(pool.mutex);
  return pool.stats;
}

void reset_peak_stats(int device) {
  LOOM_CHECK(device >= 0 && device < 64, "reset_peak_stats: bad device ", device);
  DevicePool& pool = registry().pools[device];
  std::lock_guard<std::mutex> lock(pool.mutex);
  pool.stats.peak_allocated_bytes = pool.stats.allocated_bytes;
}

void empty_cache() {
  for (int d = 0; d < cuda_device_count() && d < 64; ++d) {
    DevicePool& pool = registry().pools[d];
    std::lock_guard<std::mutex> lock(pool.mutex);
    release_free_blocks(d, pool);
  }
}

}  // namespace loom::cuda
