// The rank processes of --launch processes (process_launch.h): a free port, the launch
// variables, posix_spawn, and a wait that kills the rest when one rank fails.
#include "process_launch.h"

#include <arpa/inet.h>
#include <loom/loom.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <thread>

extern char** environ;

namespace loom::scaling {

namespace {

// A port the kernel says is free now (the rendezvous binds it a moment later).
int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  LOOM_CHECK(fd >= 0, "loom-scaling: no socket for a free port: ", std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  close(fd);
  LOOM_CHECK(ok, "loom-scaling: could not find a free port on 127.0.0.1: ", std::strerror(errno));
  return ntohs(addr.sin_port);
}

// A new job's secret (LOOM_DIST_TOKEN): 128 random bits, so that no other process on the host
// can take one of its ranks.
std::string new_job_token() {
  std::random_device random;
  char token[33];
  std::snprintf(token, sizeof token, "%08x%08x%08x%08x", random(), random(), random(), random());
  return token;
}

// This process's environment without any launcher's variables (read_launch_environment reads
// Open MPI's and Slurm's before RANK's), then rank r's.
std::vector<std::string> rank_environment(int rank, int world, int port, const std::string& token) {
  static const char* const kDropped[] = {"OMPI_",
                                         "PMIX_",
                                         "SLURM_",
                                         "RANK=",
                                         "WORLD_SIZE=",
                                         "LOCAL_RANK=",
                                         "LOCAL_WORLD_SIZE=",
                                         "MASTER_ADDR=",
                                         "MASTER_PORT=",
                                         "LOOM_DIST_TOKEN="};
  std::vector<std::string> env;
  bool has_omp = false;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    if (std::any_of(std::begin(kDropped), std::end(kDropped),
                    [&](const char* p) { return entry.rfind(p, 0) == 0; })) {
      continue;
    }
    has_omp = has_omp || entry.rfind("OMP_NUM_THREADS=", 0) == 0;
    env.push_back(entry);
  }
  // The processes share the cores, as dist::spawn's thread ranks do.
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  if (!has_omp)
    env.push_back("OMP_NUM_THREADS=" +
                  std::to_string(std::max(1u, cores / static_cast<unsigned>(world))));
  for (const auto& [name, value] :
       {std::pair<const char*, std::string>{"RANK", std::to_string(rank)},
        {"WORLD_SIZE", std::to_string(world)},
        {"LOCAL_RANK", std::to_string(rank)},
        {"LOCAL_WORLD_SIZE", std::to_string(world)},
        {"MASTER_ADDR", "127.0.0.1"},
        {"MASTER_PORT", std::to_string(port)},
        {"LOOM_DIST_TOKEN", token}}) {
    env.push_back(std::string(name) + "=" + value);
  }
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

std::string how_it_ended(int status) {
  if (WIFEXITED(status)) return detail::concat("exited with status ", WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return detail::concat("was killed by signal ", WTERMSIG(status), " (",
                          strsignal(WTERMSIG(status)), ")");
  return "ended abnormally";
}

}  // namespace

std::string run_rank_processes(const std::vector<std::string>& command, int world,
                               const std::string& result_path, int timeout_s) {
  LOOM_CHECK(!command.empty(), "loom-scaling: no program to start the rank processes with");
  std::remove(result_path.c_str());
  const int port = free_port();
  const std::string token = new_job_token();
  std::vector<pid_t> pids(static_cast<size_t>(world), -1);
  auto kill_all = [&] {
    for (pid_t& pid : pids) {
      if (pid <= 0) continue;
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
      pid = -1;
    }
  };
  for (int r = 0; r < world; ++r) {
    std::vector<std::string> args = command;
    args.insert(args.end(), {"--rank-world", std::to_string(world), "--rank-result", result_path});
    std::vector<std::string> env = rank_environment(r, world, port, token);
    std::vector<char*> argv = c_strings(args), envp = c_strings(env);
    pid_t pid = -1;
    const int err = posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), envp.data());
    if (err != 0) {
      kill_all();
      LOOM_FAIL("loom-scaling: could not start rank ", r, " as ", command[0], ": ",
                std::strerror(err));
    }
    pids[static_cast<size_t>(r)] = pid;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int running = world;
  while (running > 0) {
    // Every rank that ended since the last look. A rank killed by a signal is the cause of the
    // others' errors (they exit with a status once they hear of it), so it is named first.
    std::vector<std::pair<int, int>> failed;  // rank, wait status
    for (int r = 0; r < world; ++r) {
      pid_t& pid = pids[static_cast<size_t>(r)];
      if (pid <= 0) continue;
      int status = 0;
      if (waitpid(pid, &status, WNOHANG) != pid) continue;
      pid = -1;
      --running;
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) failed.emplace_back(r, status);
    }
    if (!failed.empty()) {
      kill_all();
      std::stable_sort(failed.begin(), failed.end(), [](const auto& a, const auto& b) {
        return WIFSIGNALED(a.second) && !WIFSIGNALED(b.second);
      });
      std::string also;
      for (size_t i = 1; i < failed.size(); ++i) {
        also +=
            detail::concat("; rank ", failed[i].first, " then ", how_it_ended(failed[i].second));
      }
      LOOM_FAIL("loom-scaling: rank ", failed[0].first, " of ", world, " ",
                how_it_ended(failed[0].second), also,
                "; the other ranks were stopped (their messages are above)");
    }
    if (running > 0 && std::chrono::steady_clock::now() > deadline) {
      kill_all();
      LOOM_FAIL("loom-scaling: the ", world, " rank processes did not finish within ", timeout_s,
                " s; stopped them");
    }
    if (running > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  LOOM_CHECK(std::filesystem::exists(result_path),
             "loom-scaling: rank 0 finished but wrote no result to ", result_path);
  std::string text = io::read_file(result_path);
  std::remove(result_path.c_str());
  return text;
}

}  // namespace loom::scaling
