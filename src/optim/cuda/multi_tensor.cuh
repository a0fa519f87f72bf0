// Multi-tensor launches for the fused optimizer kernels: the addresses and sizes of many
// tensors travel in the kernel's parameter struct, listed in fixed-size chunks, so one launch
// updates up to a few dozen tensors (or 20M elements) at once. Each chunk is split among
// several blocks, so that even a model of a few hundred thousand parameters fills the GPU
// while the chunk list (and so the number of launches) stays short.
#pragma once

#include <array>
#include <vector>

#include "loom/optim/fused_update.h"
#include "loom/tensor/cuda/check.h"
#include "loom/tensor/cuda/graph.h"
#include "loom/tensor/cuda/runtime.h"

namespace loom::optim::detail {

constexpr int kChunkSize = 65536;  // elements per listed chunk
// Elements per block: a chunk is kChunkSize / kBlockSpan blocks. Small spans keep the update
// from being latency-bound: with 8192 a 400k-parameter model was 50 blocks of 16 dependent
// iterations each (23 us on an H200 for what moving its 6.5 MB takes 2 us).
constexpr int kBlockSpan = 1024;
constexpr int kBlocksPerChunk = kChunkSize / kBlockSpan;
constexpr int kChunkThreads = 256;  // threads per block, each striding over the block's span
constexpr int kMaxChunksPerLaunch = 320;

// Tensors per launch for `Depth` lists, sized so the struct stays under the classic 4 KiB
// kernel-parameter limit.
template <int Depth>
constexpr int kMaxTensors = Depth == 1   ? 110
                            : Depth == 2 ? 64
                            : Depth == 3 ? 48
                                         : 36;

template <int Depth>
struct TensorListMeta {
  void* ptrs[Depth][kMaxTensors<Depth>];
  int64_t sizes[kMaxTensors<Depth>];
  unsigned char chunk_tensor[kMaxChunksPerLaunch];  // block b works on tensor chunk_tensor[b]
  int chunk_index[kMaxChunksPerLaunch];             // ... from element chunk_index[b] * kChunkSize
};
static_assert(sizeof(TensorListMeta<1>) < 4000 && sizeof(TensorListMeta<2>) < 4000 &&
                  sizeof(TensorListMeta<3>) < 4000 && sizeof(TensorListMeta<4>) < 4000,
              "kernel parameters must fit in 4 KiB");

// The block's span: where it starts in its tensor and how many elements it holds (none, n <= 0,
// for the blocks past the end of a tensor's last chunk). Block b covers span b % kBlocksPerChunk
// of listed chunk b / kBlocksPerChunk.
template <int Depth>
__device__ __forceinline__ int64_t chunk_start(const TensorListMeta<Depth>& meta, int& tensor,
                                               int64_t& n) {
  const int chunk = blockIdx.x / kBlocksPerChunk, span = blockIdx.x % kBlocksPerChunk;
  tensor = meta.chunk_tensor[chunk];
  const int64_t start = static_cast<int64_t>(meta.chunk_index[chunk]) * kChunkSize +
                        static_cast<int64_t>(span) * kBlockSpan;
  n = meta.sizes[tensor] - start;
  if (n > kBlockSpan) n = kBlockSpan;
  return start;
}

// A step's configuration as its kernels get it. Outside a CUDA graph it travels by value
// (`replayed` null); while a graph captures, the kernels read it from the graph's replay
// constant instead, which the host refreshes before every replay; while the graph refreshes
// the value is only stored and `launch` is false: the caller returns without launching.
template <typename Config>
struct StepConfig {
  const Config* replayed;
  bool launch;
};
template <typename Config>
StepConfig<Config> step_config(const Tensor& first, const Config& config) {
  const cuda::ReplayConstant c =
      cuda::replay_constant(first.device().index, &config, sizeof config);
  return {static_cast<const Config*>(c.device_address), c.launch};
}

// Calls launch(meta, blocks, stream) as often as the lists need (blocks: the grid size, already
// kBlocksPerChunk per listed chunk): lists[d][t] is tensor t of
// list d; all contiguous, same device and dtype, list d's tensor t shaped like list 0's.
template <int Depth, typename Launch>
void multi_tensor_apply(const std::array<const std::vector<Tensor>*, Depth>& lists,
                        Launch&& launch) {
  const std::vector<Tensor>& first = *lists[0];
  if (first.empty()) return;
  const int device = first.front().device().index;
  cuda::DeviceGuard guard(device);
  cudaStream_t stream = cuda::current_stream(device);
  TensorListMeta<Depth> meta;
  int tensors = 0, listed = 0;  // tensors and chunks in meta
  for (size_t t = 0; t < first.size(); ++t) {
    const int64_t size = first[t].numel();
    if (size == 0) continue;
    int slot = tensors++;
    for (int d = 0; d < Depth; ++d) meta.ptrs[d][slot] = (*lists[d])[t].raw_data();
    meta.sizes[slot] = size;
    const int64_t chunks = (size + kChunkSize - 1) / kChunkSize;
    for (int64_t c = 0; c < chunks; ++c) {
      meta.chunk_tensor[listed] = static_cast<unsigned char>(slot);
      meta.chunk_index[listed] = static_cast<int>(c);
      ++listed;
      const bool last_chunk = c + 1 == chunks;
      if (listed == kMaxChunksPerLaunch || (last_chunk && tensors == kMaxTensors<Depth>)) {
        launch(meta, listed * kBlocksPerChunk, stream);
        LOOM_CUDA_KERNEL_CHECK();
        count_fused_launch();
        listed = 0;
        if (last_chunk) {
          tensors = 0;
        } else {  // the tensor goes on in the next launch, as its first entry
          for (int d = 0; d < Depth; ++d) meta.ptrs[d][0] = meta.ptrs[d][slot];
          meta.sizes[0] = meta.sizes[slot];
          slot = 0;
          tensors = 1;
        }
      }
    }
  }
  if (listed > 0) {
    launch(meta, listed * kBlocksPerChunk, stream);
    LOOM_CUDA_KERNEL_CHECK();
    count_fused_launch();
  }
}

}  // namespace loom::optim::detail
