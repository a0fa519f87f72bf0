#!/usr/bin/env bash
# Fails, naming the files, when a tracked C++ or CUDA source differs from .clang-format.
#   scripts/check-format.sh         check (CI's first stage: seconds, before any build)
#   scripts/check-format.sh --fix   rewrite the files in place
# The formatter is pinned to Debian's clang-format-14: another version formats some constructs
# differently, and the check must not depend on which one a machine happens to have.
set -euo pipefail
cd "$(dirname "$0")/.."
LOOM_WITH_FORMAT=1 scripts/install-deps.sh
format=clang-format-14

# include/loom holds links to src/, so its files are the same files.
mapfile -t files < <(git ls-files -- '*.cpp' '*.h' '*.cu' '*.cuh' ':!:include/**')
if [ "${1:-}" = --fix ]; then
  "$format" -i "${files[@]}"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  "$format" --dry-run -Werror "$f" > /dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -gt 0 ]; then
  printf 'check-format: %s differs from .clang-format\n' "${bad[@]}" >&2
  echo "check-format: ${#bad[@]} of ${#files[@]} files; scripts/check-format.sh --fix rewrites them" >&2
  exit 1
fi
echo "check-format: ${#files[@]} files match .clang-format"
