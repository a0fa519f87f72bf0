#include "loom/tensor/strided_index.h"

#include "loom/tensor/tensor.h"

namespace loom {

Shape broadcast_strides(const Tensor& t, const Shape& shape, const char* op) {
  const Shape& in_shape = t.shape();
  LOOM_CHECK(in_shape.size() <= shape.size(), op, ": shape ", shape_str(in_shape),
             " cannot be broadcast to ", shape_str(shape));
  const size_t lead = shape.size() - in_shape.size();
  Shape strides(shape.size(), 0);
  for (size_t i = 0; i < in_shape.size(); ++i) {
    LOOM_CHECK(in_shape[i] == shape[lead + i] || in_shape[i] == 1, op, ": shape ",
               shape_str(in_shape), " cannot be broadcast to ", shape_str(shape));
    strides[lead + i] = in_shape[i] == 1 ? 0 : t.strides()[i];
  }
  return strides;
}

StridedIndexer make_indexer(const Tensor& t, const Shape& shape, const char* op) {
  LOOM_CHECK(shape.size() <= static_cast<size_t>(kMaxDims), op, ": tensors with more than ",
             kMaxDims, " dimensions are not supported (got ", shape_str(shape), ")");
  const Shape strides = broadcast_strides(t, shape, op);
  StridedIndexer ix;
  ix.ndim = static_cast<int>(shape.size());
  ix.offset = t.offset();
  for (size_t i = 0; i < shape.size(); ++i) {
    ix.sizes[i] = shape[i];
    ix.strides[i] = strides[i];
  }
  return ix;
}

}  // namespace loom
