// matmul (NumPy rules), bmm and linear. Every case reduces to one batched product of
// [batch, n, k] @ [batch, k, m] whose operands are handed to the BLAS in the layout they
// already have (a transposed view is read as column-major; a broadcast batch has stride 0).
// Backward: dA = sum_to(g @ B^T, A.shape), dB = sum_to(A^T @ g, B.shape).
#include "loom/ops/linalg.h"

#include <algorithm>

#include "loom/ops/dispatch.h"
#include "loom/ops/elementwise.h"
#include "loom/ops/linalg_backend.h"
#include "loom/ops/reduction.h"
#include "loom/tensor/autocast.h"
#include "loom/tensor/autograd.h"

namespace loom {

namespace {

using detail::MatrixOperand;

void check_pair(const Tensor& a, const Tensor& b, const char* op) {
  LOOM_CHECK(a.defined() && b.defined(), op, ": an operand is undefined");
  LOOM_CHECK(a.dtype() == b.dtype(), op, ": operands must have one dtype, got ",
             dtype_name(a.dtype()), " and ", dtype_name(b.dtype()));
  LOOM_CHECK(is_floating(a.dtype()), op, ": needs floating-point operands, got ",
             dtype_name(a.dtype()));
  LOOM_CHECK(a.device() == b.device(), op, ": operands must be on one device, got ", a.device(),
             " and ", b.device());
}

// Fills m's layout from t ([*batch, rows, cols]) when the BLAS can read t as it is: the batch
// dims collapse into one stride and each matrix is row- or column-major.
bool describe(const Tensor& t, MatrixOperand* m) {
  const int64_t nd = t.dim();
  m->rows = t.size(nd - 2);
  m->cols = t.size(nd - 1);
  m->batch = 1;
  m->batch_stride = 0;
  int64_t inner_stride = -1, inner_size = 1;
  for (int64_t i = nd - 3; i >= 0; --i) {
    m->batch *= t.size(i);
    if (t.size(i) == 1) continue;
    if (inner_stride < 0)
      m->batch_stride = t.stride(i);
    else if (t.stride(i) != inner_stride * inner_size)
      return false;
    inner_stride = t.stride(i);
    inner_size = t.size(i);
  }
  const int64_t rows = m->rows, cols = m->cols;
  const int64_t sr = t.stride(nd - 2), sc = t.stride(nd - 1);
  if ((cols == 1 || sc == 1) && (rows == 1 || sr >= cols)) {
    m->col_major = false;
    m->ld = rows == 1 ? std::max<int64_t>(cols, 1) : sr;
  } else if ((rows == 1 || sr == 1) && (cols == 1 || sc >= rows)) {
    m->col_major = true;
    m->ld = cols == 1 ? std::max<int64_t>(rows, 1) : sc;
  } else {
    return false;
  }
  m->tensor = t;
  return true;
}

MatrixOperand as_operand(const Tensor& t) {
  MatrixOperand m;
  if (describe(t, &m)) return m;
  const bool ok = describe(t.contiguous(), &m);
  LOOM_ASSERT(ok, "a contiguous tensor must be a valid BLAS operand");
  return m;
}

// a [*batch_a, n, k] @ b [*batch_b, k, m] -> [*broadcast(batch_a, batch_b), n, m].
Tensor batched_product(const Tensor& a, const Tensor& b, const char* op) {
  const Shape batch_a(a.shape().begin(), a.shape().end() - 2);
  const Shape batch_b(b.shape().begin(), b.shape().end() - 2);
  Shape batch = broadcast_shapes(batch_a, batch_b, op);
  const int64_t n = a.size(-2), k = a.size(-1), m = b.size(-1);
  Shape a_full = batch, b_full = batch, out_shape = batch;
  a_full.insert(a_full.end(), {n, k});
  b_full.insert(b_full.end(), {k, m});
  out_shape.insert(out_shape.end(), {n, m});
  const MatrixOperand A = as_operand(a.detach().expand(a_full));
  const MatrixOperand B = as_operand(b.detach().expand(b_full));
  Tensor out = empty({A.batch, n, m}, a.options());
  if (out.numel() > 0 && k == 0) {
    out.zero_();
  } else if (out.numel() > 0) {
    if (a.is_cuda()) {
      LOOM_CUDA_DISPATCH(op, detail::cuda_gemm(A, B, out));
    } else {
      detail::cpu_gemm(A, B, out);
    }
  }
  const Tensor a_saved = a.detach(), b_saved = b.detach();
  const bool need_a = a.requires_grad(), need_b = b.requires_grad();
  return record(
      op, out.view(out_shape), {a, b}, [a_saved, b_saved, need_a, need_b](const Tensor& g) {
        Tensor ga, gb;
        if (need_a)
          ga = sum_to(batched_product(g, b_saved.transpose(-1, -2), "matmul"), a_saved.shape());
        if (need_b)
          gb = sum_to(batched_product(a_saved.transpose(-1, -2), g, "matmul"), b_saved.shape());
        return std::vector<Tensor>{ga, gb};
      });
}

}  // namespace

Tensor matmul(const Tensor& a_in, const Tensor& b_in) {
  const Tensor a = detail::autocast_operand(a_in), b = detail::autocast_operand(b_in);
  check_pair(a, b, "matmul");
  LOOM_CHECK(a.dim() >= 1 && b.dim() >= 1,
             "matmul: both operands need at least one dimension, "
             "got shapes ",
             shape_str(a.shape()), " and ", shape_str(b.shape()));
  const int64_t ka = a.size(-1), kb = b.dim() == 1 ? b.size(0) : b.size(-2);
  LOOM_CHECK(ka == kb, "matmul: shapes ", shape_str(a.shape()), " and ", shape_str(b.shape()),
             " cannot be multiplied (", ka, " != ", kb, ")");
  if (a.dim() > 2 && b.dim() > 2) {
    const Shape batch_a(a.shape().begin(), a.shape().end() - 2);
    const Shape batch_b(b.shape().begin(), b.shape().end() - 2);
    bool compatible = true;
    for (size_t i = 1; i <= std::min(batch_a.size(), batch_b.size()); ++i) {
      const int64_t x = batch_a[batch_a.size() - i], y = batch_b[batch_b.size() - i];
      compatible = compatible && (x == y || x == 1 || y == 1);
    }
    LOOM_CHECK(compatible, "matmul: the batch dimensions of shapes ", shape_str(a.shape()), " and ",
               shape_str(b.shape()), " do not broadcast");
  }
  if (a.dim() == 1 && b.dim() == 1) {
    return batched_product(a.unsqueeze(0), b.unsqueeze(1), "matmul").reshape({});
  }
  if (a.dim() == 1) return matmul(a.unsqueeze(0), b).squeeze(-2);
  if (b.dim() == 1) return matmul(a, b.unsqueeze(1)).squeeze(-1);
  if (a.dim() > 2 && b.dim() == 2) {
    // One [rows, k] @ [k, m] product instead of a batch of small ones against the same b.
    Shape out_shape = a.shape();
    out_shape.back() = b.size(1);
    const int64_t rows = numel_of(Shape(a.shape().begin(), a.shape().end() - 1));
    return batched_product(a.reshape({rows, ka}), b, "matmul").reshape(out_shape);
  }
  return batched_product(a, b, "matmul");
}

Tensor bmm(const Tensor& a_in, const Tensor& b_in) {
  const Tensor a = detail::autocast_operand(a_in), b = detail::autocast_operand(b_in);
  check_pair(a, b, "bmm");
  LOOM_CHECK(a.dim() == 3 && b.dim() == 3, "bmm: expects two 3-D tensors, got shapes ",
             shape_str(a.shape()), " and ", shape_str(b.shape()));
  LOOM_CHECK(a.size(0) == b.size(0) && a.size(2) == b.size(1), "bmm: shapes ", shape_str(a.shape()),
             " and ", shape_str(b.shape()), " cannot be multiplied (need [B, n, k] and [B, k, m])");
  return batched_product(a, b, "bmm");
}

Tensor linear(const Tensor& x_in, const Tensor& weight_in, const Tensor& bias_in) {
  using detail::autocast_operand;
  const Tensor x = autocast_operand(x_in), weight = autocast_operand(weight_in),
               bias = autocast_operand(bias_in);
  check_pair(x, weight, "linear");
  LOOM_CHECK(weight.dim() == 2, "linear: weight must be 2-D [out_features, in_features], got ",
             shape_str(weight.shape()));
  LOOM_CHECK(x.dim() >= 1 && x.size(-1) == weight.size(1), "linear: input of shape ",
             shape_str(x.shape()), " does not end in in_features=", weight.size(1),
             " of the weight of shape ", shape_str(weight.shape()));
  if (bias.defined()) {
    check_pair(x, bias, "linear");
    LOOM_CHECK(bias.dim() == 1 && bias.size(0) == weight.size(0), "linear: bias of shape ",
               shape_str(bias.shape()), " does not match out_features=", weight.size(0),
               " of the weight of shape ", shape_str(weight.shape()));
  }
  const Tensor out = matmul(x, weight.t());  // weight.t() reaches the BLAS as a transpose
  if (!bias.defined()) return out;
  return out + bias;
}

}  // namespace loom
