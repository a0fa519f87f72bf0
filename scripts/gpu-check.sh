#!/usr/bin/env bash
# On the GPU machine: configure and build with CUDA, run the gpu-labelled tests, then the gpu
# test binaries under compute-sanitizer memcheck (no leak check: the caching allocator keeps
# its blocks until exit by design). Logs go to $OUT (or ./gpu-check-out).
#   scripts/gpu-check.sh [build|test|memcheck|multigpu]...   (default: build test memcheck)
# LOOM_CMAKE_ARGS adds configure flags; GPU_CHECK_BUILD_DIR replaces build-gpu.
#
# multigpu: everything a multi-GPU machine is lent for, in one command of under 10 minutes (the
# whole is budgeted: GPU_CHECK_BUDGET_S, default 570 s), on N = nvidia-smi's GPU count (1 works
# too: the rehearsal). Phases, each with its own time limit, each recorded and none stopping the
# next (only a failed build skips what needs it):
#   info     the machine, its GPUs and links, the versions
#   build    Release, CUDA, -j nproc (build-gpu)
#   ctest    ctest -L multigpu (serially; they skip below 2 GPUs), then ctest -L gpu -j CTEST_J (4)
#   bench    bench/run_collectives.sh: loom's collectives_bench (a process per rank) beside
#            PyTorch's bench/collectives_torch.py (torch.distributed.run) at world sizes 2, 4, ...
#            up to N plus N (1 when N = 1), all four collectives, 8 B .. 256 MB; loom's thread
#            ranks at N; nvidia-smi --query-compute-apps sampled during loom's N-process run
#            (finding F2: each rank's pid on exactly one GPU); NCCL's algorithm and protocol per
#            size (NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING on one short run)
#   scaling  bench/run_scaling.sh: loom-scaling --launch processes beside PyTorch DDP on 1, 2, 4,
#            ... N GPUs (GPU_CHECK_SCALING_CONFIGS, default "seed_cnn:32 resnet18:256"), and one
#            loom-scaling --launch threads run at N (GPU_CHECK_THREADS_CONFIGS, "seed_cnn:32"),
#            rows labelled with their launch (finding F10); the F2 sampling again during loom's
#            first process-launch run
# nvidia-smi's SM clocks, power and temperature of every GPU are recorded before and after each
# phase (and each scaling run). Everything goes to GPU_CHECK_WORK (default
# build-gpu/gpu-check-multigpu); $OUT receives summary.md (machine, versions, test counts, bench
# and scaling tables, every check's PASS/FAIL) and gpu-check-multigpu.tar.gz (every file), both
# rewritten after each phase, so that a run stopped from outside still leaves them. The exit
# status is 0 when no check failed. GPU_CHECK_BUILD=0 uses the build already there; the other
# GPU_CHECK_* variables (phase limits, sizes, scaling configurations) are read where they are used.
set -uo pipefail
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
cd "$(dirname "$0")/.." || exit 1
out=${OUT:-gpu-check-out}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
# NVLink multicast stays off for PyTorch and NVSHMEM too: it can take a host's shared GPUs out
# of service.
export TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
build=${GPU_CHECK_BUILD_DIR:-build-gpu}
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(build test memcheck)
status=0

configure_and_build() {  # LOGDIR: 0 when configure and build succeeded; the logs in LOGDIR
  local logs=$1
  # shellcheck disable=SC2086  # LOOM_CMAKE_ARGS is a list of flags
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLOOM_CUDA=ON ${LOOM_CMAKE_ARGS:-} \
    > "$logs/configure.log" 2>&1 || { tail -30 "$logs/configure.log"; return 1; }
  cmake --build "$build" -j "$(nproc)" > "$logs/build.log" 2>&1 \
    || { grep -E "error" -A5 "$logs/build.log" | head -60; return 1; }
}

gpu_count() { nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true; }

clocks() {  # FILE LABEL: one line per GPU, "label, time, index, clocks.sm, clocks.max.sm, power.draw, temperature.gpu"
  local file=$1 label=$2 t
  t=$(date -u +%H:%M:%S)
  [ -s "$file" ] || echo "label, time, index, clocks.sm [MHz], clocks.max.sm [MHz], power.draw [W], temperature.gpu" > "$file"
  timeout 20 nvidia-smi --query-gpu=index,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv,noheader 2>/dev/null \
    | sed "s/^/$label, $t, /" >> "$file"
}

