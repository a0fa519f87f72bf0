// Tensor's accessors, copies between devices and dtypes, and the autograd fields.
#include "loom/tensor/tensor.h"

#include <atomic>
#include <cstring>

#include "loom/tensor/autograd.h"
#include "loom/tensor/primitives.h"

namespace loom {

namespace {

bool is_contiguous_geometry(const Shape& shape, const Shape& strides) {
  int64_t expected = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] == 1) continue;
    if (strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

}  // namespace

void Tensor::check_defined(const char* what) const {
  LOOM_CHECK(impl_ != nullptr, what, ": the tensor is undefined");
}

void Tensor::check_dtype(DType expected, const char* what) const {
  check_defined(what);
  LOOM_CHECK(impl_->dtype == expected, what, ": the tensor holds ", dtype_name(impl_->dtype),
             ", not ", dtype_name(expected));
}

const Shape& Tensor::shape() const {
  check_defined("shape");
  return impl_->shape;
}

const Shape& Tensor::strides() const {
  check_defined("strides");
  return impl_->strides;
}

int64_t Tensor::size(int64_t d) const { return shape()[wrap_dim(d, dim(), "size")]; }
int64_t Tensor::stride(int64_t d) const { return strides()[wrap_dim(d, dim(), "stride")]; }
int64_t Tensor::numel() const { return numel_of(shape()); }
int64_t Tensor::offset() const { return impl_->offset; }

DType Tensor::dtype() const {
  check_defined("dtype");
  return impl_->dtype;
}

Device Tensor::device() const {
  check_defined("device");
  return impl_->storage.device();
}

const Storage& Tensor::storage() const {
  check_defined("storage");
  return impl_->storage;
}

bool Tensor::is_contiguous() const { return is_contiguous_geometry(shape(), impl_->strides); }

// NHWC: the NCHW check over the dims in the order N, H, W, C.
bool Tensor::is_contiguous(MemoryFormat format) const {
  if (format == MemoryFormat::Contiguous) return is_contiguous();
  if (dim() != 4) return false;
  const Shape& s = shape();
  const Shape& st = impl_->strides;
  return is_contiguous_geometry({s[0], s[2], s[3], s[1]}, {st[0], st[2], st[3], st[1]});
}

MemoryFormat Tensor::suggest_memory_format() const {
  return is_contiguous(MemoryFormat::ChannelsLast) && !is_contiguous() ? MemoryFormat::ChannelsLast
                                                                       : MemoryFormat::Contiguous;
}

void* Tensor::raw_data() const {
  check_defined("data");
  return static_cast<char*>(impl_->storage.data()) +
         impl_->offset * static_cast<int64_t>(element_size(impl_->dtype));
}

Tensor Tensor::as_strided(const Shape& shape, const Shape& strides, int64_t offset) const {
  check_defined("as_strided");
  LOOM_ASSERT(shape.size() == strides.size());
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = impl_->storage;
  impl->shape = shape;
  impl->strides = strides;
  impl->offset = offset;
  impl->dtype = impl_->dtype;
  return Tensor(std::move(impl));
}

template <typename T>
T Tensor::item() const {
  LOOM_CHECK(numel() == 1, "item: the tensor has ", numel(), " elements (shape ",
             shape_str(shape()), "); item() needs exactly one");
  return to_vector<T>()[0];
}

template <typename T>
std::vector<T> Tensor::to_vector() const {
  check_defined("to_vector");
  NoGradGuard no_grad;
  const Tensor host = to(kCPU, DTypeOf<T>::value).contiguous();
  const T* data = host.data_ptr<T>();
  return std::vector<T>(data, data + host.numel());
}

#define LOOM_INSTANTIATE_ACCESS(T)    \
  template T Tensor::item<T>() const; \
  template std::vector<T> Tensor::to_vector<T>() const;
LOOM_INSTANTIATE_ACCESS(float)
LOOM_INSTANTIATE_ACCESS(double)
LOOM_INSTANTIATE_ACCESS(int64_t)
LOOM_INSTANTIATE_ACCESS(int32_t)
LOOM_INSTANTIATE_ACCESS(uint8_t)
LOOM_INSTANTIATE_ACCESS(BFloat16)
#undef LOOM_INSTANTIATE_ACCESS

// ---- copies -------------------------------------------------------------------------------

Tensor& Tensor::copy_(const Tensor& src) {
  check_defined("copy_");
  LOOM_CHECK(src.defined(), "copy_: the source tensor is undefined");
  broadcast_shapes(src.shape(), shape(), "copy_");  // throws when src does not fit
  if (src.device() == device()) {
    detail::copy_same_device(*this, src);
    return *this;
  }
  // Across devices: make a contiguous staging copy on the source device in dst's dtype and
  // shape, move the bytes, then lay them into dst's geometry on its own device.
  Tensor staged = empty(shape(), TensorOptions(dtype()).device(src.device()));
  detail::copy_same_device(staged, src);
  if (is_contiguous()) {
    detail::cuda_memcpy(raw_data(), device(), staged.raw_data(), staged.device(), nbytes());
  } else {
    Tensor landed = empty(shape(), options());
    detail::cuda_memcpy(landed.raw_data(), device(), staged.raw_data(), staged.device(), nbytes());
    detail::copy_same_device(*this, landed);
  }
  return *this;
}

Tensor& Tensor::add_(const Tensor& src) {
  check_defined("add_");
  LOOM_CHECK(src.defined(), "add_: the tensor to add is undefined");
  LOOM_CHECK(src.shape() == shape() && src.dtype() == dtype() && src.device() == device(),
             "add_: adds a ", dtype_name(src.dtype()), " ", shape_str(src.shape()), " tensor on ",
             src.device().str(), " to a ", dtype_name(dtype()), " ", shape_str(shape()), " one on ",
             device().str(), "; they must match");
  detail::accumulate(*this, src);
  return *this;
}

Tensor& Tensor::fill_(double value) {
  check_defined("fill_");
  detail::fill(*this, value);
  return *this;
}

Tensor Tensor::contiguous() const {
  check_defined("contiguous");
  if (is_contiguous()) return *this;
  return clone();
}

Tensor Tensor::contiguous(MemoryFormat format) const {
  check_defined("contiguous");
  if (format == MemoryFormat::Contiguous) return contiguous();
  LOOM_CHECK(dim() == 4, "contiguous(ChannelsLast): needs a 4-D [N, C, H, W] tensor, got shape ",
             shape_str(shape()));
  if (is_contiguous(format)) return *this;
  Tensor out = empty(shape(), options(), format);
  detail::copy_same_device(out, *this);
  const MemoryFormat own = suggest_memory_format();
  return record("contiguous", out, {*this},
                [own](const Tensor& g) { return std::vector<Tensor>{g.contiguous(own)}; });
}

Tensor Tensor::clone() const {
  check_defined("clone");
  Tensor out = empty(shape(), options());
  detail::copy_same_device(out, *this);
  return record("clone", out, {*this}, [](const Tensor& g) { return std::vector<Tensor>{g}; });
}

Tensor Tensor::to(Device device) const { return to(device, dtype()); }
Tensor Tensor::to(DType dtype) const { return to(device(), dtype); }

Tensor Tensor::to(Device target_device, DType target_dtype) const {
  check_defined("to");
  const Device source_device = device();
  const DType source_dtype = dtype();
  if (target_device == source_device && target_dtype == source_dtype) return *this;
  // A channels-last tensor stays channels-last (autocast's casts keep the layout).
  Tensor out =
      empty(shape(), TensorOptions(target_dtype).device(target_device), suggest_memory_format());
  out.copy_(*this);
  return record("to", out, {*this}, [source_device, source_dtype](const Tensor& g) {
    return std::vector<Tensor>{g.to(source_device, source_dtype)};
  });
}

// ---- autograd fields ----------------------------------------------------------------------

bool Tensor::requires_grad() const {
  check_defined("requires_grad");
  return impl_->requires_grad || impl_->grad_fn != nullptr;
}

Tensor& Tensor::set_requires_grad(bool requires_grad) {
  check_defined("requires_grad_");
  LOOM_CHECK(is_leaf(),
             "requires_grad_: only a leaf tensor's flag can be set; this tensor was "
             "computed by ",
             impl_->grad_fn->name(), " (use detach() for a new leaf)");
  LOOM_CHECK(!requires_grad || is_floating(dtype()),
             "requires_grad_: only floating-point "
             "tensors can require gradients, this one holds ",
             dtype_name(dtype()));
  impl_->requires_grad = requires_grad;
  return *this;
}

bool Tensor::is_leaf() const {
  check_defined("is_leaf");
  return impl_->grad_fn == nullptr;
}

const Tensor& Tensor::grad() const {
  check_defined("grad");
  return impl_->grad;
}

void Tensor::set_grad(const Tensor& grad) {
  check_defined("set_grad");
  if (grad.defined()) {
    LOOM_CHECK(grad.shape() == shape() && grad.dtype() == dtype() && grad.device() == device(),
               "set_grad: gradient ", shape_str(grad.shape()), " ", grad.dtype(), " on ",
               grad.device(), " does not match the tensor ", shape_str(shape()), " ", dtype(),
               " on ", device());
  }
  impl_->grad = grad;
}

const std::shared_ptr<Node>& Tensor::grad_fn() const {
  check_defined("grad_fn");
  return impl_->grad_fn;
}

void Tensor::backward(const Tensor& gradient, bool retain_graph) const {
  check_defined("backward");
  run_backward(*this, gradient, retain_graph);
}

Tensor Tensor::detach() const {
  check_defined("detach");
  return as_strided(shape(), impl_->strides, impl_->offset);
}

uint64_t Tensor::register_post_accumulate_hook(PostAccumulateHook hook) {
  check_defined("register_post_accumulate_hook");
  LOOM_CHECK(is_leaf() && impl_->requires_grad,
             "register_post_accumulate_hook: only leaves that require grad accumulate gradients");
  static std::atomic<uint64_t> next_handle{1};
  const uint64_t handle = next_handle++;
  impl_->post_accumulate_hooks.emplace_back(handle, std::move(hook));
  return handle;
}

void Tensor::remove_post_accumulate_hook(uint64_t handle) {
  check_defined("remove_post_accumulate_hook");
  auto& hooks = impl_->post_accumulate_hooks;
  for (auto it = hooks.begin(); it != hooks.end(); ++it) {
    if (it->first == handle) {
      hooks.erase(it);
      return;
    }
  }
}

}  // namespace loom
