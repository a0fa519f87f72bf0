// What the tests that start one worker process per rank share (tcp_launch_test.cpp, nccl_job.h):
// a port for rank 0 to listen on, and which of the test's own environment variables must not
// leak into the workers.
#pragma once

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <string>

namespace loom::testing {

// A port nothing listens on for rank 0 to take. It is below Linux's ephemeral range (32768 up),
// so no outgoing connection is given it before rank 0 listens, and each process and each call
// start looking elsewhere, so that tests run side by side by ctest -j do not pick the same one.
inline int free_tcp_port() {
  static int calls = 0;
  constexpr int kFirst = 20000, kSpan = 12000;
  const int start = (static_cast<int>(::getpid()) * 7919 + 97 * calls++) % kSpan;
  for (int i = 0; i < kSpan; ++i) {
    const int port = kFirst + (start + i) % kSpan;
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    const bool free = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    ::close(fd);
    if (free) return port;
  }
  ADD_FAILURE() << "no free port in [" << kFirst << ", " << kFirst + kSpan << ")";
  return kFirst;
}

// A launcher's (or loom's own distributed) variable of the environment the test runs in: the
// test may itself run under mpirun or srun, and the workers get their own.
inline bool is_launcher_variable(const std::string& name) {
  for (const char* v :
       {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
        "LOOM_DIST_TIMEOUT", "LOOM_DIST_CHECK", "OMP_NUM_THREADS", "NCCL_COMM_BLOCKING"}) {
    if (name == v) return true;
  }
  for (const char* prefix : {"OMPI_", "PMIX_", "PMI_", "SLURM_"}) {
    if (name.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

}  // namespace loom::testing
