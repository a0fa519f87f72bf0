#!/usr/bin/env bash
# Data-parallel scaling on this machine, loom and PyTorch DDP in the same run (issue 12): for each
# model:batch of CONFIGS, bench/scaling_torch.py (a process per rank, torch.multiprocessing) and
# then loom-scaling with --launch processes (a process per rank, as PyTorch: finding F10 of
# ../shared/reviews/nccl-multirank.md) and --compare on PyTorch's report, so that loom's
# speedup.png draws both; for each model:batch of THREADS_CONFIGS, loom-scaling once more with
# --launch threads (a thread per rank in one process) at THREADS_GPUS, for comparison. Every row
# of the table names its launch. Each run writes OUT_DIR/<run>/report.{json,txt,csv}
# (torch_<model>_b<batch>, loom_<model>_b<batch>, loom_threads_<model>_b<batch>) and
# OUT_DIR/<run>.log; nvidia-smi's clocks, power and temperature of every GPU before and after
# each run go to CLOCKS_CSV. The markdown table for docs/benchmarks.md goes to stdout and
# OUT_DIR/scaling_table.md. Builds nothing: BUILD_DIR must hold a CUDA build of loom-scaling.
#   bench/run_scaling.sh BUILD_DIR OUT_DIR
#   bench/run_scaling.sh --table-only OUT_DIR   (the table again from the reports already there)
# From the environment: GPUS (1,2,4,8), STEPS (300), WARMUP (50), PRECISION (tf32), SCALING
# (weak), CHANNELS_LAST (1: both frameworks channels-last), LOOM_ARGS and TORCH_ARGS (more flags
# for loom-scaling and scaling_torch.py, e.g. TORCH_ARGS=--compile: PyTorch at its best), TAG (a
# suffix for the run names, so that runs of another precision sit beside these: loom_<model>_b<batch>_<TAG>;
# --table-only reads TAGS, several), FRAMEWORKS ("torch loom": either alone runs only its side; the
# other side's report, if there, stays), WARMUP_SECONDS (loom-scaling's, default its own), CONFIGS ("seed_cnn:32 seed_cnn:256 classic_cnn:32 classic_cnn:256 resnet18:32
# resnet18:256"), LAUNCH (processes: loom's launch beside PyTorch), THREADS_CONFIGS (""),
# THREADS_GPUS (the largest of GPUS), RUN_TIMEOUT_S (900, each run), DEADLINE (epoch seconds:
# runs that would end past it are cut short or not started, and say so), CLOCKS_CSV
# (OUT_DIR/clocks.csv), PLACEMENT_SAMPLES (a file: while the first loom --launch processes run
# runs, nvidia-smi --query-compute-apps is sampled into it and the rank processes' pids, with the
# GPU each should be on, into FILE.pids; bench/run_collectives.sh --check-placement judges them).
set -uo pipefail
usage="usage: bench/run_scaling.sh BUILD_DIR OUT_DIR | --table-only OUT_DIR"
here=$(cd "$(dirname "$0")" && pwd)

# NVLink multicast (NVLS) can take a host's shared GPUs out of service; every run here keeps
# it off, PyTorch's and NVSHMEM's use of it too.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

configs=${CONFIGS:-seed_cnn:32 seed_cnn:256 classic_cnn:32 classic_cnn:256 resnet18:32 resnet18:256}
threads_configs=${THREADS_CONFIGS:-}
suffix=${TAG:+_$TAG}

