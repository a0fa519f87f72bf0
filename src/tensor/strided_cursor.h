// StridedCursor: walks the storage offsets of a StridedIndexer over consecutive linear
// positions, carrying coordinates like an odometer instead of a division and a modulo per
// dimension per element. CPU loops take whole runs along the innermost dimension:
//   while (left) { n = min(cur.run(), left); for j < n: data[cur.offset() + j * cur.stride()];
//                  cur.advance(n); left -= n; }
#pragma once

#include "loom/tensor/strided_index.h"

namespace loom {

class StridedCursor {
 public:
  // Positioned at row-major position `linear` of ix's shape (the one division per dim).
  StridedCursor(const StridedIndexer& ix, int64_t linear) : ix_(&ix), offset_(ix.offset) {
    for (int d = ix.ndim - 1; d >= 0; --d) {
      coord_[d] = linear % ix.sizes[d];
      linear /= ix.sizes[d];
      offset_ += coord_[d] * ix.strides[d];
    }
  }

  int64_t offset() const { return offset_; }
  // Positions left in the innermost dimension, starting here, and the step between them.
  int64_t run() const {
    return ix_->ndim == 0 ? 1 : ix_->sizes[ix_->ndim - 1] - coord_[ix_->ndim - 1];
  }
  int64_t stride() const { return ix_->ndim == 0 ? 0 : ix_->strides[ix_->ndim - 1]; }

  // Moves `count` <= run() positions on; at the end of a row, on to the next row.
  void advance(int64_t count) {
    const int inner = ix_->ndim - 1;
    if (inner < 0) return;
    offset_ += count * ix_->strides[inner];
    coord_[inner] += count;
    for (int d = inner; d > 0 && coord_[d] == ix_->sizes[d]; --d) {
      offset_ += ix_->strides[d - 1] - coord_[d] * ix_->strides[d];
      coord_[d] = 0;
      ++coord_[d - 1];
    }
  }

 private:
  const StridedIndexer* ix_;
  int64_t offset_;
  int64_t coord_[kMaxDims] = {};
};

// Merges adjacent dimensions that every one of the `count` indexers (all over one shape) steps
// through as one, e.g. a contiguous tensor becomes 1-D and [N, C, H, W] + [C, 1, 1] becomes
// [N, C, H*W]: longer runs for the cursors. Positions and offsets are unchanged.
inline void coalesce(StridedIndexer* ix, int count) {
  if (count == 0 || ix[0].ndim <= 1) return;
  int out = ix[0].ndim - 1;  // the merged dims are written back to front from here
  for (int d = ix[0].ndim - 2; d >= 0; --d) {
    bool mergeable = true;
    for (int k = 0; k < count; ++k) {
      mergeable = mergeable && (ix[k].sizes[d] == 1 ||
                                ix[k].strides[d] == ix[k].strides[out] * ix[k].sizes[out]);
    }
    for (int k = 0; k < count; ++k) {
      if (mergeable) {
        ix[k].sizes[out] *= ix[k].sizes[d];
      } else {
        ix[k].sizes[out - 1] = ix[k].sizes[d];
        ix[k].strides[out - 1] = ix[k].strides[d];
      }
    }
    if (!mergeable) --out;
  }
  for (int k = 0; k < count; ++k) {
    const int ndim = ix[k].ndim - out;
    for (int d = 0; d < ndim; ++d) {
      ix[k].sizes[d] = ix[k].sizes[d + out];
      ix[k].strides[d] = ix[k].strides[d + out];
    }
    ix[k].ndim = ndim;
  }
}

}  // namespace loom
