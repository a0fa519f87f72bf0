// One NCCL job of nccl_worker processes for the process tests: one process per GPU, started
// with torchrun's variables (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT), each
// with its own log and a folder for the result files it writes (worker/nccl_worker.cpp). A
// hard deadline kills what still runs, so a hang fails the test instead of stalling it; the
// destructor kills (SIGCONT first, for a stopped one) and reaps whatever a failed assertion
// left running. Times are steady_clock's, which is CLOCK_MONOTONIC in every process of the
// machine, so the workers' reported times compare with the test's.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <loom/loom.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "worker_environment.h"

extern char** environ;

namespace loom::testing {

using Clock = std::chrono::steady_clock;

// A file of key=value lines (what the worker reports), empty when it does not exist (yet).
inline std::map<std::string, std::string> read_key_values(const std::filesystem::path& path) {
  std::map<std::string, std::string> values;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const size_t eq = line.find('=');
    if (eq != std::string::npos) values[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return values;
}

// A steady_clock time a worker reported as nanoseconds since the clock's epoch.
inline Clock::time_point reported_time(const std::string& ns) {
  return Clock::time_point(
      std::chrono::duration_cast<Clock::duration>(std::chrono::nanoseconds(std::stoll(ns))));
}

inline double seconds_from(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

struct RankExit {
  int rank = -1;
  bool exited = false;  // by exit(), with `code`
  int code = -1;
  int signal = 0;  // killed by this signal
  bool killed_at_deadline = false;
  Clock::time_point ended{};
  std::string log;                            // its stdout and stderr
  std::map<std::string, std::string> report;  // its rank<r>.txt

  bool exited_with(int expected) const { return exited && code == expected; }
  std::string value(const std::string& key) const {
    const auto found = report.find(key);
    return found == report.end() ? std::string() : found->second;
  }
  std::string describe() const {
    std::ostringstream s;
    s << "rank " << rank << ": ";
    if (killed_at_deadline) {
      s << "still running at the hard deadline (killed)";
    } else if (exited) {
      s << "exit code " << code;
    } else {
      s << "killed by signal " << signal << " (" << ::strsignal(signal) << ")";
    }
    s << "\n--- its report ---\n";
    for (const auto& [k, v] : report) s << k << "=" << v << "\n";
    return s.str() + "--- its output ---\n" + log;
  }
};

class NcclJob {
 public:
  // Starts `world` workers: nccl_worker <scenario> <args...>, rank r on cuda:r. `variables` add
  // to (or override) the launcher's ones; LOOM_DIST_TIMEOUT (seconds) is the group's timeout.
  NcclJob(const std::string& worker, const std::string& scenario, int world,
          std::vector<std::string> args, std::map<std::string, std::string> variables)
      : worker_(worker), started_(Clock::now()) {
    static int jobs = 0;
    dir_ = std::filesystem::temp_directory_path() / ("loom_nccl_job_" + std::to_string(::getpid()) +
                                                     "_" + std::to_string(jobs++) + "_" + scenario);
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string entry = *e;
      if (!is_launcher_variable(entry.substr(0, entry.find('=')))) env.push_back(entry);
    }
    const int port = free_tcp_port();
    for (int rank = 0; rank < world; ++rank) {
      std::map<std::string, std::string> vars = {{"RANK", std::to_string(rank)},
                                                 {"WORLD_SIZE", std::to_string(world)},
                                                 {"LOCAL_RANK", std::to_string(rank)},
                                                 {"LOCAL_WORLD_SIZE", std::to_string(world)},
                                                 {"MASTER_ADDR", "127.0.0.1"},
                                                 {"MASTER_PORT", std::to_string(port)},
                                                 {"OMP_NUM_THREADS", "1"},
                                                 {"LOOM_NCCL_JOB_DIR", dir_.string()}};
      for (const auto& [k, v] : variables) vars[k] = v;
      std::vector<std::string> mine = env;
      for (const auto& [k, v] : vars) mine.push_back(k + "=" + v);
      std::vector<std::string> argv = {worker_, scenario};
      argv.insert(argv.end(), args.begin(), args.end());
      start(argv, mine, (dir_ / ("rank" + std::to_string(rank) + ".log")).string());
      exits_.push_back(RankExit{});
      exits_.back().rank = rank;
    }
  }

  ~NcclJob() {
    for (size_t i = 0; i < pids_.size(); ++i) {
      if (reaped_[i]) continue;
      ::kill(pids_[i], SIGCONT);
      ::kill(pids_[i], SIGKILL);
      ::waitpid(pids_[i], nullptr, 0);
    }
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  NcclJob(const NcclJob&) = delete;
  NcclJob& operator=(const NcclJob&) = delete;

  const std::filesystem::path& dir() const { return dir_; }
  Clock::time_point started() const { return started_; }
  int size() const { return static_cast<int>(pids_.size()); }

  void signal(int rank, int sig) { ::kill(pids_[static_cast<size_t>(rank)], sig); }

  // The rank's progress file (rank<r>.progress, key=value, rewritten by rename) until `ready`
  // accepts it; false when the rank has exited first or `within` has passed.
  bool wait_for_progress(
      int rank, const std::function<bool(const std::map<std::string, std::string>&)>& ready,
      Clock::duration within) {
    const Clock::time_point deadline = Clock::now() + within;
    const std::filesystem::path path = dir_ / ("rank" + std::to_string(rank) + ".progress");
    while (Clock::now() < deadline) {
      if (ready(read_key_values(path))) return true;
      reap();
      if (reaped_[static_cast<size_t>(rank)]) return false;
      // Polling for a file another process writes; the deadline above bounds the wait.
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }

  // Waits until every rank in `ranks` (all when empty) has ended, killing those left when
  // `within` has passed; returns every rank's state (the others may still run).
  std::vector<RankExit> wait(Clock::duration within, std::vector<int> ranks = {}) {
    if (ranks.empty()) {
      for (int r = 0; r < size(); ++r) ranks.push_back(r);
    }
    const Clock::time_point deadline = Clock::now() + within;
    for (;;) {
      reap();
      bool running = false;
      for (int r : ranks) running = running || !reaped_[static_cast<size_t>(r)];
      if (!running) break;
      if (Clock::now() >= deadline) {
        for (int r : ranks) {
          const size_t i = static_cast<size_t>(r);
          if (reaped_[i]) continue;
          ::kill(pids_[i], SIGCONT);
          ::kill(pids_[i], SIGKILL);
          ::waitpid(pids_[i], nullptr, 0);
          reaped_[i] = true;
          exits_[i].killed_at_deadline = true;
          exits_[i].ended = Clock::now();
        }
        break;
      }
      // Polling for the exits; the deadline above, not this pause, bounds the wait.
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    for (size_t i = 0; i < exits_.size(); ++i) {
      std::ifstream in(dir_ / ("rank" + std::to_string(i) + ".log"));
      exits_[i].log.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      exits_[i].report = read_key_values(dir_ / ("rank" + std::to_string(i) + ".txt"));
    }
    return exits_;
  }

 private:
  void start(const std::vector<std::string>& args, const std::vector<std::string>& env,
             const std::string& log) {
    std::vector<char*> argv, envp;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    pid_t pid = -1;
    const int rc =
        ::posix_spawn(&pid, worker_.c_str(), &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    LOOM_CHECK(rc == 0, "posix_spawn ", worker_, ": ", std::strerror(rc));
    pids_.push_back(pid);
    reaped_.push_back(false);
  }

  // Reaps the workers that have ended, noting how and when.
  void reap() {
    for (size_t i = 0; i < pids_.size(); ++i) {
      if (reaped_[i]) continue;
      int status = 0;
      if (::waitpid(pids_[i], &status, WNOHANG) != pids_[i]) continue;
      reaped_[i] = true;
      exits_[i].ended = Clock::now();
      exits_[i].exited = WIFEXITED(status);
      exits_[i].code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      exits_[i].signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    }
  }

  std::string worker_;
  Clock::time_point started_;
  std::filesystem::path dir_;
  std::vector<pid_t> pids_;
  std::vector<bool> reaped_;
  std::vector<RankExit> exits_;
};

}  // namespace loom::testing
