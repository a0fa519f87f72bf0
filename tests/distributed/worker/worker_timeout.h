// The group timeout a worker program takes from its test (LOOM_DIST_TIMEOUT_MS), shared by
// dist_worker and nccl_worker.
#pragma once

#include <chrono>
#include <cstdio>
#include <cstdlib>

// Leaves *timeout as it is when the variable is unset; false (after saying why on stderr, as
// `program`) when it is not a positive number of milliseconds.
inline bool timeout_from_environment(const char* program, std::chrono::milliseconds* timeout) {
  const char* v = std::getenv("LOOM_DIST_TIMEOUT_MS");
  if (v == nullptr || *v == '\0') return true;
  char* end = nullptr;
  const long long ms = std::strtoll(v, &end, 10);
  if (*end != '\0' || ms <= 0) {
    std::fprintf(stderr, "%s: LOOM_DIST_TIMEOUT_MS='%s' is not a positive number of ms\n", program,
                 v);
    return false;
  }
  *timeout = std::chrono::milliseconds(ms);
  return true;
}
