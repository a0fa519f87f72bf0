// CPU loops for the core's storage-level kernels (fill, copy, accumulate, random fill).
// Strided tensors are walked run by run along their innermost (coalesced) dimension with
// StridedCursor, so a transposed or broadcast copy costs no division per element.
#include <algorithm>
#include <cmath>

#include "loom/tensor/parallel.h"
#include "loom/tensor/primitives.h"
#include "loom/tensor/random_bits.h"
#include "loom/tensor/strided_cursor.h"

namespace loom::detail {

namespace {

// Calls body(dst_offset, src_offset) for every element of dst and the element of `src` (read
// as broadcast to dst's shape) it pairs with. Runs with unit or zero steps get loops of their
// own, which the compiler vectorises.
template <typename Body>
void for_each_pair(const Tensor& dst, const Tensor& src, const char* op, Body body) {
  StridedIndexer ix[2] = {make_indexer(dst, dst.shape(), op), make_indexer(src, dst.shape(), op)};
  coalesce(ix, 2);
  parallel_chunks(dst.numel(), [&](int64_t, int64_t begin, int64_t end) {
    StridedCursor out(ix[0], begin), in(ix[1], begin);
    for (int64_t left = end - begin; left > 0;) {
      const int64_t count = std::min(out.run(), left);
      const int64_t o = out.offset(), os = out.stride(), s = in.offset(), ss = in.stride();
      if (os == 1 && ss == 1) {
        for (int64_t j = 0; j < count; ++j) body(o + j, s + j);
      } else if (os == 1 && ss == 0) {
        for (int64_t j = 0; j < count; ++j) body(o + j, s);
      } else {
        for (int64_t j = 0; j < count; ++j) body(o + j * os, s + j * ss);
      }
      out.advance(count);
      in.advance(count);
      left -= count;
    }
  });
}

template <typename T>
T* base_ptr(const Tensor& t) {
  return static_cast<T*>(t.storage().data());
}

}  // namespace

void cpu_fill(const Tensor& dst, double value) {
  LOOM_DISPATCH_ALL_AND_BF16(dst.dtype(), "fill_", [&] {
    scalar_t* out = base_ptr<scalar_t>(dst);
    const scalar_t v = static_cast<scalar_t>(value);
    for_each_pair(dst, dst, "fill_", [&](int64_t o, int64_t) { out[o] = v; });
  });
}

void cpu_copy(const Tensor& dst, const Tensor& src) {
  LOOM_DISPATCH_ALL_AND_BF16(dst.dtype(), "copy_", [&] {
    using out_t = scalar_t;
    out_t* out = base_ptr<out_t>(dst);
    LOOM_DISPATCH_ALL_AND_BF16(src.dtype(), "copy_", [&] {
      const scalar_t* from = base_ptr<scalar_t>(src);
      for_each_pair(dst, src, "copy_",
                    [&](int64_t o, int64_t s) { out[o] = static_cast<out_t>(from[s]); });
    });
  });
}

void cpu_accumulate(const Tensor& dst, const Tensor& src) {
  LOOM_DISPATCH_ALL_AND_BF16(dst.dtype(), "accumulate", [&] {
    scalar_t* out = base_ptr<scalar_t>(dst);
    const scalar_t* from = base_ptr<scalar_t>(src);
    // In the promoted type (float for bfloat16), rounded once back to the element type.
    for_each_pair(dst, src, "accumulate",
                  [&](int64_t o, int64_t s) { out[o] = static_cast<scalar_t>(out[o] + from[s]); });
  });
}

void cpu_fill_random(const Tensor& dst, const RandomParams& p) {
  LOOM_DISPATCH_ALL_AND_BF16(dst.dtype(), "random", [&] {
    scalar_t* out = dst.data_ptr<scalar_t>();
    const int64_t n = dst.numel();
    const int kind = static_cast<int>(p.kind);
    parallel_for(n, [&](int64_t i) {
      out[i] = random_bits::sample<scalar_t>(kind, p.low, p.high, p.seed, p.offset + i);
    });
  });
}

}  // namespace loom::detail
