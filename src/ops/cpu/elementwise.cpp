// The CPU loop of every elementwise op: one pass over the output, spread over threads. Dense
// operands are indexed directly; broadcast or strided ones are walked with StridedCursor over
// the coalesced shape (e.g. [N, F] + [F] as runs of F), with no division per element.
#include <utility>

#include "loom/ops/elementwise_backend.h"
#include "loom/tensor/parallel.h"
#include "loom/tensor/strided_cursor.h"

namespace loom::detail {

namespace {

template <typename F, typename Out, typename... In>
void cpu_loop(const F& f, Out* out, int64_t n, const DenseOperand<In>&... in) {
  parallel_for(n, [&](int64_t i) { out[i] = f(in[i]...); });
}

template <typename F, typename Out, typename... In, size_t... I>
void strided_loop(const F& f, Out* out, int64_t n, std::index_sequence<I...>,
                  const StridedOperand<In>&... in) {
  constexpr int k = sizeof...(In);
  // ix[0] is the contiguous output, so coalescing keeps its layout too.
  StridedIndexer ix[k + 1] = {StridedIndexer{}, in.ix...};
  ix[0].ndim = ix[1].ndim;
  for (int64_t d = ix[0].ndim - 1, stride = 1; d >= 0; --d) {
    ix[0].sizes[d] = ix[1].sizes[d];
    ix[0].strides[d] = stride;
    stride *= ix[1].sizes[d];
  }
  coalesce(ix, k + 1);
  parallel_chunks(n, [&](int64_t, int64_t begin, int64_t end) {
    StridedCursor cur[k] = {StridedCursor(ix[I + 1], begin)...};
    for (int64_t i = begin; i < end;) {
      const int64_t count = std::min(cur[0].run(), end - i);
      const int64_t at[k] = {cur[I].offset()...}, step[k] = {cur[I].stride()...};
      for (int64_t j = 0; j < count; ++j) out[i + j] = f(in.data[at[I] + j * step[I]]...);
      for (StridedCursor& c : cur) c.advance(count);
      i += count;
    }
  });
}

template <typename F, typename Out, typename... In>
void cpu_loop(const F& f, Out* out, int64_t n, const StridedOperand<In>&... in) {
  strided_loop(f, out, n, std::index_sequence_for<In...>{}, in...);
}

}  // namespace

void cpu_elementwise(ElementwiseOp op, const char* name, const Tensor& out,
                     const std::vector<Tensor>& inputs, const OpParams& params) {
  launch_elementwise(op, name, out, inputs, params,
                     [](const auto& f, auto* out_data, int64_t n, const auto&... operands) {
                       cpu_loop(f, out_data, n, operands...);
                     });
}

}  // namespace loom::detail
