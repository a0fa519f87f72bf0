// TcpStore (tcp_store.h): the client every rank runs. Requests carry ids and one reader thread
// hands each reply to the request waiting for it, so a get blocked on one thread never holds
// up a set on another (the TCP group's abort writes a key while its worker waits in a get).
#include "loom/distributed/tcp_store.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>

#include "loom/distributed/launch.h"
#include "loom/distributed/tcp_store_protocol.h"
#include "loom/distributed/tcp_store_server.h"
#include "loom/tensor/error.h"

namespace loom::dist {

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::chrono::milliseconds kGoodbyeWaitBound(30000);

int ms_left(Clock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, INT_MAX));
}

std::chrono::milliseconds milliseconds_left(Clock::time_point deadline) {
  return std::chrono::milliseconds(ms_left(deadline));
}

uint8_t op(tcp::Op o) { return static_cast<uint8_t>(o); }

// One connection attempt to one address, bounded by `deadline` (a non-blocking connect, so an
// address that never answers cannot hang us). Returns a connected blocking socket, or -1 and
// the reason in *error.
int try_connect(const addrinfo& address, Clock::time_point deadline, std::string* error) {
  const int fd = ::socket(address.ai_family, address.ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                          address.ai_protocol);
  if (fd < 0) {
    *error = tcp::errno_text(errno);
    return -1;
  }
  auto fail = [&](const std::string& why) {
    *error = why;
    ::close(fd);
    return -1;
  };
  // An interrupted non-blocking connect goes on in the background, as EINPROGRESS does.
  if (::connect(fd, address.ai_addr, address.ai_addrlen) != 0) {
    if (errno != EINPROGRESS && errno != EINTR) return fail(tcp::errno_text(errno));
    pollfd p{fd, POLLOUT, 0};
    int n;
    while ((n = ::poll(&p, 1, ms_left(deadline))) < 0 && errno == EINTR) {
    }
    if (n == 0) return fail("no answer before the deadline");
    if (n < 0) return fail(tcp::errno_text(errno));
    int err = 0;
    socklen_t length = sizeof err;
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &length);
    if (err != 0) return fail(tcp::errno_text(err));
  }
  // Blocking from here on: the reader thread sleeps in recv; requests have their own deadlines.
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

}  // namespace

TcpStoreOptions TcpStoreOptions::from_environment() {
  TcpStoreOptions options;
  if (const char* token = std::getenv(kTokenEnv)) options.token = token;
  if (const char* heartbeat = std::getenv(kHeartbeatEnv)) {
    options.heartbeat_timeout = parse_timeout(heartbeat, kHeartbeatEnv);
  }
  return options;
}

TcpStore::TcpStore(std::string host, int port, int rank, int world_size,
                   std::chrono::milliseconds timeout, const TcpStoreOptions& options)
    : host_(std::move(host)),
      port_(port),
      rank_(rank),
      world_size_(world_size),
      timeout_(timeout),
      options_(options),
      last_heard_(Clock::now()) {
  LOOM_CHECK(world_size >= 1, "TcpStore: the world size must be at least 1, got ", world_size);
  LOOM_CHECK(rank >= 0 && rank < world_size, "TcpStore: rank ", rank, " is outside [0, ",
             world_size, ")");
  LOOM_CHECK(timeout.count() > 0, "TcpStore: the timeout must be positive, got ", timeout.count(),
             " ms");
  LOOM_CHECK(port >= 0 && port <= 65535, "TcpStore: port ", port, " is outside [0, 65535]");
  LOOM_CHECK(port > 0 || rank == 0, "TcpStore: rank ", rank,
             " needs the server's port; only rank 0 may ask for port 0 (the system's pick)");
  LOOM_CHECK(options.heartbeat_timeout.count() > 0,
             "TcpStore: the heartbeat timeout must be positive, got ",
             options.heartbeat_timeout.count(), " ms");
  const Clock::time_point deadline = Clock::now() + timeout;
  if (rank == 0) {
    server_ = std::make_unique<tcp::StoreServer>(port, world_size, options.token,
                                                 options.heartbeat_timeout);
    port_ = server_->port();
  }
  connect_to_server(deadline);
  last_heard_ = Clock::now();
  reader_ = std::thread([this] { read_replies(); });
  try {
    // rank 0's server answers a hello at once: a program that accepts the connection and stays
    // silent (another one holds MASTER_PORT) is named within the heartbeat, not the timeout.
    const auto patience = std::min(timeout_, options_.heartbeat_timeout);
    const uint64_t id = new_request_id();
    request(id,
            tcp::FrameWriter()
                .u8(op(tcp::Op::Hello))
                .u64(id)
                .u32(static_cast<uint32_t>(rank))
                .u32(static_cast<uint32_t>(world_size))
                .str(options_.token)
                .frame("hello"),
            false, "", patience,
            detail::concat("joining (is the program at ", host_, ":", port_,
                           " loom's store? its hello had no answer)"));
    joined_ = true;
  } catch (...) {
    ::shutdown(fd_, SHUT_RDWR);
    reader_.join();
    ::close(fd_);
    throw;
  }
}

