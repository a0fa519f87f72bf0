// Edit distance over the known long flags, for main.cpp's parse errors.
#include "flag_hints.h"

#include <algorithm>

namespace loom::catdog {

size_t edit_distance(const std::string& a, const std::string& b) {
  // d[i][j]: the distance between a's first i characters and b's first j.
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min(
          {d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);  // two neighbours swapped
    }
  }
  return d[a.size()][b.size()];
}

namespace {
// "--epoch=3" -> "--epoch".
std::string flag_name(const std::string& arg) { return arg.substr(0, arg.find('=')); }
}  // namespace

std::string nearest_flag(const std::string& unknown, const std::vector<std::string>& known) {
  const std::string name = flag_name(unknown);
  const size_t bare = name.size() > 2 ? name.size() - 2 : 0;  // without the leading "--"
  const size_t limit = std::min<size_t>(3, std::max<size_t>(1, bare / 3));
  std::string best;
  size_t best_distance = limit + 1;
  std::vector<std::string> starting;
  for (const std::string& k : known) {
    const size_t d = edit_distance(name, k);
    if (d < best_distance) {
      best_distance = d;
      best = k;
    }
    if (bare > 0 && k.rfind(name, 0) == 0) starting.push_back(k);
  }
  if (!best.empty()) return best;
  return starting.size() == 1 ? starting[0] : "";
}

std::vector<std::string> flag_hints(const std::vector<std::string>& args,
                                    const std::vector<std::string>& known) {
  std::vector<std::string> hints;
  for (const std::string& arg : args) {
    if (arg == "--") break;  // what follows is positional
    if (arg.rfind("--", 0) != 0 || arg.size() <= 2) continue;
    const std::string name = flag_name(arg);
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    const std::string nearest = nearest_flag(name, known);
    hints.push_back("unknown flag " + name +
                    (nearest.empty() ? "" : "; did you mean " + nearest + "?"));
  }
  return hints;
}

}  // namespace loom::catdog
