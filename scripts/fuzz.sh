#!/usr/bin/env bash
# A short fuzzing run of the image decoders, the safetensors reader and the model-file and
# checkpoint readers (CI runs it after
# scripts/test.sh, whose build/ it uses): installs loom into build-fuzz/, writes the seed
# corpora with the test binaries, builds the libFuzzer targets with clang and runs each one.
#   scripts/fuzz.sh [SECONDS per target, default 60]
# A finding leaves a crash-* file in build-fuzz/ and exits non-zero.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
build=${LOOM_BUILD_DIR:-build}  # the build of scripts/test.sh
LOOM_WITH_FUZZ=1 scripts/install-deps.sh
[ -x "$build/tests/data_tests" ] && [ -x "$build/tests/io_tests" ] \
  || { echo "fuzz.sh: $build/ has no test binaries: run scripts/test.sh first" >&2; exit 1; }

out=$PWD/build-fuzz
rm -rf "$out" && mkdir -p "$out"
cmake --install "$build" --prefix "$out/prefix" > /dev/null
LOOM_FUZZ_CORPUS=$out/decode_corpus "$build"/tests/data_tests --gtest_filter='FuzzCorpus.*' > /dev/null
LOOM_SAFETENSORS_CORPUS=$out/safetensors_corpus LOOM_MODEL_CORPUS=$out/model_file_corpus "$build"/tests/io_tests \
  --gtest_filter='SafetensorsFuzzCorpus.*:ModelFuzzCorpus.*' > /dev/null
CXX=clang++ cmake -S fuzz -B "$out/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_PREFIX_PATH="$out/prefix" > /dev/null
cmake --build "$out/build" -j "$(nproc)" > "$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }

cd "$out"
# The three targets fuzz side by side for the given seconds: on CI's two cores each gets about
# two thirds of a core, so about two thirds of the inputs it ran alone, in a third of the time.
targets=(decode safetensors model_file)
pids=()
for target in "${targets[@]}"; do
  echo "fuzz.sh: ${target}_fuzz for ${seconds} s on $(ls "${target}_corpus" | wc -l) seed inputs"
  # 1 MB inputs: deep nesting and whole small model files fit.
  "build/${target}_fuzz" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -max_len=1048576 \
    -print_final_stats=1 "${target}_corpus" > "${target}.log" 2>&1 &
  pids+=($!)
done
failed=()
for i in "${!targets[@]}"; do
  target=${targets[$i]}
  rc=0
  wait "${pids[$i]}" || rc=$?
  echo "fuzz.sh: ${target}_fuzz:"
  grep -E "^stat::number_of_executed_units|^Done|ERROR|SUMMARY" "${target}.log" || true
  [ $rc -eq 0 ] || { tail -40 "${target}.log"; failed+=("$target"); }
done
[ ${#failed[@]} -eq 0 ] || { echo "fuzz.sh: ${failed[*]} found a problem (see $out)" >&2; exit 1; }
echo "fuzz.sh: no findings"
