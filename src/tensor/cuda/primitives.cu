// CUDA kernels for the core's storage-level work: fill, strided copy with dtype conversion,
// gradient accumulation and random fills, all on the current stream. Fill, and copies and
// accumulation between same-shape tensors laid out alike (both contiguous or both
// channels-last: the autograd engine's common case), take flat loops without the strided
// indexer's divisions, with 16-byte accesses where the data is aligned.
#include <cstdint>

#include "loom/tensor/cuda/check.h"
#include "loom/tensor/cuda/graph.h"
#include "loom/tensor/cuda/runtime.h"
#include "loom/tensor/cuda/vector_pack.cuh"
#include "loom/tensor/primitives.h"
#include "loom/tensor/random_bits.h"
#include "loom/tensor/strided_index.h"

namespace loom::detail {

namespace {

constexpr int kThreads = 256;

int64_t blocks_for(int64_t n) {
  return std::min<int64_t>((n + kThreads - 1) / kThreads, 65535LL * 32);
}

cudaStream_t stream_of(const Tensor& t) { return cuda::current_stream(t.device().index); }

template <typename T>
T* base_ptr(const Tensor& t) {
  return static_cast<T*>(t.storage().data());
}

template <typename T>
__global__ void fill_kernel(T* out, StridedIndexer ix, int64_t n, T value) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    out[ix(i)] = value;
  }
}

template <typename Out, typename In>
__global__ void copy_kernel(Out* out, StridedIndexer out_ix, const In* in, StridedIndexer in_ix,
                            int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    out[out_ix(i)] = static_cast<Out>(in[in_ix(i)]);
  }
}

// out[i] = in[i] over n contiguous elements, converting the dtype.
template <typename Out, typename In>
__global__ void flat_convert_kernel(Out* out, const In* in, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    out[i] = static_cast<Out>(in[i]);
  }
}

template <typename T>
__global__ void accumulate_kernel(T* out, StridedIndexer out_ix, const T* in, StridedIndexer in_ix,
                                  int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    out[out_ix(i)] = static_cast<T>(out[out_ix(i)] + in[in_ix(i)]);
  }
}

// out[i] = op(out[i], in[i]) over n contiguous elements (in may be null for ops without input).
template <typename T, typename Op>
__global__ void flat_kernel(T* out, const T* in, int64_t n, Op op) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    out[i] = op(out[i], in ? in[i] : T(0));
  }
}

// flat_kernel with 16-byte accesses (Pack16<T>) on aligned data, the n % kSize tail by the first
// threads: a bfloat16 gradient sum with 2-byte accesses ran at a third of the bandwidth.
template <typename T, typename Op>
__global__ void flat_vec_kernel(T* out, const T* in, int64_t n, Op op) {
  using Pack = Pack16<T>;
  const int64_t vectors = n / Pack::kSize;
  const int64_t first = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  for (int64_t v = first; v < vectors; v += int64_t(gridDim.x) * blockDim.x) {
    Pack o = reinterpret_cast<Pack*>(out)[v];
    Pack a{};
    if (in) a = reinterpret_cast<const Pack*>(in)[v];
#pragma unroll
    for (int k = 0; k < Pack::kSize; ++k) o.v[k] = op(o.v[k], a.v[k]);
    reinterpret_cast<Pack*>(out)[v] = o;
  }
  const int64_t tail = Pack::kSize * vectors + first;
  if (tail < n) out[tail] = op(out[tail], in ? in[tail] : T(0));
}

struct AddOp {
  template <typename T>
  __device__ T operator()(T out, T in) const {
    return static_cast<T>(out + in);
  }
};

template <typename T>
struct SetOp {
  T value;
  __device__ T operator()(T, T) const { return value; }
};

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Whether a and b hold their elements densely in the same order, so that they pair up in memory
// order from their first elements: both NCHW-contiguous or both channels-last (a tensor that is
// both, with one channel or one pixel, has the same memory order either way).
bool same_dense_layout(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) return false;
  if (a.is_contiguous() && b.is_contiguous()) return true;
  return a.is_contiguous(MemoryFormat::ChannelsLast) && b.is_contiguous(MemoryFormat::ChannelsLast);
}

