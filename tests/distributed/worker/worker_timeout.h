// The group timeout a worker program takes from its test: LOOM_DIST_TIMEOUT in seconds, read by
// the library as loom-catdog and loom-scaling read it; shared by dist_worker and nccl_worker.
#pragma once

#include <loom/loom.h>

#include <chrono>
#include <cstdio>

// Leaves *timeout as it is when the variable is unset; false (after saying why on stderr, as
// `program`) when it is not a timeout.
inline bool timeout_from_environment(const char* program, std::chrono::milliseconds* timeout) {
  try {
    *timeout = loom::dist::resolve_timeout("", "", *timeout);
    return true;
  } catch (const loom::Error& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
    return false;
  }
}
