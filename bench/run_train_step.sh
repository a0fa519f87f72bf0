#!/usr/bin/env bash
# Issue 13's training-step table on the GPU machine, loom and PyTorch in the same run: seed_cnn,
# classic_cnn and resnet18 at batch 32 and 256 on the GPU (loom eager, captured, bf16 and
# channels-last, NCHW and NHWC, where train_step_bench has them; PyTorch eager, CUDA graph and bf16 + channels-last + graph), and
# two rows on 2 CPU cores (taskset -c 0,1). JSON lines to $OUT/train_step.jsonl, then a markdown
# table. About 2 minutes on an H200, most of it resnet18 at batch 256 (~0.25 s for one step of
# each of the six variants, 220 times). Then PyTorch's best, --mode compile (torch.compile +
# bf16 + channels-last + fused Adam in one CUDA graph: 5-35 s of compiling per shape, reported
# apart), and issue 35's table (bench/step_table.py). COMPILE=0 leaves compile out;
# COMPILE_MODE=default compiles without max-autotune (faster to compile). DEADLINE (epoch
# seconds) bounds the compile rows: one starts only with a minute left and is stopped 20 s before
# it, so that the tables are always printed (a 570 s device call ran out inside them once).
# CONFIGS ("model:batch ...", default the six rows) runs only those GPU rows, their compiled rows
# too, e.g. the ones a call ran out of time for; CPU_ROWS=0 leaves out the two CPU rows.
#   bench/run_train_step.sh BUILD_DIR
set -euo pipefail
build=${1:-build-gpu}
out=${OUT:-.}/train_step.jsonl
: > "$out"
bin="$build/bench/train_step_bench"
help=$("$bin" --help 2>&1 || true)
graph=""; bf16=""  # flags the lead's train_step_bench may not have yet
if grep -q -- '--graph' <<< "$help"; then graph="--graph"; fi
if grep -q -- '--conv-benchmark' <<< "$help"; then graph="$graph --conv-benchmark"; fi
if grep -q -- '--precision' <<< "$help"; then bf16="--precision bf16 $graph"; fi
run() {  # device model batch iters [taskset prefix]
  local dev=$1 model=$2 batch=$3 iters=$4; shift 4
  local args=(--model "$model" --batch "$batch" --device "$dev" --iters "$iters")
  "$@" "$bin" "${args[@]}" --json >> "$out"
  if [ "$dev" = cuda ]; then
    if [ -n "$graph" ]; then "$bin" "${args[@]}" $graph --json >> "$out"; fi
    if [ -n "$bf16" ]; then "$bin" "${args[@]}" $bf16 --json >> "$out"; fi
    if grep -q -- '--channels-last' <<< "$help"; then
      "$bin" "${args[@]}" $graph --channels-last --json >> "$out"
      "$bin" "${args[@]}" $bf16 --channels-last --json >> "$out"
    fi
  fi
  "$@" python3 bench/train_step_torch.py "${args[@]}" --mode all $( [ "$dev" = cuda ] && echo --cudnn-benchmark ) \
       $( [ "$dev" = cpu ] && echo --threads 2 ) >> "$out"
}
read -r -a configs <<< "${CONFIGS:-seed_cnn:32 seed_cnn:256 classic_cnn:32 classic_cnn:256 resnet18:32 resnet18:256}"
for config in "${configs[@]}"; do
  run cuda "${config%%:*}" "${config##*:}" 200
done
if [ "${CPU_ROWS:-1}" != 0 ]; then
  run cpu seed_cnn 32 50 taskset -c 0,1
  run cpu classic_cnn 32 20 taskset -c 0,1
fi
# After every other row, so a slow or failing compile costs only its own rows.
if [ "${COMPILE:-1}" != 0 ]; then
  for config in "${configs[@]}"; do
    model=${config%%:*} batch=${config##*:}
    left=$(( ${DEADLINE:-$(( $(date +%s) + 100000 ))} - $(date +%s) ))
    if [ "$left" -lt 60 ]; then
      echo "run_train_step.sh: no time left for torch.compile of $model at batch $batch" >&2
      continue
    fi
    timeout $(( left - 20 )) python3 bench/train_step_torch.py --model "$model" --batch "$batch" \
      --device cuda --iters 200 --mode compile \
      --compile-mode "${COMPILE_MODE:-max-autotune-no-cudagraphs}" >> "$out" \
      || echo "run_train_step.sh: torch.compile failed or ran out of time for $model at batch $batch" >&2
  done
fi
python3 bench/summarize.py "$out"
echo
echo "## Issue 35: loom against PyTorch's best (medians, ms)"
python3 bench/step_table.py "$out"
