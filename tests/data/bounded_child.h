// Runs a call that may hang or exhaust memory (reading a FIFO, /dev/zero, a crafted image) in a
// child process with a CPU-time limit (SIGXCPU: the work it may do, whatever else loads the
// machine), a wall-clock deadline four times longer (SIGALRM: a call blocked on a read uses no
// CPU) and an address-space limit of what the process already maps plus a margin, so a failing
// test reports "hung" or "out of memory" instead of hanging the suite or the machine. Used by
// the data and the io tests.
#pragma once

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>

#include "loom/tensor/error.h"
#include "testing.h"

namespace loom::testing {

struct ChildOutcome {
  bool threw_error = false;  // a loom::Error reached the child's top
  std::string message;       // its what(), or how the child ended otherwise
};

inline ChildOutcome run_bounded(const std::function<void()>& body, int seconds = 2,
                                long long extra_bytes = 512LL << 20) {
  int out[2];
  LOOM_ASSERT(::pipe(out) == 0);
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  LOOM_ASSERT(pid >= 0);
  if (pid == 0) {
    ::close(out[0]);
    long long pages = 0;
    std::ifstream("/proc/self/statm") >> pages;
    const rlimit limit{static_cast<rlim_t>(pages * ::sysconf(_SC_PAGESIZE) + extra_bytes),
                       static_cast<rlim_t>(pages * ::sysconf(_SC_PAGESIZE) + extra_bytes)};
    ::setrlimit(RLIMIT_AS, &limit);
    const rlim_t cpu_seconds = static_cast<rlim_t>(seconds * kSlowdown);
    const rlimit cpu{cpu_seconds, cpu_seconds + 1};
    ::setrlimit(RLIMIT_CPU, &cpu);
    ::alarm(static_cast<unsigned>(4 * seconds * kSlowdown));
    std::string report;
    try {
      body();
      report = "Rreturned without an error";
    } catch (const Error& e) {
      report = std::string("E") + e.what();
    } catch (const std::exception& e) {
      report = std::string("Rthrew a non-loom exception: ") + e.what();
    }
    if (::write(out[1], report.data(), report.size()) < 0) _exit(2);
    _exit(0);
  }
  ::close(out[1]);
  std::string report;
  char buffer[4096];
  for (ssize_t n; (n = ::read(out[0], buffer, sizeof buffer)) != 0;) {
    if (n > 0) report.append(buffer, static_cast<size_t>(n));
  }
  ::close(out[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    if (sig == SIGXCPU) return {false, "hung: used " + std::to_string(seconds) + " s of CPU"};
    if (sig == SIGALRM) return {false, "hung: blocked for " + std::to_string(4 * seconds) + " s"};
    return {false, "killed by signal " + std::to_string(sig)};
  }
  if (report.empty()) return {false, "exited without a report"};
  return {report[0] == 'E', report.substr(1)};
}

}  // namespace loom::testing

// EXPECT that `statement`, run in a bounded child, ends in a loom::Error containing `fragment`.
#define EXPECT_BOUNDED_ERROR(statement, fragment)                  \
  do {                                                             \
    const ::loom::testing::ChildOutcome loom_out_ =                \
        ::loom::testing::run_bounded([&] { statement; });          \
    EXPECT_TRUE(loom_out_.threw_error) << loom_out_.message;       \
    EXPECT_NE(loom_out_.message.find(fragment), std::string::npos) \
        << "message was: " << loom_out_.message;                   \
  } while (0)
