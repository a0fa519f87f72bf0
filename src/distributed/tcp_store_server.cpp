// StoreServer (tcp_store_server.h): rank 0's poll() loop. Sockets are non-blocking, so one slow
// or dead client never stalls the others; every frame is handled whole, in arrival order.
#include "loom/distributed/tcp_store_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "loom/distributed/tcp_store_protocol.h"
#include "loom/tensor/error.h"

namespace loom::dist::tcp {

namespace {

constexpr size_t kReadChunk = 256 * 1024;

bool parse_int64(const std::string& s, int64_t* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || end != s.c_str() + s.size()) return false;
  *out = v;
  return true;
}

}  // namespace

StoreServer::StoreServer(int port, int world_size, std::string token,
                         std::chrono::milliseconds heartbeat_timeout)
    : world_size_(world_size),
      token_(std::move(token)),
      heartbeat_timeout_(heartbeat_timeout),
      rank_connection_(world_size, 0),
      read_buffer_(kReadChunk),
      rank_gone_(world_size, false) {
  LOOM_CHECK(port >= 0 && port <= 65535, "TcpStore: port ", port, " is outside [0, 65535]");
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  LOOM_CHECK(listen_fd_ >= 0,
             "TcpStore: rank 0 could not create its listening socket: ", errno_text(errno));
  // A restarted job may take the port while the last one's connections sit in TIME_WAIT.
  const int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listen_fd_, SOMAXCONN) != 0) {
    const int err = errno;
    ::close(listen_fd_);
    LOOM_FAIL("TcpStore: rank 0 could not listen on port ", port, ": ", errno_text(err),
              err == EADDRINUSE ? " (another program holds it: choose another MASTER_PORT)" : "");
  }
  socklen_t length = sizeof addr;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &length);
  port_ = ntohs(addr.sin_port);
  if (::pipe2(wake_, O_NONBLOCK | O_CLOEXEC) != 0) {
    const int err = errno;
    ::close(listen_fd_);
    LOOM_FAIL("TcpStore: rank 0 could not create the server's wake-up pipe: ", errno_text(err));
  }
  thread_ = std::thread([this] { loop(); });
}

StoreServer::~StoreServer() {
  stop_.store(true);
  const char byte = 'x';
  while (::write(wake_[1], &byte, 1) < 0 && errno == EINTR) {
  }
  thread_.join();
  for (auto& entry : connections_) {
    if (!entry.second.closed) ::close(entry.second.fd);
  }
  ::close(listen_fd_);
  ::close(wake_[0]);
  ::close(wake_[1]);
}

void StoreServer::wait_for_goodbyes(std::chrono::milliseconds bound) {
  std::unique_lock<std::mutex> lock(mutex_);
  gone_changed_.wait_for(lock, bound, [&] { return ranks_gone_ >= world_size_; });
}

void StoreServer::loop() {
  try {
    while (!stop_.load()) poll_once();
  } catch (const std::exception& e) {
    // Out of memory or a broken poll: the clients must hear of it, not wait on a dead thread.
    fail_job(std::string("the store server on rank 0 stopped: ") + e.what());
    for (auto& entry : connections_) close_connection(entry.second);
  }
}

void StoreServer::poll_once() {
  std::vector<pollfd> fds;
  std::vector<uint64_t> ids;
  fds.push_back({wake_[0], POLLIN, 0});
  fds.push_back({listen_fd_, POLLIN, 0});
  for (auto& [id, c] : connections_) {
    const short events = c.out_sent < c.out.size() ? (POLLIN | POLLOUT) : POLLIN;
    fds.push_back({c.fd, events, 0});
    ids.push_back(id);
  }
  const int tick_ms = static_cast<int>(heartbeat_tick(heartbeat_timeout_).count());
  if (::poll(fds.data(), fds.size(), tick_ms) < 0) {
    if (errno == EINTR) return;
    LOOM_FAIL("poll failed: ", errno_text(errno));
  }
  if (fds[0].revents != 0) {
    char drain[64];
    while (::read(wake_[0], drain, sizeof drain) > 0) {
    }
    if (stop_.load()) return;
  }
  if (fds[1].revents & POLLIN) accept_all();
  for (size_t i = 0; i < ids.size(); ++i) {
    const short revents = fds[i + 2].revents;
    auto it = connections_.find(ids[i]);
    if (revents == 0 || it == connections_.end() || it->second.closed) continue;
    if (revents & (POLLIN | POLLHUP | POLLERR)) read_from(it->second);
    if (!it->second.closed && (revents & POLLOUT)) write_to(it->second);
  }
  check_heartbeats();
  for (auto it = connections_.begin(); it != connections_.end();) {
    it = it->second.closed ? connections_.erase(it) : std::next(it);
  }
}

