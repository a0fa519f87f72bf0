// The reduction the backends that reduce by themselves (threads, tcp) run over the ranks'
// buffers: a left fold in rank order, so every rank's result is bit-identical and does not
// depend on which thread ran it.
#pragma once

#include <cstdint>
#include <vector>

#include "loom/distributed/reduce_op.h"
#include "loom/tensor/cuda/runtime.h"
#include "loom/tensor/dtype.h"

namespace loom::dist {

// dst[i] = srcs[0][i] (+) srcs[1][i] (+) ... for i < n, then / srcs.size() for Avg. dst must
// not be one of srcs (the CUDA fold takes eight sources a pass and re-reads dst). CPU memory
// (an OpenMP loop) or, with reduce_buffers_cuda, memory of the current device on `stream`.
void reduce_buffers_cpu(void* dst, const std::vector<const void*>& srcs, int64_t n, DType dtype,
                        ReduceOp op);
void reduce_buffers_cuda(void* dst, const std::vector<const void*>& srcs, int64_t n, DType dtype,
                         ReduceOp op, cuda::StreamHandle stream);

}  // namespace loom::dist
