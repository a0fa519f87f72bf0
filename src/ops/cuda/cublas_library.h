// cuBLAS, opened on first use (dlopen) instead of linked. Loading libcublas runs cuBLAS-Lt's
// static initialisers: about 0.3 s and 200 MB in every process that links it, whether it ever
// multiplies a matrix on a GPU or not (a CPU training run, `--help`, each test process).
// Call through the table: cublas().cublasSgemm(...). Its members carry cuBLAS's own names, so
// cublas_v2.h's macros (cublasSgemm -> cublasSgemm_v2) pick the same entry points as a linked call.
#pragma once

#include <cublas_v2.h>

namespace loom::cuda {

// cublasGemmStridedBatchedEx has a C++ overload in the header (an inline function taking a
// cudaDataType compute type); the library exports the C function, which takes
// cublasComputeType_t.
using CublasGemmStridedBatchedEx = cublasStatus_t (*)(
    cublasHandle_t, cublasOperation_t, cublasOperation_t, int m, int n, int k, const void* alpha,
    const void* a, cudaDataType, int lda, long long stride_a, const void* b, cudaDataType, int ldb,
    long long stride_b, const void* beta, void* c, cudaDataType, int ldc, long long stride_c,
    int batch, cublasComputeType_t, cublasGemmAlgo_t);

// Every cuBLAS function loom calls, with its pointer type; a new call site adds its function.
#define LOOM_CUBLAS_FUNCTIONS(X)                                       \
  X(cublasCreate, decltype(&::cublasCreate))                           \
  X(cublasDestroy, decltype(&::cublasDestroy))                         \
  X(cublasSetStream, decltype(&::cublasSetStream))                     \
  X(cublasSetMathMode, decltype(&::cublasSetMathMode))                 \
  X(cublasGetStatusString, decltype(&::cublasGetStatusString))         \
  X(cublasSgemm, decltype(&::cublasSgemm))                             \
  X(cublasSgemmStridedBatched, decltype(&::cublasSgemmStridedBatched)) \
  X(cublasDgemmStridedBatched, decltype(&::cublasDgemmStridedBatched)) \
  X(cublasGemmStridedBatchedEx, CublasGemmStridedBatchedEx)

struct CublasLibrary {
#define LOOM_CUBLAS_MEMBER(name, type) type name = nullptr;
  LOOM_CUBLAS_FUNCTIONS(LOOM_CUBLAS_MEMBER)
#undef LOOM_CUBLAS_MEMBER
};

// The library, opened by the first call (thread-safe); a loom::Error naming the library and
// the loader's reason when it cannot be opened or lacks a function.
const CublasLibrary& cublas();

}  // namespace loom::cuda
