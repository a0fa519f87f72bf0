// CPU matrix products with Eigen: each operand is an Eigen::Map over loom's memory (row-major,
// or column-major for a transposed view), so no transpose is ever copied. Eigen threads one
// large product itself; a batch of products runs one product per thread instead.
#include <Eigen/Core>

#include "ops/linalg_kernels.h"
#include "tensor/parallel.h"

namespace loom::detail {

namespace {

template <typename T, int kOrder>
using ConstMap = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, kOrder>, 0,
                            Eigen::OuterStride<>>;
template <typename T>
using OutMap = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;

// Calls f with a's matrix `index` mapped in its own layout.
template <typename T, typename F>
void with_matrix(const MatrixOperand& m, int64_t index, F f) {
  const T* p = static_cast<const T*>(m.tensor.raw_data()) + index * m.batch_stride;
  if (m.col_major) {
    f(ConstMap<T, Eigen::ColMajor>(p, m.rows, m.cols, Eigen::OuterStride<>(m.ld)));
  } else {
    f(ConstMap<T, Eigen::RowMajor>(p, m.rows, m.cols, Eigen::OuterStride<>(m.ld)));
  }
}

}  // namespace

void cpu_gemm(const MatrixOperand& a, const MatrixOperand& b, const Tensor& out) {
  LOOM_DISPATCH_FLOATING(out.dtype(), "matmul", [&] {
    scalar_t* c = out.data_ptr<scalar_t>();
    const int64_t n = a.rows, m = b.cols;
    auto one = [&](int64_t i) {
      OutMap<scalar_t> C(c + i * n * m, n, m);  // [n, m]
      with_matrix<scalar_t>(a, i, [&](const auto& A) {      // [n, k]
        with_matrix<scalar_t>(b, i, [&](const auto& B) {    // [k, m]
          C.noalias() = A * B;
        });
      });
    };
    // Inside a parallel region Eigen runs single-threaded, so batches parallelise over matrices.
    parallel_for(a.batch, one, /*grain=*/1);
  });
}

}  // namespace loom::detail
