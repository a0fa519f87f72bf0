#!/usr/bin/env bash
# The README's test command: installs what is missing, builds loom and its tests, runs ctest.
#   scripts/test.sh              the full build (CUDA too when a toolkit is found); all tests,
#                                gpu ones skip with a reason where there is no GPU
#   scripts/test.sh --sanitize   a CPU-only build under AddressSanitizer + UBSan; cpu tests
#   scripts/test.sh --tsan       a CPU-only build under ThreadSanitizer; the distributed tests
# Extra arguments after the mode go to ctest (for instance -L gpu).
set -euo pipefail
cd "$(dirname "$0")/.."

mode=full
case "${1:-}" in
  --sanitize) mode=sanitize; shift ;;
  --tsan) mode=tsan; shift ;;
esac

scripts/install-deps.sh

# Runs one phase (configure, build, ctest) and prints its time, a failed one's too; returns its
# status, so that set -e still ends the script there.
timed() {
  local phase=$1 start=$SECONDS rc=0
  shift
  "$@" || rc=$?
  echo "test.sh ($mode): $phase took $((SECONDS - start)) s"
  return "$rc"
}

jobs=$(nproc)
# The sanitizer builds compile at -O1 with line tables only (-g1): reports still name file and
# line, and the compile is ~2.5x faster than RelWithDebInfo's -O2 -g (48 s against 19 s for one
# test file under ASan + UBSan), which is most of CI's time.
sanitizer_flags="-O1 -g1 -DNDEBUG"
if [ "$mode" = sanitize ]; then
  build=build-asan
  timed configure cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLOOM_CUDA=OFF \
                        "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$sanitizer_flags" -DLOOM_UNITY_BUILD=ON \
                        -DLOOM_SANITIZE=ON -DLOOM_BUILD_BENCH=OFF -DLOOM_GPU_TESTS=OFF
  # The five longest CPU trainings (about 340 s of 2-core CI time under ASan, and resnet18 at
  # 96 px of --recipe fast past its 180 s timeout) run in the plain build only: the fit,
  # checkpoint and data-loader code they go through is what the rest of the cpu suite
  # exercises here in seconds.
  label=(-L cpu -E '^(FashionFallback\.Trains|Zoo\.ClassicCnnMemorises|ScalingTimeToAccuracy\.|FastRecipe\.TrainsOnTheCpu)')
elif [ "$mode" = tsan ]; then
  build=build-tsan
  timed configure cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLOOM_CUDA=OFF \
                        "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$sanitizer_flags" -DLOOM_UNITY_BUILD=ON \
                        -DLOOM_TSAN=ON -DLOOM_BUILD_BENCH=OFF -DLOOM_BUILD_APPS=OFF -DLOOM_GPU_TESTS=OFF
  label=(-L distributed)
  targets=(--target distributed_suite)
  # libgomp is not instrumented, so TSan cannot see OpenMP's own synchronisation and would
  # report every parallel loop; with one OpenMP thread a loop runs on its caller and what TSan
  # checks is loom's own threads: the ranks, the backends' workers and watchdogs.
  export OMP_NUM_THREADS=1
  export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/scripts/tsan.supp"
else
  build=build
  timed configure cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLOOM_UNITY_BUILD=ON
  label=()
fi
[ -v targets ] || targets=()
timed build cmake --build "$build" -j "$jobs" "${targets[@]}"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
timed ctest ctest --test-dir "$build" --output-on-failure -j "$jobs" "${label[@]}" "$@"
