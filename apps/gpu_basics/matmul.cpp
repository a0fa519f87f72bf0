// Matmul: shape checks, the CPU versions (naive loop, cache-blocked loop, Eigen) and the CUDA
// dispatch.
#include "matmul.h"

#include <loom/ops/dispatch.h>
#include <loom/tensor/parallel.h>

#include <Eigen/Core>
#include <algorithm>

#include "cuda/launchers.h"

namespace loom::gpu_basics {
namespace {

// The naive kernel's grid has one block row per 8 rows of C, and a grid is at most 65535 high.
constexpr int64_t kMaxMatmulSide = int64_t{65535} * 8;

using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

void check_matrix(const Tensor& t, const char* name) {
  LOOM_CHECK(t.defined(), "matmul: ", name, " is undefined");
  LOOM_CHECK(t.dtype() == kFloat32, "matmul: ", name, " must be float32, got ",
             dtype_name(t.dtype()));
  LOOM_CHECK(t.dim() == 2, "matmul: ", name, " must be 2-D, got shape ", shape_str(t.shape()));
  LOOM_CHECK(t.is_contiguous(), "matmul: ", name, " must be contiguous");
}

void cpu_naive(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k) {
  parallel_for(
      m * n,
      [&](int64_t index) {
        const int64_t i = index / n;
        const int64_t j = index % n;
        float sum = 0.0f;
        for (int64_t p = 0; p < k; ++p) sum += a[i * k + p] * b[p * n + j];
        c[index] = sum;
      },
      /*grain=*/4096);
}

// Blocks of kBlock x kBlock keep a panel of A, B and C in cache while they are reused; the
// innermost loop runs along rows of B and C, so it vectorises.
void cpu_tiled(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k) {
  constexpr int64_t kBlock = 64;
  const int64_t row_blocks = (m + kBlock - 1) / kBlock;
  parallel_for(
      row_blocks,
      [&](int64_t rb) {
        const int64_t i0 = rb * kBlock;
        const int64_t i1 = std::min(m, i0 + kBlock);
        std::fill(c + i0 * n, c + i1 * n, 0.0f);
        for (int64_t p0 = 0; p0 < k; p0 += kBlock) {
          const int64_t p1 = std::min(k, p0 + kBlock);
          for (int64_t j0 = 0; j0 < n; j0 += kBlock) {
            const int64_t j1 = std::min(n, j0 + kBlock);
            for (int64_t i = i0; i < i1; ++i) {
              for (int64_t p = p0; p < p1; ++p) {
                const float a_ip = a[i * k + p];
                for (int64_t j = j0; j < j1; ++j) c[i * n + j] += a_ip * b[p * n + j];
              }
            }
          }
        }
      },
      /*grain=*/1);
}

void cpu_eigen(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k) {
  Eigen::Map<const RowMajor> ma(a, m, k);
  Eigen::Map<const RowMajor> mb(b, k, n);
  Eigen::Map<RowMajor> mc(c, m, n);
  mc.noalias() = ma * mb;
}

}  // namespace

const char* matmul_kernel_name(MatmulKernel kernel, Device device) {
  switch (kernel) {
    case MatmulKernel::kNaive:
      return "naive";
    case MatmulKernel::kTiled:
      return "tiled";
    case MatmulKernel::kLibrary:
      return device.is_cuda() ? "cublas-fp32" : "eigen";
    case MatmulKernel::kLibraryTf32:
      return "cublas-tf32";
  }
  return "unknown";
}

void matmul_into(const Tensor& a, const Tensor& b, const Tensor& c, MatmulKernel kernel) {
  check_matrix(a, "a");
  check_matrix(b, "b");
  check_matrix(c, "c");
  const int64_t m = a.size(0);
  const int64_t k = a.size(1);
  const int64_t n = b.size(1);
  LOOM_CHECK(b.size(0) == k, "matmul: a ", shape_str(a.shape()), " and b ", shape_str(b.shape()),
             " do not multiply");
  LOOM_CHECK(c.size(0) == m && c.size(1) == n, "matmul: c must have shape [", m, ", ", n, "], got ",
             shape_str(c.shape()));
  LOOM_CHECK(a.device() == b.device() && a.device() == c.device(), "matmul: a on ",
             a.device().str(), ", b on ", b.device().str(), ", c on ", c.device().str());
  LOOM_CHECK(m > 0 && n > 0 && k > 0, "matmul: empty product of ", shape_str(a.shape()), " and ",
             shape_str(b.shape()));
  LOOM_CHECK(std::max({m, n, k}) <= kMaxMatmulSide, "matmul: sizes over ", kMaxMatmulSide,
             " are not supported, got ", shape_str(a.shape()), " x ", shape_str(b.shape()));
  const float* pa = a.data_ptr<float>();
  const float* pb = b.data_ptr<float>();
  float* pc = c.data_ptr<float>();

  if (a.is_cuda()) {
    LOOM_CUDA_DISPATCH("matmul", cuda_impl::matmul(pa, pb, pc, m, n, k, kernel, a.device().index,
                                                   cuda::current_stream(a.device().index)));
    return;
  }
  switch (kernel) {
    case MatmulKernel::kNaive:
      cpu_naive(pa, pb, pc, m, n, k);
      break;
    case MatmulKernel::kTiled:
      cpu_tiled(pa, pb, pc, m, n, k);
      break;
    case MatmulKernel::kLibrary:
      cpu_eigen(pa, pb, pc, m, n, k);
      break;
    case MatmulKernel::kLibraryTf32:
      LOOM_FAIL("matmul: TF32 (cublas-tf32) needs a CUDA device; the tensors are on the CPU");
  }
}

Tensor matmul(const Tensor& a, const Tensor& b, MatmulKernel kernel) {
  check_matrix(a, "a");
  check_matrix(b, "b");
  Tensor c = empty({a.size(0), b.size(1)}, a.options());
  matmul_into(a, b, c, kernel);
  return c;
}

}  // namespace loom::gpu_basics
