// Views: new shapes and strides over the same storage, each recorded for autograd with the
// inverse view as its backward. expand() is in ops/ (its backward is a reduction).
#include <algorithm>
#include <numeric>

#include "loom/tensor/autograd.h"
#include "loom/tensor/tensor.h"

namespace loom {

namespace {

// Resolves one -1 in a requested shape against numel; checks the element counts agree.
Shape infer_shape(const Shape& requested, int64_t numel, const char* op, const Shape& from) {
  Shape shape = requested;
  int64_t known = 1;
  int infer_at = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      LOOM_CHECK(infer_at < 0, op, ": only one dimension can be -1, got ", shape_str(requested));
      infer_at = static_cast<int>(i);
    } else {
      LOOM_CHECK(shape[i] >= 0, op, ": invalid size ", shape[i], " in ", shape_str(requested));
      known *= shape[i];
    }
  }
  if (infer_at >= 0) {
    LOOM_CHECK(known != 0 && numel % known == 0, op, ": shape ", shape_str(requested),
               " is invalid for a tensor of shape ", shape_str(from), " (", numel, " elements)");
    shape[infer_at] = numel / known;
  }
  LOOM_CHECK(numel_of(shape) == numel, op, ": shape ", shape_str(requested),
             " is invalid for a tensor of shape ", shape_str(from), " (", numel, " elements)");
  return shape;
}

// Strides for viewing (shape, strides) as new_shape without a copy, or false when the memory
// layout does not allow it (the algorithm of NumPy's _attempt_nocopy_reshape).
bool view_strides(const Shape& shape, const Shape& strides, const Shape& new_shape, Shape* out) {
  out->assign(new_shape.size(), 0);
  if (numel_of(shape) == 0) {
    *out = contiguous_strides(new_shape);
    return true;
  }
  // Drop size-1 dims; they do not constrain the layout.
  Shape old_sizes, old_strides;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] != 1) old_sizes.push_back(shape[i]), old_strides.push_back(strides[i]);
  }
  size_t oi = 0, ni = 0;
  const size_t on = old_sizes.size(), nn = new_shape.size();
  while (ni < nn && oi < on) {
    int64_t np = new_shape[ni], op = old_sizes[oi];
    size_t nj = ni + 1, oj = oi + 1;
    while (np != op) {
      if (np < op)
        np *= new_shape[nj++];
      else
        op *= old_sizes[oj++];
    }
    for (size_t k = oi; k + 1 < oj; ++k) {
      if (old_strides[k] != old_sizes[k + 1] * old_strides[k + 1]) return false;
    }
    (*out)[nj - 1] = old_strides[oj - 1];
    for (size_t k = nj - 1; k > ni; --k) (*out)[k - 1] = (*out)[k] * new_shape[k];
    ni = nj, oi = oj;
  }
  // Trailing size-1 dims of the new shape.
  for (; ni < nn; ++ni) (*out)[ni] = 1;
  return true;
}

Tensor reshape_backward_view(const Tensor& out, const Tensor& input, const char* name) {
  const Shape input_shape = input.shape();
  return record(name, out, {input}, [input_shape](const Tensor& g) {
    return std::vector<Tensor>{g.reshape(input_shape)};
  });
}

}  // namespace

Tensor Tensor::view(const Shape& requested) const {
  const Shape new_shape = infer_shape(requested, numel(), "view", shape());
  Shape new_strides;
  LOOM_CHECK(view_strides(shape(), strides(), new_shape, &new_strides), "view: shape ",
             shape_str(new_shape), " is not compatible with the strides of the input ",
             shape_str(shape()), " strides ", shape_str(strides()),
             "; use reshape(), which copies when it must");
  return reshape_backward_view(as_strided(new_shape, new_strides, offset()), *this, "view");
}