void StoreServer::accept_all() {
  for (;;) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;  // EAGAIN: none left; EMFILE and the like: the client's connect times out, named
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // small requests, no batching
    const uint64_t id = next_connection_++;
    Connection& c = connections_[id];
    c.id = id;
    c.fd = fd;
    c.last_heard = Clock::now();
  }
}

void StoreServer::check_heartbeats() {
  const Clock::time_point now = Clock::now();
  for (auto& [id, c] : connections_) {
    if (c.closed || c.said_goodbye || now - c.last_heard < heartbeat_timeout_) continue;
    if (c.rank >= 0) {
      // Named before the close, which would blame a disconnection: the first reason is kept.
      fail_job(detail::concat(
          "rank ", c.rank, " stopped answering the store: nothing heard from it for ",
          std::chrono::duration_cast<std::chrono::milliseconds>(now - c.last_heard).count(),
          " ms (heartbeat timeout ", heartbeat_timeout_.count(),
          " ms); its process is stopped or frozen, or its host is unreachable"));
    }
    close_connection(c);  // a connection that never said hello only holds a socket
  }
}

void StoreServer::read_from(Connection& c) {
  for (;;) {
    const ssize_t n = ::recv(c.fd, read_buffer_.data(), read_buffer_.size(), MSG_DONTWAIT);
    if (n > 0) {
      c.in.append(read_buffer_.data(), static_cast<size_t>(n));
      c.last_heard = Clock::now();
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    close_connection(c);  // EOF or a reset: the frames before it are of no use any more
    return;
  }
  size_t pos = 0;
  while (!c.closed && c.in.size() - pos >= 4) {
    const uint32_t length = read_u32_le(c.in.data() + pos);
    if (length > kMaxFrame) {
      close_connection(c);
      return;
    }
    if (c.in.size() - pos - 4 < length) break;
    try {
      handle(c, c.in.data() + pos + 4, length);
    } catch (const Error&) {
      close_connection(c);  // the peer does not speak this protocol
      return;
    }
    pos += 4 + length;
  }
  if (!c.closed) c.in.erase(0, pos);
}

void StoreServer::write_to(Connection& c) {
  while (c.out_sent < c.out.size()) {
    const ssize_t n = ::send(c.fd, c.out.data() + c.out_sent, c.out.size() - c.out_sent,
                             MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      c.out_sent += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      break;  // poll() says when the socket takes more
    } else {
      close_connection(c);
      return;
    }
  }
  if (c.out_sent == c.out.size()) {
    c.out.clear();
    c.out_sent = 0;
  } else if (c.out_sent > c.out.size() / 2) {
    c.out.erase(0, c.out_sent);  // keeps a slow reader's backlog from only ever growing
    c.out_sent = 0;
  }
}

void StoreServer::send_frame(Connection& c, const std::string& frame) {
  if (c.closed) return;
  c.out.append(frame);
  write_to(c);
}

void StoreServer::reply(Connection& c, uint64_t request, uint8_t status,
                        const std::string& payload) {
  send_frame(c, FrameWriter()
                    .u8(static_cast<uint8_t>(Kind::Reply))
                    .u64(request)
                    .u8(status)
                    .str(payload)
                    .frame("a reply"));
}

void StoreServer::handle(Connection& c, const char* frame, size_t size) {
  FrameReader r(frame, size);
  const auto op = static_cast<Op>(r.u8());
  const uint64_t request = r.u64();
  const auto ok = static_cast<uint8_t>(Status::Ok);
  LOOM_CHECK(op == Op::Hello || c.rank >= 0, "a request before Hello");
  switch (op) {
    case Op::Hello: {
      const auto rank = static_cast<int32_t>(r.u32());
      const auto world_size = static_cast<int32_t>(r.u32());
      hello(c, request, rank, world_size, r.str());
      return;
    }
    case Op::Ping:
      reply(c, request, ok, "");
      return;
    case Op::Set: {
      std::string key = r.str();
      set_value(key, r.str());
      reply(c, request, ok, "");
      return;
    }
    case Op::Get: {
      const std::string key = r.str();
      if (!job_failure_.empty())
        return reply(c, request, static_cast<uint8_t>(Status::Failed), job_failure_);
      auto it = values_.find(key);
      if (it != values_.end()) return reply(c, request, ok, it->second);
      waiters_[key].push_back({c.id, request});
      return;
    }
    case Op::Cancel: {
      auto it = waiters_.find(r.str());
      if (it == waiters_.end()) return;
      auto& list = it->second;
      for (size_t i = 0; i < list.size(); ++i) {
        if (list[i].connection == c.id && list[i].request == request) {
          list.erase(list.begin() + static_cast<std::ptrdiff_t>(i));
          break;
        }
      }
      if (list.empty()) waiters_.erase(it);
      return;
    }
    case Op::Add: {
      const std::string key = r.str();
      const int64_t delta = r.i64();
      int64_t value = 0;
      auto it = values_.find(key);
      if (it != values_.end() && !parse_int64(it->second, &value)) {
        return reply(c, request, static_cast<uint8_t>(Status::Error),
                     "add(\"" + key + "\"): the key holds a value that is not a decimal integer");
      }
      value += delta;
      set_value(key, std::to_string(value));
      reply(c, request, ok, std::to_string(value));
      return;
    }
    case Op::Erase:
      values_.erase(r.str());
      reply(c, request, ok, "");
      return;
    case Op::Goodbye:
      c.said_goodbye = true;
      reply(c, request, ok, "");
      mark_gone(c.rank, true);
      return;
  }
  LOOM_FAIL("unknown op ", static_cast<int>(op));
}

void StoreServer::hello(Connection& c, uint64_t request, int rank, int world_size,
                        const std::string& token) {
  const auto error = static_cast<uint8_t>(Status::Error);
  if (!same_secret(token, token_)) {
    // Not this job's process: refused, and the job goes on without hearing of it.
    return reply(c, request, error,
                 detail::concat("the store refused rank ", rank, ": its job secret (",
                                "LOOM_DIST_TOKEN) is not this job's"));
  }
  // A process of this job that cannot take its rank leaves the job one rank short: it fails now
  // rather than at the group's timeout.
  auto refuse = [&](const std::string& why) {
    reply(c, request, error, why);
    fail_job("a rank was refused by the store: " + why);
  };
  if (world_size != world_size_) {
    return refuse(detail::concat("rank ", rank, " joined a job of ", world_size,
                                 " ranks, but rank 0 started the store for ", world_size_));
  }
  if (rank < 0 || rank >= world_size_) {
    return refuse(detail::concat("rank ", rank, " is outside [0, ", world_size_, ")"));
  }
  if (rank_connection_[rank] != 0) {
    return refuse(detail::concat("rank ", rank,
                                 " is already connected to the store: two "
                                 "processes were given the same rank"));
  }
  c.rank = rank;
  rank_connection_[rank] = c.id;
  mark_gone(rank, false);
  reply(c, request, static_cast<uint8_t>(Status::Ok), "");
  if (!job_failure_.empty()) {
    send_frame(c, FrameWriter()
                      .u8(static_cast<uint8_t>(Kind::JobFailed))
                      .u64(0)
                      .u8(static_cast<uint8_t>(Status::Failed))
                      .str(job_failure_)
                      .frame("a failure"));
  }
}

void StoreServer::set_value(const std::string& key, std::string value) {
  auto it = waiters_.find(key);
  if (it != waiters_.end()) {
    const std::vector<Waiter> waiting = std::move(it->second);
    waiters_.erase(it);
    for (const Waiter& w : waiting) {
      auto c = connections_.find(w.connection);
      if (c != connections_.end())
        reply(c->second, w.request, static_cast<uint8_t>(Status::Ok), value);
    }
  }
  values_[key] = std::move(value);
}

void StoreServer::close_connection(Connection& c) {
  if (c.closed) return;
  c.closed = true;
  ::close(c.fd);
  // c.in stays: handle() may still be reading the frame in it; the map entry goes soon.
  c.out.clear();
  c.out_sent = 0;
  if (c.rank < 0) return;
  if (rank_connection_[c.rank] == c.id) rank_connection_[c.rank] = 0;
  if (!c.said_goodbye) {
    fail_job(detail::concat("rank ", c.rank,
                            " disconnected from the store without saying "
                            "goodbye (its process exited or was killed)"));
    mark_gone(c.rank, true);
  }
}

void StoreServer::fail_job(const std::string& reason) {
  if (!job_failure_.empty()) return;  // the first failure is the cause; later ones follow it
  job_failure_ = reason;
  const auto failed = static_cast<uint8_t>(Status::Failed);
  auto waiting = std::move(waiters_);
  waiters_.clear();
  for (auto& entry : waiting) {
    for (const Waiter& w : entry.second) {
      auto c = connections_.find(w.connection);
      if (c != connections_.end()) reply(c->second, w.request, failed, reason);
    }
  }
  const std::string notice = FrameWriter()
                                 .u8(static_cast<uint8_t>(Kind::JobFailed))
                                 .u64(0)
                                 .u8(failed)
                                 .str(reason)
                                 .frame("a failure");
  for (auto& entry : connections_) {
    if (entry.second.rank >= 0) send_frame(entry.second, notice);
  }
  // A rank that has not joined will only be told the job failed: rank 0's exit need not wait
  // for its goodbye.
  for (int rank = 0; rank < world_size_; ++rank) {
    if (rank_connection_[rank] == 0) mark_gone(rank, true);
  }
}

void StoreServer::mark_gone(int rank, bool gone) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (rank_gone_[rank] == gone) return;
  rank_gone_[rank] = gone;
  ranks_gone_ += gone ? 1 : -1;
  gone_changed_.notify_all();
}

}  // namespace loom::dist::tcp
