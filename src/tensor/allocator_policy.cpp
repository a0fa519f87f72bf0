// The caching allocator's size bins and statistics text: plain host code, built with or without
// CUDA so that the policy is tested everywhere.
#include <sstream>

#include "loom/tensor/cuda/caching_allocator.h"

namespace loom::cuda {

namespace {
constexpr size_t kSmallStep = 512;
constexpr size_t kSmallLimit = size_t{1} << 20;
}  // namespace

size_t bin_size(size_t nbytes) {
  if (nbytes == 0) nbytes = 1;
  if (nbytes <= kSmallLimit) return (nbytes + kSmallStep - 1) / kSmallStep * kSmallStep;
  // Eight bins per power of two: step = 2^(floor(log2(n)) - 3).
  size_t power = 1;
  while (power * 2 <= nbytes) power *= 2;
  const size_t step = power / 8;
  return (nbytes + step - 1) / step * step;
}

std::string stats_str(const AllocatorStats& s) {
  std::ostringstream out;
  out << "allocated " << s.allocated_bytes << " B, reserved " << s.reserved_bytes << " B, peak "
      << s.peak_allocated_bytes << " B, " << s.num_allocations << " allocations, "
      << s.num_cuda_mallocs << " cudaMalloc, " << s.num_cuda_frees << " cudaFree";
  return out.str();
}

}  // namespace loom::cuda
