// Factory functions: empty, zeros, ones, full, arange, from_vector, from_blob, *_like.
#include <cmath>

#include "loom/tensor/primitives.h"
#include "loom/tensor/tensor.h"

namespace loom {

namespace {

void check_options(const TensorOptions& options, const char* op) {
  LOOM_CHECK(!options.requires_grad_ || is_floating(options.dtype_), op,
             ": only floating-point tensors can require gradients, not ",
             dtype_name(options.dtype_));
  if (options.device_.is_cuda()) {
    LOOM_CHECK(built_with_cuda(), op,
               ": loom was built without CUDA, so it cannot create a "
               "tensor on ",
               options.device_);
    LOOM_CHECK(options.device_.index < cuda_device_count(), op, ": device ", options.device_,
               " does not exist (", cuda_device_count(), " CUDA device(s) visible)");
  }
}

// Bytes of a tensor of `shape`. Shapes come from model files and flags too: a product that
// does not fit, or that asks for more than any machine could have (1 EiB, which leaves the
// allocators' rounding room below 2^64), is an error, never a wrapped small number that a later
// write would overrun. Smaller impossible requests still reach the allocator, whose
// out-of-memory error names the device and its statistics.
size_t byte_size(const Shape& shape, DType dtype, const char* op) {
  constexpr uint64_t kMaxBytes = uint64_t(1) << 60;
  const uint64_t n = static_cast<uint64_t>(numel_of(shape)), per = element_size(dtype);
  LOOM_CHECK(n <= kMaxBytes / per, op, ": a tensor of shape ", shape_str(shape), " and dtype ",
             dtype_name(dtype), " would need ", n, " x ", per, " bytes, more than the ", kMaxBytes,
             " any tensor may have");
  return static_cast<size_t>(n * per);
}

Tensor finish(Tensor t, const TensorOptions& options) {
  if (options.requires_grad_) t.set_requires_grad(true);
  return t;
}

}  // namespace

Tensor empty(const Shape& shape, const TensorOptions& options) {
  check_options(options, "empty");
  const size_t bytes = byte_size(shape, options.dtype_, "empty");
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = Storage::allocate(bytes, options.device_);
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = options.dtype_;
  return finish(Tensor(std::move(impl)), options);
}

Tensor empty(const Shape& shape, const TensorOptions& options, MemoryFormat format) {
  if (format == MemoryFormat::Contiguous) return empty(shape, options);
  LOOM_CHECK(shape.size() == 4,
             "empty: the channels-last format needs a 4-D [N, C, H, W] shape, got ",
             shape_str(shape));
  Tensor t = empty(shape, options);
  t.impl()->strides = channels_last_strides(shape);
  return t;
}

Tensor full(const Shape& shape, double value, const TensorOptions& options) {
  Tensor t = empty(shape, options.requires_grad(false));
  t.fill_(value);
  return finish(t, options);
}

Tensor zeros(const Shape& shape, const TensorOptions& options) { return full(shape, 0.0, options); }
Tensor ones(const Shape& shape, const TensorOptions& options) { return full(shape, 1.0, options); }
Tensor zeros_like(const Tensor& like) { return zeros(like.shape(), like.options()); }
Tensor ones_like(const Tensor& like) { return ones(like.shape(), like.options()); }
Tensor empty_like(const Tensor& like) { return empty(like.shape(), like.options()); }

Tensor scalar_tensor(double value, const TensorOptions& options) {
  return full({}, value, options);
}

Tensor arange(double start, double end, double step, const TensorOptions& options) {
  LOOM_CHECK(step != 0.0 && std::isfinite(start) && std::isfinite(end) && std::isfinite(step),
             "arange: start ", start, ", end ", end, " and step ", step,
             " must be finite with a non-zero step");
  LOOM_CHECK((end - start) / step >= 0.0, "arange: step ", step, " goes away from end ", end,
             " starting at ", start);
  const int64_t n = static_cast<int64_t>(std::ceil((end - start) / step));
  std::vector<double> values(n);
  for (int64_t i = 0; i < n; ++i) values[i] = start + static_cast<double>(i) * step;
  return from_vector(values, {n}, options);
}

template <typename T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape, const TensorOptions& options) {
  LOOM_CHECK(numel_of(shape) == static_cast<int64_t>(values.size()), "from_vector: ", values.size(),
             " values do not fill shape ", shape_str(shape));
  Tensor host = from_blob(const_cast<T*>(values.data()), shape, DTypeOf<T>::value);
  Tensor out = empty(shape, options.requires_grad(false));
  out.copy_(host);
  return finish(out, options);
}

#define LOOM_INSTANTIATE_FROM_VECTOR(T) \
  template Tensor from_vector<T>(const std::vector<T>&, const Shape&, const TensorOptions&);
LOOM_INSTANTIATE_FROM_VECTOR(float)
LOOM_INSTANTIATE_FROM_VECTOR(double)
LOOM_INSTANTIATE_FROM_VECTOR(int64_t)
LOOM_INSTANTIATE_FROM_VECTOR(int32_t)
LOOM_INSTANTIATE_FROM_VECTOR(uint8_t)
LOOM_INSTANTIATE_FROM_VECTOR(BFloat16)
#undef LOOM_INSTANTIATE_FROM_VECTOR

Tensor from_blob(void* data, const Shape& shape, DType dtype, Device device,
                 std::function<void(void*)> deleter) {
  const int64_t n = numel_of(shape);
  LOOM_CHECK(data != nullptr || n == 0, "from_blob: null data for shape ", shape_str(shape));
  auto impl = std::make_shared<TensorImpl>();
  impl->storage =
      Storage::wrap(data, byte_size(shape, dtype, "from_blob"), device, std::move(deleter));
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

}  // namespace loom
