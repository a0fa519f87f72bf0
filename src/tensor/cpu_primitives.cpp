// CPU loops for the core's storage-level kernels (fill, copy, accumulate, random fill).
#include <cmath>

#include "tensor/parallel.h"
#include "tensor/primitives.h"
#include "tensor/random_bits.h"
#include "tensor/strided_index.h"

namespace loom::detail {

namespace {

// Runs body(i, offset_of_i) over every element of dst in row-major order.
template <typename Body>
void for_each_offset(const Tensor& t, Body body) {
  const int64_t n = t.numel();
  if (t.is_contiguous()) {
    const int64_t base = t.offset();
    parallel_for(n, [&](int64_t i) { body(i, base + i); });
  } else {
    const StridedIndexer ix = make_indexer(t, t.shape(), "copy");
    parallel_for(n, [&](int64_t i) { body(i, ix(i)); });
  }
}

template <typename T>
T* base_ptr(const Tensor& t) {
  return static_cast<T*>(t.storage().data());
}

}  // namespace

void cpu_fill(const Tensor& dst, double value) {
  LOOM_DISPATCH_ALL(dst.dtype(), "fill_", [&] {
    scalar_t* out = base_ptr<scalar_t>(dst);
    const scalar_t v = static_cast<scalar_t>(value);
    for_each_offset(dst, [&](int64_t, int64_t o) { out[o] = v; });
  });
}

void cpu_copy(const Tensor& dst, const Tensor& src) {
  const StridedIndexer in = make_indexer(src, dst.shape(), "copy_");
  LOOM_DISPATCH_ALL(dst.dtype(), "copy_", [&] {
    using out_t = scalar_t;
    out_t* out = base_ptr<out_t>(dst);
    LOOM_DISPATCH_ALL(src.dtype(), "copy_", [&] {
      const scalar_t* from = base_ptr<scalar_t>(src);
      for_each_offset(dst, [&](int64_t i, int64_t o) { out[o] = static_cast<out_t>(from[in(i)]); });
    });
  });
}

void cpu_accumulate(const Tensor& dst, const Tensor& src) {
  const StridedIndexer in = make_indexer(src, dst.shape(), "accumulate");
  LOOM_DISPATCH_ALL(dst.dtype(), "accumulate", [&] {
    scalar_t* out = base_ptr<scalar_t>(dst);
    const scalar_t* from = base_ptr<scalar_t>(src);
    for_each_offset(dst, [&](int64_t i, int64_t o) { out[o] += from[in(i)]; });
  });
}

void cpu_fill_random(const Tensor& dst, const RandomParams& p) {
  LOOM_DISPATCH_ALL(dst.dtype(), "random", [&] {
    scalar_t* out = dst.data_ptr<scalar_t>();
    const int64_t n = dst.numel();
    const int kind = static_cast<int>(p.kind);
    parallel_for(n, [&](int64_t i) {
      out[i] = random_bits::sample<scalar_t>(kind, p.low, p.high, p.seed, p.offset + i);
    });
  });
}

}  // namespace loom::detail
