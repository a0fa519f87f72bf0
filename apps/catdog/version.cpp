// The compile-time versions behind `loom-catdog --version` (version.h); the macros come from
// apps/catdog/CMakeLists.txt and from the CUDA, cuDNN and NCCL headers.
#include "version.h"

#include <string>

#if defined(LOOM_WITH_CUDA)
#include <cuda_runtime_api.h>
#include <cudnn_version.h>
#include <nccl.h>
#endif

#ifndef LOOM_VERSION
#define LOOM_VERSION "unknown"
#endif
#ifndef LOOM_GIT_COMMIT
#define LOOM_GIT_COMMIT "unknown"
#endif

namespace loom::catdog {

std::string version_text() {
  std::string text = std::string("loom ") + LOOM_VERSION + " (commit " + LOOM_GIT_COMMIT + ")\n";
#if defined(LOOM_WITH_CUDA)
  // CUDART_VERSION is major * 1000 + minor * 10.
  text += "built with CUDA runtime " + std::to_string(CUDART_VERSION / 1000) + "." +
          std::to_string(CUDART_VERSION % 1000 / 10) + ", cuDNN " + std::to_string(CUDNN_MAJOR) + "." +
          std::to_string(CUDNN_MINOR) + "." + std::to_string(CUDNN_PATCHLEVEL) + ", NCCL " +
          std::to_string(NCCL_MAJOR) + "." + std::to_string(NCCL_MINOR) + "." + std::to_string(NCCL_PATCH);
#else
  text += "built without CUDA";
#endif
  return text;
}

}  // namespace loom::catdog
