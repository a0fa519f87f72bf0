// The server half of TcpStore, run by rank 0: one thread that poll()s the listening socket and
// every client, holds the keys, answers blocking gets when their key is set, and fails the job
// when a rank's connection drops without a goodbye, when a rank stays silent for the heartbeat
// timeout, or when a rank of the job is refused (a bad rank or world size).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace loom::dist::tcp {

class StoreServer {
 public:
  // Listens on 0.0.0.0:port (port 0: one the system picks) for a job of world_size ranks whose
  // hellos carry `token` (TcpStoreOptions); throws loom::Error naming the port when it cannot.
  StoreServer(int port, int world_size, std::string token,
              std::chrono::milliseconds heartbeat_timeout);
  // Stops at once; call wait_for_goodbyes first to let the other ranks finish.
  ~StoreServer();
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;

  int port() const { return port_; }
  // Blocks until every rank has said goodbye or dropped, or `bound` has passed: a rank still
  // reading its last values must not see the server vanish under it.
  void wait_for_goodbyes(std::chrono::milliseconds bound);

 private:
  using Clock = std::chrono::steady_clock;
  struct Connection {
    uint64_t id = 0;
    Clock::time_point last_heard;  // a byte came from it
    int fd = -1;
    int rank = -1;  // -1 until Hello
    bool said_goodbye = false;
    bool closed = false;
    std::string in;       // bytes received, not yet a whole frame
    std::string out;      // bytes to send
    size_t out_sent = 0;  // of `out`
  };
  struct Waiter {
    uint64_t connection;
    uint64_t request;
  };

  void loop();
  void poll_once();
  void accept_all();
  void read_from(Connection& c);
  void write_to(Connection& c);
  void handle(Connection& c, const char* frame, size_t size);
  void hello(Connection& c, uint64_t request, int rank, int world_size, const std::string& token);
  // Fails the job naming each rank that has been silent for the heartbeat timeout, and closes
  // connections that never said hello within it.
  void check_heartbeats();
  void close_connection(Connection& c);
  void send_frame(Connection& c, const std::string& frame);
  void reply(Connection& c, uint64_t request, uint8_t status, const std::string& payload);
  void set_value(const std::string& key, std::string value);
  void fail_job(const std::string& reason);
  void mark_gone(int rank, bool gone);

  const int world_size_;
  const std::string token_;
  const std::chrono::milliseconds heartbeat_timeout_;
  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};  // a pipe: the destructor writes to it to end the poll
  int port_ = 0;
  std::atomic<bool> stop_{false};

  // Touched by the server thread only.
  std::map<uint64_t, Connection> connections_;
  uint64_t next_connection_ = 1;
  std::vector<uint64_t> rank_connection_;  // each rank's live connection, 0 for none
  std::unordered_map<std::string, std::string> values_;
  std::unordered_map<std::string, std::vector<Waiter>> waiters_;
  std::string job_failure_;
  std::vector<char> read_buffer_;

  // Shared with wait_for_goodbyes.
  std::mutex mutex_;
  std::condition_variable gone_changed_;
  std::vector<bool> rank_gone_;  // said goodbye or dropped
  int ranks_gone_ = 0;

  std::thread thread_;
};

}  // namespace loom::dist::tcp
