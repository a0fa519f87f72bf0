#!/usr/bin/env bash
# The README's test command: installs what is missing, builds loom and its tests, runs ctest.
#   scripts/test.sh              the full build (CUDA too when a toolkit is found); all tests,
#                                gpu ones skip with a reason where there is no GPU
#   scripts/test.sh --sanitize   a CPU-only build under AddressSanitizer + UBSan; cpu tests
# Extra arguments after the mode go to ctest (for instance -L gpu).
set -euo pipefail
cd "$(dirname "$0")/.."

mode=full
if [ "${1:-}" = "--sanitize" ]; then mode=sanitize; shift; fi

scripts/install-deps.sh

jobs=$(nproc)
if [ "$mode" = sanitize ]; then
  build=build-asan
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLOOM_CUDA=OFF \
        -DLOOM_SANITIZE=ON -DLOOM_BUILD_BENCH=OFF
  label=(-L cpu)
else
  build=build
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
  label=()
fi
cmake --build "$build" -j "$jobs"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --test-dir "$build" --output-on-failure -j "$jobs" "${label[@]}" "$@"