# ---- multigpu: the internal phases, each run as "gpu-check.sh _mg_<phase>" under its limit ----
# (MG_WORK, MG_GPUS, MG_LIMIT and DEADLINE come from the parent.)

mg_info() {
  local work=$MG_WORK
  {
    echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "host: $(hostname)  kernel: $(uname -r)  cores: $(nproc)  memory: $(free -g 2>/dev/null | awk '/^Mem:/ {print $2 " GiB (MemTotal; grows as used on these VMs)"}')"
    echo "commit: $(git rev-parse --short HEAD 2>/dev/null) ($(git status --short 2>/dev/null | grep -vc '^??') files changed, $(git status --short 2>/dev/null | grep -c '^??') untracked)"
    echo "GPUs: $MG_GPUS"
    timeout 20 nvidia-smi --query-gpu=index,name,uuid,driver_version,memory.total,pcie.link.gen.current,pcie.link.width.current,compute_mode \
      --format=csv 2>&1
    echo
    echo "nvidia-smi topo -m:"
    timeout 20 nvidia-smi topo -m 2>&1
    echo
    echo "nvidia-smi nvlink --status (GPU 0):"
    timeout 20 nvidia-smi nvlink --status -i 0 2>&1 | head -30
  } > "$work/machine.txt"
  timeout 20 nvidia-smi --query-gpu=index,uuid --format=csv,noheader > "$work/gpu_uuids.csv" 2>/dev/null
  {
    echo "nvcc: $(nvcc --version 2>/dev/null | tail -1)"
    echo "cmake: $(cmake --version 2>/dev/null | head -1)"
    echo "driver: $(timeout 20 nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)"
    echo "python3: $(command -v python3) $(python3 --version 2>&1)"
    echo "torch: $(timeout 60 python3 -c 'import torch; v = torch.cuda.nccl.version(); print(torch.__version__, "CUDA", torch.version.cuda, "cuDNN", torch.backends.cudnn.version(), "NCCL", ".".join(map(str, v)) if isinstance(v, tuple) else v, "GPUs", torch.cuda.device_count())' 2>&1 | tail -1)"
    echo "mpirun: $(mpirun --version 2>/dev/null | head -1)"
    echo "nccl-tests: $(command -v all_reduce_perf || echo 'not installed (the bench busbw, nccl-tests formulas, stands in)')"
    echo "NCCL library loom links: $(ldconfig -p 2>/dev/null | grep -m1 'libnccl.so.2 ' | sed 's/.*=> //')"
    echo "environment: NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-} TORCH_SYMM_MEM_DISABLE_MULTICAST=${TORCH_SYMM_MEM_DISABLE_MULTICAST:-} NVSHMEM_DISABLE_NVLS=${NVSHMEM_DISABLE_NVLS:-} CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:--}"
  } > "$work/versions.txt"
  cat "$work/versions.txt"
}

mg_build() {
  configure_and_build "$MG_WORK"
}

mg_ctest() {
  local work=$MG_WORK rc=0
  # --stop-time: a test still running then is stopped and reported, and ctest still prints its
  # summary. The multigpu tests may use the first 60% of the phase, the gpu tests the rest.
  local multi_stop gpu_stop
  # With two GPUs or more the multigpu tests are the point (about 5 minutes of them on 8 GPUs),
  # and the gpu tests were proven on one GPU already: they get 85% of the phase, else 60%.
  local share=60
  [ "$MG_GPUS" -ge 2 ] && share=85
  multi_stop=$(date -d "+$(( MG_LIMIT * share / 100 )) seconds" '+%H:%M:%S')
  gpu_stop=$(date -d "+$(( MG_LIMIT - 15 )) seconds" '+%H:%M:%S')
  for label in multigpu gpu; do
    ctest --test-dir "$build" -N -L "^$label\$" > "$work/ctest-$label-list.log" 2>&1
  done
  echo "== ctest -L multigpu (serially, until $multi_stop)"
  ctest --test-dir "$build" -L '^multigpu$' --output-on-failure --stop-time "$multi_stop" \
    > "$work/ctest-multigpu.log" 2>&1 || rc=1
  tail -15 "$work/ctest-multigpu.log"
  echo "== ctest -L gpu -j ${CTEST_J:-4} (until $gpu_stop)"
  ctest --test-dir "$build" -L '^gpu$' --output-on-failure -j "${CTEST_J:-4}" --stop-time "$gpu_stop" \
    > "$work/ctest-gpu.log" 2>&1 || rc=1
  tail -25 "$work/ctest-gpu.log"
  return $rc
}

