// Start-up work a program can take off its critical path.
#pragma once

#include "loom/tensor/device.h"

namespace loom {

// Creates `device`'s CUDA context and loads cuDNN and cuBLAS (a handle of each, on the calling
// thread), which the first CUDA op would otherwise do: about 0.2-0.3 s on an H200, most of it
// in the driver. Call it on a thread of its own while the program reads its data (loom-catdog
// does, during decoding). Nothing on the CPU; thread-safe; errors are loom::Errors as any CUDA
// call's.
void warm_up(const Device& device);

}  // namespace loom
