// The CUDA caching allocator (see caching_allocator.h for the policy).
#include "loom/tensor/cuda/caching_allocator.h"

#include <cuda_runtime.h>

#include <map>
#include <mutex>
#include <set>
#include <unordered_map>
#include <vector>

#include "loom/tensor/cuda/check.h"
#include "loom/tensor/cuda/runtime.h"
#include "loom/tensor/device.h"

namespace loom::cuda {

namespace {

struct Block {
  int device;
  StreamHandle stream;
  size_t size;  // the bin size actually obtained from cudaMalloc
  PoolId pool;  // a graph's private pool, or 0
};

struct DevicePool {
  std::mutex mutex;
  // Free blocks by (stream, bin size): a block only goes back to requests on its own stream.
  std::map<std::pair<StreamHandle, size_t>, std::vector<void*>> free_blocks;
  // The graphs' private pools: free blocks by bin size, for that pool's captures only.
  std::map<PoolId, std::map<size_t, std::vector<void*>>> private_free;
  std::set<PoolId> live_pools;
  AllocatorStats stats;
};

constexpr int kMaxDevices = 64;
// The pool this thread's allocations come from, per device (0: the shared cache).
thread_local PoolId thread_pool[kMaxDevices] = {};

struct Registry {
  std::mutex mutex;                       // guards `live`
  std::unordered_map<void*, Block> live;  // every block obtained from cudaMalloc, free or not
  DevicePool pools[kMaxDevices];
  PoolId next_pool = 1;  // guarded by `mutex`
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: tensors may outlive static teardown
  return *r;
}

// Takes every free block out of one pool; the caller holds pool.mutex.
std::vector<std::pair<void*, size_t>> take_free_blocks(DevicePool& pool) {
  std::vector<std::pair<void*, size_t>> blocks;
  for (auto& [key, ptrs] : pool.free_blocks) {
    for (void* p : ptrs) blocks.emplace_back(p, key.second);
  }
  pool.free_blocks.clear();
  return blocks;
}

// Gives blocks taken from a pool back to CUDA, without holding pool.mutex: the synchronisation
// may wait for a kernel (an NCCL collective whose peer is gone) that only another thread can
// end, and that thread (a watchdog completing a work) may need the lock to free a tensor.
void free_blocks(int device, DevicePool& pool,
                 const std::vector<std::pair<void*, size_t>>& blocks) {
  if (blocks.empty()) return;
  DeviceGuard guard(device);
  // Blocks freed on a stream may still be read by queued kernels.
  LOOM_CUDA_CHECK(cudaDeviceSynchronize());
  Registry& r = registry();
  for (const auto& [p, size] : blocks) {
    LOOM_CUDA_CHECK(cudaFree(p));
    std::lock_guard<std::mutex> lock(pool.mutex);
    pool.stats.reserved_bytes -= static_cast<int64_t>(size);
    ++pool.stats.num_cuda_frees;
    std::lock_guard<std::mutex> live_lock(r.mutex);
    r.live.erase(p);
  }
}

}  // namespace

void* allocate(size_t nbytes, int device) {
  LOOM_CHECK(device >= 0 && device < cuda_device_count() && device < kMaxDevices, "CUDA device ",
             device, " does not exist (", cuda_device_count(), " visible)");
  const size_t size = bin_size(nbytes);
  StreamHandle stream = current_stream(device);
  const PoolId private_pool = thread_pool[device];
  Registry& r = registry();
  DevicePool& pool = r.pools[device];
  std::unique_lock<std::mutex> lock(pool.mutex);
  ++pool.stats.num_allocations;

  void* ptr = nullptr;
  std::vector<void*>* cached = nullptr;
  if (private_pool != 0) {
    cached = &pool.private_free[private_pool][size];
  } else {
    auto it = pool.free_blocks.find({stream, size});
    if (it != pool.free_blocks.end()) cached = &it->second;
  }
  if (cached != nullptr && !cached->empty()) {
    ptr = cached->back();
    cached->pop_back();
  } else {
    DeviceGuard guard(device);
    cudaError_t status = cudaMalloc(&ptr, size);
    // Emptying the cache synchronises the device, which a capture forbids.
    if (status == cudaErrorMemoryAllocation && private_pool == 0) {
      cudaGetLastError();  // clear the sticky-free error before retrying
      const auto blocks = take_free_blocks(pool);
      lock.unlock();
      free_blocks(device, pool, blocks);
      lock.lock();
      status = cudaMalloc(&ptr, size);
    }
    if (status != cudaSuccess && status != cudaErrorMemoryAllocation) {
      cudaGetLastError();
      LOOM_FAIL("cudaMalloc of ", size, " bytes on cuda:", device,
                " failed: ", cudaGetErrorString(status));
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
    r.live[ptr] = Block{device, stream, size, private_pool};
  }
  pool.stats.allocated_bytes += static_cast<int64_t>(size);
  pool.stats.peak_allocated_bytes =
      std::max(pool.stats.peak_allocated_bytes, pool.stats.allocated_bytes);
  return ptr;
}

void deallocate(void* ptr) {
  if (!ptr) return;
  Registry& r = registry();
  int device = 0;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.live.find(ptr);
    LOOM_ASSERT(it != r.live.end(), "freeing a pointer the CUDA allocator does not own");
    device = it->second.device;
  }
  DevicePool& pool = r.pools[device];
  std::lock_guard<std::mutex> lock(pool.mutex);
  Block block;
  {
    // Read again under the pool's lock: release_pool may have moved the block to the cache.
    std::lock_guard<std::mutex> live_lock(r.mutex);
    block = r.live.at(ptr);
  }
  if (block.pool != 0) {
    pool.private_free[block.pool][block.size].push_back(ptr);
  } else {
    pool.free_blocks[{block.stream, block.size}].push_back(ptr);
  }
  pool.stats.allocated_bytes -= static_cast<int64_t>(block.size);
}

PoolId create_pool(int device) {
  LOOM_CHECK(device >= 0 && device < kMaxDevices, "create_pool: bad device ", device);
  Registry& r = registry();
  PoolId id = 0;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    id = r.next_pool++;
  }
  DevicePool& pool = r.pools[device];
  std::lock_guard<std::mutex> lock(pool.mutex);
  pool.live_pools.insert(id);
  return id;
}

