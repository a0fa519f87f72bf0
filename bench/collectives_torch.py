"""bench/collectives_bench.cpp's sweep with torch.distributed, printing the same '#' lines and
rows (same columns, sizes, rounding and formulas) so the two outputs read side by side.

  python3 bench/collectives_torch.py --op all_reduce --sizes 8B:256MB [--dtype float32]
                                     [--iters 20] [--warmup 5] [--backend nccl|gloo] [--json]
  torchrun --standalone --nproc_per_node=N bench/collectives_torch.py ...   (N GPUs)

Without torchrun it is a world of one rank on cuda:0 (a FileStore in a temporary folder stands
in for the rendezvous). time: the slowest rank's average over --iters collectives, timed with
torch.cuda.Event on the current stream (gloo: perf_counter, each waited); algbw = size / time;
busbw = algbw * 2(n-1)/n (all_reduce), (n-1)/n (all_gather, reduce_scatter), 1 (broadcast).
"""
import argparse
import datetime
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time

import torch
import torch.distributed as dist

DTYPES = {"float32": torch.float32, "float64": torch.float64, "int64": torch.int64,
          "int32": torch.int32, "uint8": torch.uint8}
OPS = ["all_reduce", "broadcast", "all_gather", "reduce_scatter"]


def parse_bytes(text):
    """'8', '8B', '64K', '1MB', '2GiB' to bytes (binary multiples, as collectives_bench)."""
    m = re.fullmatch(r"(\d{1,12})([a-zA-Z]*)", text)
    shifts = {"": 0, "b": 0, "k": 10, "kb": 10, "kib": 10, "m": 20, "mb": 20, "mib": 20,
              "g": 30, "gb": 30, "gib": 30}
    if not m or m.group(2).lower() not in shifts:
        raise ValueError(f"'{text}' is not a byte count with unit B, K, M or G")
    n = int(m.group(1)) << shifts[m.group(2).lower()]
    if not 1 <= n <= 64 << 30:
        raise ValueError(f"'{text}' is outside 1 B .. 64 GiB")
    return n


def parse_sizes(spec):
    lo, _, hi = spec.partition(":")
    lo = parse_bytes(lo)
    hi = parse_bytes(hi) if hi else lo
    if hi < lo:
        raise ValueError(f"'{spec}': the largest size is below the smallest")
    sizes = []
    while lo <= hi:
        sizes.append(lo)
        lo *= 2
    return sizes


def bus_factor(op, n):
    return {"all_reduce": 2.0 * (n - 1) / n, "all_gather": (n - 1) / n,
            "reduce_scatter": (n - 1) / n, "broadcast": 1.0}[op]


def rank_values(n, dtype, rank, device):
    """Element i = (rank + 1) * (i % 7 + 1), made in int64 and converted as loom's bench does
    (uint8 wraps just as the collective's sums do)."""
    i = torch.arange(n, dtype=torch.int64, device=device)
    return ((rank + 1) * (i % 7 + 1)).to(dtype)


