// The CUDA caching allocator: size-binned free lists per (device, stream), so that a training
// step reuses blocks instead of calling cudaMalloc/cudaFree. Blocks freed on a stream are only
// handed out again on that stream, whose ordering makes the reuse safe without a sync.
// A CUDA graph's capture draws from a private pool instead (see graph.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "loom/tensor/cuda/runtime.h"

namespace loom::cuda {

struct AllocatorStats {
  int64_t allocated_bytes = 0;       // in blocks handed out now (rounded to their bin)
  int64_t reserved_bytes = 0;        // obtained from cudaMalloc and not yet released
  int64_t peak_allocated_bytes = 0;  // highest allocated_bytes since the last reset
  int64_t num_allocations = 0;       // calls to allocate()
  int64_t num_cuda_mallocs = 0;      // calls to cudaMalloc that succeeded
  int64_t num_cuda_frees = 0;        // calls to cudaFree (only empty_cache() and OOM retry)
};

// Memory for nbytes on `device`, usable on that device's current stream. Throws loom::Error
// naming the size, the device and the statistics when the device is out of memory.
void* allocate(size_t nbytes, int device);
void deallocate(void* ptr);

// The bin a request of nbytes falls into: 512-byte steps below 1 MiB, then eight bins per
// power of two, so no block wastes more than an eighth of itself.
size_t bin_size(size_t nbytes);

AllocatorStats allocator_stats(int device);
void reset_peak_stats(int device);
// Returns every cached (free) block of every device to CUDA. It synchronises each device that
// has such blocks: called from one rank of a spawn job while the others run, it waits for
// their collectives too, so call it between steps on every rank, or before the ranks start.
void empty_cache();
std::string stats_str(const AllocatorStats& stats);

// Private pools for CUDA graphs. A captured graph writes its memory at the addresses captured
// each time it replays, so the blocks its capture allocates must never be handed to work
// outside it: while a thread captures, its allocations on the device come from the graph's
// pool, and a block of the pool freed (during the capture, or later by a tensor that outlived
// it) goes back to that pool only.
using PoolId = uint64_t;  // 0 names the shared cache
PoolId create_pool(int device);
// This thread's allocations on `device` come from `pool` from now on (0: the shared cache).
void use_pool(int device, PoolId pool);
// The pool's graph is gone and its replays have finished: its free blocks join the shared
// cache under `stream` (where the replays ran), and so do its blocks still held by tensors,
// when those are freed.
void release_pool(int device, PoolId pool, StreamHandle stream);

}  // namespace loom::cuda
