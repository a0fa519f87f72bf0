// What a subcommand hands back, in the style of nccl-tests: '#' lines stating the setup, one
// line per measurement, the same figures as one JSON object, and whether every check passed.
#pragma once

#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace loom::gpu_basics {

class Report {
 public:
  explicit Report(const std::string& command);

  void setup(const std::string& line);  // printed as "# line"
  void row(const std::string& line);
  nlohmann::json& json() { return json_; }
  const nlohmann::json& json() const { return json_; }
  // Records one correctness check; a failed one makes ok() false and is listed in the output.
  void check(bool passed, const std::string& what);
  bool ok() const { return failures_.empty(); }

  void print(std::ostream& out, bool as_json) const;

 private:
  std::vector<std::string> lines_;
  std::vector<std::string> failures_;
  nlohmann::json json_;
};

// printf into a std::string, for the fixed-width rows.
std::string strf(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace loom::gpu_basics
