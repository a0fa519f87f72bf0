// TcpStore: the job's rendezvous store over TCP (torchrun's MASTER_ADDR:MASTER_PORT). Rank 0
// also runs the server (tcp_store_server.h); every rank, rank 0 included, is its client. When
// a rank's connection drops without a goodbye (its process died), every get() of every rank
// fails at once naming it; when rank 0 dies, the others see its connection close and fail too.
// A rank or a server that stops answering (SIGSTOP, a hung host) is noticed by the heartbeat.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "loom/distributed/store.h"

namespace loom::dist {

namespace tcp {
class StoreServer;
}

// What a job's ranks agree on besides the address: all of them must use the same values.
struct TcpStoreOptions {
  // The job's secret: the server refuses a hello that carries another (the job goes on), so a
  // stray or hostile local process cannot take a rank. Empty: any process that reaches the port
  // may join. Launchers make one per job (LOOM_DIST_TOKEN).
  std::string token;
  // How long either end may hear nothing from the other before it treats it as gone: the
  // server fails the job naming a silent rank, a client fails naming the silent server. The
  // client pings when idle, so a live process is never silent for long; a stopped or hung one
  // is noticed within this time, whatever the group's (longer) timeout. LOOM_DIST_HEARTBEAT.
  std::chrono::milliseconds heartbeat_timeout = std::chrono::seconds(15);

  // LOOM_DIST_TOKEN and LOOM_DIST_HEARTBEAT (seconds, as parse_timeout reads them), else the
  // defaults above; throws naming the variable when a value is malformed.
  static TcpStoreOptions from_environment();
};
constexpr const char* kTokenEnv = "LOOM_DIST_TOKEN";
constexpr const char* kHeartbeatEnv = "LOOM_DIST_HEARTBEAT";

class TcpStore : public Store {
 public:
  // Rank 0 first listens on 0.0.0.0:port (port 0: one the system picks; see port()). Every
  // rank then connects to host:port, retrying refusals until `timeout` (the other ranks may
  // start before rank 0), and throws loom::Error naming host, port, rank and timeout when it
  // cannot. `timeout` also bounds the wait for every reply; the hello's reply must come within
  // the heartbeat timeout (a program that accepts and stays silent is not rank 0's server).
  TcpStore(std::string host, int port, int rank, int world_size, std::chrono::milliseconds timeout,
           const TcpStoreOptions& options = TcpStoreOptions::from_environment());
  // Says goodbye (so leaving is not a failure); rank 0 then serves the others until they have
  // said theirs or dropped, at most `timeout` or 30 s, whichever is shorter.
  ~TcpStore() override;
  TcpStore(const TcpStore&) = delete;
  TcpStore& operator=(const TcpStore&) = delete;

  void set(const std::string& key, const std::string& value) override;
  std::string get(const std::string& key, std::chrono::milliseconds timeout) override;
  int64_t add(const std::string& key, int64_t delta) override;
  void erase(const std::string& key) override;

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  // The port the server listens on (the one asked for, or the system's pick for port 0).
  int port() const { return port_; }
  // Test-only: closes the connection without a goodbye, as the death of this process would.
  void drop_connection_for_testing();

 private:
  struct Reply {
    uint8_t status = 0;
    std::string payload;
  };
  using Clock = std::chrono::steady_clock;

  void connect_to_server(Clock::time_point deadline);
  // Sends one request (a frame carrying `id`) and waits up to `timeout` for its reply; throws
  // naming `what`. A get fails at once when the job has failed; every request fails once the
  // connection is gone.
  std::string request(uint64_t id, const std::string& frame, bool is_get, const std::string& key,
                      std::chrono::milliseconds timeout, const std::string& what);
  uint64_t new_request_id();
  void send_frame(const std::string& frame);
  void read_replies();
  // Waits until the socket has bytes to read, pinging the server while it is quiet; returns ""
  // or why the connection is over (the server silent for the whole heartbeat timeout).
  std::string wait_readable();
  // Receives exactly size bytes, as tcp::recv_all, but never waits past the heartbeat.
  std::string receive(char* data, size_t size);
  // "TcpStore (rank 1 of 4, server 10.0.0.1:29500)", as errors name this store.
  std::string who() const;

  const std::string host_;
  int port_;
  const int rank_, world_size_;
  const std::chrono::milliseconds timeout_;
  const TcpStoreOptions options_;
  // The reader thread's: when a byte last came from the server, and whether it went silent.
  Clock::time_point last_heard_;
  bool server_silent_ = false;
  // The hello was answered: only then may the reader ping (the server takes nothing before it).
  std::atomic<bool> joined_{false};

  std::unique_ptr<tcp::StoreServer> server_;  // rank 0 only
  int fd_ = -1;
  std::mutex write_mutex_;  // one frame at a time on the socket

  std::mutex mutex_;  // guards what follows; changed_ tells the waiting requests
  std::condition_variable changed_;
  uint64_t next_id_ = 1;
  std::set<uint64_t> waiting_;
  std::map<uint64_t, Reply> replies_;
  std::string job_failure_;         // pushed by the server: gets fail with it
  std::string connection_failure_;  // the connection is gone: every request fails with it
  bool closing_ = false;

  std::thread reader_;
};

}  // namespace loom::dist
