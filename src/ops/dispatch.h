// The one place an op picks its backend: LOOM_CUDA_DISPATCH("op", call) is `call` in a CUDA
// build and a clear "built without CUDA" error in a CPU-only one (never a silent fallback).
// Public: a program's own CUDA code (apps/gpu_basics) dispatches the same way, keyed on the
// installed <loom/config.h>'s LOOM_HAS_CUDA.
#pragma once

#include "loom/config.h"
#include "loom/tensor/primitives.h"

#if LOOM_HAS_CUDA
#define LOOM_CUDA_DISPATCH(op, call) call
#else
#define LOOM_CUDA_DISPATCH(op, call) ::loom::detail::throw_no_cuda(op)
#endif
