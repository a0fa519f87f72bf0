// CUDA kernels for the core's storage-level work: fill, strided copy with dtype conversion,
// gradient accumulation and random fills, all on the current stream.
#include "tensor/cuda/check.h"
#include "tensor/cuda/runtime.h"
#include "tensor/primitives.h"
#include "tensor/random_bits.h"
#include "tensor/strided_index.h"

namespace loom::detail {

namespace {

constexpr int kThreads = 256;

int64_t blocks_for(int64_t n) { return std::min<int64_t>((n + kThreads - 1) / kThreads, 65535LL * 32); }

cudaStream_t stream_of(const Tensor& t) { return cuda::current_stream(t.device().index); }

template <typename T>
T* base_ptr(const Tensor& t) {
  return static_cast<T*>(t.storage().data());
}

template <typename T>
__global__ void fill_kernel(T* out, StridedIndexer ix, int64_t n, T value) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    out[ix(i)] = value;
  }
}

template <typename Out, typename In>
__global__ void copy_kernel(Out* out, StridedIndexer out_ix, const In* in, StridedIndexer in_ix, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    out[out_ix(i)] = static_cast<Out>(in[in_ix(i)]);
  }
}

template <typename T>
__global__ void accumulate_kernel(T* out, StridedIndexer out_ix, const T* in, StridedIndexer in_ix, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    out[out_ix(i)] += in[in_ix(i)];
  }
}

template <typename T>
__global__ void random_kernel(T* out, int64_t n, int kind, double low, double high, uint64_t seed, uint64_t offset) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    out[i] = random_bits::sample<T>(kind, low, high, seed, offset + i);
  }
}

}  // namespace

void cuda_fill(const Tensor& dst, double value) {
  cuda::DeviceGuard guard(dst.device().index);
  const StridedIndexer ix = make_indexer(dst, dst.shape(), "fill_");
  const int64_t n = dst.numel();
  LOOM_DISPATCH_ALL(dst.dtype(), "fill_", [&] {
    fill_kernel<<<blocks_for(n), kThreads, 0, stream_of(dst)>>>(base_ptr<scalar_t>(dst), ix, n,
                                                                 static_cast<scalar_t>(value));
    LOOM_CUDA_KERNEL_CHECK();
  });
}

void cuda_copy(const Tensor& dst, const Tensor& src) {
  cuda::DeviceGuard guard(dst.device().index);
  const int64_t n = dst.numel();
  if (dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous() && src.numel() == n) {
    LOOM_CUDA_CHECK(cudaMemcpyAsync(dst.raw_data(), src.raw_data(), dst.nbytes(),
                                    cudaMemcpyDeviceToDevice, stream_of(dst)));
    return;
  }
  const StridedIndexer out_ix = make_indexer(dst, dst.shape(), "copy_");
  const StridedIndexer in_ix = make_indexer(src, dst.shape(), "copy_");
  LOOM_DISPATCH_ALL(dst.dtype(), "copy_", [&] {
    using out_t = scalar_t;
    LOOM_DISPATCH_ALL(src.dtype(), "copy_", [&] {
      copy_kernel<<<blocks_for(n), kThreads, 0, stream_of(dst)>>>(
          base_ptr<out_t>(dst), out_ix, base_ptr<scalar_t>(src), in_ix, n);
      LOOM_CUDA_KERNEL_CHECK();
    });
  });
}

void cuda_accumulate(const Tensor& dst, const Tensor& src) {
  cuda::DeviceGuard guard(dst.device().index);
  const int64_t n = dst.numel();
  const StridedIndexer out_ix = make_indexer(dst, dst.shape(), "accumulate");
  const StridedIndexer in_ix = make_indexer(src, dst.shape(), "accumulate");
  LOOM_DISPATCH_ALL(dst.dtype(), "accumulate", [&] {
    accumulate_kernel<<<blocks_for(n), kThreads, 0, stream_of(dst)>>>(
        base_ptr<scalar_t>(dst), out_ix, base_ptr<scalar_t>(src), in_ix, n);
    LOOM_CUDA_KERNEL_CHECK();
  });
}

void cuda_fill_random(const Tensor& dst, const RandomParams& p) {
  cuda::DeviceGuard guard(dst.device().index);
  const int64_t n = dst.numel();
  LOOM_DISPATCH_ALL(dst.dtype(), "random", [&] {
    random_kernel<<<blocks_for(n), kThreads, 0, stream_of(dst)>>>(
        dst.data_ptr<scalar_t>(), n, static_cast<int>(p.kind), p.low, p.high, p.seed, p.offset);
    LOOM_CUDA_KERNEL_CHECK();
  });
}

void cuda_memcpy(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes) {
  if (nbytes == 0) return;
  const Device gpu = dst_device.is_cuda() ? dst_device : src_device;
  cuda::DeviceGuard guard(gpu.index);
  cudaStream_t stream = cuda::current_stream(gpu.index);
  if (dst_device.is_cuda() && src_device.is_cuda()) {
    // The copy runs on the destination's stream: finish what the source's stream still owes.
    LOOM_CUDA_CHECK(cudaStreamSynchronize(cuda::current_stream(src_device.index)));
    LOOM_CUDA_CHECK(cudaMemcpyPeerAsync(dst, dst_device.index, src, src_device.index, nbytes, stream));
    return;
  }
  const cudaMemcpyKind kind = dst_device.is_cuda() ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
  LOOM_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, kind, stream));
  // The host side may be pageable memory the caller reuses or reads right away.
  LOOM_CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace loom::detail
