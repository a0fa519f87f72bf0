#!/usr/bin/env bash
# Collective bandwidth on the GPU machine, loom and PyTorch in the same run over the same sizes:
# for each collective, loom over NCCL (world 1, and all GPUs when more than one is visible),
# loom's threads backend with 2 and 4 ranks sharing cuda:0, and torch.distributed over NCCL
# (world 1, and torchrun over all GPUs). Builds nothing: BUILD_DIR must hold a CUDA build of
# the collectives_bench target. Writes one nccl-tests-style text file per run to OUT_DIR
# (stderr beside it as .err) and OUT_DIR/summary.md, loom's and PyTorch's rows side by side.
#   bench/run_collectives.sh BUILD_DIR OUT_DIR [SIZES]   (SIZES default 8B:256MB;
#                                                         ITERS, WARMUP from the environment)
set -uo pipefail
usage="usage: bench/run_collectives.sh BUILD_DIR OUT_DIR [SIZES]"
build=${1:?$usage}
out=${2:?$usage}
sizes=${3:-8B:256MB}
iters=${ITERS:-20}
warmup=${WARMUP:-5}
here=$(cd "$(dirname "$0")" && pwd)
bin="$build/bench/collectives_bench"
[ -x "$bin" ] || { echo "run_collectives.sh: no $bin; build the collectives_bench target first" >&2; exit 1; }

# NVLink multicast (NVLS) can take a host's shared GPUs out of service; every run here keeps
# it off, PyTorch's symmetric-memory use of it too.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1

gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
[ "${gpus:-0}" -ge 1 ] || { echo "run_collectives.sh: no GPU visible (nvidia-smi -L)" >&2; exit 1; }
mkdir -p "$out"

failed=0
run() {  # NAME COMMAND...: stdout to OUT/NAME.txt, stderr to OUT/NAME.err
  local name=$1; shift
  echo "== $name" >&2
  "$@" > "$out/$name.txt" 2> "$out/$name.err"
  local rc=$?
  # 3 is the benches' "#wrong > 0": the rows are still worth keeping.
  if [ $rc -ne 0 ]; then echo "   exit $rc (see $out/$name.err)" >&2; failed=1; fi
}

worlds="1"
[ "$gpus" -gt 1 ] && worlds="1 $gpus"
for op in all_reduce broadcast all_gather reduce_scatter; do
  common=(--op "$op" --sizes "$sizes" --iters "$iters" --warmup "$warmup")
  for w in $worlds; do
    run "loom_nccl_w${w}_$op" "$bin" --backend nccl --world-size "$w" "${common[@]}"
    if [ "$w" -eq 1 ]; then
      run "torch_nccl_w1_$op" python3 "$here/collectives_torch.py" "${common[@]}"
    else
      run "torch_nccl_w${w}_$op" torchrun --standalone --nproc_per_node="$w" \
          "$here/collectives_torch.py" "${common[@]}"
    fi
  done
  for w in 2 4; do
    run "loom_threads_w${w}_$op" "$bin" --backend threads --device cuda --world-size "$w" "${common[@]}"
  done
done

# summary.md: per collective and NCCL world size, each size's time, busbw and #wrong of both.
{
  echo "| op | ranks | size (B) | loom us | PyTorch us | loom busbw | PyTorch busbw | PyTorch / loom time | #wrong loom, PyTorch |"
  echo "|---|---|---|---|---|---|---|---|---|"
  for op in all_reduce broadcast all_gather reduce_scatter; do
    for w in $worlds; do
      awk -v op="$op" -v w="$w" '
        /^#/ || NF != 9 { next }
        FILENAME == ARGV[1] { t[$1] = $6; b[$1] = $8; e[$1] = $9; next }
        ($1 in t) { printf "| %s | %s | %s | %s | %s | %s | %s | %.2f | %s, %s |\n",
                      op, w, $1, t[$1], $6, b[$1], $8, $6 / t[$1], e[$1], $9 }' \
        "$out/loom_nccl_w${w}_$op.txt" "$out/torch_nccl_w${w}_$op.txt"
    done
  done
  echo
  for f in loom torch; do
    echo "$f: $(grep -h -m1 '^# NCCL' "$out/${f}_nccl_w1_all_reduce.txt" 2>/dev/null | cut -c3-)"
  done
} > "$out/summary.md"
cat "$out/summary.md"
exit $failed
