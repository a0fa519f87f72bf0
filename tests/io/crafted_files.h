// Writers of hostile files for the io tests (model files and checkpoints are downloads, so
// loom must refuse these quickly and clearly), and the check that a refusal is cheap: a
// loom::Error naming the file and the problem, a bounded message, under 4 s of CPU and 512 MB
// (LOOM_SHOW_REFUSALS=1 prints each message).
#pragma once

#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "testing.h"

namespace loom::testing {

// `depth` nested JSON arrays: "[[[...]]]".
inline std::string nested_arrays(size_t depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

// A Sequential spec whose only layer is a Sequential whose only layer is ... `depth` levels.
inline std::string nested_sequential_spec(size_t depth) {
  std::string spec = R"({"type":"Sequential","config":{"layers":[)";
  for (size_t i = 1; i < depth; ++i)
    spec += R"({"name":"0","type":"Sequential","config":{"layers":[)";
  spec += R"({"name":"0","type":"ReLU"})";
  for (size_t i = 1; i < depth; ++i) spec += "]}}";
  return spec + "]}}";
}

// The bytes of a safetensors file with this header text (not checked) and data section.
inline std::string safetensors_bytes(const std::string& header, const std::string& data = "") {
  const uint64_t n = header.size();
  std::string out(8, '\0');
  std::memcpy(out.data(), &n, 8);
  return out + header + data;
}

// The header text and data section of safetensors bytes, to edit a real file's header.
inline std::string header_of(const std::string& bytes) {
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  return bytes.substr(8, n);
}
inline std::string data_of(const std::string& bytes) {
  return bytes.substr(8 + header_of(bytes).size());
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// The high-water mark of this process' resident memory, in MiB (Linux reports KiB).
inline double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

// Longest message a refusal may have: the path, our words and a few short excerpts.
inline constexpr size_t kMaxRefusalMessage = 600;

// CPU time this thread has used, in seconds (the refusals run on the calling thread).
inline double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

inline void expect_refused(const std::function<void()>& run,
                           const std::vector<std::string>& fragments) {
  const double rss_before = peak_rss_mib();
  const double start = thread_cpu_seconds();
  std::string message;
  bool threw = false;
  try {
    run();
  } catch (const Error& e) {
    threw = true;
    message = e.what();
  }
  const double seconds = thread_cpu_seconds() - start;
  if (std::getenv("LOOM_SHOW_REFUSALS") != nullptr) std::cout << "refused: " << message << "\n";
  EXPECT_TRUE(threw) << "expected a loom::Error";
  for (const std::string& fragment : fragments) {
    EXPECT_NE(message.find(fragment), std::string::npos)
        << "no \"" << fragment.substr(0, 200) << "\" in: " << message.substr(0, 1000);
  }
  EXPECT_LE(message.size(), kMaxRefusalMessage)
      << "message of " << message.size() << " chars: " << message.substr(0, 1000);
  // Linear work is the point: the costliest 16 MiB header (1.5 million keys) takes about 1 s of
  // CPU, a quadratic parse of it minutes. CPU time rather than wall time: on a loaded 2-core CI
  // machine the wall clock also counts the other tests' turns, and made this check flaky.
  EXPECT_LT(seconds, 4.0 * kSlowdown);
  EXPECT_LT(peak_rss_mib() - rss_before, 512.0);
}

// EXPECT that `statement` is refused cheaply with a message holding every fragment.
#define EXPECT_REFUSED(statement, ...)                                  \
  do {                                                                  \
    SCOPED_TRACE(#statement);                                           \
    ::loom::testing::expect_refused([&] { statement; }, {__VA_ARGS__}); \
  } while (0)

// A fresh folder per test for the crafted files.
class CraftedFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("loom_crafted_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::filesystem::path dir_;
};

}  // namespace loom::testing
