// run_elementwise: the one place an elementwise op checks devices and broadcast shapes,
// allocates its output and picks the CPU or CUDA backend.
#include "ops/kernels/elementwise_kernels.h"

#include "ops/dispatch.h"

namespace loom::detail {

Tensor run_elementwise(ElementwiseOp op, const char* name, const std::vector<Tensor>& inputs,
                       DType out_dtype, const OpParams& params) {
  LOOM_ASSERT(!inputs.empty());
  for (const Tensor& t : inputs) LOOM_CHECK(t.defined(), name, ": an input tensor is undefined");
  const Device device = inputs.front().device();
  Shape shape = inputs.front().shape();
  for (size_t i = 1; i < inputs.size(); ++i) {
    LOOM_CHECK(inputs[i].device() == device, name, ": tensors are on different devices (", device,
               " and ", inputs[i].device(), ")");
    shape = broadcast_shapes(shape, inputs[i].shape(), name);
  }
  Tensor out = empty(shape, TensorOptions(out_dtype).device(device));
  if (out.numel() == 0) return out;
  if (device.is_cuda()) {
    LOOM_CUDA_DISPATCH(name, cuda_elementwise(op, name, out, inputs, params));
  } else {
    cpu_elementwise(op, name, out, inputs, params);
  }
  return out;
}

Tensor run_floating(ElementwiseOp op, const char* name, const std::vector<Tensor>& inputs,
                    const OpParams& params) {
  LOOM_ASSERT(!inputs.empty());
  const Tensor& first = inputs.front();
  for (size_t i = 1; i < inputs.size(); ++i) {
    LOOM_CHECK(inputs[i].dtype() == first.dtype(), name, ": dtypes differ (", first.dtype(), " ",
               shape_str(first.shape()), " and ", inputs[i].dtype(), " ",
               shape_str(inputs[i].shape()), ")");
  }
  LOOM_CHECK(is_floating(first.dtype()), name,
             ": expected float32, float64 or bfloat16 tensors, got ", first.dtype(), " of shape ",
             shape_str(first.shape()));
  return run_elementwise(op, name, inputs, first.dtype(), params);
}

}  // namespace loom::detail
