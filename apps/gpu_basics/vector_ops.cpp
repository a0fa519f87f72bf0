// vector_add, saxpy and copy_vector: argument checks, then the CPU loop or the CUDA launcher.
#include "vector_ops.h"

#include <loom/ops/dispatch.h>
#include <loom/tensor/parallel.h>

#include <cstring>

#include "cuda/launchers.h"

namespace loom::gpu_basics {
namespace {

void check_vector(const Tensor& t, const char* op, const char* name, const Tensor& like) {
  LOOM_CHECK(t.defined(), op, ": ", name, " is undefined");
  LOOM_CHECK(t.dtype() == kFloat32, op, ": ", name, " must be float32, got ",
             dtype_name(t.dtype()));
  LOOM_CHECK(t.dim() == 1, op, ": ", name, " must be a vector, got shape ", shape_str(t.shape()));
  LOOM_CHECK(t.is_contiguous(), op, ": ", name, " must be contiguous");
  LOOM_CHECK(t.device() == like.device(), op, ": ", name, " is on ", t.device().str(),
             " but the first operand is on ", like.device().str());
  LOOM_CHECK(t.numel() == like.numel(), op, ": ", name, " has ", t.numel(),
             " elements but the first operand has ", like.numel());
}

}  // namespace

void vector_add(const Tensor& a, const Tensor& b, const Tensor& c) {
  check_vector(a, "vector_add", "a", a);
  check_vector(b, "vector_add", "b", a);
  check_vector(c, "vector_add", "c", a);
  const int64_t n = a.numel();
  const float* pa = a.data_ptr<float>();
  const float* pb = b.data_ptr<float>();
  float* pc = c.data_ptr<float>();
  if (a.is_cuda()) {
    LOOM_CUDA_DISPATCH(
        "vector_add", cuda_impl::vector_add(pa, pb, pc, n, cuda::current_stream(a.device().index)));
    return;
  }
  parallel_for(n, [&](int64_t i) { pc[i] = pa[i] + pb[i]; });
}

void saxpy(float alpha, const Tensor& x, const Tensor& y) {
  check_vector(x, "saxpy", "x", x);
  check_vector(y, "saxpy", "y", x);
  const int64_t n = x.numel();
  const float* px = x.data_ptr<float>();
  float* py = y.data_ptr<float>();
  if (x.is_cuda()) {
    LOOM_CUDA_DISPATCH("saxpy",
                       cuda_impl::saxpy(alpha, px, py, n, cuda::current_stream(x.device().index)));
    return;
  }
  parallel_for(n, [&](int64_t i) { py[i] = alpha * px[i] + py[i]; });
}

void copy_vector(const Tensor& src, const Tensor& dst) {
  check_vector(src, "copy_vector", "src", src);
  check_vector(dst, "copy_vector", "dst", src);
  const size_t nbytes = src.nbytes();
  if (src.is_cuda()) {
    LOOM_CUDA_DISPATCH("copy_vector",
                       cuda_impl::copy_device(dst.raw_data(), src.raw_data(), nbytes,
                                              cuda::current_stream(src.device().index)));
    return;
  }
  // One memcpy per chunk of 1 MiB, so every core streams its own part.
  constexpr int64_t kChunk = int64_t{1} << 20;
  const int64_t chunks = static_cast<int64_t>((nbytes + kChunk - 1) / kChunk);
  const auto* from = static_cast<const char*>(src.raw_data());
  auto* to = static_cast<char*>(dst.raw_data());
  parallel_for(
      chunks,
      [&](int64_t i) {
        const int64_t begin = i * kChunk;
        const int64_t size = std::min<int64_t>(kChunk, static_cast<int64_t>(nbytes) - begin);
        std::memcpy(to + begin, from + begin, static_cast<size_t>(size));
      },
      /*grain=*/1);
}

}  // namespace loom::gpu_basics
