#include "loom/tensor/shape.h"

#include <algorithm>
#include <limits>
#include <ostream>
#include <sstream>

#include "loom/tensor/error.h"

namespace loom {

int64_t numel_of(const Shape& shape) {
  int64_t n = 1;
  for (int64_t s : shape) {
    LOOM_CHECK(s >= 0, "shape ", shape_str(shape), " has a negative size");
    LOOM_CHECK(s == 0 || n <= std::numeric_limits<int64_t>::max() / s, "shape ", shape_str(shape),
               " has too many elements");
    n *= s;
  }
  return n;
}

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size());
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= std::max<int64_t>(shape[i], 1);
  }
  return strides;
}

Shape channels_last_strides(const Shape& shape) {
  LOOM_CHECK(shape.size() == 4, "channels-last strides need a 4-D [N, C, H, W] shape, got ",
             shape_str(shape));
  const int64_t c = std::max<int64_t>(shape[1], 1), w = std::max<int64_t>(shape[3], 1);
  const int64_t h = std::max<int64_t>(shape[2], 1);
  return {h * w * c, 1, w * c, c};
}

std::ostream& operator<<(std::ostream& out, const Sizes& sizes) { return out << shape_str(sizes); }

std::string shape_str(const Shape& shape) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << "]";
  return out.str();
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const size_t ndim = std::max(a.size(), b.size());
  Shape out(ndim);
  for (size_t i = 0; i < ndim; ++i) {
    const int64_t sa = i < ndim - a.size() ? 1 : a[i - (ndim - a.size())];
    const int64_t sb = i < ndim - b.size() ? 1 : b[i - (ndim - b.size())];
    LOOM_CHECK(sa == sb || sa == 1 || sb == 1, op, ": shapes ", shape_str(a), " and ", shape_str(b),
               " cannot be broadcast together");
    out[i] = sa == 1 ? sb : sa;
  }
  return out;
}

int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  const int64_t lo = ndim == 0 ? -1 : -ndim;
  const int64_t hi = ndim == 0 ? 0 : ndim - 1;
  LOOM_CHECK(dim >= lo && dim <= hi, op, ": dim ", dim, " is out of range for a tensor with ", ndim,
             " dimension(s) (expected in [", lo, ", ", hi, "])");
  return dim < 0 ? dim + std::max<int64_t>(ndim, 1) : dim;
}

}  // namespace loom
