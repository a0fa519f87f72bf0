#!/usr/bin/env bash
# Collective bandwidth on the GPU machine, loom and PyTorch in the same run, over the same sizes,
# GPUs and launch (a process per rank): for each world size (2, 4, ... up to the GPUs, plus the
# GPU count itself; 1 on a one-GPU machine), loom's collectives_bench with one process per rank
# (RANK/WORLD_SIZE/LOCAL_RANK, TCP rendezvous) and bench/collectives_torch.py under
# torch.distributed.run, each running all four collectives in one process; then loom with its
# ranks as threads of one process at the largest world (finding F10: rows say their launch).
# While loom's process run at the largest world runs, nvidia-smi --query-compute-apps is sampled,
# so that each rank's pid can be checked to sit on its own GPU only (finding F2). One short run
# with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING records the algorithm and protocol NCCL
# picks for every size and the transports it connected. Builds nothing: BUILD_DIR must hold a
# CUDA build of the collectives_bench target.
#   bench/run_collectives.sh BUILD_DIR OUT_DIR [SIZES]     (SIZES default 8B:256MB)
#   bench/run_collectives.sh --check-placement SAMPLES PIDS UUIDS LABEL   (the F2 verdict line)
#   bench/run_collectives.sh --summary OUT_DIR             (OUT_DIR/summary.md again)
# From the environment: ITERS (20), WARMUP (5), OPS (all), WORLDS (the default above; spaces or
# commas), THREADS_WORLDS (the largest world; "" for none), SHARED_GPU_WORLDS ("": the threads
# backend with every rank on cuda:0, e.g. "2 4"), TUNING (1), PLACEMENT_CHECK (1), RUN_TIMEOUT_S
# (150, each run), DEADLINE (epoch seconds: a run is cut short there, and one with less than 15 s
# left is not started), GROUP_TIMEOUT_S (60, a collective's wait for its peers before the group
# aborts), GPUS (nvidia-smi's count).
# Writes to OUT_DIR: <run>.txt (rank 0's table), <run>.jsonl (its rows), <run>.err or
# <run>.rank<r>.err, placement_samples.csv, placement_pids.txt, gpu_uuids.csv, nccl_debug/,
# nccl_tuning.tsv, nccl_transports.txt, summary.md (every size) and summary_short.md.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)

# The F2 verdict: every pid of PIDS ("pid label expected-gpu-index|-" lines) must appear on
# exactly one GPU (the expected one when given) in SAMPLES (nvidia-smi --query-compute-apps lines
# "time, pid, gpu_uuid, used_memory"); UUIDS maps nvidia-smi's "index, uuid".
check_placement() {
  python3 - "$@" <<'PY'
import sys

samples, pids_path, uuids_path, label = sys.argv[1:5]

def lines(path):
    try:
        with open(path) as f:
            return [l.strip() for l in f if l.strip() and not l.startswith("#")]
    except OSError:
        return []

index = {}
for l in lines(uuids_path):
    parts = [p.strip() for p in l.split(",")]
    if len(parts) >= 2:
        index[parts[1]] = parts[0]
seen, memory, count = {}, {}, set()
for l in lines(samples):
    parts = [p.strip() for p in l.split(",")]
    if len(parts) < 4 or not parts[1].isdigit():
        continue
    count.add(parts[0])
    gpu = index.get(parts[2], parts[2])
    seen.setdefault(parts[1], set()).add(gpu)
    memory[(parts[1], gpu)] = parts[3]
ranks = []
for l in lines(pids_path):
    parts = l.split()
    if len(parts) >= 3:
        ranks.append(parts[:3])
problems, missing, fine = [], [], []
for pid, who, want in ranks:
    gpus = sorted(seen.get(pid, ()), key=lambda g: (len(g), g))
    where = ", ".join(f"GPU {g} ({memory.get((pid, g), '?')})" for g in gpus)
    if not gpus:
        missing.append(f"{who} (pid {pid})")
    elif len(gpus) > 1:
        problems.append(f"{who} (pid {pid}) on {len(gpus)} GPUs: {where}")
    elif want != "-" and gpus[0] != want:
        problems.append(f"{who} (pid {pid}) on GPU {gpus[0]}, expected GPU {want}")
    else:
        fine.append(f"{who} on {where}")
others = sorted(set(seen) - {r[0] for r in ranks})
if not ranks:
    verdict, why = "INCONCLUSIVE", "no rank pids were recorded (the run did not start)"
elif problems:
    verdict, why = "FAIL", "; ".join(problems)
elif missing and len(missing) == len(ranks):
    verdict, why = "INCONCLUSIVE", (f"nvidia-smi listed none of the {len(ranks)} processes in "
                                    f"{len(count)} samples")
elif missing:
    verdict, why = "INCONCLUSIVE", "never listed: " + ", ".join(missing)
else:
    verdict, why = "PASS", f"{len(ranks)} processes, each on exactly one GPU, its own"
print(f"F2 GPU placement ({label}): {verdict}: {why}; {len(count)} nvidia-smi samples")
for f in fine:
    print(f"  {f}")
if others:
    print(f"  other processes seen: {', '.join(f'{p} on GPU {sorted(seen[p])}' for p in others)}")
PY
}

