// The data pipeline's one warning channel.
#include "data/bad_input.h"

#include <cstdio>

namespace loom::data {

void warn(const std::string& message) {
  const std::string line = "loom::data: warning: " + message + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace loom::data
