// Internal: pooling's backend entry points, called by pool.cpp and implemented by cpu/pool.cpp
// and cuda/pool.cu (windows and per-element rules: pool_math.h).
#pragma once

#include "loom/ops/pool_math.h"
#include "loom/tensor/tensor.h"

namespace loom::detail {

// Contiguous [planes, y.in, x.in] in, [planes, y.out, x.out] out (on CUDA, NHWC instead when
// g.channels_last). offsets: the winners' window offsets, of max_pool_offset_dtype(g), laid out
// as the output.
void cpu_max_pool2d(const Tensor& x, const PoolGeometry& g, const Tensor& out,
                    const Tensor& offsets);
void cpu_max_pool2d_backward(const Tensor& grad, const Tensor& offsets, const PoolGeometry& g,
                             const Tensor& grad_input);
void cpu_avg_pool2d(const Tensor& x, const PoolGeometry& g, bool include_pad, const Tensor& out);
void cpu_avg_pool2d_backward(const Tensor& grad, const PoolGeometry& g, bool include_pad,
                             const Tensor& grad_input);

void cuda_max_pool2d(const Tensor& x, const PoolGeometry& g, const Tensor& out,
                     const Tensor& offsets);
void cuda_max_pool2d_backward(const Tensor& grad, const Tensor& offsets, const PoolGeometry& g,
                              const Tensor& grad_input);
void cuda_avg_pool2d(const Tensor& x, const PoolGeometry& g, bool include_pad, const Tensor& out);
void cuda_avg_pool2d_backward(const Tensor& grad, const PoolGeometry& g, bool include_pad,
                              const Tensor& grad_input);

}  // namespace loom::detail
