// A key-value store the ranks of a job share: the rendezvous that hands NCCL's unique id to
// every process and carries the TCP backend's collectives. Every blocking call has a deadline.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace loom::dist {

class Store {
 public:
  virtual ~Store() = default;
  virtual void set(const std::string& key, const std::string& value) = 0;
  // The value of `key` once some rank has set it; throws loom::Error naming the key and the
  // timeout when none does in time, or at once when the store knows the job has failed.
  virtual std::string get(const std::string& key, std::chrono::milliseconds timeout) = 0;
  // Adds delta to the integer at key (0 when absent) and returns the new value.
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
  virtual void erase(const std::string& key) = 0;
};

}  // namespace loom::dist
