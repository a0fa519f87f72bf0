// The one place an op picks its backend: LOOM_CUDA_DISPATCH("op", call) is `call` in a CUDA
// build and a clear "built without CUDA" error in a CPU-only one (never a silent fallback).
#pragma once

#include "loom/tensor/primitives.h"

#if defined(LOOM_WITH_CUDA)
#define LOOM_CUDA_DISPATCH(op, call) call
#else
#define LOOM_CUDA_DISPATCH(op, call) ::loom::detail::throw_no_cuda(op)
#endif
