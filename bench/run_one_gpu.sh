#!/usr/bin/env bash
# Issue 34's one-GPU measurements in one call of about seven minutes:
#  (a) loom-scaling's world-1 rows (the plain step beside DDP over one rank, captured: --graph
#      auto) in tf32 and in bf16 with channels-last, for seed_cnn, classic_cnn and resnet18 at
#      batch 32 and 256, beside PyTorch's bench/scaling_torch.py at world 1 in its best mode
#      (torch.compile, cudnn.benchmark and the fused Adam; bf16 and channels-last on the bf16
#      rows): one table row per (model, batch, precision) with both (bench/run_scaling.sh);
#  (b) DDP's overhead at world 1 for the six rows in eager and in captured steps against the
#      targets, <= 3% and <= 1% (bench/run_ddp_overhead.sh), PyTorch's eager DDP beside it.
# loom's runs come first and PyTorch's after, so that a slow compile costs PyTorch's rows, never
# loom's; each phase gets a share of the time left (DEADLINE), each run its own limit. Builds
# loom-scaling and train_step_bench (CUDA, Release) in BUILD_DIR when they are missing; that
# time counts against the budget too.
#   bench/run_one_gpu.sh BUILD_DIR OUT_DIR
# From the environment: BUDGET_S (420: the whole run, a build included; DEADLINE, epoch
# seconds, overrides it), STEPS (200; resnet18 at 256: 100) and WARMUP (30) of each loom-scaling
# and scaling_torch.py run, CONFIGS (the six model:batch pairs), TORCH_ARGS (--compile),
# FRAMEWORKS ("loom torch"; one of them runs only its phases, e.g. PyTorch's rows that an
# earlier call had no time left for: FRAMEWORKS=torch CONFIGS="resnet18:32 resnet18:256").
# Writes OUT_DIR/scaling (each run's report folder and log, scaling_table.md), OUT_DIR/ddp (each
# run's log, ddp_overhead.jsonl, ddp_overhead.md), clocks.csv in each, and OUT_DIR/tables.md;
# the tables also go to stdout. The exit status is 0 when every run succeeded.
set -uo pipefail
usage="usage: bench/run_one_gpu.sh BUILD_DIR OUT_DIR"
here=$(cd "$(dirname "$0")" && pwd)
build=${1:?$usage}
out=${2:?$usage}
mkdir -p "$out/scaling" "$out/ddp"
final=${DEADLINE:-$(( $(date +%s) + ${BUDGET_S:-420} ))}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export CONFIGS=${CONFIGS:-seed_cnn:32 seed_cnn:256 classic_cnn:32 classic_cnn:256 resnet18:32 resnet18:256}
status=0

# phase NAME SHARE: the phase may run until SHARE percent of the time left (keeping 15 s for the
# tables) has passed; its runs see that as their DEADLINE.
phase() {
  local now left
  now=$(date +%s)
  left=$(( final - now - 15 ))
  [ "$left" -gt 0 ] || left=0
  export DEADLINE=$(( now + left * $2 / 100 ))
  echo "== $1: until $(date -u -d "@$DEADLINE" +%H:%M:%S) ($(( DEADLINE - now )) s of $left left)" >&2
}

if [ ! -x "$build/apps/scaling/loom-scaling" ] || [ ! -x "$build/bench/train_step_bench" ]; then
  phase build 70
  if ! { cmake -S "$here/.." -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLOOM_CUDA=ON \
           && timeout $(( DEADLINE - $(date +%s) )) \
                cmake --build "$build" -j "$(nproc)" --target loom-scaling train_step_bench; } \
         > "$out/build.log" 2>&1; then
    echo "run_one_gpu.sh: the build failed or ran out of time (see $out/build.log):" >&2
    tail -20 "$out/build.log" >&2
    exit 1
  fi
fi

chosen=" ${FRAMEWORKS:-loom torch} "
runs() { [[ $chosen == *" $1 "* ]]; }  # FRAMEWORK: its phases are to run

if runs loom; then
  phase "loom: DDP at world 1, eager and captured" 25
  FRAMEWORKS=loom "$here/run_ddp_overhead.sh" "$build" "$out/ddp" > /dev/null || status=1
fi

# Both precisions' loom runs, then PyTorch's (its best first: bf16, channels-last).
scaling() {  # TAG FRAMEWORKS [VARIABLE=VALUE ...]: one bench/run_scaling.sh pass at world 1
  local tag=$1 frameworks=$2
  shift 2
  env "$@" GPUS=1 TAG="$tag" FRAMEWORKS="$frameworks" STEPS="${STEPS:-200}" WARMUP="${WARMUP:-30}" \
    WARMUP_SECONDS=1 RUN_TIMEOUT_S=150 TORCH_ARGS="${TORCH_ARGS:---compile}" \
    "$here/run_scaling.sh" "$build" "$out/scaling" > /dev/null || status=1
}
if runs loom; then
  phase "loom: world-1 rows, tf32 and bf16 channels-last" 45
  scaling tf32 loom PRECISION=tf32
  scaling bf16_cl loom PRECISION=bf16 CHANNELS_LAST=1
fi
if runs torch; then
  phase "PyTorch: world-1 rows in its best mode" 85
  scaling bf16_cl torch PRECISION=bf16 CHANNELS_LAST=1
  scaling tf32 torch PRECISION=tf32
  phase "PyTorch: DDP at world 1, eager" 100
  FRAMEWORKS=torch "$here/run_ddp_overhead.sh" "$build" "$out/ddp" > /dev/null || status=1
fi

{
  echo "## loom-scaling and PyTorch (scaling_torch.py ${TORCH_ARGS:---compile}) at world 1"
  echo
  TAGS="tf32 bf16_cl" "$here/run_scaling.sh" --table-only "$out/scaling"
  echo
  echo "## DDP's overhead at world 1 (targets: <= 3% eager, <= 1% captured)"
  echo
  "$here/run_ddp_overhead.sh" --table-only "$out/ddp"
} | tee "$out/tables.md"
exit "$status"
