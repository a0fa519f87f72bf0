// Matrix products on cuBLAS (CUDA) and Eigen (CPU).
#pragma once

#include "loom/tensor/tensor.h"

namespace loom {

// 1-D/2-D/batched product with NumPy's matmul rules (batch dims broadcast).
Tensor matmul(const Tensor& a, const Tensor& b);
// [B, n, k] @ [B, k, m] -> [B, n, m]
Tensor bmm(const Tensor& a, const Tensor& b);
// x [..., in] @ weight[out, in]^T + bias[out] -> [..., out] (PyTorch's layout).
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

}  // namespace loom
