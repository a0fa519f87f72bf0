// The TCP store's wire format and the socket calls both of its ends share. Every message is a
// frame: a 4-byte little-endian length, then that many bytes. Integers are little-endian and
// strings carry a 4-byte length, so both ends agree on any host.
//
//   client -> server: [op u8][request id u64][fields of the op]
//     Hello   rank i32, world_size i32,          reply Ok, or Error: a wrong secret (the job
//             secret str                         goes on), or a duplicate or bad rank or world
//                                                size (the job fails: a rank it needs is lost)
//     Set     key str, value str                 reply Ok
//     Get     key str                            reply Ok with the value once it is set, or
//                                                Failed with the reason once the job failed
//     Cancel  key str                            no reply: the client stopped waiting for id
//     Add     key str, delta i64                 reply Ok with the new value (i64), or Error
//     Erase   key str                            reply Ok
//     Goodbye                                    reply Ok: the rank is leaving on purpose
//     Ping                                       reply Ok: the heartbeat, both ways (below)
//   server -> client: [kind u8][request id u64][status u8][payload str]
//     Reply      the answer to request id
//     JobFailed  (id 0) pushed to every client once a rank dropped without a goodbye, stopped
//                answering, or was refused
//
// Heartbeat: a client pings when it has heard nothing for a quarter of the heartbeat timeout;
// a client that hears nothing from the server, or a server that hears nothing from a rank, for
// the whole heartbeat timeout treats the other end as gone (a SIGSTOPped or hung process keeps
// its sockets open, so only silence tells).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace loom::dist::tcp {

enum class Op : uint8_t { Hello = 1, Set, Get, Cancel, Add, Erase, Goodbye, Ping };
enum class Kind : uint8_t { Reply = 1, JobFailed };
enum class Status : uint8_t { Ok = 0, Failed, Error };

// A frame larger than this is refused (a corrupt length would otherwise allocate gigabytes).
constexpr size_t kMaxFrame = size_t{1} << 30;

// Builds one frame: four bytes kept for the length, which frame() fills in.
class FrameWriter {
 public:
  FrameWriter() : body_(4, '\0') {}
  FrameWriter& u8(uint8_t v);
  FrameWriter& u32(uint32_t v);
  FrameWriter& u64(uint64_t v);
  FrameWriter& i64(int64_t v) { return u64(static_cast<uint64_t>(v)); }
  FrameWriter& str(const std::string& s);
  // The finished frame, length first (moved out: a writer makes one frame); throws naming
  // `what` if it exceeds kMaxFrame.
  std::string frame(const char* what);

 private:
  std::string body_;
};

// Reads the fields of one frame's body; throws loom::Error on a truncated frame.
class FrameReader {
 public:
  FrameReader(const char* data, size_t size) : p_(data), left_(size) {}
  uint8_t u8();
  uint32_t u32();
  uint64_t u64();
  int64_t i64() { return static_cast<int64_t>(u64()); }
  std::string str();

 private:
  void need(size_t n);
  const char* p_;
  size_t left_;
};

uint32_t read_u32_le(const char* p);

// The pause between two heartbeat checks (and a client's ping when idle): a quarter of the
// timeout, at most a second.
std::chrono::milliseconds heartbeat_tick(std::chrono::milliseconds heartbeat_timeout);

// Whether two job secrets are equal, in time that depends on their lengths only.
bool same_secret(const std::string& a, const std::string& b);

// strerror_r's text for err.
std::string errno_text(int err);

// Sends all of data on a blocking socket, retrying EINTR and partial sends, without SIGPIPE.
// Returns "" or the error.
std::string send_all(int fd, const char* data, size_t size);
// Receives exactly size bytes on a blocking socket. Returns "" or why not ("closed" on EOF).
std::string recv_all(int fd, char* data, size_t size);

}  // namespace loom::dist::tcp
