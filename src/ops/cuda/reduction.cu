// CUDA row reductions. A warp reduces each short row, a block each long one; when there are
// too few rows to fill the GPU (a full-tensor sum) each row is cut into chunks reduced by
// separate blocks into partial results, which a second pass combines.
#include "loom/ops/cuda/row_launch.cuh"
#include "loom/ops/reduction_backend.h"
#include "loom/tensor/cuda/runtime.h"

namespace loom::detail {

namespace {

constexpr int64_t kSplitMinLength = 1 << 16;  // rows shorter than this are never split
constexpr int64_t kMinPerThread = 16;         // elements a thread reads at least per chunk

// Rows of `length` elements, each cut into `chunks` pieces: virtual row v is piece v % chunks
// of row v / chunks. Indices passed to op.make are positions within the whole row.
template <typename T, typename Op>
struct RowSource {
  const T* in;
  int64_t length, chunks, chunk_len;
  Op op;
  __device__ int64_t size(int64_t v) const {
    const int64_t begin = (v % chunks) * chunk_len;
    return begin >= length ? 0 : min(chunk_len, length - begin);
  }
  __device__ typename Op::acc_t load(int64_t v, int64_t j) const {
    const int64_t pos = (v % chunks) * chunk_len + j;
    return op.make(in[(v / chunks) * length + pos], pos);
  }
};

// The second pass: row r combines the `chunks` partials written for it by the first.
template <typename Acc>
struct PartialSource {
  const Acc* partials;
  int64_t chunks;
  __device__ int64_t size(int64_t) const { return chunks; }
  __device__ Acc load(int64_t row, int64_t j) const { return partials[row * chunks + j]; }
};

template <typename Acc>
struct PartialSink {
  Acc* partials;
  __device__ void store(int64_t v, Acc acc) const { partials[v] = acc; }
};

template <int kGroup, typename Op, typename Source, typename Sink>
__global__ void reduce_rows_kernel(Op op, Source source, Sink sink, int64_t rows) {
  using acc_t = typename Op::acc_t;
  __shared__ alignas(16) unsigned char smem[32 * sizeof(acc_t)];
  acc_t* shared = reinterpret_cast<acc_t*>(smem);
  const int lane = threadIdx.x % kGroup;
  const int64_t groups_per_block = blockDim.x / kGroup;
  const int64_t stride = int64_t(gridDim.x) * groups_per_block;
  // The bound is uniform over each group, so group_reduce's syncs and shuffles see all threads.
  for (int64_t row = blockIdx.x * groups_per_block + threadIdx.x / kGroup; row < rows;
       row += stride) {
    acc_t acc = op.identity();
    const int64_t n = source.size(row);
    for (int64_t j = lane; j < n; j += kGroup) acc = op.combine(acc, source.load(row, j));
    acc = group_reduce<kGroup>(op, acc, shared);
    if (lane == 0) sink.store(row, acc);
  }
}

template <typename Op, typename Source, typename Sink>
void launch_rows(const Op& op, const Source& source, const Sink& sink, int64_t rows, int64_t length,
                 int device, cudaStream_t stream) {
  if (length <= kWarpRowMax) {
    reduce_rows_kernel<32>
        <<<row_blocks(rows, 32, device), kRowBlock, 0, stream>>>(op, source, sink, rows);
  } else {
    reduce_rows_kernel<kRowBlock>
        <<<row_blocks(rows, kRowBlock, device), kRowBlock, 0, stream>>>(op, source, sink, rows);
  }
  LOOM_CUDA_KERNEL_CHECK();
}

template <typename T, typename Op, typename Sink>
void reduce(const T* in, int64_t rows, int64_t length, const Op& op, const Sink& sink, int device) {
  using acc_t = typename Op::acc_t;
  cudaStream_t stream = cuda::current_stream(device);
  const int64_t target_blocks = 4LL * multiprocessor_count(device);
  if (rows >= target_blocks || length < kSplitMinLength) {
    launch_rows(op, RowSource<T, Op>{in, length, 1, length, op}, sink, rows, length, device,
                stream);
    return;
  }
  const int64_t chunks =
      std::min(ceil_div(target_blocks, rows), ceil_div(length, kRowBlock * kMinPerThread));
  const int64_t chunk_len = ceil_div(length, chunks);
  // Scratch from the caching allocator on this stream: freeing it at scope exit is safe because
  // a later user of the block is ordered after these kernels on the same stream.
  const Tensor scratch = empty({rows * chunks * static_cast<int64_t>(sizeof(acc_t))},
                               TensorOptions(kUInt8).device(cuda_device(device)));
  acc_t* partials = static_cast<acc_t*>(scratch.raw_data());
  launch_rows(op, RowSource<T, Op>{in, length, chunks, chunk_len, op}, PartialSink<acc_t>{partials},
              rows * chunks, chunk_len, device, stream);
  launch_rows(op, PartialSource<acc_t>{partials, chunks}, sink, rows, chunks, device, stream);
}

}  // namespace

void cuda_reduce_rows(const Tensor& in, int64_t rows, int64_t length, const RowReduction& r) {
  const int device = in.device().index;
  cuda::DeviceGuard guard(device);
  LOOM_DISPATCH_ALL_AND_BF16(in.dtype(), "reduce", [&] {
    const scalar_t* x = in.data_ptr<scalar_t>();
    if (r.kind == ReduceKind::Sum) {
      using acc_t = sum_acc_t<scalar_t>;
      using out_t = std::conditional_t<is_floating_type_v<scalar_t>, scalar_t, int64_t>;
      reduce(x, rows, length, SumOp<scalar_t>{},
             SumSink<acc_t, out_t>{r.values.data_ptr<out_t>(), r.scale}, device);
      return;
    }
    const ExtremeSink<scalar_t> sink{r.values.defined() ? r.values.data_ptr<scalar_t>() : nullptr,
                                     r.indices.defined() ? r.indices.data_ptr<int64_t>() : nullptr};
    if (r.kind == ReduceKind::Max) {
      reduce(x, rows, length, ExtremeOp<scalar_t, true>{}, sink, device);
    } else {
      reduce(x, rows, length, ExtremeOp<scalar_t, false>{}, sink, device);
    }
  });
}

}  // namespace loom::detail
