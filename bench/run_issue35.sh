#!/usr/bin/env bash
# Issue 35's measurements on one GPU in one call (about 7 minutes on an H200 once built):
#  (a) time to accuracy: `loom-catdog train --recipe fast` on the cat/dog photographs for 5
#      seeds, each timed from its start (decoding included) to its first epoch at 90% validation
#      accuracy (bench/time_to_accuracy.py; target <= 10 s);
#  (b) the training-step table against PyTorch's best, torch.compile included
#      (bench/run_train_step.sh, then bench/step_table.py).
# Builds loom-catdog and train_step_bench (CUDA, Release) in BUILD_DIR when they are missing.
#   bench/run_issue35.sh BUILD_DIR OUT_DIR [DATA_DIR]
# From the environment: SEEDS ("1 2 3 4 5"), TARGET (0.9), TTA_ARGS (more train flags, e.g.
# "--epochs 10 --batch-size 256"), SKIP_STEPS=1 (only (a)), SKIP_TTA=1 (only (b)), BUDGET_S (560:
# the step table's torch.compile rows stop in time for the tables to be printed within it);
# CONFIGS and CPU_ROWS=0 choose the step table's rows (bench/run_train_step.sh).
set -uo pipefail
usage="usage: bench/run_issue35.sh BUILD_DIR OUT_DIR [DATA_DIR]"
here=$(cd "$(dirname "$0")" && pwd)
build=${1:?$usage}
out=${2:?$usage}
data=${3:-}
if [ -z "$data" ]; then  # the repository's shared/ (a device machine's copy), else its sibling
  for d in "$here/../shared/data/cats_dogs" "$here/../../shared/data/cats_dogs"; do
    [ -d "$d" ] && data=$d && break
  done
fi
[ -d "$data" ] || [ "${SKIP_TTA:-0}" = 1 ] \
  || { echo "run_issue35.sh: no cat/dog data folder; give DATA_DIR" >&2; exit 1; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
status=0
export DEADLINE=${DEADLINE:-$(( $(date +%s) + ${BUDGET_S:-560} ))}
if [ ! -x "$build/apps/catdog/loom-catdog" ] || [ ! -x "$build/bench/train_step_bench" ]; then
  if ! { cmake -S "$here/.." -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLOOM_CUDA=ON \
           -DLOOM_BUILD_BENCH=ON && cmake --build "$build" -j "$(nproc)" --target loom-catdog train_step_bench; } \
         > "$out/build.log" 2>&1; then
    echo "run_issue35.sh: the build failed (see $out/build.log):" >&2
    tail -20 "$out/build.log" >&2
    exit 1
  fi
fi

build=$(cd "$build" && pwd)  # run_train_step.sh runs from the repository's root

if [ "${SKIP_TTA:-0}" != 1 ]; then
  read -r -a extra <<< "${TTA_ARGS:-}"
  read -r -a seeds <<< "${SEEDS:-1 2 3 4 5}"
  echo "== time to ${TARGET:-0.9} with --recipe fast (${#seeds[@]} seeds)" >&2
  python3 "$here/time_to_accuracy.py" --target "${TARGET:-0.9}" --seeds "${seeds[@]}" \
    --out "$out/time_to_accuracy" -- "$build/apps/catdog/loom-catdog" train --recipe fast \
    --data "$data" --device cuda "${extra[@]}" | tee "$out/time_to_accuracy.jsonl" || status=1
fi
if [ "${SKIP_STEPS:-0}" != 1 ]; then
  echo "== training steps, loom and PyTorch (compile included)" >&2
  (cd "$here/.." && OUT="$out" bash bench/run_train_step.sh "$build") | tee "$out/train_step.md" \
    || status=1
fi
exit "$status"
