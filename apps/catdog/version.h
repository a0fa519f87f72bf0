// `loom-catdog --version`: what this binary is and what it was compiled against.
#pragma once

#include <string>

namespace loom::catdog {

// "loom 0.1.0 (commit 80ab7f1c2d3e)\nbuilt with CUDA runtime 13.0, cuDNN 9.10.2, NCCL 2.27.7"
// (no final newline): the CMake project version, the git commit at configure time ("unknown"
// outside a checkout, "-dirty" when it had changes), and in a CUDA build the versions libloom's
// CUDA backend was compiled with (no GPU is touched); "built without CUDA" otherwise.
std::string version_text();

}  // namespace loom::catdog
