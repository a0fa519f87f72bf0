// one_hot: zeros, then a 1 per index, by the device's kernel (which names the first index out of
// range). Not differentiable: its input is integer.
#include "loom/ops/one_hot.h"

#include "loom/ops/dispatch.h"
#include "loom/ops/one_hot_backend.h"

namespace loom {

Tensor one_hot(const Tensor& indices, int64_t num_classes, DType dtype) {
  LOOM_CHECK(indices.defined(), "one_hot: the indices tensor is undefined");
  LOOM_CHECK(indices.dtype() == kInt64 || indices.dtype() == kInt32,
             "one_hot: indices must be int64 or int32, got ", dtype_name(indices.dtype()));
  LOOM_CHECK(num_classes > 0, "one_hot: num_classes must be positive, got ", num_classes);
  Shape out_shape = indices.shape();
  out_shape.push_back(num_classes);
  const Tensor out = zeros(out_shape, TensorOptions(dtype).device(indices.device()));
  if (indices.numel() == 0) return out;
  const Tensor idx = indices.contiguous();
  if (indices.is_cuda()) {
    LOOM_CUDA_DISPATCH("one_hot", detail::cuda_one_hot(idx, out, num_classes));
  } else {
    detail::cpu_one_hot(idx, out, num_classes);
  }
  return out;
}

}  // namespace loom
