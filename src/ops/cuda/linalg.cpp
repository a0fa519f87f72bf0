// CUDA matrix products through cuBLAS (strided batched GEMM, batch stride 0 for a broadcast
// operand; bfloat16 through cublasGemmStridedBatchedEx with float32 accumulation). cuBLAS is
// column-major, and a row-major matrix read column-major is its transpose, so the row-major C = A B
// is computed as C^T = B^T A^T.
#include <climits>

#include "loom/ops/cuda/blas_handle.h"
#include "loom/ops/linalg_backend.h"
#include "loom/tensor/cuda/check.h"
#include "loom/tensor/cuda/runtime.h"

namespace loom::detail {

namespace {

int as_int(int64_t v, const char* what) {
  LOOM_CHECK(v <= INT_MAX, "matmul: ", what, " ", v, " exceeds cuBLAS's int range");
  return static_cast<int>(v);
}

cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                    int k, const float* a, int lda, long long sa, const float* b, int ldb,
                    long long sb, float* c, int ldc, long long sc, int batch) {
  const float one = 1.0f, zero = 0.0f;
  return cuda::cublas().cublasSgemmStridedBatched(h, ta, tb, m, n, k, &one, a, lda, sa, b, ldb, sb,
                                                  &zero, c, ldc, sc, batch);
}

cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                    int k, const double* a, int lda, long long sa, const double* b, int ldb,
                    long long sb, double* c, int ldc, long long sc, int batch) {
  const double one = 1.0, zero = 0.0;
  return cuda::cublas().cublasDgemmStridedBatched(h, ta, tb, m, n, k, &one, a, lda, sa, b, ldb, sb,
                                                  &zero, c, ldc, sc, batch);
}

// Bfloat16 operands and result, float32 accumulation and scaling factors (tensor cores).
cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                    int k, const BFloat16* a, int lda, long long sa, const BFloat16* b, int ldb,
                    long long sb, BFloat16* c, int ldc, long long sc, int batch) {
  const float one = 1.0f, zero = 0.0f;
  return cuda::cublas().cublasGemmStridedBatchedEx(
      h, ta, tb, m, n, k, &one, a, CUDA_R_16BF, lda, sa, b, CUDA_R_16BF, ldb, sb, &zero, c,
      CUDA_R_16BF, ldc, sc, batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

}  // namespace

void cuda_gemm(const MatrixOperand& a, const MatrixOperand& b, const Tensor& out) {
  const int device = out.device().index;
  cuda::DeviceGuard guard(device);
  cublasHandle_t handle = cuda::blas_handle(device);
  const int n = as_int(a.rows, "rows"), k = as_int(a.cols, "inner size"),
            m = as_int(b.cols, "columns");
  const int batch = as_int(a.batch, "batch");
  // Read column-major, a row-major operand is already the transpose cuBLAS needs (no op); a
  // column-major one (a transposed view) needs op T.
  const cublasOperation_t op_b = b.col_major ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_a = a.col_major ? CUBLAS_OP_T : CUBLAS_OP_N;
  LOOM_DISPATCH_FLOATING_AND_BF16(out.dtype(), "matmul", [&] {
    // C^T [m, n] (ld m) = op(B) [m, k] (ld b.ld) x op(A) [k, n] (ld a.ld), per batch entry.
    LOOM_LIBRARY_CHECK(
        "cuBLAS",
        gemm(handle, op_b, op_a, m, n, k, static_cast<const scalar_t*>(b.tensor.raw_data()),
             as_int(b.ld, "ld"), b.batch_stride, static_cast<const scalar_t*>(a.tensor.raw_data()),
             as_int(a.ld, "ld"), a.batch_stride, out.data_ptr<scalar_t>(), m,
             static_cast<long long>(n) * m, batch),
        CUBLAS_STATUS_SUCCESS, cuda::cublas().cublasGetStatusString);
  });
}

}  // namespace loom::detail