# summary.md: per collective and world size, loom's process-per-rank row beside PyTorch's and
# loom's thread-rank row, every size; summary_short.md: a few sizes and each run's peak busbw.
summary() {
  python3 - "$1" <<'PY'
import glob, json, os, sys

out = sys.argv[1]
runs = {}
for path in sorted(glob.glob(os.path.join(out, "*.jsonl"))):
    name = os.path.basename(path)[:-6]
    rows = []
    with open(path) as f:
        for line in f:
            try:
                rows.append(json.loads(line))
            except ValueError:
                pass
    runs[name] = rows

def table(name, op):
    return {r["size_bytes"]: r for r in runs.get(name, []) if r.get("op") == op}

def worlds(prefix):
    return sorted({int(n[len(prefix):]) for n in runs if n.startswith(prefix) and n[len(prefix):].isdigit()})

ops = ["all_reduce", "broadcast", "all_gather", "reduce_scatter"]
all_worlds = sorted(set(worlds("loom_proc_w")) | set(worlds("torch_w")) | set(worlds("loom_threads_w")))
few = {8, 1024, 65536, 1 << 20, 16 << 20, 64 << 20, 256 << 20}

def fmt(v, spec=".2f"):
    return "-" if v is None else format(v, spec)

# busbw at world size 1 is n/a: one rank has no link (NCCL's one-rank path); the benches write
# null there, and older files' zeros or algbw-equal values are not read as bandwidth either.
def busbw(r):
    return r.get("busbw_gbps") if r and r.get("world_size", 2) > 1 else None

def fmt_busbw(r):
    return "n/a" if r and r.get("world_size", 2) == 1 else fmt(busbw(r))

def render(short):
    lines = []
    head = ("| op | ranks | size (B) | loom us avg | loom us max | loom issue us | loom busbw | "
            "PyTorch us avg | PyTorch us max | PyTorch issue us | PyTorch busbw | loom / PyTorch busbw | "
            "loom threads us avg | loom threads busbw | #wrong loom, PyTorch, threads |")
    lines += [head, "|" + "---|" * (head.count("|") - 1)]
    for op in ops:
        for w in all_worlds:
            lp, tp, lt = table(f"loom_proc_w{w}", op), table(f"torch_w{w}", op), table(f"loom_threads_w{w}", op)
            sizes = sorted(set(lp) | set(tp) | set(lt))
            if short:
                # the listed sizes, or for all_gather/reduce_scatter the nearest below (n | count)
                keep = set()
                for s in few:
                    below = [x for x in sizes if x <= s and s - x < max(64, s // 64)]
                    if below:
                        keep.add(max(below))
                sizes = [s for s in sizes if s in keep]
            for s in sizes:
                a, b, c = lp.get(s), tp.get(s), lt.get(s)
                ratio = busbw(a) / busbw(b) if busbw(a) is not None and busbw(b) else None
                g = lambda r, k, spec=".2f": fmt(r.get(k) if r else None, spec)
                lines.append(f"| {op} | {w} | {s} | {g(a, 'time_us')} | {g(a, 'time_max_us')} | {g(a, 'issue_us')} | "
                             f"{fmt_busbw(a)} | {g(b, 'time_us')} | {g(b, 'time_max_us')} | {g(b, 'issue_us')} | "
                             f"{fmt_busbw(b)} | {'n/a' if w == 1 else fmt(ratio)} | {g(c, 'time_us')} | {fmt_busbw(c)} | "
                             f"{g(a, 'wrong', 'd')}, {g(b, 'wrong', 'd')}, {g(c, 'wrong', 'd')} |")
    lines.append("")
    lines.append("Peak busbw (GB/s) over the sizes, and #wrong summed over every size:")
    lines.append("")
    lines.append("| run | ranks | launch | " + " | ".join(ops) + " | #wrong |")
    lines.append("|---|---|---|" + "---|" * (len(ops) + 1))
    for name in sorted(runs):
        rows = runs[name]
        if not rows:
            continue
        peaks = []
        for op in ops:
            bw = [busbw(r) or 0.0 for r in rows if r.get("op") == op]
            peaks.append("n/a" if rows[0].get("world_size") == 1 else fmt(max(bw)) if bw else "-")
        wrong = sum(int(r.get("wrong", 0)) for r in rows)
        lines.append(f"| {name} | {rows[0].get('world_size')} | {rows[0].get('launch')} | "
                     + " | ".join(peaks) + f" | {wrong} |")
    lines.append("")
    for name in sorted(runs):
        if runs[name]:
            r = runs[name][0]
            lines.append(f"- {name}: {r.get('framework')}, NCCL {r.get('nccl')}, backend {r.get('backend')}, "
                         f"{r.get('launch')} ({r.get('launcher')}), iters {r.get('iters')}, warmup {r.get('warmup')}")
    return "\n".join(lines) + "\n"

with open(os.path.join(out, "summary.md"), "w") as f:
    f.write(render(False))
with open(os.path.join(out, "summary_short.md"), "w") as f:
    f.write(render(True))
PY
}

case "${1:-}" in
  --check-placement)
    shift
    [ $# -eq 4 ] || { echo "usage: bench/run_collectives.sh --check-placement SAMPLES PIDS UUIDS LABEL" >&2; exit 2; }
    check_placement "$@"
    exit 0
    ;;
  --summary)
    summary "${2:?usage: bench/run_collectives.sh --summary OUT_DIR}"
    exit $?
    ;;
esac

usage="usage: bench/run_collectives.sh BUILD_DIR OUT_DIR [SIZES]"
build=${1:?$usage}
out=${2:?$usage}
sizes=${3:-8B:256MB}
iters=${ITERS:-20}
warmup=${WARMUP:-5}
ops=${OPS:-all}
run_timeout=${RUN_TIMEOUT_S:-150}
group_timeout=${GROUP_TIMEOUT_S:-60}
bin="$build/bench/collectives_bench"
[ -x "$bin" ] || { echo "run_collectives.sh: no $bin; build the collectives_bench target first" >&2; exit 1; }
# Testing hook (no GPU): COLLECTIVES_BACKEND=tcp runs loom's process ranks over TCP on the CPU,
# its thread ranks on the threads backend, and PyTorch over gloo.
backend=${COLLECTIVES_BACKEND:-nccl}

# NVLink multicast (NVLS) can take a host's shared GPUs out of service; every run here keeps
# it off, PyTorch's and NVSHMEM's use of it too.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

gpus=${GPUS:-$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)}
if [ "$backend" = nccl ] && [ "${gpus:-0}" -lt 1 ]; then
  echo "run_collectives.sh: no GPU visible (nvidia-smi -L)" >&2
  exit 1
