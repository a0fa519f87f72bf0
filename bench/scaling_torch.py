"""loom-scaling's experiment (apps/scaling) in PyTorch DDP, for the same chart and table: training
steps (forward, BCE-with-logits, backward with DDP's all-reduce, Adam lr 1e-3) on 1..N GPUs against
the plain model (no DDP) on one GPU, written in loom-scaling's report.json schema ("tool": "pytorch").

  python3 bench/scaling_torch.py --model seed_cnn --gpus 1,2,4,8 --batch-per-gpu 32 --steps 300 \
      --warmup 50 --precision tf32 --scaling weak --skip-missing --out DIR
  python3 bench/scaling_torch.py --model resnet18 --gpus 1 --precision bf16 --channels-last --compile --out DIR
  python3 bench/scaling_torch.py --device cpu --world-sizes 1,2 --steps 5 --warmup 2 --out DIR  (gloo)

PyTorch at its best, beside loom-scaling's captured steps: on CUDA always cudnn.benchmark and the
fused Adam; --compile runs torch.compile over the model (inside DDP: torch.compile(DDP(model)),
whose DDPOptimizer splits the graph at the buckets), its first step (the compilation) timed apart
as compile_s and never among the step times; --precision bf16 autocasts forward and loss;
--channels-last puts the model and the images in channels_last. Every row names its step_mode
("compiled" or "eager"), the report its precision and layout, so that a table can pick each
framework's fastest mode per (model, batch, precision).

Each world is its own torch.multiprocessing.spawn of one process per GPU (NCCL; gloo on the CPU),
meeting at a FileStore in a temporary folder: no port to pick, no launcher on PATH, and a rank that
fails ends its siblings and the run. The baseline is a spawn of one process without a process group.
step time: CUDA events on rank 0's current stream between steps (every rank waits for the others in
the all-reduce each step; the CPU: rank 0's perf_counter); median, p10, p90 of --steps after --warmup.
images_per_s = global batch / median; speedup = images_per_s / the plain model's; efficiency =
speedup / ranks. comm_ms: DDP's buckets as flat float32 tensors all-reduced back to back, median of
20. exposed_comm_ms: DDP's own event timers (backward comm end - backward compute end, i.e. the
compute stream's wait for the all-reduces after the last gradient), median of 20 steps after the
timed ones. differing_ranks: ranks whose SHA-256 of the parameters' bytes differs from rank 0's.
rank_median_ms: every rank's median step (slowest_rank_ms its largest: the straggler beside rank
0's), rank_images_per_s each rank's batch over it; exposed_share = exposed_comm_ms / median_ms.
"""
import os

# NVLink multicast (NVLS) can take a host's shared GPUs out of service: off, unless asked for.
os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")

import argparse  # noqa: E402
import csv  # noqa: E402
import datetime  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
from torch import nn  # noqa: E402

from train_step_torch import classic_cnn, resnet18, seed_cnn  # noqa: E402

MODELS = {"seed_cnn": seed_cnn, "classic_cnn": classic_cnn, "resnet18": resnet18}
COMM_REPS = 20       # back-to-back bucket all-reduces timed after the steps
EXPOSED_STEPS = 20   # steps with DDP's timers on every iteration, after the timed steps
ROW_KEYS = ["world_size", "ran", "note", "global_batch", "step_mode", "launch", "median_ms", "p10_ms", "p90_ms",
            "slowest_rank_ms", "images_per_s", "speedup", "efficiency", "comm_ms", "exposed_comm_ms",
            "exposed_share", "loader_wait_ms", "differing_ranks", "usd_per_million_images", "compile_s"]


def set_precision(precision):
    """fp32: cuDNN and matmuls in full float32; tf32 (PyTorch's conv default) and bf16 (autocast
    over forward and loss): both TF32 switches on for what stays in float32."""
    on = precision != "fp32"
    torch.backends.cudnn.allow_tf32 = on
    torch.backends.cuda.matmul.allow_tf32 = on


def nearest_rank(sorted_ms, q):
    """The q-quantile as loom-scaling takes it: element round(q * (n - 1)) of the sorted times."""
    return sorted_ms[int(q * (len(sorted_ms) - 1) + 0.5)]


