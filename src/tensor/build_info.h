// What libloom itself was compiled against, for a program's --version: the versions of the CUDA
// runtime, cuDNN and NCCL headers its CUDA backend was built with (a program need not have them).
#pragma once

#include <string>

namespace loom {

// "CUDA runtime 12.4, cuDNN 9.1.0, NCCL 2.21.5"; empty in a build without CUDA.
std::string cuda_libraries_built_with();

}  // namespace loom