fi
[ "${gpus:-0}" -ge 1 ] || gpus=1
mkdir -p "$out"

if [ -n "${WORLDS:-}" ]; then
  worlds=$(echo "$WORLDS" | tr ',' ' ')
elif [ "$gpus" -eq 1 ]; then
  worlds=1
else
  worlds=""
  for ((w = 2; w <= gpus; w *= 2)); do worlds="$worlds $w"; done
  case " $worlds " in *" $gpus "*) ;; *) worlds="$worlds $gpus" ;; esac
fi
largest=$(echo "$worlds" | tr ' ' '\n' | grep . | sort -n | tail -1)
threads_worlds=${THREADS_WORLDS-$largest}
cores=$(nproc 2>/dev/null || echo 2)

# failed, note, running and allowed (run and its trap are this script's own, below).
# shellcheck source=bench/run_lib.sh
. "$here/run_lib.sh"

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null \
    || echo $((20000 + RANDOM % 20000))
}

sample_placement() {  # one nvidia-smi sample of the compute processes, time-stamped
  local t
  t=$(date +%s.%N)
  nvidia-smi --query-compute-apps=pid,gpu_uuid,used_memory --format=csv,noheader 2>/dev/null \
    | sed "s/^/$t, /" >> "$out/placement_samples.csv"
}

# What runs now: rank processes (launch) or one process group (run); stopped if this script is.
declare -a children=()
# shellcheck disable=SC2317  # (called from the trap)
stop_children() {
  local p
  for p in "${children[@]}"; do kill -TERM -- "-$p" 2>/dev/null || kill -TERM "$p" 2>/dev/null; done
  sleep 3
  for p in "${children[@]}"; do kill -KILL -- "-$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null; done
  children=()
}
trap 'stop_children; exit 143' TERM INT

