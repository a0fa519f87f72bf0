// Running loom-catdog from the tests: a child process whose stdout and stderr go to files, that
// a test can wait on, watch for a line, or kill with SIGKILL, or run to the end and check for a
// clear error; and a small generated photo folder (photo_folder.h).
#pragma once

#include <gtest/gtest.h>
#include <loom/loom.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "photo_folder.h"
#include "testing.h"

namespace loom::testing {

namespace fs = std::filesystem;

// loom-catdog beside this test binary's build tree (build/tests/x -> build/apps/catdog/), or
// $LOOM_CATDOG_BIN.
inline std::string catdog_binary() {
  if (const char* env = std::getenv("LOOM_CATDOG_BIN")) return env;
  return (fs::read_symlink("/proc/self/exe").parent_path().parent_path() / "apps" / "catdog" /
          "loom-catdog")
      .string();
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class Child {
 public:
  // Runs loom-catdog with `args`, or `program` (looked up in PATH: a launcher such as mpirun).
  Child(const std::vector<std::string>& args, const std::string& out_prefix,
        const std::vector<std::string>& env = {}, const std::string& program = "")
      : out_(out_prefix + ".out"), err_(out_prefix + ".err") {
    pid_ = ::fork();
    if (pid_ == 0) {
      if (!freopen(out_.c_str(), "w", stdout) || !freopen(err_.c_str(), "w", stderr)) _exit(127);
      for (const std::string& e : env) ::putenv(const_cast<char*>(e.c_str()));
      std::vector<char*> argv;
      const std::string bin = program.empty() ? catdog_binary() : program;
      argv.push_back(const_cast<char*>(bin.c_str()));
      for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execvp(bin.c_str(), argv.data());
      _exit(127);
    }
  }
  ~Child() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      wait();
    }
  }
  // The exit status, or 128 + signal.
  int wait() {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    reaped_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  // Waits until `file` (stdout or stderr) holds `needle` at least `count` times; false when the
  // child ended first or `timeout_s` (scaled for a sanitizer build, below the room's 180 s CTest
  // timeout) passed.
  bool wait_for(bool on_stderr, const std::string& needle, int count = 1, double timeout_s = 60) {
    const auto end = std::chrono::steady_clock::now() +
                     scaled(std::chrono::duration<double>(timeout_s), std::chrono::seconds(150));
    while (std::chrono::steady_clock::now() < end) {
      const std::string text = read_text(on_stderr ? err_ : out_);
      int found = 0;
      for (size_t pos = text.find(needle); pos != std::string::npos;
           pos = text.find(needle, pos + 1))
        ++found;
      if (found >= count) return true;
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        reaped_ = true;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }
  void kill() {
    ::kill(pid_, SIGKILL);
    wait();
  }
  void signal(int sig) { ::kill(pid_, sig); }
  std::string out() const { return read_text(out_); }
  std::string err() const { return read_text(err_); }

 private:
  std::string out_, err_;
  pid_t pid_ = -1;
  bool reaped_ = false;
};

// Runs loom-catdog to the end (its output kept in out_prefix.out / .err); returns the exit
// status and stdout + stderr.
inline std::pair<int, std::string> run_to_end(const std::vector<std::string>& args,
                                              const std::string& out_prefix) {
  Child c(args, out_prefix);
  const int status = c.wait();
  return {status, c.out() + c.err()};
}

// A bad input: a non-zero exit that is not a signal, and an output containing `fragment`.
inline void expect_clear_error(const std::vector<std::string>& args, const std::string& out_prefix,
                               const std::string& fragment) {
  const auto [status, text] = run_to_end(args, out_prefix);
  EXPECT_GT(status, 0) << text;
  EXPECT_LT(status, 128) << "crashed: " << text;
  EXPECT_NE(text.find(fragment), std::string::npos) << text;
}

// A bad input caught up front: a non-zero exit that is not a signal, within `max_seconds`
// (before any real work), with every fragment (the file or flag, and the problem) in the
// output. Returns the output for further checks.
inline std::string expect_prompt_error(const std::vector<std::string>& args,
                                       const std::string& out_prefix,
                                       const std::vector<std::string>& fragments,
                                       double max_seconds = 2.0) {
  const auto start = std::chrono::steady_clock::now();
  const auto [status, text] = run_to_end(args, out_prefix);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GT(status, 0) << text;
  EXPECT_LT(status, 128) << "crashed: " << text;
  EXPECT_LT(seconds, max_seconds * kSlowdown) << text;
  for (const std::string& f : fragments)
    EXPECT_NE(text.find(f), std::string::npos) << "no \"" << f << "\" in: " << text;
  return text;
}

// The "step <n> loss <hex>" lines of a run's stdout (--print-losses); a step printed twice is
// a failure.
inline std::map<int, std::string> step_losses(const std::string& out) {
  std::map<int, std::string> losses;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    int step = 0;
    char loss[64];
    if (std::sscanf(line.c_str(), "step %d loss %63s", &step, loss) == 2) {
      EXPECT_TRUE(losses.emplace(step, loss).second) << "step " << step << " printed twice";
    }
  }
  return losses;
}

// `train` on the CPU on the photos in `data` for `epochs`, batch 4, no loader threads, writing
// the model to `out`; `more` flags after.
inline std::vector<std::string> small_train_args(const std::string& data, int epochs,
                                                 const std::string& out,
                                                 const std::vector<std::string>& more = {}) {
  std::vector<std::string> a = {"train",
                                "--data",
                                data,
                                "--epochs",
                                std::to_string(epochs),
                                "--batch-size",
                                "4",
                                "--device",
                                "cpu",
                                "--workers",
                                "0",
                                "--out",
                                out};
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

}  // namespace loom::testing
