// CPU matrix products with Eigen: each operand is an Eigen::Map over loom's memory (row-major,
// or column-major for a transposed view), so no transpose is ever copied. A batch of products
// runs one product per thread; a single large product is cut into one block of output rows
// (or columns) per thread, each a single-threaded Eigen product over sub-blocks of the maps.
#include <algorithm>

#include "loom/ops/cpu/eigen.h"
#include "loom/ops/linalg_backend.h"
#include "loom/tensor/parallel.h"

namespace loom::detail {

namespace {

template <typename T, int kOrder>
using ConstMap = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, kOrder>, 0,
                            Eigen::OuterStride<>>;
template <typename T>
using OutMap = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>, 0,
                          Eigen::OuterStride<>>;

// Below this many multiply-adds a product stays on one thread: waking the others costs more.
constexpr int64_t kParallelMacs = int64_t(1) << 18;

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

// C[r0:r1, c0:c1] = A[r0:r1, :] * B[:, c0:c1] for matrix `index` of the batch; out [batch, n, m].
template <typename T>
void product_block(const MatrixOperand& a, const MatrixOperand& b, T* out, int64_t index,
                   int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  const int64_t n = a.rows, m = b.cols;
  OutMap<T> C(out + (index * n + r0) * m + c0, r1 - r0, c1 - c0, Eigen::OuterStride<>(m));
  with_matrix<T>(a, index, [&](const auto& A) {    // [n, k]
    with_matrix<T>(b, index, [&](const auto& B) {  // [k, m]
      C.noalias() = A.middleRows(r0, r1 - r0) * B.middleCols(c0, c1 - c0);
    });
  });
}

}  // namespace

void cpu_gemm(const MatrixOperand& a, const MatrixOperand& b, const Tensor& out) {
  LOOM_DISPATCH_FLOATING(out.dtype(), "matmul", [&] {
    scalar_t* c = out.data_ptr<scalar_t>();
    const int64_t n = a.rows, m = b.cols, k = a.cols;
    const int threads = parallel_threads();
    const int64_t macs = n * m * k;
    if (a.batch >= threads || macs < kParallelMacs) {
      // Threads over the batch once it holds enough work in all.
      parallel_for(
          a.batch, [&](int64_t i) { product_block(a, b, c, i, 0, n, 0, m); },
          /*grain=*/std::max<int64_t>(1, kParallelMacs / std::max<int64_t>(1, macs)));
      return;
    }
    // Fewer matrices than threads: split the longer side of each output; blocks of 16 rows
    // or columns keep Eigen's register tiles whole.
    const bool by_rows = n >= m;
    const int64_t side = by_rows ? n : m;
    const int64_t tiles = (side + 15) / 16;
    for (int64_t i = 0; i < a.batch; ++i) {
      parallel_chunks(
          tiles,
          [&](int64_t, int64_t t0, int64_t t1) {
            const int64_t lo = t0 * 16, hi = std::min(side, t1 * 16);
            if (by_rows)
              product_block(a, b, c, i, lo, hi, 0, m);
            else
              product_block(a, b, c, i, 0, n, lo, hi);
          },
          /*grain=*/1);
    }
  });
}

}  // namespace loom::detail
