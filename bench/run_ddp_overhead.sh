#!/usr/bin/env bash
# DistributedDataParallel's cost over the plain model on one GPU (issues 11 and 34): loom's DDP
# over NCCL with one rank, in eager steps and in captured ones (train_step_bench --ddp --graph:
# plain, ddp, graph and graph_ddp in alternating blocks; ddp against plain, graph_ddp against
# graph), beside the targets (<= 3% eager, <= 1% captured), and PyTorch's DDP with one rank
# against its plain model (train_step_torch.py --ddp, eager). Each run's output goes to
# OUT_DIR/<run>.log, their JSON lines to OUT_DIR/ddp_overhead.jsonl, the markdown table to stdout
# and OUT_DIR/ddp_overhead.md. Builds nothing: BUILD_DIR must hold a CUDA build of
# train_step_bench.
#   bench/run_ddp_overhead.sh BUILD_DIR OUT_DIR
#   bench/run_ddp_overhead.sh --table-only OUT_DIR
# From the environment: CONFIGS (the six model:batch pairs), FRAMEWORKS ("loom torch": loom's
# runs first, then PyTorch's), ITERS (200; resnet18 RESNET_ITERS, 60), WARMUP (20), RUN_TIMEOUT_S
# (180, each run), DEADLINE (epoch seconds: runs that would end past it are cut short or not
# started, and say so), CLOCKS_CSV (OUT_DIR/clocks.csv).
set -uo pipefail
usage="usage: bench/run_ddp_overhead.sh BUILD_DIR OUT_DIR | --table-only OUT_DIR"
here=$(cd "$(dirname "$0")" && pwd)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
configs=${CONFIGS:-seed_cnn:32 seed_cnn:256 classic_cnn:32 classic_cnn:256 resnet18:32 resnet18:256}

# The table from every run's JSON lines: one row per model and batch.
table() {
  local out=$1
  cat "$out"/ddp_*.log 2>/dev/null | grep '^{' > "$out/ddp_overhead.jsonl"
  python3 - "$out" "$configs" <<'PY'
import json, os, sys

out, configs = sys.argv[1], [c.partition(":")[::2] for c in sys.argv[2].split()]
rows = []
for line in open(os.path.join(out, "ddp_overhead.jsonl")):
    try:
        rows.append(json.loads(line))
    except ValueError:
        pass

def pick(framework, model, batch, variant):
    return next((r for r in rows if r.get("framework", "").startswith(framework) and r.get("model") == model
                 and str(r.get("batch")) == batch and r.get("variant") == variant), None)

def ms(r):
    return f"{r['median_ms']:.3f}" if r else "missing"

def overhead(r, target):
    if not r or r.get("ddp_overhead_pct") is None:
        return ["missing", "-"]
    pct = r["ddp_overhead_pct"]
    return [f"{pct:+.2f}%", "met" if pct <= target else "missed"]

cols = ["model", "batch", "loom plain ms", "loom DDP ms", "eager overhead", "<= 3%",
        "loom graph ms", "loom graph DDP ms", "captured overhead", "<= 1%",
        "PyTorch plain ms", "PyTorch DDP ms", "PyTorch overhead"]
lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
for model, batch in configs:
    lp, ld = pick("loom", model, batch, "plain"), pick("loom", model, batch, "ddp")
    lg, lgd = pick("loom", model, batch, "graph"), pick("loom", model, batch, "graph_ddp")
    tp, td = pick("pytorch", model, batch, "plain"), pick("pytorch", model, batch, "ddp")
    torch_pct = f"{td['ddp_overhead_pct']:+.2f}%" if td and td.get("ddp_overhead_pct") is not None else "-"
    lines.append("| " + " | ".join([model, batch, ms(lp), ms(ld)] + overhead(ld, 3.0) + [ms(lg), ms(lgd)]
                                   + overhead(lgd, 1.0) + [ms(tp) if tp else "-", ms(td) if td else "-", torch_pct])
                 + " |")
r = next((r for r in rows if r.get("framework") == "loom"), None)
lines += ["", "loom: train_step_bench --ddp --graph, NCCL with one rank, precision tf32, "
          f"iters {r.get('iters') if r else '?'}; overhead = DDP's median step / its reference's - 1 "
          "(eager: the plain step, captured: the captured plain step), the variants timed in alternating blocks"]
text = "\n".join(lines) + "\n"
with open(os.path.join(out, "ddp_overhead.md"), "w") as f:
    f.write(text)
sys.stdout.write(text)
PY
}

if [ "${1:-}" = "--table-only" ]; then
  table "${2:?$usage}"
  exit $?
fi
build=${1:?$usage}
out=${2:?$usage}
bench="$build/bench/train_step_bench"
[ -x "$bench" ] || { echo "run_ddp_overhead.sh: no $bench; build the train_step_bench target first" >&2; exit 1; }
mkdir -p "$out"
run_timeout=${RUN_TIMEOUT_S:-180}
clocks_csv=${CLOCKS_CSV:-$out/clocks.csv}
placement=""
# shellcheck source=bench/run_lib.sh
. "$here/run_lib.sh"

for framework in ${FRAMEWORKS:-loom torch}; do
  for config in $configs; do
    model=${config%%:*}
    batch=${config##*:}
    iters=${ITERS:-200}
    [ "$model" = resnet18 ] && iters=${RESNET_ITERS:-60}
    common=(--model "$model" --batch "$batch" --device cuda --ddp --iters "$iters" --warmup "${WARMUP:-20}")
    if [ "$framework" = loom ]; then
      run "ddp_loom_${model}_b${batch}" 0 "$bench" "${common[@]}" --graph --json
    else
      run "ddp_torch_${model}_b${batch}" 0 python3 "$here/train_step_torch.py" "${common[@]}"
    fi
  done
done
table "$out"
exit "$failed"
