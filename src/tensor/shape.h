// Shapes and strides: element counts, contiguous strides, NumPy broadcasting, dim wrapping.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace loom {

using Shape = std::vector<int64_t>;

// What Tensor::sizes() returns: a copy of the shape as a type of loom's own, so that
// `std::cout << x.sizes()` finds loom's operator<< by argument-dependent lookup (a plain
// std::vector would only look in std) and prints "[2, 3]" as PyTorch does. It is a Shape in every
// other way: indexing, size(), comparison, and passing where a const Shape& is taken.
class Sizes : public Shape {
 public:
  using Shape::Shape;
  explicit Sizes(const Shape& shape) : Shape(shape) {}
};
std::ostream& operator<<(std::ostream& out, const Sizes& sizes);

int64_t numel_of(const Shape& shape);
Shape contiguous_strides(const Shape& shape);
// NHWC strides for a 4-D [N, C, H, W] shape: [H*W*C, 1, W*C, C].
Shape channels_last_strides(const Shape& shape);
std::string shape_str(const Shape& shape);  // "[2, 3]"

// NumPy broadcasting of two shapes; throws naming op and both shapes when they don't broadcast.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

// Maps a possibly negative dim (-1 = last) into [0, ndim); throws naming op when out of range.
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);

}  // namespace loom
