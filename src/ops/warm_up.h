// Start-up work a program can take off its critical path.
#pragma once

#include "loom/tensor/device.h"

namespace loom {

// Does on the calling thread the one-time work of a process's first CUDA training step on
// `device`: the context, cuDNN's convolution heuristics (the first query of a process costs
// ~0.17 s on an H200, later ones under 1 ms) and cuBLAS's first GEMM (its kernels' lazy
// loading). Call it on a thread of its own while the program does something else (loom-catdog:
// while it decodes its photographs); the first step then finds the work done. Nothing on the
// CPU. Errors are loom::Errors naming warm_up and the device.
void warm_up(const Device& device);

}  // namespace loom