def expected(op, world, rank, count, total_out, dtype, device):
    """The closed-form answer of every output element of this rank (see collectives_bench.cpp)."""
    j = torch.arange(total_out, dtype=torch.int64, device=device)
    ranks_sum = world * (world + 1) // 2
    if op == "all_reduce":
        e = (j % 7 + 1) * ranks_sum
    elif op == "broadcast":
        e = j % 7 + 1
    elif op == "all_gather":
        e = (j // count + 1) * (j % count % 7 + 1)
    else:
        e = ((rank * count + j) % 7 + 1) * ranks_sum
    return e.to(dtype)


def reduce_scalar(value, dtype, op, device):
    """One value reduced over the ranks (outside any timed region); .item() blocks the host, so
    this doubles as the barrier before a timed loop."""
    t = torch.full((1,), value, dtype=dtype, device=device)
    dist.all_reduce(t, op=op)
    return t.item()


def measure(args, size, world, rank, device):
    dtype = DTYPES[args.dtype]
    elt = torch.empty((), dtype=dtype).element_size()
    split = args.op in ("all_gather", "reduce_scatter")
    total = size // elt // world * world if split else size // elt
    count = total // world if split else total
    row = {"size_bytes": total * elt, "count": count}
    if total == 0:
        return row
    in_numel = count if args.op == "all_gather" else total
    # Timed on zeros, as collectives_bench: repeated in-place sums of rank values would overflow.
    inp = torch.zeros(in_numel, dtype=dtype, device=device)
    out = None
    if args.op == "all_gather":
        out = torch.empty(total, dtype=dtype, device=device)
    elif args.op == "reduce_scatter":
        out = torch.empty(count, dtype=dtype, device=device)

    def issue():
        if args.op == "all_reduce":
            return dist.all_reduce(inp, op=dist.ReduceOp.SUM, async_op=True)
        if args.op == "broadcast":
            return dist.broadcast(inp, src=0, async_op=True)
        if args.op == "all_gather":
            return dist.all_gather_into_tensor(out, inp, async_op=True)
        return dist.reduce_scatter_tensor(out, inp, op=dist.ReduceOp.SUM, async_op=True)

    # With NCCL, Work.wait() makes the current stream wait without blocking the host, as loom's
    # wait_stream() does; with gloo it blocks the host.
    for _ in range(args.warmup):
        issue().wait()
    on_gpu = device.type == "cuda"
    if on_gpu:
        torch.cuda.current_stream(device).synchronize()
    reduce_scalar(0.0, torch.float64, dist.ReduceOp.MAX, device)
    if on_gpu:
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(args.iters):
            issue().wait()
        stop.record()
        stop.synchronize()
        us = 1e3 * start.elapsed_time(stop) / args.iters
    else:
        t0 = time.perf_counter()
        for _ in range(args.iters):
            issue().wait()
        us = (time.perf_counter() - t0) * 1e6 / args.iters
    row["time_us"] = reduce_scalar(us, torch.float64, dist.ReduceOp.MAX, device)
    row["algbw_gbps"] = row["size_bytes"] / (row["time_us"] * 1e-6) / 1e9
    row["busbw_gbps"] = row["algbw_gbps"] * bus_factor(args.op, world)

    # The check on rank values, outputs poisoned with 0 (no answer's value below 64 ranks).
    inp.copy_(rank_values(in_numel, dtype, rank, device))
    if out is not None:
        out.zero_()
    issue().wait()
    result = out if out is not None else inp
    want = expected(args.op, world, rank, count, result.numel(), dtype, device)
    mine = int((result != want).sum().item())
    row["wrong"] = int(reduce_scalar(mine, torch.int64, dist.ReduceOp.SUM, device))
    return row


def command_output(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return ""


def nccl_version():
    if not torch.cuda.is_available():
        return "none"
    v = torch.cuda.nccl.version()
    return ".".join(map(str, v)) if isinstance(v, tuple) else f"{v // 1000}.{v % 1000 // 100}.{v % 100}"


def print_setup(args, sizes, world, device):
    reduces = args.op in ("all_reduce", "reduce_scatter")
    print(f"# pytorch collectives_torch: {args.op}{' (sum)' if reduces else ''}, {args.dtype}, "
          f"{len(sizes)} sizes from {sizes[0]} to {sizes[-1]} B (factor 2)")
    where = f"cuda:<local rank> (one GPU per rank; rank 0 on {device})" if device.type == "cuda" else "cpu"
    print(f"# backend {args.backend}, world size {world}, device {where}, host {socket.gethostname()}")
    print(f"# NCCL {nccl_version()}, torch {torch.__version__} (CUDA {torch.version.cuda}), "
          f"CUDA devices visible {torch.cuda.device_count()}")
    if device.type == "cuda":
        smi = command_output(["nvidia-smi", "--query-gpu=index,name,driver_version", "--format=csv,noheader"])
        for line in (smi + command_output(["nvidia-smi", "topo", "-m"])).splitlines():
            print(f"#   {line}")
    print(f"# iters {args.iters}, warmup {args.warmup}, "
          f"{datetime.datetime.now().astimezone().strftime('%Y-%m-%d %H:%M:%S %z')}")
    clock = "CUDA events on each rank's stream" if device.type == "cuda" else "perf_counter, each waited"
    print(f"# time: the slowest rank's average over iters ({clock}); algbw = size / time; "
          f"busbw = algbw * {bus_factor(args.op, world):.4f}")
    print("# #wrong: elements (summed over ranks) differing from the closed form, inputs (r+1)*(i%7+1)")
    print("#")
    cols = "# %10s  %12s  %8s  %6s  %6s  %9s  %7s  %7s  %6s"
    print(cols % ("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong"))
    print(cols % ("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", ""))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--op", default="all_reduce", choices=OPS)
    p.add_argument("--sizes", default="8B:256MB", help="MIN:MAX in bytes (B/K/M/G), doubling; or one size")
    p.add_argument("--backend", default="nccl", choices=["nccl", "gloo"])
    p.add_argument("--dtype", default="float32", choices=list(DTYPES))
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--json", action="store_true", help="one JSON object per row instead of the table")
    args = p.parse_args()
    try:
        sizes = parse_sizes(args.sizes)
    except ValueError as e:
        p.error(f"--sizes: {e}")
    if args.iters < 1 or args.warmup < 0:
        p.error("--iters must be at least 1 and --warmup at least 0")

    launched = "RANK" in os.environ and "WORLD_SIZE" in os.environ
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if args.backend == "nccl":
        if torch.cuda.device_count() <= local_rank:
            sys.exit(f"collectives_torch: NCCL needs cuda:{local_rank}, but "
                     f"{torch.cuda.device_count()} CUDA devices are visible")
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    tmp = None
    if launched:
        dist.init_process_group(args.backend)
    else:
        tmp = tempfile.TemporaryDirectory()
        store = dist.FileStore(os.path.join(tmp.name, "store"), 1)
        dist.init_process_group(args.backend, store=store, rank=0, world_size=1)
    world, rank = dist.get_world_size(), dist.get_rank()

    if rank == 0 and not args.json:
        print_setup(args, sizes, world, device)
    wrong, busbw, rows = 0, 0.0, 0
    reduces = args.op in ("all_reduce", "reduce_scatter")
    for size in sizes:
        r = measure(args, size, world, rank, device)
        if r["count"] == 0:
            continue  # below one element per rank, as collectives_bench skips it
        wrong += r["wrong"]
        busbw += r["busbw_gbps"]
        rows += 1
        if rank != 0:
            continue
        if args.json:
            print(json.dumps({"framework": "pytorch " + torch.__version__, "backend": args.backend,
                              "world_size": world, "device": str(device), "nccl": nccl_version(),
                              "op": args.op, "dtype": args.dtype, "redop": "sum" if reduces else "none",
                              "root": 0 if args.op == "broadcast" else -1, **r,
                              "iters": args.iters, "warmup": args.warmup}), flush=True)
        else:
            print("%12d  %12d  %8s  %6s  %6d  %9.2f  %7.2f  %7.2f  %6d"
                  % (r["size_bytes"], r["count"], args.dtype, "sum" if reduces else "none",
                     0 if args.op == "broadcast" else -1, r["time_us"], r["algbw_gbps"],
                     r["busbw_gbps"], r["wrong"]), flush=True)
    if rank == 0 and not args.json:
        print(f"# Out of bounds values : {wrong} {'FAILED' if wrong else 'OK'}")
        print(f"# Avg bus bandwidth    : {busbw / rows if rows else 0.0:.4f} GB/s over {rows} sizes\n#")
    dist.destroy_process_group()
    if tmp is not None:
        tmp.cleanup()
    sys.exit(3 if wrong else 0)


if __name__ == "__main__":
    main()
