#!/usr/bin/env bash
# Issue 34's profile of DDP at world size 1: which kernels DDP adds to a training step, and their
# time. For each model:batch, Nsight Compute records the kernels of a few warm steps of one
# train_step_bench variant at a time (--profile-variant; the timing and warm-up run unprofiled:
# --profile-from-start off), captured (graph against graph_ddp, each kernel node of the replay)
# and eager (plain against ddp); bench/kernel_diff.py then prints what each DDP variant adds.
# ncu runs kernels one at a time, so these are kernel times, not the step's overlap: they explain
# the captured overhead (device work); the eager overhead of small models is host work, which
# shows here only as the kernels it launches.
#   bench/profile_ddp.sh BUILD_DIR OUT_DIR
# From the environment: CONFIGS ("seed_cnn:32 classic_cnn:32 resnet18:32"), STEPS (2 profiled
# steps a variant), PRECISION (tf32), NCU (ncu), LIMIT_S (120 s a run), and two settings for what
# the kernels alone do not show (resnet18's captured DDP step is ~43 us slower than the kernels
# DDP adds, 2026-12-06): CACHE_CONTROL (all: ncu flushes the caches before each kernel, so each
# is timed cold; none: each finds the caches as the kernels before it left them, as in a replay,
# so a copy that evicts what the next kernels read shows in their times) and GRAPH_PROFILING
# (node: each kernel of a replay; graph: each replay as one workload, its dependencies and
# stream forks included; then only the captured pair runs).
# Writes OUT_DIR/<model>_b<batch>_<variant>.csv (ncu's) and .log (the bench's), and
# OUT_DIR/profile_ddp.md (the tables, also on stdout). Exit status 0 when every run succeeded.
set -uo pipefail
usage="usage: bench/profile_ddp.sh BUILD_DIR OUT_DIR"
here=$(cd "$(dirname "$0")" && pwd)
build=${1:?$usage}
out=${2:?$usage}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
bench="$build/bench/train_step_bench"
[ -x "$bench" ] || { echo "profile_ddp.sh: no $bench (build train_step_bench with CUDA)" >&2; exit 1; }
ncu=${NCU:-ncu}
steps=${STEPS:-2}
status=0

profile() {  # MODEL BATCH VARIANT: OUT/<model>_b<batch>_<variant>.csv
  local name="$out/$1_b$2_$3"
  timeout "${LIMIT_S:-120}" "$ncu" --clock-control none --profile-from-start off --csv \
    --cache-control "${CACHE_CONTROL:-all}" --graph-profiling "${GRAPH_PROFILING:-node}" \
    --metrics gpu__time_duration.sum --log-file "$name.csv" \
    "$bench" --model "$1" --batch "$2" --device cuda --ddp --graph --precision "${PRECISION:-tf32}" \
    --warmup 3 --iters 5 --profile-steps "$steps" --profile-variant "$3" > "$name.log" 2>&1 \
    || { echo "profile_ddp.sh: $1 batch $2 $3 failed (see $name.log, $name.csv)" >&2; return 1; }
}

{
  echo "# Kernels DDP adds at world size 1 (ncu gpu__time_duration.sum, per step, ${PRECISION:-tf32};" \
    "cache control ${CACHE_CONTROL:-all}, graph profiling ${GRAPH_PROFILING:-node})"
  pairs=("graph graph_ddp" "plain ddp")
  [ "${GRAPH_PROFILING:-node}" = graph ] && pairs=("graph graph_ddp")
  for config in ${CONFIGS:-seed_cnn:32 classic_cnn:32 resnet18:32}; do
    model=${config%%:*} batch=${config##*:}
    for pair in "${pairs[@]}"; do
      read -r base variant <<< "$pair"
      if ! profile "$model" "$batch" "$base" || ! profile "$model" "$batch" "$variant"; then
        status=1
        continue
      fi
      echo
      echo "## $model, batch $batch: $variant against $base"
      echo
      python3 "$here/kernel_diff.py" "$out/${model}_b${batch}_$base.csv" \
        "$out/${model}_b${batch}_$variant.csv" --steps "$steps" --labels "$base" "$variant" || status=1
    done
  done
} > "$out/profile_ddp.md"
cat "$out/profile_ddp.md"
exit "$status"
