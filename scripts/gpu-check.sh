#!/usr/bin/env bash
# On the GPU machine: configure and build with CUDA, run the gpu-labelled tests, then the gpu
# test binaries under compute-sanitizer memcheck (no leak check: the caching allocator keeps
# its blocks until exit by design). Logs go to $OUT (or ./gpu-check-out).
#   scripts/gpu-check.sh [build|test|memcheck]...   (default: all three, in that order)
# LOOM_CMAKE_ARGS adds configure flags.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-check-out}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
build=build-gpu
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(build test memcheck)
status=0

for step in "${steps[@]}"; do
  case "$step" in
    build)
      { nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nvcc --version | tail -1; } \
        | tee "$out/machine.txt"
      cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLOOM_CUDA=ON ${LOOM_CMAKE_ARGS:-} \
        > "$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 1; }
      cmake --build "$build" -j "$(nproc)" > "$out/build.log" 2>&1 \
        || { grep -E "error" -A5 "$out/build.log" | head -60; exit 1; }
      ;;
    test)
      echo "== ctest -L gpu"
      ctest --test-dir "$build" -L gpu --output-on-failure -j 4 2>&1 | tee "$out/ctest-gpu.log" | tail -25
      [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
      ;;
    memcheck)
      echo "== compute-sanitizer memcheck"
      for bin in "$build"/tests/*_gpu_tests; do
        [ -x "$bin" ] || continue
        log="$out/memcheck-$(basename "$bin").log"
        timeout 300 compute-sanitizer --tool memcheck --error-exitcode 9 "$bin" > "$log" 2>&1
        echo "$(basename "$bin"): exit $? | $(grep -E 'ERROR SUMMARY' "$log" | tail -1) | $(grep -E '^\[  (PASSED|FAILED) ' "$log" | tr '\n' ' ')"
      done
      ;;
    *) echo "unknown step $step"; exit 2 ;;
  esac
done
exit "$status"
