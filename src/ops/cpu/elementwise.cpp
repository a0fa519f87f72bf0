// The CPU loop of every elementwise op: one pass over the output, spread over threads.
#include "ops/kernels/elementwise_launch.h"
#include "tensor/parallel.h"

namespace loom::detail {

void cpu_elementwise(ElementwiseOp op, const char* name, const Tensor& out,
                     const std::vector<Tensor>& inputs, const OpParams& params) {
  launch_elementwise(op, name, out, inputs, params,
                     [](const auto& f, auto* out_data, int64_t n, const auto&... operands) {
                       parallel_for(n, [&](int64_t i) { out_data[i] = f(operands[i]...); });
                     });
}

}  // namespace loom::detail
