#!/usr/bin/env bash
# Issue 3's benchmark on the GPU machine, loom and PyTorch in the same run: training-step time
# of seed_cnn (batch 32) and classic_cnn (batch 256) on the GPU, and on 2 CPU cores
# (taskset -c 0,1). Writes JSON lines to $OUT/train_step.jsonl and prints a markdown table.
#   bench/run_train_step.sh BUILD_DIR
set -euo pipefail
build=${1:-build-gpu}
out=${OUT:-.}/train_step.jsonl
: > "$out"
bin="$build/bench/train_step_bench"
run() {  # device model batch iters [taskset prefix]
  local dev=$1 model=$2 batch=$3 iters=$4; shift 4
  "$@" "$bin" --model "$model" --batch "$batch" --device "$dev" --iters "$iters" --json >> "$out"
  "$@" python3 bench/train_step_torch.py --model "$model" --batch "$batch" --device "$dev" \
       --iters "$iters" $( [ "$dev" = cpu ] && echo --threads 2 ) >> "$out"
}
run cuda seed_cnn 32 200
run cuda classic_cnn 256 200
run cuda resnet18 32 100
run cpu seed_cnn 32 50 taskset -c 0,1
run cpu classic_cnn 32 20 taskset -c 0,1
python3 bench/summarize.py "$out"
