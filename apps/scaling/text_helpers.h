// Small helpers that the cluster model and the simulator share: numbers as text, and optional
// fields of a JSON object (a report.json or a collectives_bench line) read leniently.
#pragma once

#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace loom::scaling::text {

// "1.567 MiB".
inline std::string bytes_text(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (u < 3 && bytes >= 1024) bytes /= 1024, ++u;
  char text[32];
  std::snprintf(text, sizeof(text), "%.4g %s", bytes, units[u]);
  return text;
}

inline std::string fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.*f", digits, value);
  return text;
}

// The number at `key`, or nothing when the field is absent or not a number.
inline std::optional<double> optional_number(const nlohmann::json& object, const std::string& key) {
  if (!object.is_object() || !object.contains(key) || !object.at(key).is_number())
    return std::nullopt;
  return object.at(key).get<double>();
}

// The string at `key`, or "" when the field is absent or not a string.
inline std::string optional_string(const nlohmann::json& object, const std::string& key) {
  if (!object.contains(key) || !object.at(key).is_string()) return "";
  return object.at(key).get<std::string>();
}

}  // namespace loom::scaling::text
