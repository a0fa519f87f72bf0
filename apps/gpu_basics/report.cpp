// Report: collects lines and checks, prints text or JSON.
#include "report.h"

#include <cstdarg>
#include <cstdio>
#include <ostream>

namespace loom::gpu_basics {

Report::Report(const std::string& command) {
  json_["command"] = command;
  json_["checks"] = nlohmann::json::array();
}

void Report::setup(const std::string& line) { lines_.push_back("# " + line); }

void Report::row(const std::string& line) { lines_.push_back(line); }

void Report::check(bool passed, const std::string& what) {
  json_["checks"].push_back({{"check", what}, {"passed", passed}});
  if (!passed) failures_.push_back(what);
}

void Report::print(std::ostream& out, bool as_json) const {
  if (as_json) {
    nlohmann::json j = json_;
    j["ok"] = ok();
    out << j.dump(2) << "\n";
    return;
  }
  for (const auto& line : lines_) out << line << "\n";
  for (const auto& failure : failures_) out << "MISMATCH: " << failure << "\n";
  out << (ok() ? "# all checks passed" : "# CHECK FAILED") << "\n";
}

std::string strf(const char* format, ...) {
  va_list args;
  va_start(args, format);
  va_list copy;
  va_copy(copy, args);
  const int size = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  std::string out(size > 0 ? static_cast<size_t>(size) : 0, '\0');
  if (size > 0) std::vsnprintf(out.data(), out.size() + 1, format, args);
  va_end(args);
  return out;
}

}  // namespace loom::gpu_basics