TcpStore::~TcpStore() {
  bool connected;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    connected = connection_failure_.empty();
  }
  if (connected) {
    try {
      const uint64_t id = new_request_id();
      request(id, tcp::FrameWriter().u8(op(tcp::Op::Goodbye)).u64(id).frame("goodbye"), false, "",
              timeout_, "goodbye");
    } catch (const Error&) {
      // Leaving anyway: the server then sees a drop, which is what this is.
    }
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closing_ = true;
  }
  ::shutdown(fd_, SHUT_RDWR);  // ends the reader's recv
  reader_.join();
  ::close(fd_);
  // A rank still in the last collective is at most moments behind (the others have finished it),
  // and a rank busy elsewhere does not need the server: half a minute is plenty even when the
  // job's timeout is ten.
  if (server_) server_->wait_for_goodbyes(std::min(timeout_, kGoodbyeWaitBound));
}

std::string TcpStore::who() const {
  return detail::concat("TcpStore (rank ", rank_, " of ", world_size_, ", server ", host_, ":",
                        port_, ")");
}

void TcpStore::connect_to_server(Clock::time_point deadline) {
  std::string last_error = "none";
  auto pause = std::chrono::milliseconds(10);
  for (;;) {
    addrinfo hints{};
    hints.ai_family = AF_INET;  // the server listens on IPv4 (0.0.0.0)
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const int rc = ::getaddrinfo(host_.c_str(), std::to_string(port_).c_str(), &hints, &found);
    if (rc != 0) {
      last_error = detail::concat("cannot resolve '", host_, "': ", ::gai_strerror(rc));
    } else {
      for (const addrinfo* a = found; a != nullptr && fd_ < 0; a = a->ai_next) {
        fd_ = try_connect(*a, deadline, &last_error);
      }
      ::freeaddrinfo(found);
    }
    if (fd_ >= 0) break;
    if (Clock::now() >= deadline) {
      LOOM_FAIL(who(), ": could not connect to the store at ", host_, ":", port_, " within ",
                timeout_.count(), " ms (last error: ", last_error,
                "); is rank 0 running and listening there?");
    }
    // Every error is retried: rank 0 may not listen yet, and a container's network or name may
    // appear late. The pauses grow so that many waiting ranks do not flood rank 0.
    std::this_thread::sleep_for(
        std::min<std::chrono::milliseconds>(pause, milliseconds_left(deadline)));
    pause = std::min<std::chrono::milliseconds>(pause * 2, std::chrono::milliseconds(500));
  }
  const int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  // A server that stopped reading (its host hung) must not block a send forever.
  timeval send_timeout{};
  send_timeout.tv_sec = static_cast<time_t>(timeout_.count() / 1000);
  send_timeout.tv_usec = static_cast<suseconds_t>((timeout_.count() % 1000) * 1000);
  ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &send_timeout, sizeof send_timeout);
}

uint64_t TcpStore::new_request_id() {
  std::lock_guard<std::mutex> lock(mutex_);
  return next_id_++;
}

