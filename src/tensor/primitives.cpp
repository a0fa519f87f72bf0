// Device dispatch of the core's storage-level kernels: one place, on the destination's device.
#include "loom/tensor/primitives.h"

namespace loom::detail {

namespace {
void check_same_device(const Tensor& dst, const Tensor& src, const char* op) {
  LOOM_CHECK(dst.device() == src.device(), op, ": tensors are on different devices (", dst.device(),
             " and ", src.device(), ")");
}
}  // namespace

void throw_no_cuda(const char* op) {
  LOOM_FAIL(op, ": loom was built without CUDA, so it cannot run on a CUDA tensor");
}

void fill(const Tensor& dst, double value) {
  if (dst.numel() == 0) return;
  if (dst.is_cuda())
    cuda_fill(dst, value);
  else
    cpu_fill(dst, value);
}

void copy_same_device(const Tensor& dst, const Tensor& src) {
  check_same_device(dst, src, "copy_");
  if (dst.numel() == 0) return;
  if (dst.is_cuda())
    cuda_copy(dst, src);
  else
    cpu_copy(dst, src);
}

void accumulate(const Tensor& dst, const Tensor& src) {
  check_same_device(dst, src, "accumulate");
  LOOM_ASSERT(dst.shape() == src.shape() && dst.dtype() == src.dtype(),
              "accumulate: ", shape_str(dst.shape()), " ", dst.dtype(),
              " += ", shape_str(src.shape()), " ", src.dtype());
  if (dst.numel() == 0) return;
  if (dst.is_cuda())
    cuda_accumulate(dst, src);
  else
    cpu_accumulate(dst, src);
}

void fill_random(const Tensor& dst, const RandomParams& params) {
  LOOM_ASSERT(dst.is_contiguous());
  if (dst.numel() == 0) return;
  if (dst.is_cuda())
    cuda_fill_random(dst, params);
  else
    cpu_fill_random(dst, params);
}

}  // namespace loom::detail
