// The CUDA build's answer to build_info.h, read from the headers this file is compiled with.
#include "loom/tensor/build_info.h"

#include <cuda_runtime_api.h>
#include <cudnn_version.h>
#include <nccl.h>

namespace loom {

std::string cuda_libraries_built_with() {
  // CUDART_VERSION is major * 1000 + minor * 10.
  return "CUDA runtime " + std::to_string(CUDART_VERSION / 1000) + "." +
         std::to_string(CUDART_VERSION % 1000 / 10) + ", cuDNN " + std::to_string(CUDNN_MAJOR) +
         "." + std::to_string(CUDNN_MINOR) + "." + std::to_string(CUDNN_PATCHLEVEL) + ", NCCL " +
         std::to_string(NCCL_MAJOR) + "." + std::to_string(NCCL_MINOR) + "." +
         std::to_string(NCCL_PATCH);
}

}  // namespace loom
