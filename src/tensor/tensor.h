// loom::Tensor: a cheap shared handle to an n-dimensional strided view of a Storage, with the
// autograd fields (requires_grad, grad, grad_fn). Copying a Tensor copies the handle, not data.
// Views (reshape, transpose, narrow, expand, ...) share storage; math lives in ops/.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "loom/tensor/device.h"
#include "loom/tensor/dtype.h"
#include "loom/tensor/error.h"
#include "loom/tensor/shape.h"
#include "loom/tensor/storage.h"

namespace loom {

class Node;
class Tensor;
struct TensorImpl;

// dtype, device and requires_grad of a new tensor: zeros({2, 3}, kFloat64),
// zeros({2, 3}, kCUDA), zeros({2, 3}, TensorOptions(kFloat64).device(cuda_device(1))).
struct TensorOptions {
  DType dtype_ = kFloat32;
  Device device_ = kCPU;
  bool requires_grad_ = false;

  TensorOptions() = default;
  TensorOptions(DType dtype) : dtype_(dtype) {}      // NOLINT: implicit on purpose
  TensorOptions(Device device) : device_(device) {}  // NOLINT: implicit on purpose
  TensorOptions dtype(DType d) const {
    auto o = *this;
    o.dtype_ = d;
    return o;
  }
  TensorOptions device(Device d) const {
    auto o = *this;
    o.device_ = d;
    return o;
  }
  TensorOptions requires_grad(bool r = true) const {
    auto o = *this;
    o.requires_grad_ = r;
    return o;
  }
};

// How a 4-D [N, C, H, W] tensor's elements lie in memory. Contiguous: row-major NCHW.
// ChannelsLast: the same shape stored NHWC (strides [H*W*C, 1, W*C, C]), the layout cuDNN's
// tensor-core convolutions read without transposing. On CUDA, convolution, batch norm, max
// pooling and elementwise ops keep a channels-last input's layout in their outputs and
// gradients; other ops read it through contiguous(), as any strided tensor.
enum class MemoryFormat { Contiguous, ChannelsLast };

// Called with a leaf's .grad once backward() has accumulated into it
// (DistributedDataParallel starts its all-reduce from here).
using PostAccumulateHook = std::function<void(Tensor& leaf)>;

class Tensor {
 public:
  Tensor() = default;  // undefined: no storage, used for "no gradient"
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // --- properties -------------------------------------------------------------------------
  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const;
  Sizes sizes() const { return Sizes(shape()); }  // a copy that prints: std::cout << x.sizes()
  const Shape& strides() const;
  int64_t size(int64_t dim) const;  // negative dims count from the end
  int64_t stride(int64_t dim) const;
  int64_t dim() const { return static_cast<int64_t>(shape().size()); }
  int64_t numel() const;
  int64_t offset() const;  // in elements, into the storage
  DType dtype() const;
  Device device() const;
  bool is_cuda() const { return device().is_cuda(); }
  bool is_contiguous() const;
  bool is_contiguous(MemoryFormat format) const;  // ChannelsLast: only 4-D tensors can be
  // ChannelsLast when 4-D, NHWC and not also NCHW (one channel, or one pixel, is both: then
  // the two layouts are the same bytes): the layout an op gives the output it computes from it.
  MemoryFormat suggest_memory_format() const;
  const Storage& storage() const;
  size_t nbytes() const { return static_cast<size_t>(numel()) * element_size(dtype()); }
  TensorOptions options() const { return TensorOptions(dtype()).device(device()); }

  // Raw pointer to the first element; data_ptr<T>() checks that T matches the dtype.
  void* raw_data() const;
  template <typename T>
  T* data_ptr() const {
    check_dtype(DTypeOf<T>::value, "data_ptr");
    return static_cast<T*>(raw_data());
  }

  // Values copied to the host (synchronises with the device), converted to T.
  template <typename T>
  T item() const;
  template <typename T>
  std::vector<T> to_vector() const;

