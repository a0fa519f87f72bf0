#!/usr/bin/env bash
# The one-definition check of the test binaries: a weak symbol (an inline function, a template
# instance, an inline variable) that two objects of one binary define at different places in the
# test sources is two definitions of one name, of which the linker keeps one without a word
# (issue 36: two expect_cuda_parity, and every gpu test ran the conv one). For each test binary
# of a Ninja build, its objects (the link lines of build.ninja) are read with nm -l, which takes
# a function's file and line from the line table at its first instruction (the test objects have
# DWARF 4 line tables in every build, tests/CMakeLists.txt). A symbol placed at two places under
# tests/ fails the check. Places elsewhere are left out: an optimised function's first
# instruction may come from a callee inlined there (a std:: algorithm's line for nlohmann::json's
# constructor), which differs between objects without two definitions. Binaries not built are
# skipped. CTest runs it as the test odr_check.
#   scripts/check-odr.sh [build-dir]    (default: build)
set -euo pipefail
build=${1:-build}
tests=$(cd "$(dirname "$0")/../tests" && pwd -P)
[ -f "$build/build.ninja" ] || {
  echo "check-odr: $build/build.ninja not found (the check reads a Ninja build)" >&2
  exit 2
}

# "binary object..." for every test binary: the explicit inputs of its link edge.
binaries=$(awk '/^build tests\/[A-Za-z0-9_]*_tests: CXX_EXECUTABLE_LINKER/ {
  line = $2; sub(/:$/, "", line)
  for (i = 4; i <= NF && $i != "|" && $i != "||"; ++i) line = line " " $i
  print line }' "$build/build.ninja")

# "binary<TAB>symbol<TAB>file:line<TAB>object" of every weak (W, V) or unique (u) definition placed
# under tests/.
weak_definitions() {
  (cd "$build" && nm -l --defined-only "$2") |
    awk -v bin="$1" -v obj="$2" -v tests="$tests/" -F '\t' 'NF == 2 {
      split($1, f, " ")
      if (f[2] != "W" && f[2] != "V" && f[2] != "u") next
      place = $2
      while (sub(/\/[^\/]+\/\.\.\//, "/", place)) {}
      if (index(place, tests) == 1) print bin "\t" f[3] "\t" place "\t" obj }'
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
jobs=$(nproc)
n=0
while read -r binary objects; do
  if [ -z "$binary" ] || [ ! -f "$build/$binary" ]; then continue; fi
  for object in $objects; do
    n=$((n + 1))
    weak_definitions "$binary" "$object" >"$tmp/$n" &
    if ((n % jobs == 0)); then wait; fi
  done
done <<<"$binaries"
wait
if ((n == 0)); then
  echo "check-odr: no test binary is built in $build"
  exit 0
fi

# One line per (binary, symbol, place); a (binary, symbol) with two places is a violation.
report=$(cat "$tmp"/* | sort -u -t $'\t' -k1,1 -k2,2 -k3,3 |
  awk -F '\t' '{
    key = $1 "\t" $2
    if (key == last) { places[key] = places[key] "\n    " $3 " (in " $4 ")"; ++count[key] }
    else { places[key] = "    " $3 " (in " $4 ")"; count[key] = 1; order[++n] = key }
    last = key }
    END { for (i = 1; i <= n; ++i) if (count[order[i]] > 1) {
      split(order[i], k, "\t"); print k[1] ": " k[2] " is defined at " count[order[i]] " places:"
      print places[order[i]] } }')
if [ -n "$report" ]; then
  echo "$report" | c++filt
  echo "check-odr: FAILED: a symbol of a test binary has two definitions (above), and the linker" \
    "keeps one of them for every caller"
  exit 1
fi
echo "check-odr: every weak symbol of the $n objects of the test binaries in $build has one" \
  "definition"