mg_bench() {
  GPUS=$MG_GPUS RUN_TIMEOUT_S=${GPU_CHECK_RUN_TIMEOUT_S:-150} \
    bench/run_collectives.sh "$build" "$MG_WORK/collectives" "${GPU_CHECK_SIZES:-8B:256MB}"
}

mg_scaling() {
  local counts=1 w
  for ((w = 2; w <= MG_GPUS; w *= 2)); do counts="$counts,$w"; done
  case ",$counts," in *",$MG_GPUS,"*) ;; *) counts="$counts,$MG_GPUS" ;; esac
  mkdir -p "$MG_WORK/scaling"
  GPUS=$counts CONFIGS=${GPU_CHECK_SCALING_CONFIGS:-seed_cnn:32 resnet18:256} \
    THREADS_CONFIGS=${GPU_CHECK_THREADS_CONFIGS-seed_cnn:32} THREADS_GPUS=$MG_GPUS \
    STEPS=${GPU_CHECK_STEPS:-200} WARMUP=${GPU_CHECK_WARMUP:-30} CLOCKS_CSV="$MG_WORK/clocks.csv" \
    PLACEMENT_SAMPLES="$MG_WORK/scaling/placement_samples.csv" RUN_TIMEOUT_S=${GPU_CHECK_RUN_TIMEOUT_S:-240} \
    bench/run_scaling.sh "$build" "$MG_WORK/scaling"
}

# summary.md from everything in the work folder (what is missing is said so), then the tarball.
mg_report() {
  local work=$1
  if [ -f "$work/scaling/placement_samples.csv.pids" ]; then
    bench/run_collectives.sh --check-placement "$work/scaling/placement_samples.csv" \
      "$work/scaling/placement_samples.csv.pids" "$work/gpu_uuids.csv" "loom-scaling --launch processes" \
      > "$work/scaling/placement_check.txt" 2>&1
  fi
  python3 - "$work" "$out/summary.md" "$MG_GPUS" "${GPU_CHECK_SIZES:-8B:256MB}" "$mg_budget" <<'PY' \
    || echo "gpu-check.sh: the summary failed (see above); the files are in the tarball" >&2
import glob, json, os, re, sys

work, target, gpus, sizes_spec, budget = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]

def read(*parts):
    try:
        with open(os.path.join(work, *parts), errors="replace") as f:
            return f.read()
    except OSError:
        return None

def jsonl(path):
    rows = []
    try:
        with open(path) as f:
            for line in f:
                try:
                    rows.append(json.loads(line))
                except ValueError:
                    pass
    except OSError:
        pass
    return rows