  // --- views: share storage; differentiable ---------------------------------------------
  Tensor view(const Shape& shape) const;     // needs compatible strides; -1 infers one size
  Tensor reshape(const Shape& shape) const;  // a view when possible, else a copy
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor t() const;  // transpose of a 2-D tensor
  Tensor permute(const std::vector<int64_t>& dims) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor select(int64_t dim, int64_t index) const;  // narrow + squeeze
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor expand(const Shape& shape) const;  // -1 keeps a size; new leading dims allowed
  Tensor expand_as(const Tensor& other) const { return expand(other.shape()); }

  // --- copies: differentiable --------------------------------------------------------------
  Tensor contiguous() const;  // this tensor itself when already contiguous
  // This tensor itself when already laid out so, else a copy that is; the gradient goes back
  // in this tensor's own layout.
  Tensor contiguous(MemoryFormat format) const;
  Tensor clone() const;
  Tensor to(Device device) const;  // this tensor itself when nothing changes
  Tensor to(DType dtype) const;
  Tensor to(Device device, DType dtype) const;
  Tensor cpu() const { return to(kCPU); }
  Tensor cuda(int index = 0) const { return to(Device(DeviceType::CUDA, index)); }

  // --- math: method forms of the free functions of ops/ ----------------------------------
  // x.abs() is loom::abs(x), and so on, as libtorch spells them; differentiable as the free
  // functions are. Declared here, defined in ops/tensor_methods.cpp (tensor/ includes nothing
  // of ops/; libloom holds both). See docs/libtorch.md for what differs from libtorch.
  Tensor abs() const;
  Tensor neg() const;
  Tensor exp() const;
  Tensor log() const;
  Tensor sqrt() const;
  Tensor relu() const;
  Tensor sigmoid() const;
  Tensor tanh() const;
  Tensor pow(double exponent) const;
  Tensor pow(const Tensor& exponent) const;
  Tensor clamp(double min, double max) const;
  Tensor add(const Tensor& other) const;
  Tensor add(double other) const;
  Tensor sub(const Tensor& other) const;
  Tensor sub(double other) const;
  Tensor mul(const Tensor& other) const;
  Tensor mul(double other) const;
  Tensor div(const Tensor& other) const;
  Tensor div(double other) const;
  Tensor maximum(const Tensor& other) const;
  Tensor minimum(const Tensor& other) const;
  // Comparisons give uint8 tensors of 0 and 1.
  Tensor eq(const Tensor& other) const;
  Tensor eq(double other) const;
  Tensor ne(const Tensor& other) const;
  Tensor lt(const Tensor& other) const;
  Tensor lt(double other) const;
  Tensor le(const Tensor& other) const;
  Tensor le(double other) const;
  Tensor gt(const Tensor& other) const;
  Tensor gt(double other) const;
  Tensor ge(const Tensor& other) const;
  Tensor ge(double other) const;
  // Reductions: over every element, or over dims (negative counts from the end).
  Tensor sum() const;
  Tensor sum(int64_t dim, bool keepdim = false) const;
  Tensor sum(const std::vector<int64_t>& dims, bool keepdim = false) const;
  Tensor mean() const;
  Tensor mean(int64_t dim, bool keepdim = false) const;
  Tensor mean(const std::vector<int64_t>& dims, bool keepdim = false) const;
  Tensor max() const;  // the largest element, 0-d
  Tensor min() const;
  // The largest (smallest) values along dim.
  Tensor amax(int64_t dim, bool keepdim = false) const;
  Tensor amin(int64_t dim, bool keepdim = false) const;
  // libtorch's max(dim): (amax(dim), argmax(dim)), two passes over the tensor. loom has no
  // argmin, so no min(dim) either: use amin(dim).
  std::tuple<Tensor, Tensor> max(int64_t dim, bool keepdim = false) const;
  Tensor argmax() const;  // int64 index into the flattened tensor
  Tensor argmax(int64_t dim, bool keepdim = false) const;
  Tensor matmul(const Tensor& other) const;
  Tensor bmm(const Tensor& other) const;
  Tensor softmax(int64_t dim) const;
  Tensor log_softmax(int64_t dim) const;

