#include "loom/tensor/error.h"

namespace loom::detail {

void throw_error(const char* /*file*/, int /*line*/, const std::string& message) {
  // The message is for the user: it names the op and the values; file and line would be noise.
  throw Error(message);
}

void throw_assert(const char* file, int line, const char* condition, const std::string& message) {
  throw Error(concat("internal error (a loom bug, please report): ", condition, " failed at ", file,
                     ":", line, message.empty() ? "" : ": ", message));
}

}  // namespace loom::detail