# wait_all NAME SAMPLE LIMIT: waits for every pid of `children` (each its own process group);
# when one fails the others are stopped; past LIMIT seconds all are (status 124). SAMPLE=1
# samples the GPUs' compute processes meanwhile. Returns the first failure's status, else 0.
wait_all() {
  local name=$1 sample=$2 limit=$3
  local end=$((SECONDS + limit)) status=0 expired=0 left i pid rc p
  while :; do
    left=0
    for i in "${!children[@]}"; do
      pid=${children[$i]}
      [ -n "$pid" ] || continue
      if running "$pid"; then
        left=1
        continue
      fi
      wait "$pid"
      rc=$?
      children[i]=""
      if [ "$rc" -ne 0 ] && [ "$status" -eq 0 ]; then
        status=$rc
        if [ "${#children[@]}" -gt 1 ]; then
          note "   rank $i exited with status $rc: stopping the others (see $out/$name.rank$i.err)"
          for p in "${children[@]}"; do [ -n "$p" ] && kill -TERM -- "-$p" 2>/dev/null; done
        fi
      fi
    done
    [ "$left" -eq 1 ] || break
    if [ "$SECONDS" -ge "$end" ] && [ "$expired" = 0 ]; then
      note "   still running after ${limit} s: stopped"
      for p in "${children[@]}"; do [ -n "$p" ] && kill -KILL -- "-$p" 2>/dev/null; done
      expired=1
      [ "$status" -eq 0 ] && status=124
    fi
    [ "$sample" = 1 ] && sample_placement
    sleep 0.3
  done
  children=()
  return "$status"
}

# launch NAME WORLD SAMPLE ARGS...: loom's bench as WORLD processes, rank r with RANK=r,
# LOCAL_RANK=r (cuda:r), one TCP rendezvous on 127.0.0.1; rank 0's stdout to NAME.txt, rank r's
# stderr to NAME.rank<r>.err, "pid rank<r> <gpu r>" lines to NAME.pids.
launch() {
  local name=$1 world=$2 sample=$3
  shift 3
  local limit port r
  limit=$(allowed)
  if [ "$limit" -lt 15 ]; then
    note "== $name: not run (${limit} s left before the deadline)"
    echo "# not run: ${limit} s left before the deadline" > "$out/$name.txt"
    return 124
  fi
  note "== $name (a process per rank, at most ${limit} s)"
  port=$(free_port)
  : > "$out/$name.pids"
  for ((r = 0; r < world; r++)); do
    local stdout=/dev/null
    [ "$r" -eq 0 ] && stdout="$out/$name.txt"
    RANK=$r WORLD_SIZE=$world LOCAL_RANK=$r LOCAL_WORLD_SIZE=$world MASTER_ADDR=127.0.0.1 \
      MASTER_PORT=$port OMP_NUM_THREADS=$(( cores / world > 0 ? cores / world : 1 )) \
      setsid "$bin" "$@" > "$stdout" 2> "$out/$name.rank$r.err" &
    children+=($!)
    echo "$! rank$r $r" >> "$out/$name.pids"
  done
  wait_all "$name" "$sample" "$limit"
}

run() {  # NAME COMMAND...: stdout to OUT/NAME.txt, stderr to OUT/NAME.err, in its own process group
  local name=$1
  shift
  local limit
  limit=$(allowed)
  if [ "$limit" -lt 15 ]; then
    note "== $name: not run (${limit} s left before the deadline)"
    echo "# not run: ${limit} s left before the deadline" > "$out/$name.txt"
    failed=1
    return 124
  fi
  note "== $name (at most ${limit} s)"
  setsid "$@" > "$out/$name.txt" 2> "$out/$name.err" &
  children=($!)
  wait_all "$name" 0 "$limit"
  local rc=$?
  # 3 is the benches' "#wrong > 0": the rows are still worth keeping.
  if [ "$rc" -ne 0 ]; then note "   exit $rc (see $out/$name.err)"; failed=1; fi
  return "$rc"
}