L = []
try:
    phases = [l.split("\t") for l in (read("phases.tsv") or "").splitlines() if l.strip()]
    phase = {p[0]: p for p in phases}
    L.append("# loom multi-GPU check (scripts/gpu-check.sh multigpu)\n")
    machine = read("machine.txt") or ""
    first = dict(l.split(": ", 1) for l in machine.splitlines()[:4] if ": " in l)
    spent = sum(int(p[2]) for p in phases if len(p) > 2 and p[2].isdigit())
    L.append(f"{first.get('date', '?')}, {gpus} GPU{'s' if gpus != 1 else ''}, host {first.get('host', '?')}, "
             f"commit {first.get('commit', '?')}; {spent} s of phases in a budget of {budget} s.\n")

    # ---- checks -------------------------------------------------------------------------------
    checks = []
    def check(name, verdict, detail):
        checks.append((name, verdict, detail))

    def phase_state(name):
        p = phase.get(name)
        return (p[1], p[4] if len(p) > 4 else "") if p else ("not reached", "")

    st, why = phase_state("build")
    check("build (Release, CUDA)", "PASS" if st == "ok" else "SKIPPED" if "GPU_CHECK_BUILD=0" in why else "FAIL",
          f"{st}{': ' + why if why else ''}")

    def ctest(label):
        text = read(f"ctest-{label}.log")
        listed = re.search(r"Total Tests: (\d+)", read(f"ctest-{label}-list.log") or "")
        listed = int(listed.group(1)) if listed else None
        if text is None:
            return None
        # "100% tests passed out of 48" when none failed, else "..., 2 tests failed out of 145".
        m = re.search(r"(\d+)% tests passed(?:, (\d+) tests? failed)? out of (\d+)", text)
        total = int(m.group(3)) if m else 0
        failed = int(m.group(2) or 0) if m else 0
        skipped = re.findall(r"^\s*\d+ - (\S+) \(Skipped\)", text, re.M)
        failed_names = []
        if "The following tests FAILED:" in text:
            block = text.split("The following tests FAILED:", 1)[1]
            failed_names = re.findall(r"^\s*\d+ - (\S+) \(([^)]*)\)", block, re.M)
        t = re.search(r"Total Test time \(real\) = +([\d.]+) sec", text)
        return {"listed": listed, "total": total, "failed": failed, "skipped": skipped,
                "passed": total - failed - len(skipped), "failed_names": failed_names,
                "not_started": (listed - total) if listed is not None and listed >= total else 0,
                "seconds": t.group(1) if t else "?", "none": "No tests were found" in text}

    tests = {label: ctest(label) for label in ("multigpu", "gpu")}
    for label, t in tests.items():
        if t is None:
            check(f"ctest -L {label}", "NOT RUN", phase_state("ctest")[0])
            continue
        listed = "" if t["listed"] is None else f" ({t['listed']} listed)"
        detail = (f"{t['passed']} passed, {t['failed']} failed, {len(t['skipped'])} skipped of {t['total']} run"
                  f"{listed}, {t['seconds']} s")
        if t["not_started"]:
            detail += f"; {t['not_started']} not started (the phase's stop time)"
        if t["failed_names"]:
            detail += "; failed: " + ", ".join(f"{n} ({why})" for n, why in t["failed_names"][:12])
        if t["failed"] or t["not_started"]:
            verdict = "FAIL"
        elif t["total"] and t["passed"] == 0:
            verdict = "SKIPPED" if gpus < 2 and label == "multigpu" else "FAIL"
        elif not t["total"]:
            verdict = "FAIL"
            detail = "no tests ran" + (" (none found)" if t["none"] else "")
        else:
            verdict = "PASS"
        if label == "multigpu" and gpus < 2 and verdict == "SKIPPED":
            detail += " (one GPU: every multigpu test skips, saying why)"
        check(f"ctest -L {label}", verdict, detail)

    # the collectives
    cdir = os.path.join(work, "collectives")
    runs = {os.path.basename(p)[:-6]: jsonl(p) for p in sorted(glob.glob(os.path.join(cdir, "*.jsonl")))}

    def parse_bytes(t):
        m = re.fullmatch(r"(\d+)([a-zA-Z]*)", t)
        return int(m.group(1)) << {"": 0, "b": 0, "k": 10, "kb": 10, "kib": 10, "m": 20, "mb": 20, "mib": 20,
                                   "g": 30, "gb": 30, "gib": 30}[m.group(2).lower()]
    lo, _, hi = sizes_spec.partition(":")
    lo, hi = parse_bytes(lo), parse_bytes(hi or lo)
    sizes = []
    while lo <= hi:
        sizes.append(lo)
        lo *= 2
    worlds = [1] if gpus == 1 else sorted({w for w in [2 ** k for k in range(1, 8)] if w <= gpus} | {gpus})
    expected_runs = [f"loom_proc_w{w}" for w in worlds] + [f"torch_w{w}" for w in worlds] + [f"loom_threads_w{max(worlds)}"]
    ops = ["all_reduce", "broadcast", "all_gather", "reduce_scatter"]
    def rows_expected(op, w):
        split = op in ("all_gather", "reduce_scatter")
        return sum(1 for s in sizes if (s // 4 // w * w if split else s // 4) > 0)
    incomplete, wrong, counted = [], {"loom": 0, "PyTorch": 0}, {"loom": 0, "PyTorch": 0}
    for name in expected_runs:
        rows = runs.get(name, [])
        w = int(name.rsplit("w", 1)[1])
        for op in ops:
            got = sum(1 for r in rows if r.get("op") == op)
            if got < rows_expected(op, w):
                incomplete.append(f"{name} {op} {got}/{rows_expected(op, w)}")
        fw = "PyTorch" if name.startswith("torch") else "loom"
        wrong[fw] += sum(int(r.get("wrong", 0)) for r in rows)
        counted[fw] += len(rows)
    st = phase_state("bench")[0]
    check("collectives: every run, collective and size", "PASS" if not incomplete and runs else "FAIL",
          f"{len(expected_runs)} runs x 4 collectives x {len(sizes)} sizes (8 B .. {sizes[-1]} B)" if not incomplete and runs
          else f"phase {st}; missing rows: " + ("; ".join(incomplete[:10]) + (" ..." if len(incomplete) > 10 else "") if incomplete else "no runs"))
    for fw in ("loom", "PyTorch"):
        check(f"collectives: #wrong ({fw}, closed-form answers, every size)",
              "NOT RUN" if not counted[fw] else "PASS" if wrong[fw] == 0 else "FAIL",
              f"{wrong[fw]} wrong elements summed over {counted[fw]} rows")
    nvls = [n for n in runs if os.path.exists(os.path.join(cdir, n + ".txt"))]
    nvls_off = all("NCCL_NVLS_ENABLE=0" in (read("collectives", n + ".txt") or "") for n in nvls) if nvls else False
    check("NVLink multicast off (NCCL_NVLS_ENABLE=0 in every bench's header)", "PASS" if nvls_off else "FAIL",
          f"{len(nvls)} runs")

    def placement(path, label):
        text = read(path)
        if not text:
            check(f"F2: one GPU per rank pid ({label})", "NOT RUN", "no placement samples")
            return
        line = text.splitlines()[0]
        verdict = line.split(": ")[1] if line.count(": ") >= 2 else "?"
        check(f"F2: one GPU per rank pid ({label})", verdict, line.split(": ", 2)[-1])
    placement("collectives/placement_check.txt",
              f"collectives_bench, {max(worlds)} process{'es' if max(worlds) != 1 else ''}")
    placement("scaling/placement_check.txt", "loom-scaling --launch processes")

    tuning = [l.split("\t") for l in (read("collectives", "nccl_tuning.tsv") or "").splitlines() if l.count("\t") >= 4]
    if tuning:
        check("NCCL algorithm and protocol recorded", "PASS", f"{len(tuning)} (collective, size) choices, world {max(worlds)}")
    elif max(worlds) == 1:
        check("NCCL algorithm and protocol recorded", "N/A", "one rank: NCCL's one-rank path picks no algorithm")
    else:
        check("NCCL algorithm and protocol recorded", "FAIL", "no 'Bytes -> Algo' lines in collectives/nccl_debug/")

    # loom against PyTorch at the largest size and world
    big = []
    for op in ops:
        a = [r for r in runs.get(f"loom_proc_w{max(worlds)}", []) if r.get("op") == op]
        b = [r for r in runs.get(f"torch_w{max(worlds)}", []) if r.get("op") == op]
        if a and b and b[-1]["busbw_gbps"] > 0:
            big.append(f"{op} {a[-1]['busbw_gbps']:.1f}/{b[-1]['busbw_gbps']:.1f} GB/s ({a[-1]['busbw_gbps'] / b[-1]['busbw_gbps']:.2f}x)")
    if max(worlds) > 1:
        check(f"busbw at {sizes[-1]} B, {max(worlds)} ranks, loom / PyTorch (information)", "INFO",
              "; ".join(big) if big else "no pair of rows")

    sdir = os.path.join(work, "scaling")
    reports = {}
    for p in sorted(glob.glob(os.path.join(sdir, "*", "report.json"))):
        try:
            with open(p) as f:
                reports[os.path.basename(os.path.dirname(p))] = json.load(f)
        except (OSError, ValueError):
            pass
    logs = sorted(os.path.basename(p)[:-4] for p in glob.glob(os.path.join(sdir, "*.log")))
    missing = [n for n in logs if n not in reports]
    differ = [f"{n} {r['world_size']} GPUs: {r['differing_ranks']}" for n, rep in reports.items()
              for r in rep.get("rows", []) if r.get("ran") and r.get("differing_ranks")]
    not_ran = [f"{n} {r['world_size']} GPUs" for n, rep in reports.items() for r in rep.get("rows", []) if not r.get("ran")]
    if reports or logs:
        check("scaling: every run wrote its report", "PASS" if not missing else "FAIL",
              f"{len(reports)} reports" + (f"; missing: {', '.join(missing)}" if missing else ""))
        check("scaling: ranks end with equal parameters (differ = 0)", "PASS" if reports and not differ else "FAIL",
              "; ".join(differ) if differ else f"{sum(len(r.get('rows', [])) for r in reports.values())} rows"
              + (f" ({len(not_ran)} not run: {', '.join(not_ran[:6])})" if not_ran else ""))
    else:
        check("scaling", "NOT RUN", phase_state("scaling")[0])

    L.append("## Checks\n")
    L.append("| check | result | detail |")
    L.append("|---|---|---|")
    for n, v, d in checks:
        L.append(f"| {n} | **{v}** | {d.replace('|', '/')} |")
    L.append("")

    L.append("## Phases\n")
    L.append("| phase | status | seconds | limit (s) | note |")
    L.append("|---|---|---|---|---|")
    for p in phases:
        p = (p + [""] * 5)[:5]
        L.append(f"| {p[0]} | {p[1]} | {p[2]} | {p[3]} | {p[4]} |")
    L.append("")

    L.append("## Machine and versions\n")
    L.append("```")
    L.append((read("versions.txt") or "(not recorded)").rstrip())
    L.append("")
    L.append(machine.rstrip() or "(not recorded)")
    L.append("```\n")

    L.append("## Tests\n")
    for label, t in tests.items():
        if t is None:
            L.append(f"- `ctest -L {label}`: not run")
            continue
        L.append(f"- `ctest -L {label}`: {t['passed']} passed, {t['failed']} failed, {len(t['skipped'])} skipped, "
                 f"{t['total']} run of {t['listed'] if t['listed'] is not None else '?'} listed, {t['seconds']} s")
        for n, why in t["failed_names"]:
            L.append(f"  - failed: `{n}` ({why})")
        if t["skipped"]:
            L.append(f"  - skipped: {', '.join(f'`{s}`' for s in t['skipped'][:40])}{' ...' if len(t['skipped']) > 40 else ''}")
    L.append("")

    L.append("## Collectives (loom's collectives_bench beside PyTorch, the same GPUs and launch)\n")
    head = read("collectives", f"loom_proc_w{max(worlds)}.txt") or ""
    setup = []
    for l in head.splitlines():
        if l.strip() == "#":
            break
        if not l.startswith("#   "):
            setup.append(l)
    if setup:
        L.append("loom's setup lines at the largest world:\n")
        L.append("```")
        L += setup
        L.append("```\n")
    short = read("collectives", "summary_short.md")
    L.append(short.rstrip() if short else "(no collectives summary)")
    L.append("\nEvery size of every run: collectives/summary.md in the tarball; each run's own table in collectives/<run>.txt.\n")

    L.append("### NCCL's algorithm and protocol (rank 0's TUNING lines, one iteration per size)\n")
    if tuning:
        L.append("| collective | sizes (B) | algorithm | protocol | channels |")
        L.append("|---|---|---|---|---|")
        group = None
        for op, b, algo, proto, ch in tuning + [["", "0", "", "", ""]]:
            key = (op, algo, proto, ch)
            if group and group[0] == key:
                group[2] = b
                continue
            if group:
                (gop, galgo, gproto, gch), first_b, last_b = group
                L.append(f"| {gop} | {first_b}{'' if first_b == last_b else ' .. ' + last_b} | {galgo} | {gproto} | {gch} |")
            group = [key, b, b]
        L.append("\nSizes as NCCL counts them: all_gather's and reduce_scatter's are one rank's part (the "
                 "bench's size / ranks). 4 B all-reduces are the barriers; 8 B ones include the bench's own "
                 "per-size scalars (time, #wrong).\n")
    else:
        L.append("(none recorded)\n")
    transports = read("collectives", "nccl_transports.txt")
    if transports:
        L.append("NCCL's INIT lines (counted):\n")
        L.append("```")
        L += transports.rstrip().splitlines()[:25]
        L.append("```\n")

    L.append("## Scaling (loom-scaling beside PyTorch DDP; rows say their launch)\n")
    table = read("scaling", "scaling_table.md")
    L.append(table.rstrip() if table else "(no scaling table)")
    L.append("")

    L.append("## Clocks, power, temperature (nvidia-smi, every GPU, before and after each phase and run)\n")
    rows = [[c.strip() for c in l.split(",")] for l in (read("clocks.csv") or "").splitlines()[1:] if l.count(",") >= 6]
    if rows:
        L.append("| when | GPUs | SM MHz min..max | max SM MHz | power W total | temperature max |")
        L.append("|---|---|---|---|---|---|")
        order = []
        for r in rows:
            if r[0] not in order:
                order.append(r[0])
        def num(s):
            m = re.match(r"[\d.]+", s)
            return float(m.group()) if m else None
        for label in order:
            rs = [r for r in rows if r[0] == label]
            sm = [num(r[3]) for r in rs if num(r[3]) is not None]
            mx = [num(r[4]) for r in rs if num(r[4]) is not None]
            pw = [num(r[5]) for r in rs if num(r[5]) is not None]
            tp = [num(r[6]) for r in rs if num(r[6]) is not None]
            L.append(f"| {label} ({rs[0][1]}) | {len(rs)} | {min(sm):.0f}..{max(sm):.0f} | {max(mx):.0f} | {sum(pw):.0f} | {max(tp):.0f} |"
                     if sm and mx and pw and tp else f"| {label} | {len(rs)} | ? | ? | ? | ? |")
    else:
        L.append("(not recorded)")
    L.append("\nFiles: gpu-check-multigpu.tar.gz beside this summary holds every log, table and report "
             "(machine.txt, versions.txt, phases.tsv, clocks.csv, ctest-*.log, build.log, collectives/, scaling/).\n")
except Exception:  # what was gathered so far, and why the rest is missing
    import traceback
    L.append("\n## The summary stopped here\n\n```\n" + traceback.format_exc() + "```")
with open(target, "w") as f:
    f.write("\n".join(L) + "\n")
PY
  tar -czf "$out/gpu-check-multigpu.tar.gz" -C "$(dirname "$work")" "$(basename "$work")" 2>/dev/null \
    || echo "gpu-check.sh: the tarball failed" >&2
}

multigpu() {
  local work=${GPU_CHECK_WORK:-$build/gpu-check-multigpu}
  mkdir -p "$work"
  work=$(cd "$work" && pwd)
  # Emptied first, but only a folder this step made (it leaves a mark) or an empty one.
  if [ -n "$(ls -A "$work")" ] && [ ! -f "$work/.gpu-check-multigpu" ]; then
    echo "gpu-check.sh: $work is not empty and not a multigpu work folder; set GPU_CHECK_WORK elsewhere" >&2
    return 2
  fi
  find "$work" -mindepth 1 -delete
  touch "$work/.gpu-check-multigpu"
  mg_budget=${GPU_CHECK_BUDGET_S:-570}
  local deadline=$(( $(date +%s) + mg_budget ))
  local n
  n=${GPU_CHECK_GPUS:-$(gpu_count)}  # GPU_CHECK_GPUS: a dry run's count on a machine without GPUs
  [ "${n:-0}" -ge 1 ] || n=0
  export MG_WORK=$work MG_GPUS=$n
  : > "$work/phases.tsv"  # name, status, seconds, limit, note
  echo "== multigpu: $n GPUs, budget $mg_budget s, files in $work, summary in $out/summary.md"
  local built=0

  # phase NAME CAP RESERVE MIN: "gpu-check.sh _mg_NAME" under min(CAP, time left - RESERVE), the
  # RESERVE kept for what comes after; not started with less than MIN seconds.
  phase() {
    local name=$1 cap=$2 reserve=$3 min=$4 left limit t0 rc state note=""
    left=$(( deadline - $(date +%s) - reserve ))
    limit=$(( cap < left ? cap : left ))
    if [ "$limit" -lt "$min" ]; then
      printf '%s\tskipped\t0\t%s\t%s s for it (needs %s): the budget is spent\n' "$name" "$limit" "$limit" "$min" >> "$work/phases.tsv"
      echo "== $name: skipped ($limit s for it, needs $min)"
      mg_report "$work"
      return 1
    fi
    echo "== $name (at most $limit s)"
    clocks "$work/clocks.csv" "before $name"
    t0=$SECONDS
    MG_LIMIT=$limit DEADLINE=$(( $(date +%s) + limit - 10 )) \
      timeout -k 15 "$limit" "$self" "_mg_$name" > "$work/$name.log" 2>&1
    rc=$?
    case $rc in
      0) state=ok ;;
      124 | 137) state="timed out"; note="stopped at its limit of $limit s" ;;
      *) state="failed (exit $rc)"; note="see $name.log" ;;
    esac
    clocks "$work/clocks.csv" "after $name"
    printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$state" "$((SECONDS - t0))" "$limit" "$note" >> "$work/phases.tsv"
    echo "   $state in $((SECONDS - t0)) s"
    tail -5 "$work/$name.log" | sed 's/^/   | /'
    mg_report "$work"
    [ "$rc" -eq 0 ]
  }
  skip() {  # NAME WHY
    printf '%s\tskipped\t0\t-\t%s\n' "$1" "$2" >> "$work/phases.tsv"
    echo "== $1: skipped ($2)"
  }

  phase info 60 0 5
  if [ "$n" -lt 1 ]; then
    skip build "nvidia-smi lists no GPU"
  elif [ "${GPU_CHECK_BUILD:-1}" = 0 ]; then
    skip build "GPU_CHECK_BUILD=0: the build already in $build"
    built=1
  elif phase build "${GPU_CHECK_BUILD_S:-420}" 130 60; then
    built=1
  fi
  if [ "$built" = 1 ]; then
    # Several GPUs: the tests take most of the lease (see mg_ctest), the benches what is left.
    local ctest_s=200 bench_s=150 scaling_s=240 after_ctest=230
    [ "$n" -ge 2 ] && { ctest_s=330; bench_s=90; scaling_s=120; after_ctest=150; }
    phase ctest "${GPU_CHECK_CTEST_S:-$ctest_s}" "$after_ctest" 30
    phase bench "${GPU_CHECK_BENCH_S:-$bench_s}" 80 40
    phase scaling "${GPU_CHECK_SCALING_S:-$scaling_s}" 10 40
  else
    for p in ctest bench scaling; do skip "$p" "no build"; done
  fi
  mg_report "$work"
  echo "== multigpu: done in $SECONDS s; $out/summary.md, $out/gpu-check-multigpu.tar.gz"
  grep -E '^\| .* \| \*\*' "$out/summary.md" | sed 's/^/   /'
  # The exit status: 0 when no check failed.
  ! grep -qE '^\| .* \| \*\*FAIL\*\* \|' "$out/summary.md"
}