def parse_buckets(logging_data, gradient_bytes):
    """DDP's bucket bytes after its rebuild on the first backward (else as constructed), from
    _get_ddp_logging_data(); one bucket of all gradient bytes where that private API is silent."""
    for key in ("rebuilt_bucket_sizes", "bucket_sizes"):
        text = logging_data.get(key) if logging_data else None
        if isinstance(text, str) and text.strip():
            return [int(b) for b in text.split(",")], "DDP's " + key
    return [gradient_bytes], "one bucket of all gradient bytes (DDP logging data has no bucket_sizes)"


def worker(rank, job):
    """One rank: build, warm up, time the steps; with DDP also comm_ms, exposed_comm_ms and the
    parameter hash. Rank 0 writes its figures as JSON to job['result']."""
    cuda = job["device"] == "cuda"
    world, ddp = job["world"], job["ddp"]
    dev = torch.device("cuda", rank) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(dev)
    else:
        torch.set_num_threads(job["threads"])
    set_precision(job["precision"])
    torch.backends.cudnn.benchmark = cuda  # PyTorch's fastest convolutions for these fixed shapes
    if ddp:
        dist.init_process_group("nccl" if cuda else "gloo", init_method="file://" + job["store"],
                                rank=rank, world_size=world, **({"device_id": dev} if cuda else {}))

    torch.manual_seed(1)  # the same weights everywhere (DDP broadcasts rank 0's anyway)
    layout = torch.channels_last if job["channels_last"] else torch.contiguous_format
    model = MODELS[job["model"]]().to(dev, memory_format=layout)
    model.train()
    parameters = sum(p.numel() for p in model.parameters() if p.requires_grad)
    gradient_bytes = sum(p.numel() * p.element_size() for p in model.parameters() if p.requires_grad)
    ddp_net = nn.parallel.DistributedDataParallel(model, device_ids=[rank] if cuda else None) if ddp else None
    net = ddp_net if ddp else model
    opt = torch.optim.Adam(net.parameters(), lr=1e-3, **({"fused": True} if cuda else {}))
    if job["compile"]:
        net = torch.compile(net, mode=job["compile_mode"])
    torch.manual_seed(100 + rank)  # each rank its own random images (never zeros) and labels
    x = torch.rand(job["batch"], 3, 64, 64, device=dev).contiguous(memory_format=layout)
    y = torch.randint(0, 2, (job["batch"], 1), device=dev).float()
    loss_fn = nn.BCEWithLogitsLoss()
    autocast = torch.autocast(device_type=dev.type, dtype=torch.bfloat16, enabled=job["precision"] == "bf16")

    def step():
        opt.zero_grad(set_to_none=True)
        with autocast:
            loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()

    def timed(n, work):
        """Milliseconds of each of n calls of work(): CUDA events on the current stream between
        calls on a GPU (device time), perf_counter on the CPU."""
        if cuda:
            torch.cuda.synchronize()
            marks = [torch.cuda.Event(enable_timing=True) for _ in range(n + 1)]
            marks[0].record()
            for i in range(n):
                work()
                marks[i + 1].record()
            torch.cuda.synchronize()
            return [marks[i].elapsed_time(marks[i + 1]) for i in range(n)]
        out = []
        for _ in range(n):
            t0 = time.perf_counter()
            work()
            out.append((time.perf_counter() - t0) * 1e3)
        return out

    compile_s = None
    if job["compile"]:  # the first step compiles forward and backward: timed apart, never a step time
        if cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        step()
        if cuda:
            torch.cuda.synchronize()
        compile_s = time.perf_counter() - t0
    for _ in range(job["warmup"]):
        step()
    ms = timed(job["steps"], step)
    result = {"ms": ms, "parameters": parameters, "gradient_bytes": gradient_bytes,
              "gpu_name": torch.cuda.get_device_name(dev) if cuda else "", "comm_ms": None,
              "exposed_comm_ms": None, "differing_ranks": 0, "buckets": [], "notes": [],
              "compile_s": compile_s, "rank_median_ms": []}

    if ddp:
        # Exposed communication, from DDP's own timers (CUDA events on the current stream): the
        # forward of step k+1 stores step k's (comm end - comm start) and (compute end - comm start).
        try:
            ddp_net._set_ddp_runtime_logging_sample_rate(1)
            stalls, seen = [], None
            for _ in range(EXPOSED_STEPS + 1):
                step()
                d = ddp_net._get_ddp_logging_data()
                if d.get("iteration") != seen and "backward_comm_time" in d:
                    seen = d.get("iteration")
                    stalls.append((d["backward_comm_time"] - d["backward_compute_comm_overlap_time"]) / 1e6)
            stalls = sorted(stalls[1:])  # the first one read may predate the sample rate
            if stalls:
                result["exposed_comm_ms"] = max(0.0, nearest_rank(stalls, 0.5))
                result["notes"].append(f"exposed: DDP's timers, {len(stalls)} steps")
            else:
                result["notes"].append("exposed: null, DDP's timers recorded no step")
        except (AttributeError, KeyError, RuntimeError) as e:
            result["notes"].append(f"exposed: null, DDP's timers unreadable ({type(e).__name__})")

        sizes, source = parse_buckets(ddp_net._get_ddp_logging_data(), gradient_bytes)
        result["buckets"] = [{"numel": b // 4, "bytes": b, "dtype": "float32"} for b in sizes]
        result["notes"].append(f"comm: {len(sizes)} buckets from {source}")
        flats = [torch.ones(b // 4, dtype=torch.float32, device=dev) for b in sizes]

        def all_reduce_buckets():
            for t in flats:
                dist.all_reduce(t)

        for _ in range(3):
            all_reduce_buckets()
        dist.barrier()
        result["comm_ms"] = nearest_rank(sorted(timed(COMM_REPS, all_reduce_buckets)), 0.5)

        digest = hashlib.sha256()
        for p in model.parameters():
            digest.update(p.detach().reshape(-1).view(torch.uint8).cpu().numpy().tobytes())
        hashes = [None] * world
        dist.all_gather_object(hashes, digest.hexdigest())
        result["differing_ranks"] = sum(h != hashes[0] for h in hashes)
        medians = [None] * world  # every rank's median step: the straggler column
        dist.all_gather_object(medians, nearest_rank(sorted(ms), 0.5))
        result["rank_median_ms"] = medians
        dist.barrier()
        dist.destroy_process_group()
    if rank == 0:
        with open(job["result"], "w") as f:
            json.dump(result, f)


def run_job(args, world, ddp, batch):
    """Spawns `world` ranks of worker() and returns rank 0's figures."""
    folder = tempfile.mkdtemp(prefix="loom-scaling-torch-")
    job = {"device": args.device, "world": world, "ddp": ddp, "model": args.model, "batch": batch,
           "steps": args.steps, "warmup": args.warmup, "precision": args.precision,
           "channels_last": args.channels_last, "compile": args.compile, "compile_mode": args.compile_mode,
           "threads": max(1, (os.cpu_count() or 1) // world),
           "store": os.path.join(folder, "store"), "result": os.path.join(folder, "rank0.json")}
    try:
        mp.spawn(worker, args=(job,), nprocs=world, join=True)
        with open(job["result"]) as f:
            return json.load(f)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def maybe_round(v, digits=4):
    return None if v is None else round(v, digits)


def make_row(world, global_batch, got, note, price, step_mode):
    ms = sorted(got["ms"])
    median = nearest_rank(ms, 0.5)
    ips = global_batch / (median / 1e3)
    exposed, ranks = got["exposed_comm_ms"], got["rank_median_ms"]  # ranks: DDP rows only
    return {"world_size": world, "ran": True, "note": note, "global_batch": global_batch,
            "step_mode": step_mode, "launch": "processes",
            "median_ms": round(median, 4), "p10_ms": round(nearest_rank(ms, 0.1), 4),
            "p90_ms": round(nearest_rank(ms, 0.9), 4),
            "slowest_rank_ms": maybe_round(max(ranks)) if ranks else None,
            "images_per_s": round(ips, 1), "speedup": 0.0, "efficiency": 0.0,
            "comm_ms": maybe_round(got["comm_ms"]), "exposed_comm_ms": maybe_round(exposed),
            "exposed_measure": None if exposed is None else "stall",
            "exposed_share": None if exposed is None else round(exposed / median, 4),
            "loader_wait_ms": 0.0, "differing_ranks": got["differing_ranks"],
            "usd_per_million_images": None if price is None else round(price * world / 3600 / ips * 1e6, 4),
            "rank_median_ms": [round(m, 4) for m in ranks],
            "rank_images_per_s": [round(global_batch / world / (m / 1e3), 1) for m in ranks],
            "compile_s": maybe_round(got["compile_s"], 2)}


def not_run_row(world, global_batch, gpus, step_mode):
    row = {k: 0.0 for k in ROW_KEYS}
    row.update(world_size=world, ran=False, global_batch=global_batch, differing_ranks=0, step_mode=step_mode,
               launch="processes", note=f"not run: needs {world} GPUs, this machine has {gpus}",
               comm_ms=None, exposed_comm_ms=None, exposed_measure=None, exposed_share=None,
               usd_per_million_images=None, slowest_rank_ms=None, rank_median_ms=[], rank_images_per_s=[],
               compile_s=None)
    return row


def command_lines(command):
    """The lines a command prints, without terminal colours; none where it cannot run."""
    try:
        text = subprocess.run(command, capture_output=True, text=True, timeout=30).stdout
        return [line.rstrip() for line in re.sub(r"\x1b\[[0-9;]*m", "", text).splitlines()]
    except (OSError, subprocess.SubprocessError):
        return []


def cudnn_version():
    """torch.backends.cudnn.version() as major.minor.patch (cuDNN 9 packs it as 10000 M + 100 m + p,
    cuDNN 8 as 1000 M + 100 m + p)."""
    v = torch.backends.cudnn.version()
    if v is None:
        return ""
    major, rest = divmod(v, 10000 if v >= 90000 else 1000)
    return f"{major}.{rest // 100}.{rest % 100}"


def versions():
    def quietly(f):
        try:
            v = f()
            return "" if v is None else ".".join(map(str, v)) if isinstance(v, tuple) else str(v)
        except Exception:  # a CPU-only build has no NCCL or cuDNN to ask
            return ""
    driver = command_lines(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])
    return {"driver": driver[0].strip() if driver else "", "cuda": torch.version.cuda or "",
            "cudnn": quietly(cudnn_version), "nccl": quietly(torch.cuda.nccl.version),
            "framework": "pytorch " + torch.__version__}


def report_text(r):
    cuda = r["device"] == "cuda"
    v = r["versions"]
    out = [f"# scaling_torch: PyTorch DDP data-parallel training steps (forward, BCE, backward, DDP "
           f"all-reduce, Adam) {r['date']}",
           "# device " + ("cuda, one process per GPU over NCCL" if cuda else "cpu, processes over gloo")
           + f" (torch.multiprocessing spawn); {r['gpus_present']} CUDA devices visible",
           f"# {v['framework']}, CUDA {v['cuda'] or '-'}, cuDNN {v['cudnn'] or '-'}, NCCL {v['nccl'] or '-'}, "
           f"driver {v['driver'] or '-'}",
           "# env " + " ".join(f"{k}={os.environ.get(k, '')}"
                               for k in ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST"))]
    if cuda:
        for command in (["nvidia-smi", "--query-gpu=index,name,driver_version", "--format=csv,noheader"],
                        ["nvidia-smi", "topo", "-m"]):
            out += ["#   " + line for line in command_lines(command)]
    out.append(f"# model {r['model']} ({r['parameters']} parameters, {r['gradient_bytes']} gradient bytes), "
               f"precision {r['precision']}{', channels-last' if r['channels_last'] else ''}, "
               f"synthetic 64x64 images, {r['scaling']} scaling, "
               + ("global batch split over the ranks" if r["scaling"] == "strong"
                  else f"batch {r['batch_per_rank']} per rank"))
    out.append(f"# step mode {r['step_mode']}"
               + (f" (torch.compile, mode {r['compile_mode']}; compile_s: its first step, wall, not a step time)"
                  if r["compile"] else " (op by op)")
               + f"; cudnn.benchmark {r['cudnn_benchmark']}, fused Adam {r['fused_adam']}")
    out.append(f"# {r['steps']} timed steps after {r['warmup']} warm-up steps; step time: "
               + ("CUDA events on rank 0's stream" if cuda else "rank 0's perf_counter")
               + "; speedup: images/s against PyTorch's plain model (no DDP) on one device")
    out.append(f"# comm_ms: the buckets all-reduced back to back, median of {COMM_REPS}; exposed_ms: DDP's "
               f"timers, comm end - compute end, median of {EXPOSED_STEPS} steps; #wrong: ranks whose "
               "parameter hash differs from rank 0's; slowest: the largest of the ranks' median steps (median_ms "
               "is rank 0's); exp%: exposed / median")
    out.append(f"# buckets of the largest world run: {len(r['buckets'])}"
               + "".join(f" [{b['numel']} {b['dtype']}]" for b in r["buckets"]))
    out += ["#", "# ranks    global   median_ms    slowest   p10_ms   p90_ms    images/s  speedup  efficiency"
                 "   comm_ms  exposed_ms    exp%  #wrong  compile_s  note"]

    def fmt(v):
        return "       n/a" if v is None else f"{v:10.3f}"

    for label, row in [("plain", r["baseline"])] + [(str(x["world_size"]), x) for x in r["rows"]]:
        if not row["ran"]:
            out.append(f"{label:>7}  {row['note']}")
            continue
        share = "   n/a" if row["exposed_share"] is None else f"{100 * row['exposed_share']:6.1f}"
        compiled = "      n/a" if row["compile_s"] is None else f"{row['compile_s']:9.1f}"
        out.append(f"{label:>7}  {row['global_batch']:8d}  {row['median_ms']:10.3f}{fmt(row['slowest_rank_ms'])}  "
                   f"{row['p10_ms']:7.3f}  {row['p90_ms']:7.3f}  {row['images_per_s']:10.1f}  {row['speedup']:6.2f}x  "
                   f"{100 * row['efficiency']:9.1f}%{fmt(row['comm_ms'])}  {fmt(row['exposed_comm_ms'])}  "
                   f"{share}  {row['differing_ranks']:6d}  {compiled}  {row['note']}")
    return "\n".join(out) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="seed_cnn", choices=sorted(MODELS))
    p.add_argument("--gpus", help="GPU counts to run, one rank per GPU (default 1,2,4,8)")
    p.add_argument("--world-sizes", help="rank counts on --device cpu (default 1,2,4)")
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    p.add_argument("--batch-per-gpu", type=int, default=32, help="each rank's batch (weak scaling)")
    p.add_argument("--steps", type=int, default=300, help="timed steps")
    p.add_argument("--warmup", type=int, default=50, help="untimed steps first")
    p.add_argument("--precision", default="tf32", choices=["fp32", "tf32", "bf16"],
                   help="fp32; tf32 (PyTorch's convolution default); bf16: autocast over forward and loss")
    p.add_argument("--channels-last", action="store_true", help="the model and the images in channels_last")
    p.add_argument("--compile", action="store_true",
                   help="torch.compile the model (inside DDP: the DDP module); its first step is compile_s, apart")
    p.add_argument("--compile-mode", default="default", choices=["default", "reduce-overhead", "max-autotune"],
                   help="torch.compile's mode (reduce-overhead: CUDA graphs of the compiled regions)")
    p.add_argument("--scaling", default="weak", choices=["weak", "strong"],
                   help="weak: batch per rank fixed; strong: the largest world's global batch, split")
    p.add_argument("--skip-missing", action="store_true", help="report GPU counts above the machine's as not run")
    p.add_argument("--price-per-gpu-hour", type=float, help="USD, for usd_per_million_images")
    p.add_argument("--out", help="folder for report.json, report.txt and report.csv")
    args = p.parse_args()

    cuda = args.device == "cuda"
    if cuda and args.world_sizes:
        p.error("--world-sizes is for --device cpu; on GPUs use --gpus")
    if not cuda and args.gpus:
        p.error("--gpus counts GPUs; with --device cpu use --world-sizes")
    try:
        worlds = [int(n) for n in ((args.gpus or "1,2,4,8") if cuda else (args.world_sizes or "1,2,4")).split(",")]
    except ValueError:
        p.error("--gpus / --world-sizes: expected comma-separated integers")
    if any(n < 1 for n in worlds) or args.steps < 1 or args.warmup < 0 or args.batch_per_gpu < 1:
        p.error("world sizes, --steps and --batch-per-gpu must be at least 1, --warmup at least 0")
    if cuda and not torch.cuda.is_available():
        p.error("--device cuda: PyTorch sees no CUDA device (try --device cpu)")
    if args.compile_mode != "default" and not args.compile:
        p.error("--compile-mode is torch.compile's: give --compile too")
    step_mode = "compiled" if args.compile else "eager"
    gpus = torch.cuda.device_count()
    for n in worlds:
        if cuda and n > gpus and not args.skip_missing:
            p.error(f"--gpus {n}: this machine has {gpus} GPU{'' if gpus == 1 else 's'} "
                    "(--skip-missing reports such rows as not run)")
    largest = max(worlds)

    def rank_batch(n):
        if args.scaling == "weak":
            return args.batch_per_gpu
        if args.batch_per_gpu * largest % n:
            p.error(f"--scaling strong: the global batch {args.batch_per_gpu * largest} does not split "
                    f"evenly over {n} ranks")
        return args.batch_per_gpu * largest // n

    for n in worlds:
        rank_batch(n)  # known before minutes of measuring
    if args.out:
        os.makedirs(args.out, exist_ok=True)

    base_got = run_job(args, 1, False, rank_batch(1))
    baseline = make_row(1, rank_batch(1), base_got, "plain model", args.price_per_gpu_hour, step_mode)
    baseline.update(speedup=1.0, efficiency=1.0)
    rows, buckets = [], []
    for n in worlds:
        if cuda and n > gpus:
            rows.append(not_run_row(n, rank_batch(n) * n, gpus, step_mode))
            continue
        got = run_job(args, n, True, rank_batch(n))
        row = make_row(n, rank_batch(n) * n, got, "; ".join(got["notes"]), args.price_per_gpu_hour, step_mode)
        row["speedup"] = round(row["images_per_s"] / baseline["images_per_s"], 4)
        row["efficiency"] = round(row["speedup"] / n, 4)
        rows.append(row)
        if n == max(m for m in worlds if not cuda or m <= gpus):
            buckets = got["buckets"]

    report = {
        "tool": "pytorch", "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "model": args.model, "parameters": base_got["parameters"], "gradient_bytes": base_got["gradient_bytes"],
        "device": args.device, "gpu_name": base_got["gpu_name"], "gpus_present": gpus,
        "placement": "gpus" if cuda else "cpu", "launch": "processes",
        "precision": args.precision, "channels_last": args.channels_last, "step_mode": step_mode,
        "compile": args.compile, "compile_mode": args.compile_mode if args.compile else None,
        "cudnn_benchmark": cuda, "fused_adam": cuda,
        "scaling": args.scaling, "data": "synthetic",
        "batch_per_rank": args.batch_per_gpu, "steps": args.steps, "warmup": args.warmup,
        "versions": versions(), "buckets": buckets, "price_per_gpu_hour": args.price_per_gpu_hour,
        "baseline": baseline, "rows": rows, "time_to_accuracy": None}
    text = report_text(report)
    sys.stdout.write(text)
    if args.out:
        with open(os.path.join(args.out, "report.json"), "w") as f:
            json.dump(report, f, indent=2)
            f.write("\n")
        with open(os.path.join(args.out, "report.txt"), "w") as f:
            f.write(text)
        with open(os.path.join(args.out, "report.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["run"] + ROW_KEYS)
            for kind, row in [("plain", baseline)] + [("ddp", x) for x in rows]:
                w.writerow([kind] + ["" if row[k] is None else row[k] for k in ROW_KEYS])
    if any(r["ran"] and r["differing_ranks"] for r in rows):
        print("scaling_torch.py: ranks ended with different parameters (see #wrong)", file=sys.stderr)
        sys.exit(3)  # the benches' "#wrong > 0": the report is still written


if __name__ == "__main__":
    main()