void use_pool(int device, PoolId pool) {
  LOOM_CHECK(device >= 0 && device < kMaxDevices, "use_pool: bad device ", device);
  thread_pool[device] = pool;
}

void release_pool(int device, PoolId id, StreamHandle stream) {
  LOOM_CHECK(device >= 0 && device < kMaxDevices, "release_pool: bad device ", device);
  Registry& r = registry();
  DevicePool& pool = r.pools[device];
  std::lock_guard<std::mutex> lock(pool.mutex);
  if (pool.live_pools.erase(id) == 0) return;
  // Every block of the pool, free or held, becomes a block of the shared cache on `stream`.
  {
    std::lock_guard<std::mutex> live_lock(r.mutex);
    for (auto& [ptr, block] : r.live) {
      if (block.device == device && block.pool == id) {
        block.pool = 0;
        block.stream = stream;
      }
    }
  }
  auto it = pool.private_free.find(id);
  if (it == pool.private_free.end()) return;
  for (auto& [size, ptrs] : it->second) {
    auto& shared = pool.free_blocks[{stream, size}];
    shared.insert(shared.end(), ptrs.begin(), ptrs.end());
  }
  pool.private_free.erase(it);
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
    std::vector<std::pair<void*, size_t>> blocks;
    {
      std::lock_guard<std::mutex> lock(pool.mutex);
      blocks = take_free_blocks(pool);
    }
    free_blocks(d, pool, blocks);
  }
}

}  // namespace loom::cuda
