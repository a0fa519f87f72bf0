#!/usr/bin/env bash
# Data-parallel scaling on this machine, loom and PyTorch DDP in the same run (issue 12): for
# seed_cnn, classic_cnn and resnet18 at 32 and 256 images per GPU, bench/scaling_torch.py and
# then loom-scaling with --compare on PyTorch's report, so that loom's speedup.png draws both.
# Each run writes OUT_DIR/{torch,loom}_<model>_b<batch>/report.{json,txt,csv}; the markdown table
# for docs/benchmarks.md goes to stdout and OUT_DIR/scaling_table.md. Builds nothing: BUILD_DIR
# must hold a CUDA build of loom-scaling.
#   bench/run_scaling.sh BUILD_DIR OUT_DIR      (GPUS default 1,2,4,8, STEPS 300, WARMUP 50,
#                                                PRECISION tf32, SCALING weak, from the environment)
#   bench/run_scaling.sh --table-only OUT_DIR   (the table again from the reports already there)
set -euo pipefail
usage="usage: bench/run_scaling.sh BUILD_DIR OUT_DIR | --table-only OUT_DIR"
here=$(cd "$(dirname "$0")" && pwd)

# NVLink multicast (NVLS) can take a host's shared GPUs out of service; every run here keeps
# it off, PyTorch's symmetric-memory use of it too.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1

models="seed_cnn classic_cnn resnet18"
batches="32 256"

# The table: one row per model, batch and GPU count, loom's and PyTorch's report side by side.
# throughput ratio = loom images/s / PyTorch images/s (above 1: loom is faster).
table() {
  python3 - "$1" "$models" "$batches" <<'PY'
import json, os, sys

out, models, batches = sys.argv[1], sys.argv[2].split(), [int(b) for b in sys.argv[3].split()]

def load(tool, model, batch):
    path = os.path.join(out, f"{tool}_{model}_b{batch}", "report.json")
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None

def ms(x):
    return "n/a" if x is None else f"{x:.3f}"

cols = ["model", "batch/GPU", "GPUs", "loom plain ms", "loom DDP ms", "loom images/s", "loom speedup",
        "loom efficiency", "loom exposed comm ms", "PyTorch plain ms", "PyTorch DDP ms", "PyTorch images/s",
        "PyTorch speedup", "loom / PyTorch images/s"]
lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
seen = []
for model in models:
    for batch in batches:
        loom, torch = load("loom", model, batch), load("torch", model, batch)
        if not loom and not torch:
            continue
        seen += [r for r in (loom, torch) if r]
        rows = {}
        for side, report in (("loom", loom), ("torch", torch)):
            for row in (report or {}).get("rows", []):
                rows.setdefault(row["world_size"], {})[side] = row

        def side(report, row):
            """plain ms, DDP ms, images/s, speedup, efficiency, exposed comm ms of one framework."""
            if report is None:
                return ["missing"] * 6
            plain = (report.get("baseline") or {}).get("median_ms")
            if row is None or not row.get("ran"):
                return [ms(plain)] + ["not run"] * 5
            return [ms(plain), ms(row["median_ms"]), f"{row['images_per_s']:.0f}",
                    f"{row['speedup']:.2f}x", f"{100 * row['efficiency']:.0f}%", ms(row.get("exposed_comm_ms"))]

        for n in sorted(rows):
            l, t = rows[n].get("loom"), rows[n].get("torch")
            ls, ts = side(loom, l), side(torch, t)
            both = l and t and l.get("ran") and t.get("ran")
            ratio = f"{l['images_per_s'] / t['images_per_s']:.2f}" if both else "n/a"
            lines.append("| " + " | ".join([model, str(batch), str(n)] + ls + ts[:4] + [ratio]) + " |")
lines.append("")
for tool in ("loom", "pytorch"):
    r = next((r for r in seen if r.get("tool") == tool), None)
    if r is None:
        continue
    v = {k: r.get("versions", {}).get(k) or "-" for k in ("framework", "cuda", "cudnn", "nccl", "driver")}
    lines.append(f"{tool}: {v['framework']}, CUDA {v['cuda']}, cuDNN {v['cudnn']}, NCCL {v['nccl']}, "
                 f"driver {v['driver']}; {r.get('gpus_present', '?')} x {r.get('gpu_name') or r.get('device')}, "
                 f"precision {r.get('precision')}, {r.get('scaling')} scaling, {r.get('date', '')}")
text = "\n".join(lines) + "\n"
with open(os.path.join(out, "scaling_table.md"), "w") as f:
    f.write(text)
sys.stdout.write(text)
PY
}

if [ "${1:-}" = "--table-only" ]; then
  out=${2:?$usage}
  table "$out"
  exit 0
fi
build=${1:?$usage}
out=${2:?$usage}
gpus=${GPUS:-1,2,4,8}
precision=${PRECISION:-tf32}
scaling=${SCALING:-weak}
bin="$build/apps/scaling/loom-scaling"
[ -x "$bin" ] || { echo "run_scaling.sh: no $bin; build the loom-scaling target first" >&2; exit 1; }
mkdir -p "$out"

failed=0
run() {  # NAME COMMAND...: stdout to OUT/NAME.log (the report itself goes to OUT/NAME/)
  local name=$1; shift
  echo "== $name" >&2
  if ! "$@" > "$out/$name.log" 2>&1; then
    echo "   failed (see $out/$name.log)" >&2
    failed=1
  fi
}

for model in $models; do
  for batch in $batches; do
    steps=${STEPS:-300}
    warmup=${WARMUP:-50}
    if [ "$model" = resnet18 ] && [ "$batch" -ge 256 ]; then
      steps=$(( steps < 100 ? steps : 100 ))
      warmup=$(( warmup < 20 ? warmup : 20 ))
    fi
    common=(--model "$model" --gpus "$gpus" --batch-per-gpu "$batch" --steps "$steps" --warmup "$warmup"
            --precision "$precision" --scaling "$scaling" --skip-missing)
    rm -f "$out/torch_${model}_b${batch}/report.json" "$out/loom_${model}_b${batch}/report.json"
    run "torch_${model}_b${batch}" python3 "$here/scaling_torch.py" "${common[@]}" \
        --out "$out/torch_${model}_b${batch}"
    compare=()  # loom's chart draws PyTorch beside it when PyTorch's run wrote its report
    if [ -f "$out/torch_${model}_b${batch}/report.json" ]; then
      compare=(--compare "$out/torch_${model}_b${batch}/report.json")
    fi
    run "loom_${model}_b${batch}" "$bin" "${common[@]}" "${compare[@]}" --out "$out/loom_${model}_b${batch}"
  done
done
table "$out"
exit $failed