// Runs op over n contiguous elements of out (and in, when not null) on `stream`.
template <typename T, typename Op>
void launch_flat(T* out, const T* in, int64_t n, Op op, cudaStream_t stream) {
  if constexpr (sizeof(T) <= 8 && 16 % sizeof(T) == 0) {
    if (aligned16(out) && (!in || aligned16(in))) {
      flat_vec_kernel<<<blocks_for((n + Pack16<T>::kSize - 1) / Pack16<T>::kSize), kThreads, 0,
                        stream>>>(out, in, n, op);
      LOOM_CUDA_KERNEL_CHECK();
      return;
    }
  }
  flat_kernel<<<blocks_for(n), kThreads, 0, stream>>>(out, in, n, op);
  LOOM_CUDA_KERNEL_CHECK();
}

template <typename T>
__global__ void random_kernel(T* out, int64_t n, int kind, double low, double high, uint64_t seed,
                              uint64_t offset) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    out[i] = random_bits::sample<T>(kind, low, high, seed, offset + i);
  }
}

}  // namespace

void cuda_fill(const Tensor& dst, double value) {
  cuda::DeviceGuard guard(dst.device().index);
  const int64_t n = dst.numel();
  if (n == 0) return;
  if (dst.is_contiguous() || dst.is_contiguous(MemoryFormat::ChannelsLast)) {  // dense: a flat loop
    LOOM_DISPATCH_ALL_AND_BF16(dst.dtype(), "fill_", [&] {
      launch_flat(dst.data_ptr<scalar_t>(), static_cast<const scalar_t*>(nullptr), n,
                  SetOp<scalar_t>{static_cast<scalar_t>(value)}, stream_of(dst));
    });
    return;
  }
  const StridedIndexer ix = make_indexer(dst, dst.shape(), "fill_");
  LOOM_DISPATCH_ALL_AND_BF16(dst.dtype(), "fill_", [&] {
    fill_kernel<<<blocks_for(n), kThreads, 0, stream_of(dst)>>>(base_ptr<scalar_t>(dst), ix, n,
                                                                static_cast<scalar_t>(value));
    LOOM_CUDA_KERNEL_CHECK();
  });
}

void cuda_copy(const Tensor& dst, const Tensor& src) {
  cuda::DeviceGuard guard(dst.device().index);
  const int64_t n = dst.numel();
  if (same_dense_layout(dst, src)) {
    if (dst.dtype() == src.dtype()) {
      LOOM_CUDA_CHECK(cudaMemcpyAsync(dst.raw_data(), src.raw_data(), dst.nbytes(),
                                      cudaMemcpyDeviceToDevice, stream_of(dst)));
      return;
    }
    LOOM_DISPATCH_ALL_AND_BF16(dst.dtype(), "copy_", [&] {
      using out_t = scalar_t;
      LOOM_DISPATCH_ALL_AND_BF16(src.dtype(), "copy_", [&] {
        flat_convert_kernel<<<blocks_for(n), kThreads, 0, stream_of(dst)>>>(
            static_cast<out_t*>(dst.raw_data()), static_cast<const scalar_t*>(src.raw_data()), n);
        LOOM_CUDA_KERNEL_CHECK();
      });
    });
    return;
  }
  const StridedIndexer out_ix = make_indexer(dst, dst.shape(), "copy_");
  const StridedIndexer in_ix = make_indexer(src, dst.shape(), "copy_");
  LOOM_DISPATCH_ALL_AND_BF16(dst.dtype(), "copy_", [&] {
    using out_t = scalar_t;
    LOOM_DISPATCH_ALL_AND_BF16(src.dtype(), "copy_", [&] {
      copy_kernel<<<blocks_for(n), kThreads, 0, stream_of(dst)>>>(
          base_ptr<out_t>(dst), out_ix, base_ptr<scalar_t>(src), in_ix, n);
      LOOM_CUDA_KERNEL_CHECK();
    });
  });
}