  // --- in place, not recorded by autograd ---------------------------------------------------
  Tensor& copy_(const Tensor& src);  // broadcasts src, converts dtype, crosses devices
  Tensor& fill_(double value);
  Tensor& zero_() { return fill_(0.0); }
  Tensor& add_(const Tensor& src);  // += src of the same shape, dtype and device

  // --- autograd -----------------------------------------------------------------------------
  bool requires_grad() const;
  Tensor& set_requires_grad(bool requires_grad);  // only on leaves
  Tensor& requires_grad_(bool requires_grad = true) { return set_requires_grad(requires_grad); }
  bool is_leaf() const;
  const Tensor& grad() const;  // undefined until backward() reaches this leaf
  void set_grad(const Tensor& grad);
  const std::shared_ptr<Node>& grad_fn() const;
  // Runs reverse-mode differentiation from this tensor. Without `gradient` the tensor must
  // hold one element. retain_graph keeps saved tensors for another backward().
  void backward(const Tensor& gradient = Tensor(), bool retain_graph = false) const;
  Tensor detach() const;  // same storage, no history
  // Returns a handle for remove_post_accumulate_hook (which ignores handles already removed).
  uint64_t register_post_accumulate_hook(PostAccumulateHook hook);
  void remove_post_accumulate_hook(uint64_t handle);

  // --- misc ------------------------------------------------------------------------------
  std::string str() const;  // like PyTorch's repr
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }
  const std::shared_ptr<TensorImpl>& impl() const { return impl_; }

  // Internal: a new view of this tensor's storage with the given geometry, no autograd.
  Tensor as_strided(const Shape& shape, const Shape& strides, int64_t offset) const;

 private:
  void check_defined(const char* what) const;
  void check_dtype(DType expected, const char* what) const;
  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& out, const Tensor& tensor);

struct TensorImpl {
  Storage storage;
  Shape shape;
  Shape strides;
  int64_t offset = 0;  // elements
  DType dtype = kFloat32;

  // autograd
  bool requires_grad = false;  // for leaves; non-leaves require grad when grad_fn is set
  Tensor grad;
  std::shared_ptr<Node> grad_fn;
  std::weak_ptr<Node> grad_accumulator;  // the leaf's AccumulateGrad node, while a graph uses it
  std::vector<std::pair<uint64_t, PostAccumulateHook>> post_accumulate_hooks;  // (handle, hook)
};

// --- factories ---------------------------------------------------------------------------
Tensor empty(const Shape& shape, const TensorOptions& options = {});
Tensor empty(const Shape& shape, const TensorOptions& options,
             MemoryFormat format);  // ChannelsLast: 4-D
Tensor zeros(const Shape& shape, const TensorOptions& options = {});
Tensor ones(const Shape& shape, const TensorOptions& options = {});
Tensor full(const Shape& shape, double value, const TensorOptions& options = {});
Tensor zeros_like(const Tensor& like);
Tensor ones_like(const Tensor& like);
Tensor empty_like(const Tensor& like);
// [start, end) in steps of step, like numpy.arange.
Tensor arange(double start, double end, double step = 1.0, const TensorOptions& options = {});
inline Tensor arange(double end, const TensorOptions& options = {}) {
  return arange(0.0, end, 1.0, options);
}
// A scalar (0-d) tensor.
Tensor scalar_tensor(double value, const TensorOptions& options = {});

// Copies values (converted to options' dtype) into a new tensor of the given shape.
template <typename T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape,
                   const TensorOptions& options = TensorOptions(DTypeOf<T>::value));
template <typename T>
Tensor from_vector(const std::vector<T>& values) {
  return from_vector(values, {static_cast<int64_t>(values.size())});
}
// Wraps memory the caller owns (contiguous, of `dtype`, on `device`); no copy is made. The
// memory must outlive every view of the tensor; `deleter` runs when the last view is gone.
Tensor from_blob(void* data, const Shape& shape, DType dtype, Device device = kCPU,
                 std::function<void(void*)> deleter = nullptr);

}  // namespace loom
