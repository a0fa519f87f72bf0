// loom::Error and the two kinds of check: LOOM_CHECK for the user's mistakes (throws with a
// message naming what was wrong) and LOOM_ASSERT for loom's own invariants (a bug if it fires).
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace loom {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

namespace detail {

template <typename T>
void append(std::ostringstream& out, const T& value) {
  out << value;
}

// Shapes and other integer lists print as [2, 3], as shape_str does.
template <typename T>
void append(std::ostringstream& out, const std::vector<T>& values) {
  out << "[";
  for (size_t i = 0; i < values.size(); ++i) out << (i ? ", " : "") << values[i];
  out << "]";
}

template <typename... Args>
std::string concat(const Args&... args) {
  std::ostringstream out;
  (append(out, args), ...);
  return out.str();
}

[[noreturn]] void throw_error(const char* file, int line, const std::string& message);
[[noreturn]] void throw_assert(const char* file, int line, const char* condition,
                               const std::string& message);

}  // namespace detail
}  // namespace loom

// LOOM_CHECK(cond, "op: shapes ", a, " and ", b, " differ") throws loom::Error.
#define LOOM_CHECK(cond, ...)                                                               \
  do {                                                                                      \
    if (!(cond)) {                                                                          \
      ::loom::detail::throw_error(__FILE__, __LINE__, ::loom::detail::concat(__VA_ARGS__)); \
    }                                                                                       \
  } while (0)

#define LOOM_FAIL(...) \
  ::loom::detail::throw_error(__FILE__, __LINE__, ::loom::detail::concat(__VA_ARGS__))

// LOOM_ASSERT(cond) guards loom's own invariants; failing it is a loom bug.
#define LOOM_ASSERT(cond, ...)                                              \
  do {                                                                      \
    if (!(cond)) {                                                          \
      ::loom::detail::throw_assert(__FILE__, __LINE__, #cond,               \
                                   ::loom::detail::concat("" __VA_ARGS__)); \
    }                                                                       \
  } while (0)
