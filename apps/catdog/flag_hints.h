// "did you mean --epochs?" for a mistyped flag: the known long flag nearest to an unknown one by
// edit distance, so that a typo gets more than CLI11's "arguments were not expected".
#pragma once

#include <string>
#include <vector>

namespace loom::catdog {

// The optimal-string-alignment distance: insertions, deletions, substitutions and swaps of two
// neighbouring characters ("--modle" for "--model") count one each.
size_t edit_distance(const std::string& a, const std::string& b);

// The flag of `known` ("--epochs") nearest to `unknown` ("--epoch", "--epoch=3"), when it is
// within a third of the unknown name's length (at least 1, at most 3 edits), or when `unknown`
// is the start of exactly one known flag; else "" (nothing close enough to suggest).
std::string nearest_flag(const std::string& unknown, const std::vector<std::string>& known);

// For each argument of `args` that looks like a long flag ("--x", "--x=v") and is not in `known`,
// a line "unknown flag --x; did you mean --y?" (or "unknown flag --x" without a suggestion).
std::vector<std::string> flag_hints(const std::vector<std::string>& args,
                                    const std::vector<std::string>& known);

}  // namespace loom::catdog