void cuda_accumulate(const Tensor& dst, const Tensor& src) {
  cuda::DeviceGuard guard(dst.device().index);
  const int64_t n = dst.numel();
  if (n == 0) return;
  if (dst.dtype() == src.dtype() && same_dense_layout(dst, src)) {
    LOOM_DISPATCH_ALL_AND_BF16(dst.dtype(), "accumulate", [&] {
      launch_flat(dst.data_ptr<scalar_t>(), src.data_ptr<scalar_t>(), n, AddOp{}, stream_of(dst));
    });
    return;
  }
  const StridedIndexer out_ix = make_indexer(dst, dst.shape(), "accumulate");
  const StridedIndexer in_ix = make_indexer(src, dst.shape(), "accumulate");
  LOOM_DISPATCH_ALL_AND_BF16(dst.dtype(), "accumulate", [&] {
    accumulate_kernel<<<blocks_for(n), kThreads, 0, stream_of(dst)>>>(
        base_ptr<scalar_t>(dst), out_ix, base_ptr<scalar_t>(src), in_ix, n);
    LOOM_CUDA_KERNEL_CHECK();
  });
}

void cuda_fill_random(const Tensor& dst, const RandomParams& p) {
  // The generator's offset is a host number: a replay would draw the same numbers every time.
  cuda::check_not_capturing(
      dst.device().index, "a random draw (rand, dropout)",
      "its generator offset is chosen on the host, so every replay would repeat the "
      "capture's numbers");
  cuda::DeviceGuard guard(dst.device().index);
  const int64_t n = dst.numel();
  LOOM_DISPATCH_ALL_AND_BF16(dst.dtype(), "random", [&] {
    random_kernel<<<blocks_for(n), kThreads, 0, stream_of(dst)>>>(
        dst.data_ptr<scalar_t>(), n, static_cast<int>(p.kind), p.low, p.high, p.seed, p.offset);
    LOOM_CUDA_KERNEL_CHECK();
  });
}

namespace {

// A copy between two GPUs, ordered on both devices' current streams without the host waiting
// (as PyTorch's copy_device_to_device does): it runs on the source's stream, after what the
// destination's stream still does with the destination block, and the destination's stream
// waits for it. On the source's stream, the source block cannot be reused before it is read.
void copy_between_devices(void* dst, Device dst_device, const void* src, Device src_device,
                          size_t nbytes) {
  const int from = src_device.index, to = dst_device.index;
  cudaStream_t src_stream = cuda::current_stream(from);
  if (from == to) {
    cuda::DeviceGuard guard(from);
    LOOM_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToDevice, src_stream));
    return;
  }
  cuda::enable_peer_access(from, to);
  cudaStream_t dst_stream = cuda::current_stream(to);
  cuda::Event dst_ready(to, false), copied(from, false);
  dst_ready.record(dst_stream);
  dst_ready.wait(src_stream);
  {
    cuda::DeviceGuard guard(from);
    LOOM_CUDA_CHECK(cudaMemcpyPeerAsync(dst, to, src, from, nbytes, src_stream));
  }
  copied.record(src_stream);
  copied.wait(dst_stream);
}

}  // namespace

void cuda_memcpy(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes) {
  if (nbytes == 0) return;
  const Device gpu = dst_device.is_cuda() ? dst_device : src_device;
  cuda::check_not_capturing(
      gpu.index, "a copy between devices or to or from the host (item(), to(), cpu())",
      "it waits for the device, and a capture runs nothing until it is replayed");
  if (dst_device.is_cuda() && src_device.is_cuda())
    return copy_between_devices(dst, dst_device, src, src_device, nbytes);
  cuda::DeviceGuard guard(gpu.index);
  cudaStream_t stream = cuda::current_stream(gpu.index);
  const cudaMemcpyKind kind =
      dst_device.is_cuda() ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
  LOOM_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, kind, stream));
  // The host side may be pageable memory the caller reuses or reads right away.
  LOOM_CUDA_CHECK(cudaStreamSynchronize(stream));
}

void cuda_memcpy_on_stream(void* dst, Device dst_device, const void* src, Device src_device,
                           size_t nbytes, cuda::StreamHandle stream) {
  LOOM_ASSERT(dst_device.is_cuda() && src_device.is_cuda());
  if (nbytes == 0) return;
  cuda::DeviceGuard guard(dst_device.index);
  if (dst_device == src_device) {
    LOOM_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToDevice, stream));
  } else {
    LOOM_CUDA_CHECK(
        cudaMemcpyPeerAsync(dst, dst_device.index, src, src_device.index, nbytes, stream));
  }
}

}  // namespace loom::detail
