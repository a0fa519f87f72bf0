// The compile-time versions behind `loom-catdog --version` (version.h): the project and commit
// from apps/catdog/CMakeLists.txt, the CUDA libraries from libloom (build_info.h).
#include "version.h"

#include <loom/tensor/build_info.h>

#include <string>

#ifndef LOOM_VERSION
#define LOOM_VERSION "unknown"
#endif
#ifndef LOOM_GIT_COMMIT
#define LOOM_GIT_COMMIT "unknown"
#endif

namespace loom::catdog {

std::string version_text() {
  std::string text = std::string("loom ") + LOOM_VERSION + " (commit " + LOOM_GIT_COMMIT + ")\n";
  const std::string libraries = cuda_libraries_built_with();
  text += libraries.empty() ? "built without CUDA" : "built with " + libraries;
  return text;
}

}  // namespace loom::catdog
