// Internal: softmax's backend entry points, called by softmax.cpp (which moves the dim last,
// into a contiguous [rows, length] input) and implemented by cpu/softmax.cpp and
// cuda/softmax.cu.
#pragma once

#include <cstdint>

#include "loom/tensor/tensor.h"

namespace loom::detail {

// out = softmax (or log_softmax when `log`) of each row; in and out contiguous, same dtype.
void cpu_softmax_rows(const Tensor& in, const Tensor& out, int64_t rows, int64_t length, bool log);
void cuda_softmax_rows(const Tensor& in, const Tensor& out, int64_t rows, int64_t length, bool log);

}  // namespace loom::detail
