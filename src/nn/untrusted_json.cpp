// The limited JSON parser (a parser callback counts depth and each object's keys),
// excerpts, and the checked member reads.
#include "loom/nn/untrusted_json.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "loom/tensor/error.h"

namespace loom::nn {

using nlohmann::json;

namespace {

// The first key that appears twice in `keys` (which has one).
std::string repeated(std::vector<std::string> keys) {
  std::sort(keys.begin(), keys.end());
  const auto it = std::adjacent_find(keys.begin(), keys.end());
  return it != keys.end() ? *it : std::string();
}

}  // namespace

nlohmann::json parse_untrusted_json(std::string_view text, const std::string& context) {
  // The keys of each open container (none for arrays). A repeated key is found by size: nlohmann
  // merges it, so the finished object has fewer members than keys were read; hashing every key
  // instead made a 16 MB header take 2 s.
  std::vector<std::vector<std::string>> keys;
  const json::parser_callback_t check = [&](int, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        LOOM_CHECK(keys.size() < static_cast<size_t>(kMaxJsonDepth), context,
                   ": JSON nested deeper than ", kMaxJsonDepth, " levels");
        keys.emplace_back();
        break;
      case json::parse_event_t::object_end:
        LOOM_CHECK(parsed.size() == keys.back().size(), context, ": duplicate key \"",
                   excerpt(repeated(keys.back())), "\" in a JSON object");
        keys.pop_back();
        break;
      case json::parse_event_t::array_end:
        keys.pop_back();
        break;
      case json::parse_event_t::key:
        keys.back().push_back(parsed.get<std::string>());
        break;
      case json::parse_event_t::value:
        break;
    }
    return true;
  };
  try {
    return json::parse(text.data(), text.data() + text.size(), check);
  } catch (const json::exception& e) {
    LOOM_FAIL(context, ": malformed JSON (", describe(e), ")");
  }
}

std::string excerpt(std::string_view text, size_t max_chars) {
  if (text.size() <= max_chars) {
    std::string out(text);
    for (char& c : out) {
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
    }
    return out;
  }
  size_t cut = max_chars;
  // Back off continuation bytes (10xxxxxx) so the excerpt ends on a whole UTF-8 character.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return excerpt(text.substr(0, cut), max_chars) + "... (" + std::to_string(text.size()) +
         " bytes)";
}

std::string json_excerpt(const nlohmann::json& value) {
  if (value.is_string()) return "\"" + excerpt(value.get_ref<const std::string&>()) + "\"";
  return excerpt(value.dump(-1, ' ', false, json::error_handler_t::replace));
}

std::string describe(const nlohmann::json::exception& e) {
  std::string what = e.what();
  if (what.rfind("[json.exception.", 0) == 0 && what.find("] ") != std::string::npos) {
    what = what.substr(what.find("] ") + 2);
  }
  // The rest is nlohmann's own words but for the token it quotes (where parsing stopped, or a
  // number too large), which may be a megabyte-long string of the file's.
  for (const char* marker : {"last read: '", "parsing '"}) {
    const size_t begin = what.find(marker);
    if (begin == std::string::npos) continue;
    const size_t token = begin + std::string_view(marker).size();
    size_t end = what.find("'; ", token);
    if (end == std::string::npos) end = what.rfind('\'');
    if (end == std::string::npos || end < token) end = what.size();
    what = what.substr(0, token) + excerpt(std::string_view(what).substr(token, end - token)) +
           what.substr(end);
    break;
  }
  constexpr size_t kMaxDescription = 4 * kMaxExcerpt;
  return what.size() <= kMaxDescription ? what : what.substr(0, kMaxDescription) + "...";
}

int64_t json_integer(const nlohmann::json& value, int64_t min, int64_t max,
                     const std::string& what) {
  bool ok = false;
  int64_t x = 0;
  if (value.is_number_unsigned()) {  // nlohmann's type for every non-negative integer
    const uint64_t u = value.get<uint64_t>();
    ok = u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    x = static_cast<int64_t>(u);
  } else if (value.is_number_integer()) {
    x = value.get<int64_t>();
    ok = true;
  }
  LOOM_CHECK(ok && x >= min && x <= max, what, " must be an integer in [", min, ", ", max,
             "], got ", json_excerpt(value));
  return x;
}

uint64_t json_unsigned(const nlohmann::json& value, const std::string& what) {
  LOOM_CHECK(value.is_number_unsigned(), what, " must be an integer in [0, ",
             std::numeric_limits<uint64_t>::max(), "], got ", json_excerpt(value));
  return value.get<uint64_t>();
}

double json_number(const nlohmann::json& value, const std::string& what) {
  LOOM_CHECK(value.is_number() && std::isfinite(value.get<double>()), what,
             " must be a finite number, got ", json_excerpt(value));
  return value.get<double>();
}

JsonObject::JsonObject(const nlohmann::json& object, std::string where)
    : object_(object), where_(std::move(where)) {
  LOOM_CHECK(object_.is_object(), where_, ": expected a JSON object, got ", json_excerpt(object_));
}

std::string JsonObject::member(const char* key) const { return where_ + ": \"" + key + "\""; }

const nlohmann::json& JsonObject::at(const char* key) const {
  const auto it = object_.find(key);
  LOOM_CHECK(it != object_.end(), where_, ": missing \"", key, "\"");
  return *it;
}

int64_t JsonObject::integer(const char* key, int64_t min, int64_t max) const {
  return json_integer(at(key), min, max, member(key));
}

int64_t JsonObject::integer(const char* key, int64_t min, int64_t max, int64_t fallback) const {
  return has(key) ? integer(key, min, max) : fallback;
}

uint64_t JsonObject::unsigned_integer(const char* key) const {
  return json_unsigned(at(key), member(key));
}

double JsonObject::number(const char* key) const { return json_number(at(key), member(key)); }

double JsonObject::number(const char* key, double fallback) const {
  return has(key) ? number(key) : fallback;
}

bool JsonObject::boolean(const char* key, bool fallback) const {
  if (!has(key)) return fallback;
  const nlohmann::json& value = at(key);
  LOOM_CHECK(value.is_boolean(), member(key), " must be true or false, got ", json_excerpt(value));
  return value.get<bool>();
}

std::string JsonObject::string(const char* key) const {
  const nlohmann::json& value = at(key);
  LOOM_CHECK(value.is_string(), member(key), " must be a string, got ", json_excerpt(value));
  return value.get<std::string>();
}

std::string JsonObject::string(const char* key, const std::string& fallback) const {
  return has(key) ? string(key) : fallback;
}

std::array<int64_t, 2> JsonObject::pair(const char* key, int64_t min, int64_t max) const {
  const nlohmann::json& value = at(key);
  LOOM_CHECK(value.is_array() && value.size() == 2, member(key), " must be a [h, w] pair, got ",
             json_excerpt(value));
  return {json_integer(value[0], min, max, member(key) + "[0]"),
          json_integer(value[1], min, max, member(key) + "[1]")};
}

}  // namespace loom::nn