case "${1:-}" in
  _mg_info) mg_info; exit $? ;;
  _mg_build) mg_build; exit $? ;;
  _mg_ctest) mg_ctest; exit $? ;;
  _mg_bench) mg_bench; exit $? ;;
  _mg_scaling) mg_scaling; exit $? ;;
esac

for step in "${steps[@]}"; do
  case "$step" in
    build)
      { nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nvcc --version | tail -1; } \
        | tee "$out/machine.txt"
      configure_and_build "$out" || exit 1
      ;;
    test)
      echo "== ctest -L gpu"
      ctest --test-dir "$build" -L gpu --output-on-failure -j 4 2>&1 | tee "$out/ctest-gpu.log" | tail -25
      [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
      ;;
    memcheck)
      echo "== compute-sanitizer memcheck"
      for bin in "$build"/tests/*_gpu_tests; do
        [ -x "$bin" ] || continue
        log="$out/memcheck-$(basename "$bin").log"
        timeout 300 compute-sanitizer --tool memcheck --error-exitcode 9 "$bin" > "$log" 2>&1
        echo "$(basename "$bin"): exit $? | $(grep -E 'ERROR SUMMARY' "$log" | tail -1) | $(grep -E '^\[  (PASSED|FAILED) ' "$log" | tr '\n' ' ')"
      done
      ;;
    multigpu)
      multigpu || status=1
      ;;
    *) echo "unknown step $step"; exit 2 ;;
  esac
done
exit "$status"
