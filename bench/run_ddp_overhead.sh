#!/usr/bin/env bash
# DistributedDataParallel's cost over the plain model on one GPU (issue 11): loom's DDP over
# NCCL with one rank and PyTorch's DDP with one rank, each against its own plain model in
# alternating blocks, in the same run. JSON lines to OUT_DIR/ddp_overhead.jsonl, a markdown
# table on stdout.
#   bench/run_ddp_overhead.sh BUILD_DIR OUT_DIR
set -euo pipefail
build=${1:?usage: bench/run_ddp_overhead.sh BUILD_DIR OUT_DIR}
out=${2:?usage: bench/run_ddp_overhead.sh BUILD_DIR OUT_DIR}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
mkdir -p "$out"
jsonl="$out/ddp_overhead.jsonl"
: > "$jsonl"
here=$(cd "$(dirname "$0")" && pwd)
for model in seed_cnn classic_cnn resnet18; do
  for batch in 32 256; do
    iters=200
    [ "$model" = resnet18 ] && iters=60
    "$build/bench/train_step_bench" --model "$model" --batch "$batch" --device cuda --ddp \
        --iters "$iters" --warmup 20 --json >> "$jsonl"
    python3 "$here/train_step_torch.py" --model "$model" --batch "$batch" --device cuda --ddp \
        --iters "$iters" --warmup 20 2>/dev/null >> "$jsonl"
  done
done
python3 - "$jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def pick(fw, model, batch, variant):
    for r in rows:
        if r["framework"].startswith(fw) and r["model"] == model and r["batch"] == batch and r["variant"] == variant:
            return r
print("| model | batch | loom plain ms | loom DDP ms | loom overhead | PyTorch plain ms | PyTorch DDP ms | PyTorch overhead |")
print("|---|---|---|---|---|---|---|---|")
for model in ("seed_cnn", "classic_cnn", "resnet18"):
    for batch in (32, 256):
        lp, ld = pick("loom", model, batch, "plain"), pick("loom", model, batch, "ddp")
        tp, td = pick("pytorch", model, batch, "plain"), pick("pytorch", model, batch, "ddp")
        if not (lp and ld and tp and td):
            continue
        print(f"| {model} | {batch} | {lp['median_ms']:.3f} | {ld['median_ms']:.3f} | {ld['ddp_overhead_pct']:+.1f}% "
              f"| {tp['median_ms']:.3f} | {td['median_ms']:.3f} | {td['ddp_overhead_pct']:+.1f}% |")
PY
