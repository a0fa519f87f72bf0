// The data pipeline's one warning channel.
#include "loom/data/bad_input.h"

#include <cstdio>

namespace loom::data {

void warn(const std::string& message) {
  // File names come from downloads: a control character in one (a newline, a terminal escape)
  // is shown as \xNN, so that a warning stays one line and nothing reaches the terminal raw.
  std::string line = "loom::data: warning: ";
  for (const char c : message) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7F) {
      char escaped[5];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", byte);
      line += escaped;
    } else {
      line += c;
    }
  }
  line += "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace loom::data
