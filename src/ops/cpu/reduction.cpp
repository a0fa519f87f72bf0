// CPU row reductions: rows run in parallel; a few long rows (a full-tensor sum) are cut into
// chunks first so every thread has work, and the chunk results are combined in order.
#include <algorithm>
#include <limits>
#include <vector>

#include "loom/ops/reduction_backend.h"
#include "loom/ops/reduction_math.h"
#include "loom/tensor/parallel.h"

namespace loom::detail {

namespace {

constexpr int64_t kMaxChunksPerRow = 64;

template <typename T, typename Op, typename Sink>
void reduce_rows(const T* in, int64_t rows, int64_t length, const Op& op, const Sink& sink) {
  using acc_t = typename Op::acc_t;
  const int64_t chunks = rows >= kMaxChunksPerRow
                             ? 1
                             : std::clamp<int64_t>(length / kParallelGrain, 1, kMaxChunksPerRow);
  const int64_t chunk_len = (length + chunks - 1) / chunks;
  std::vector<acc_t> partial(static_cast<size_t>(rows * chunks));
  // parallel_for's grain counts iterations; here one iteration is a whole chunk.
  const int64_t grain = rows * length > kParallelGrain ? 0 : std::numeric_limits<int64_t>::max();
  parallel_for(
      rows * chunks,
      [&](int64_t v) {
        const int64_t row = v / chunks;
        const int64_t begin = (v % chunks) * chunk_len;
        const int64_t end = std::min(length, begin + chunk_len);
        const T* x = in + row * length;
        acc_t acc = op.identity();
        for (int64_t j = begin; j < end; ++j) acc = op.combine(acc, op.make(x[j], j));
        partial[v] = acc;
      },
      grain);
  for (int64_t row = 0; row < rows; ++row) {
    acc_t acc = op.identity();
    for (int64_t c = 0; c < chunks; ++c) acc = op.combine(acc, partial[row * chunks + c]);
    sink.store(row, acc);
  }
}

}  // namespace

void cpu_reduce_rows(const Tensor& in, int64_t rows, int64_t length, const RowReduction& r) {
  LOOM_DISPATCH_ALL_AND_BF16(in.dtype(), "reduce", [&] {
    const scalar_t* x = in.data_ptr<scalar_t>();
    if (r.kind == ReduceKind::Sum) {
      using acc_t = sum_acc_t<scalar_t>;
      using out_t = std::conditional_t<is_floating_type_v<scalar_t>, scalar_t, int64_t>;
      reduce_rows(x, rows, length, SumOp<scalar_t>{},
                  SumSink<acc_t, out_t>{r.values.data_ptr<out_t>(), r.scale});
      return;
    }
    const ExtremeSink<scalar_t> sink{r.values.defined() ? r.values.data_ptr<scalar_t>() : nullptr,
                                     r.indices.defined() ? r.indices.data_ptr<int64_t>() : nullptr};
    if (r.kind == ReduceKind::Max) {
      reduce_rows(x, rows, length, ExtremeOp<scalar_t, true>{}, sink);
    } else {
      reduce_rows(x, rows, length, ExtremeOp<scalar_t, false>{}, sink);
    }
  });
}

}  // namespace loom::detail