Tensor Tensor::reshape(const Shape& requested) const {
  const Shape new_shape = infer_shape(requested, numel(), "reshape", shape());
  Shape new_strides;
  if (view_strides(shape(), strides(), new_shape, &new_strides)) {
    return reshape_backward_view(as_strided(new_shape, new_strides, offset()), *this, "reshape");
  }
  return contiguous().view(new_shape);
}

Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  if (dim() == 0) return reshape({1});
  const int64_t start = wrap_dim(start_dim, dim(), "flatten");
  const int64_t end = wrap_dim(end_dim, dim(), "flatten");
  LOOM_CHECK(start <= end, "flatten: start_dim ", start_dim, " comes after end_dim ", end_dim);
  Shape new_shape(shape().begin(), shape().begin() + start);
  int64_t merged = 1;
  for (int64_t d = start; d <= end; ++d) merged *= shape()[d];
  new_shape.push_back(merged);
  new_shape.insert(new_shape.end(), shape().begin() + end + 1, shape().end());
  return reshape(new_shape);
}

Tensor Tensor::permute(const std::vector<int64_t>& dims) const {
  LOOM_CHECK(static_cast<int64_t>(dims.size()) == dim(), "permute: got ", dims.size(),
             " dims for a tensor with ", dim(), " dimension(s)");
  Shape new_shape(dims.size()), new_strides(dims.size());
  std::vector<int64_t> inverse(dims.size(), -1);
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = wrap_dim(dims[i], dim(), "permute");
    LOOM_CHECK(inverse[d] < 0, "permute: dim ", dims[i], " appears twice");
    inverse[d] = static_cast<int64_t>(i);
    new_shape[i] = shape()[d];
    new_strides[i] = strides()[d];
  }
  Tensor out = as_strided(new_shape, new_strides, offset());
  return record("permute", out, {*this},
                [inverse](const Tensor& g) { return std::vector<Tensor>{g.permute(inverse)}; });
}

Tensor Tensor::transpose(int64_t dim0, int64_t dim1) const {
  if (dim() == 0) return *this;
  std::vector<int64_t> order(dim());
  std::iota(order.begin(), order.end(), 0);
  std::swap(order[wrap_dim(dim0, dim(), "transpose")], order[wrap_dim(dim1, dim(), "transpose")]);
  return permute(order);
}

Tensor Tensor::t() const {
  LOOM_CHECK(dim() <= 2, "t: expects a tensor with at most 2 dimensions, got ", dim(), " (shape ",
             shape_str(shape()), "); use transpose(dim0, dim1)");
  return dim() < 2 ? *this : transpose(0, 1);
}

Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length) const {
  d = wrap_dim(d, dim(), "narrow");
  const int64_t size = shape()[d];
  if (start < 0) start += size;
  LOOM_CHECK(start >= 0 && length >= 0 && start + length <= size, "narrow: start ", start,
             " and length ", length, " do not fit dimension ", d, " of size ", size);
  Shape new_shape = shape();
  new_shape[d] = length;
  Tensor out = as_strided(new_shape, strides(), offset() + start * strides()[d]);
  const Shape input_shape = shape();
  const TensorOptions opts = options();
  return record("narrow", out, {*this}, [input_shape, opts, d, start, length](const Tensor& g) {
    Tensor grad = zeros(input_shape, opts);
    grad.narrow(d, start, length).copy_(g);
    return std::vector<Tensor>{grad};
  });
}

Tensor Tensor::select(int64_t d, int64_t index) const {
  d = wrap_dim(d, dim(), "select");
  const int64_t size = shape()[d];
  LOOM_CHECK(index >= -size && index < size, "select: index ", index,
             " is out of range for dimension ", d, " of size ", size);
  return narrow(d, index < 0 ? index + size : index, 1).squeeze(d);
}

Tensor Tensor::squeeze() const {
  Shape new_shape;
  for (int64_t s : shape()) {
    if (s != 1) new_shape.push_back(s);
  }
  return reshape(new_shape);
}

Tensor Tensor::squeeze(int64_t d) const {
  if (dim() == 0) return *this;
  d = wrap_dim(d, dim(), "squeeze");
  if (shape()[d] != 1) return *this;
  Shape new_shape = shape();
  new_shape.erase(new_shape.begin() + d);
  return reshape(new_shape);
}

Tensor Tensor::unsqueeze(int64_t d) const {
  d = wrap_dim(d, dim() + 1, "unsqueeze");
  Shape new_shape = shape();
  new_shape.insert(new_shape.begin() + d, 1);
  return reshape(new_shape);
}

}  // namespace loom