void TcpStore::send_frame(const std::string& frame) {
  std::string error;
  {
    std::lock_guard<std::mutex> lock(write_mutex_);
    error = tcp::send_all(fd_, frame.data(), frame.size());
  }
  if (error.empty()) return;
  // Part of a frame may have gone out: the stream is out of step, so the connection is over.
  ::shutdown(fd_, SHUT_RDWR);
  std::lock_guard<std::mutex> lock(mutex_);
  if (connection_failure_.empty()) {
    connection_failure_ =
        detail::concat("sending to the store server (rank 0, at ", host_, ":", port_,
                       ") failed: ", error, ": rank 0 exited or was killed, or its host is gone");
  }
  changed_.notify_all();
}

std::string TcpStore::request(uint64_t id, const std::string& frame, bool is_get,
                              const std::string& key, std::chrono::milliseconds timeout,
                              const std::string& what) {
  const Clock::time_point deadline = Clock::now() + timeout;
  auto failure = [&](const std::string& why) {
    return Error(detail::concat(who(), ": ", what, " failed: ", why));
  };
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!connection_failure_.empty()) throw failure(connection_failure_);
    if (is_get && !job_failure_.empty()) throw failure("the job failed: " + job_failure_);
    waiting_.insert(id);
  }
  send_frame(frame);
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait_until(lock, deadline, [&] {
    return replies_.count(id) != 0 || !connection_failure_.empty() ||
           (is_get && !job_failure_.empty());
  });
  waiting_.erase(id);
  auto it = replies_.find(id);
  if (it != replies_.end()) {
    Reply reply = std::move(it->second);
    replies_.erase(it);
    switch (static_cast<tcp::Status>(reply.status)) {
      case tcp::Status::Ok:
        return std::move(reply.payload);
      case tcp::Status::Failed:
        throw failure("the job failed: " + reply.payload);
      default:
        throw failure(reply.payload);
    }
  }
  if (!connection_failure_.empty()) throw failure(connection_failure_);
  if (is_get && !job_failure_.empty()) throw failure("the job failed: " + job_failure_);
  lock.unlock();
  if (!is_get) {
    throw failure(detail::concat("no reply from the store server within ", timeout.count(), " ms"));
  }
  // The server forgets the waiting get; a reply already on its way is dropped by the reader.
  send_frame(tcp::FrameWriter().u8(op(tcp::Op::Cancel)).u64(id).str(key).frame("cancel"));
  throw Error(detail::concat(who(), ": ", what, " timed out after ", timeout.count(),
                             " ms: no rank set the key"));
}

std::string TcpStore::wait_readable() {
  const auto tick = tcp::heartbeat_tick(options_.heartbeat_timeout);
  for (;;) {
    pollfd p{fd_, POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(tick.count()));
    if (n > 0) return "";  // readable, closed or broken: recv says which
    if (n < 0 && errno != EINTR) return tcp::errno_text(errno);
    const auto quiet = Clock::now() - last_heard_;
    if (quiet >= options_.heartbeat_timeout) {
      server_silent_ = true;
      return detail::concat("the store server (rank 0, at ", host_, ":", port_,
                            ") has not answered for ",
                            std::chrono::duration_cast<std::chrono::milliseconds>(quiet).count(),
                            " ms (heartbeat timeout ", options_.heartbeat_timeout.count(),
                            " ms): rank 0 is stopped or frozen, or its host is unreachable");
    }
    if (quiet >= tick && joined_) {
      // A ping asks for a reply, which is what the server's silence is measured by. Skipped
      // while a request is being sent: that send is traffic too, and waiting for its lock here
      // would keep this thread from noticing a server that stopped reading.
      std::unique_lock<std::mutex> lock(write_mutex_, std::try_to_lock);
      if (lock.owns_lock()) {
        const std::string ping = tcp::FrameWriter().u8(op(tcp::Op::Ping)).u64(0).frame("ping");
        const std::string error = tcp::send_all(fd_, ping.data(), ping.size());
        if (!error.empty()) return "sending a heartbeat to the store server failed: " + error;
      }
    }
  }
}

