// JSON from files loom did not write: model files and checkpoints are downloads, so every
// parse of their JSON (safetensors headers, specs, preprocessing, training state, history) goes
// through this one parser with limits, messages quote only short excerpts of it, and members
// are read with checks (integers written as integers and in range, numbers finite).
// Internal: it includes nlohmann/json, which loom's public headers do not.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace loom::nn {

// Deeper JSON is refused while parsing: dump() and spec building recurse, and 100,000 levels
// overflow the stack. loom's own files nest about 8 levels (a resnet18 spec).
inline constexpr int kMaxJsonDepth = 64;
// The most characters of untrusted text an error message quotes.
inline constexpr size_t kMaxExcerpt = 80;
// The largest size a spec may give a layer (features, channels, kernel, stride): far above any
// real layer, and small enough that a product of a few stays inside int64.
inline constexpr int64_t kMaxSpecInteger = std::numeric_limits<int32_t>::max();

// Parses `text`, refusing malformed JSON, nesting deeper than kMaxJsonDepth and an object that
// repeats a key (nlohmann would keep the last silently, Python's json too, other readers the
// first). Errors read "<context>: <problem>".
nlohmann::json parse_untrusted_json(std::string_view text, const std::string& context);

// At most `max_chars` characters of `text` (control characters as '?', so no terminal escape
// gets through; no UTF-8 sequence cut in half), then "... (N bytes)" when it was longer.
std::string excerpt(std::string_view text, size_t max_chars = kMaxExcerpt);
// The same of a value's JSON text.
std::string json_excerpt(const nlohmann::json& value);
// What a nlohmann exception says, without its "[json.exception...]" tag and with the input it
// quotes cut to an excerpt.
std::string describe(const nlohmann::json::exception& e);

// Checked reads of one JSON value that is not an object member (an array element); `what`
// names it in errors: "<what> must be an integer in [min, max], got 3.5".
int64_t json_integer(const nlohmann::json& value, int64_t min, int64_t max,
                     const std::string& what);
uint64_t json_unsigned(const nlohmann::json& value, const std::string& what);
double json_number(const nlohmann::json& value, const std::string& what);  // finite

// Checked reads of the members of one JSON object (which must outlive this view); `where`
// starts every error: "<where>: \"in_features\" must be an integer in [1, 2147483647], got 3.5".
class JsonObject {
 public:
  JsonObject(const nlohmann::json& object, std::string where);

  bool has(const char* key) const { return object_.contains(key); }
  const nlohmann::json& at(const char* key) const;  // must be present
  // An integer written as one (not 3.5, not 3.0, not "3") within [min, max].
  int64_t integer(const char* key, int64_t min, int64_t max) const;
  int64_t integer(const char* key, int64_t min, int64_t max, int64_t fallback) const;  // if absent
  uint64_t unsigned_integer(const char* key) const;
  double number(const char* key) const;  // finite
  double number(const char* key, double fallback) const;
  bool boolean(const char* key, bool fallback) const;
  std::string string(const char* key) const;
  std::string string(const char* key, const std::string& fallback) const;
  // A [h, w] pair of integers, each within [min, max].
  std::array<int64_t, 2> pair(const char* key, int64_t min, int64_t max) const;
  // `where` and the member: "<where>: \"key\"", for messages about a member's value.
  std::string member(const char* key) const;

 private:
  const nlohmann::json& object_;
  std::string where_;
};

}  // namespace loom::nn