# The table: one row per model, batch, launch and GPU count, loom's and PyTorch's report side by
# side, for each tag of TAGS (default TAG). loom / PyTorch images/s above 1: loom is faster.
table() {
  python3 - "$1" "$configs $threads_configs" "${TAGS-${TAG:-}}" <<'PY'
import json, os, sys

out, configs = sys.argv[1], []
tags = sys.argv[3].split() or [""]
for c in sys.argv[2].split():
    model, _, batch = c.partition(":")
    if (model, batch) not in configs:
        configs.append((model, batch))

def load(run):
    try:
        with open(os.path.join(out, run, "report.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None

def ms(x):
    return "n/a" if x is None else f"{x:.3f}"

cols = ["model", "batch/GPU", "precision", "GPUs", "loom launch", "loom mode", "loom plain ms", "loom DDP ms", "loom images/s",
        "loom speedup", "loom efficiency", "loom comm ms", "loom exposed comm ms", "PyTorch launch", "PyTorch mode",
        "PyTorch plain ms", "PyTorch DDP ms", "PyTorch images/s", "PyTorch speedup",
        "loom / PyTorch images/s", "differ (loom, PyTorch)"]
lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
seen = []

def side(report, row):
    """plain ms, DDP ms, images/s, speedup, efficiency, comm ms, exposed ms of one framework."""
    if report is None:
        return ["missing"] * 7
    plain = (report.get("baseline") or {}).get("median_ms")
    if row is None or not row.get("ran"):
        return [ms(plain)] + ["not run"] * 6
    return [ms(plain), ms(row["median_ms"]), f"{row['images_per_s']:.0f}", f"{row['speedup']:.2f}x",
            f"{100 * row['efficiency']:.0f}%", ms(row.get("comm_ms")), ms(row.get("exposed_comm_ms"))]

def rows_of(report):
    return {r["world_size"]: r for r in (report or {}).get("rows", [])}

def precision(*reports):
    r = next((r for r in reports if r), {})
    return (r.get("precision") or "?") + (", channels-last" if r.get("channels_last") else "")

def mode(row):
    return row.get("step_mode", "-") if row else "-"

for model, batch, tag in [(m, b, t) for m, b in configs for t in tags]:
    sfx = f"_{tag}" if tag else ""
    torch = load(f"torch_{model}_b{batch}{sfx}")
    for run in (f"loom_{model}_b{batch}{sfx}", f"loom_threads_{model}_b{batch}{sfx}"):
        loom = load(run)
        if not loom and not (torch and run == f"loom_{model}_b{batch}{sfx}"):
            continue
        seen += [r for r in (loom, torch) if r and r not in seen]
        lr, tr = rows_of(loom), rows_of(torch)
        launch = (loom or {}).get("launch", "processes" if "threads" not in run else "threads")
        worlds = sorted(lr) if "threads" in run else sorted(set(lr) | set(tr))
        for n in worlds:
            l, t = lr.get(n), tr.get(n)
            ls, ts = side(loom, l), side(torch, t)
            both = l and t and l.get("ran") and t.get("ran")
            ratio = f"{l['images_per_s'] / t['images_per_s']:.2f}" if both else "n/a"
            differ = f"{l.get('differing_ranks', '-') if l else '-'}, {t.get('differing_ranks', '-') if t else '-'}"
            lines.append("| " + " | ".join([model, batch, precision(loom, torch), str(n), launch, mode(l)] + ls
                                           + [(torch or {}).get("launch", "-"), mode(t)] + ts[:4] + [ratio, differ])
                         + " |")
lines.append("")
for tool in ("loom", "pytorch"):
    r = next((r for r in seen if r.get("tool") == tool), None)
    if r is None:
        continue
    v = {k: r.get("versions", {}).get(k) or "-" for k in ("framework", "cuda", "cudnn", "nccl", "driver")}
    lines.append(f"{tool}: {v['framework']}, CUDA {v['cuda']}, cuDNN {v['cudnn']}, NCCL {v['nccl']}, "
                 f"driver {v['driver']}; {r.get('gpus_present', '?')} x {r.get('gpu_name') or r.get('device')}, "
                 f"precision {r.get('precision')}, {r.get('scaling')} scaling, steps {r.get('steps')}, "
                 f"warmup {r.get('warmup')}, {r.get('date', '')}")
text = "\n".join(lines) + "\n"
with open(os.path.join(out, "scaling_table.md"), "w") as f:
    f.write(text)
sys.stdout.write(text)
PY
}

if [ "${1:-}" = "--table-only" ]; then
  out=${2:?$usage}
  table "$out"
  exit $?
fi
build=${1:?$usage}
out=${2:?$usage}
gpus=${GPUS:-1,2,4,8}
precision=${PRECISION:-tf32}
scaling=${SCALING:-weak}
launch=${LAUNCH:-processes}
largest=$(echo "$gpus" | tr ',' '\n' | grep . | sort -n | tail -1)
threads_gpus=${THREADS_GPUS:-$largest}
run_timeout=${RUN_TIMEOUT_S:-900}
clocks_csv=${CLOCKS_CSV:-$out/clocks.csv}
placement=${PLACEMENT_SAMPLES:-}
bin="$build/apps/scaling/loom-scaling"
[ -x "$bin" ] || { echo "run_scaling.sh: no $bin; build the loom-scaling target first" >&2; exit 1; }
mkdir -p "$out"

# shellcheck source=bench/run_lib.sh
. "$here/run_lib.sh"

wanted() { case " ${FRAMEWORKS:-torch loom} " in *" $1 "*) return 0 ;; esac; return 1; }

sampled=0
for config in $configs; do
  model=${config%%:*}
  batch=${config##*:}
  steps=${STEPS:-300}
  warmup=${WARMUP:-50}
  if [ "$model" = resnet18 ] && [ "$batch" -ge 256 ]; then
    steps=$(( steps < 100 ? steps : 100 ))
    warmup=$(( warmup < 20 ? warmup : 20 ))
  fi
  common=(--model "$model" --gpus "$gpus" --batch-per-gpu "$batch" --steps "$steps" --warmup "$warmup"
          --precision "$precision" --scaling "$scaling" --skip-missing)
  [ "${CHANNELS_LAST:-0}" = 1 ] && common+=(--channels-last)
  torch_run=torch_${model}_b${batch}$suffix loom_run=loom_${model}_b${batch}$suffix
  if wanted torch; then
    rm -rf "${out:?}/$torch_run"
    # shellcheck disable=SC2086  # TORCH_ARGS and LOOM_ARGS are lists of flags
    run "$torch_run" 0 python3 "$here/scaling_torch.py" "${common[@]}" ${TORCH_ARGS:-} --out "$out/$torch_run"
  fi
  wanted loom || continue
  rm -rf "${out:?}/$loom_run"
  compare=()  # loom's chart draws PyTorch beside it when PyTorch's run wrote its report
  if [ -f "$out/$torch_run/report.json" ]; then
    compare=(--compare "$out/$torch_run/report.json")
  fi
  [ -n "${WARMUP_SECONDS:-}" ] && compare+=(--warmup-seconds "$WARMUP_SECONDS")  # loom's own too
  sample=0
  if [ -n "$placement" ] && [ "$sampled" = 0 ] && [ "$launch" = processes ]; then
    sample=1
    sampled=1
  fi
  # shellcheck disable=SC2086
  run "$loom_run" "$sample" "$bin" "${common[@]}" --launch "$launch" "${compare[@]}" ${LOOM_ARGS:-} \
      --out "$out/$loom_run"
  case " $threads_configs " in
    *" $config "*)
      rm -rf "$out/loom_threads_${model}_b${batch}$suffix"
      threads_common=("${common[@]}")
      threads_common[3]=$threads_gpus  # --gpus
      # shellcheck disable=SC2086
      run "loom_threads_${model}_b${batch}$suffix" 0 "$bin" "${threads_common[@]}" --launch threads \
          ${LOOM_ARGS:-} --out "$out/loom_threads_${model}_b${batch}$suffix"
      ;;
  esac
done
table "$out"
exit $failed