common=(--op "$ops" --sizes "$sizes" --iters "$iters" --warmup "$warmup")
loom_args=(--backend "$backend" --timeout "$group_timeout" "${common[@]}")
[ "$backend" = nccl ] || loom_args+=(--device cpu)
torch_backend=nccl
[ "$backend" = nccl ] || torch_backend=gloo
nvidia-smi --query-gpu=index,uuid --format=csv,noheader > "$out/gpu_uuids.csv" 2>/dev/null
rm -f "$out"/*.jsonl "$out/placement_samples.csv" "$out/placement_pids.txt"

for w in $worlds; do
  name=loom_proc_w$w
  sample=0
  if [ "$w" = "$largest" ] && [ "${PLACEMENT_CHECK:-1}" = 1 ]; then sample=1; fi
  launch "$name" "$w" "$sample" "${loom_args[@]}" --json-out "$out/$name.jsonl"
  rc=$?
  if [ "$rc" -ne 0 ]; then note "   exit $rc"; failed=1; fi
  if [ "$sample" = 1 ] && [ -f "$out/$name.pids" ]; then cp "$out/$name.pids" "$out/placement_pids.txt"; fi

  run "torch_w$w" env -u RANK -u WORLD_SIZE -u LOCAL_RANK -u MASTER_ADDR -u MASTER_PORT \
      python3 -m torch.distributed.run --standalone --nproc_per_node="$w" \
      "$here/collectives_torch.py" --backend "$torch_backend" "${common[@]}" --json-out "$out/torch_w$w.jsonl"
done

for w in $threads_worlds; do
  # loom's NCCL ranks as threads of one process (dist::spawn): the same collectives, the other launch.
  tb=$backend
  [ "$backend" = nccl ] || tb=threads
  targs=(--backend "$tb" --world-size "$w" --timeout "$group_timeout" "${common[@]}")
  [ "$backend" = nccl ] || targs+=(--device cpu)
  run "loom_threads_w$w" env -u RANK -u WORLD_SIZE -u LOCAL_RANK -u MASTER_ADDR -u MASTER_PORT \
      "$bin" "${targs[@]}" --json-out "$out/loom_threads_w$w.jsonl"
done

for w in ${SHARED_GPU_WORLDS:-}; do
  run "loom_shared_gpu_w$w" env -u RANK -u WORLD_SIZE -u LOCAL_RANK -u MASTER_ADDR -u MASTER_PORT \
      "$bin" --backend threads --device cuda --world-size "$w" "${common[@]}"
done

if [ "${TUNING:-1}" = 1 ]; then
  # One short run at the largest world with NCCL's own account of its choices: rank 0 logs the
  # algorithm, protocol and channels of every collective (TUNING), every rank its transports
  # (INIT). One iteration per size, no warm-up: the choice, not the time.
  note "== nccl_tuning: NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING, world $largest"
  rm -rf "$out/nccl_debug"
  mkdir -p "$out/nccl_debug"
  NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING NCCL_DEBUG_FILE="$out/nccl_debug/%h.%p.log" \
    launch nccl_tuning "$largest" 0 --backend "$backend" --timeout "$group_timeout" --op "$ops" \
    --sizes "$sizes" --iters 1 --warmup 0
  rc=$?
  if [ "$rc" -ne 0 ]; then note "   exit $rc"; failed=1; fi
  cat "$out"/nccl_debug/*.log 2>/dev/null \
    | sed -nE 's/.*NCCL INFO ([A-Za-z]+): ([0-9]+) Bytes -> Algo ([A-Za-z_0-9]+) proto ([A-Za-z_0-9]+) channel\{Lo\.\.Hi\}=\{([0-9]+)\.\.([0-9]+)\}.*/\1\t\2\t\3\t\4\t\5..\6/p' \
    | sort -t "$(printf '\t')" -k1,1 -k2,2n -k3,3 -k4,4 -k5,5 | uniq > "$out/nccl_tuning.tsv"
  cat "$out"/nccl_debug/*.log 2>/dev/null \
    | grep -hE "NCCL INFO (NCCL version|Channel [0-9]+/[0-9]+ : .* via |Connected all|comm .* nRanks .* - Init COMPLETE|NVLS|P2P plugin|Using network)" \
    | sed -E 's/^[^ ]+ +//' | sort | uniq -c | sort -rn | head -80 > "$out/nccl_transports.txt"
  note "   $(wc -l < "$out/nccl_tuning.tsv") (collective, size) choices in $out/nccl_tuning.tsv"
fi

if [ -s "$out/placement_pids.txt" ]; then
  check_placement "$out/placement_samples.csv" "$out/placement_pids.txt" "$out/gpu_uuids.csv" \
    "loom_proc_w$largest" > "$out/placement_check.txt"
  cat "$out/placement_check.txt" >&2
fi
summary "$out"
cat "$out/summary_short.md"
exit $failed