std::string TcpStore::receive(char* data, size_t size) {
  size_t got = 0;
  while (got < size) {
    std::string why = wait_readable();
    if (!why.empty()) return why;
    const ssize_t n = ::recv(fd_, data + got, size - got, MSG_DONTWAIT);
    if (n > 0) {
      got += static_cast<size_t>(n);
      last_heard_ = Clock::now();
    } else if (n == 0) {
      return "closed";
    } else if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) {
      return tcp::errno_text(errno);
    }
  }
  return "";
}

void TcpStore::read_replies() {
  std::string why;
  for (;;) {
    char header[4];
    why = receive(header, sizeof header);
    if (!why.empty()) break;
    const uint32_t length = tcp::read_u32_le(header);
    if (length > tcp::kMaxFrame) {
      why = detail::concat("a reply of ", length, " bytes, above the limit");
      break;
    }
    std::string body(length, '\0');
    why = receive(body.data(), length);
    if (!why.empty()) break;
    try {
      tcp::FrameReader r(body.data(), body.size());
      const auto kind = static_cast<tcp::Kind>(r.u8());
      const uint64_t id = r.u64();
      const uint8_t status = r.u8();
      std::string payload = r.str();
      std::lock_guard<std::mutex> lock(mutex_);
      if (kind == tcp::Kind::JobFailed) {
        if (job_failure_.empty()) job_failure_ = std::move(payload);
        changed_.notify_all();
      } else if (waiting_.count(id) != 0) {
        replies_[id] = Reply{status, std::move(payload)};
        changed_.notify_all();
      }
      // Otherwise the reply is to a get that timed out and went: nobody wants it.
    } catch (const Error& e) {
      why = e.what();
      break;
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (connection_failure_.empty()) {
    if (closing_) {
      connection_failure_ = "the store was closed";
    } else if (why == "closed") {
      connection_failure_ = detail::concat("the store server (rank 0, at ", host_, ":", port_,
                                           ") closed the connection: rank 0 exited or was killed");
    } else if (server_silent_) {
      connection_failure_ = why;   // the heartbeat's verdict, which names the server
      ::shutdown(fd_, SHUT_RDWR);  // a request blocked in send() to the frozen server ends too
    } else {
      // A reset is how a killed rank 0's host often answers: name it as the closed case does.
      connection_failure_ =
          detail::concat("the connection to the store server (rank 0, at ", host_, ":", port_,
                         ") broke: ", why, ": rank 0 exited or was killed, or its host is gone");
    }
  }
  changed_.notify_all();
}

void TcpStore::set(const std::string& key, const std::string& value) {
  const uint64_t id = new_request_id();
  request(id, tcp::FrameWriter().u8(op(tcp::Op::Set)).u64(id).str(key).str(value).frame("set"),
          false, key, timeout_, detail::concat("set(\"", key, "\")"));
}

std::string TcpStore::get(const std::string& key, std::chrono::milliseconds timeout) {
  LOOM_CHECK(timeout.count() >= 0, who(), ": get(\"", key, "\"): negative timeout ",
             timeout.count(), " ms");
  const uint64_t id = new_request_id();
  return request(id, tcp::FrameWriter().u8(op(tcp::Op::Get)).u64(id).str(key).frame("get"), true,
                 key, timeout, detail::concat("get(\"", key, "\")"));
}

int64_t TcpStore::add(const std::string& key, int64_t delta) {
  const uint64_t id = new_request_id();
  const std::string value =
      request(id, tcp::FrameWriter().u8(op(tcp::Op::Add)).u64(id).str(key).i64(delta).frame("add"),
              false, key, timeout_, detail::concat("add(\"", key, "\", ", delta, ")"));
  return std::stoll(value);
}

void TcpStore::erase(const std::string& key) {
  const uint64_t id = new_request_id();
  request(id, tcp::FrameWriter().u8(op(tcp::Op::Erase)).u64(id).str(key).frame("erase"), false, key,
          timeout_, detail::concat("erase(\"", key, "\")"));
}

void TcpStore::drop_connection_for_testing() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (connection_failure_.empty()) connection_failure_ = "the connection was dropped (test hook)";
    changed_.notify_all();
  }
  ::shutdown(fd_, SHUT_RDWR);
}

}  // namespace loom::dist
