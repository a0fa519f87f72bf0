"""bench/collectives_bench.cpp's sweep with torch.distributed, printing the same '#' lines and
rows (same columns, sizes, rounding, timing and formulas) so the two outputs read side by side.

  python3 bench/collectives_torch.py --op all_reduce|broadcast|all_gather|reduce_scatter|all|OP,OP
                                     --sizes 8B:256MB [--dtype float32] [--iters 20] [--warmup 5]
                                     [--backend nccl|gloo] [--json] [--json-out FILE]
  python3 -m torch.distributed.run --standalone --nproc_per_node=N bench/collectives_torch.py ...

Without a launcher it is a world of one rank on cuda:0 (a FileStore in a temporary folder stands
in for the rendezvous). Timing on a GPU, per size, as collectives_bench: --warmup collectives
issued back to back (async_op, no wait between them); the current stream waits for a barrier (a
one-element all_reduce whose Work.wait() orders the stream, not the host) and records the start
event; --iters collectives issued back to back on NCCL's stream; the current stream waits once
for the last and records the stop event; time = (stop - start) / iters on each rank. time(avg):
the average over ranks (nccl-tests' default), time(max): the slowest rank's; issue: the host's
time per call. gloo: perf_counter, each waited. algbw = size / time(avg); busbw = algbw *
2(n-1)/n (all_reduce), (n-1)/n (all_gather, reduce_scatter), 1 (broadcast).
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

# NVLink multicast (NVLS) can take a host's shared GPUs out of service: off, unless asked for.
os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

DTYPES = {"float32": torch.float32, "float64": torch.float64, "int64": torch.int64,
          "int32": torch.int32, "uint8": torch.uint8}
OPS = ["all_reduce", "broadcast", "all_gather", "reduce_scatter"]
NCCL_VARIABLES = ["NCCL_NVLS_ENABLE", "NCCL_ALGO", "NCCL_PROTO", "NCCL_P2P_LEVEL", "NCCL_MIN_NCHANNELS",
                  "NCCL_MAX_NCHANNELS", "NCCL_COMM_BLOCKING", "CUDA_VISIBLE_DEVICES"]


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


def parse_ops(spec):
    """'all', one collective, or several separated by commas (each once, in the order given)."""
    ops = []
    for name in spec.split(","):
        named = OPS if name == "all" else [name] if name in OPS else None
        if named is None:
            raise ValueError(f"'{name}' is not all_reduce, broadcast, all_gather, reduce_scatter or all")
        ops += [op for op in named if op not in ops]
    return ops


def bus_factor(op, n):
    return {"all_reduce": 2.0 * (n - 1) / n, "all_gather": (n - 1) / n,
            "reduce_scatter": (n - 1) / n, "broadcast": 1.0}[op]


def reduces(op):
    return op in ("all_reduce", "reduce_scatter")


def in_place(op):
    return op in ("all_reduce", "broadcast")


def timed_op(dtype):
    """Sum, or max for integers (repeated in-place sums would overflow), as collectives_bench."""
    return dist.ReduceOp.SUM if dtype.is_floating_point else dist.ReduceOp.MAX


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
    """One value reduced over the ranks (outside any timed region); .item() blocks the host."""
    t = torch.full((1,), value, dtype=dtype, device=device)
    dist.all_reduce(t, op=op)
    return t.item()


def measure(args, op, size, world, rank, device):
    dtype = DTYPES[args.dtype]
    elt = torch.empty((), dtype=dtype).element_size()
    split = op in ("all_gather", "reduce_scatter")
    total = size // elt // world * world if split else size // elt
    count = total // world if split else total
    row = {"size_bytes": total * elt, "count": count}
    if total == 0:
        return row
    in_numel = count if op == "all_gather" else total
    # Timed on rank values, as collectives_bench (floats may reach inf; integers use max).
    inp = rank_values(in_numel, dtype, rank, device)
    out = None
    if op == "all_gather":
        out = torch.empty(total, dtype=dtype, device=device)
    elif op == "reduce_scatter":
        out = torch.empty(count, dtype=dtype, device=device)

    def issue(reduce):
        if op == "all_reduce":
            return dist.all_reduce(inp, op=reduce, async_op=True)
        if op == "broadcast":
            return dist.broadcast(inp, src=0, async_op=True)
        if op == "all_gather":
            return dist.all_gather_into_tensor(out, inp, async_op=True)
        return dist.reduce_scatter_tensor(out, inp, op=reduce, async_op=True)

    reduce = timed_op(dtype)
    if device.type == "cuda":
        # With NCCL, Work.wait() makes the current stream wait for NCCL's stream without blocking
        # the host, as loom's wait_stream() does. Back to back: every collective of the group
        # runs on the same NCCL stream, which first waits for the current stream.
        last = None
        for _ in range(args.warmup):
            last = issue(reduce)
        if last is not None:
            last.wait()
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        barrier = torch.zeros(1, dtype=torch.float32, device=device)
        dist.all_reduce(barrier, async_op=True).wait()  # aligned on the device, as loom's barrier
        start.record()
        t0 = time.perf_counter()
        for _ in range(args.iters):
            last = issue(reduce)
        issue_us = (time.perf_counter() - t0) * 1e6 / args.iters
        last.wait()
        stop.record()
        stop.synchronize()
        us = 1e3 * start.elapsed_time(stop) / args.iters
    else:
        for _ in range(args.warmup):
            issue(reduce).wait()
        dist.barrier()
        t0 = time.perf_counter()
        issuing = 0.0
        for _ in range(args.iters):
            before = time.perf_counter()
            w = issue(reduce)
            issuing += time.perf_counter() - before
            w.wait()
        us = (time.perf_counter() - t0) * 1e6 / args.iters
        issue_us = issuing * 1e6 / args.iters
    row["time_us"] = reduce_scalar(us, torch.float64, dist.ReduceOp.SUM, device) / world
    row["time_max_us"] = reduce_scalar(us, torch.float64, dist.ReduceOp.MAX, device)
    row["issue_us"] = reduce_scalar(issue_us, torch.float64, dist.ReduceOp.SUM, device) / world
    row["algbw_gbps"] = row["size_bytes"] / (row["time_us"] * 1e-6) / 1e9
    # One rank has no link to measure (NCCL's one-rank path): busbw is n/a, null in the JSON.
    row["busbw_gbps"] = row["algbw_gbps"] * bus_factor(op, world) if world > 1 else None

    # The check on rank values, outputs poisoned with 0 (no answer's value below 64 ranks).
    inp.copy_(rank_values(in_numel, dtype, rank, device))
    if out is not None:
        out.zero_()
    issue(dist.ReduceOp.SUM).wait()
    result = out if out is not None else inp
    want = expected(op, world, rank, count, result.numel(), dtype, device)
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


def print_setup(args, ops, sizes, world, device, launched):
    print(f"# pytorch collectives_torch: {', '.join(ops)}; {args.dtype}; "
          f"{len(sizes)} sizes from {sizes[0]} to {sizes[-1]} B (factor 2)")
    where = f"cuda:<local rank> (one GPU per rank; rank 0 on {device})" if device.type == "cuda" else "cpu"
    ranks = ("a process per rank (RANK/WORLD_SIZE/LOCAL_RANK, torch.distributed.run)" if launched
             else "one process (FileStore)")
    print(f"# backend {args.backend}, world size {world}, ranks are {ranks}, device {where}, "
          f"host {socket.gethostname()}")
    env = " ".join(f"{v}={os.environ.get(v, '-')}" for v in NCCL_VARIABLES)
    print(f"# NCCL {nccl_version()} (PyTorch's), torch {torch.__version__} (CUDA {torch.version.cuda}), "
          f"CUDA devices visible {torch.cuda.device_count()}; {env}")
    if device.type == "cuda":
        smi = command_output(["nvidia-smi", "--query-gpu=index,name,driver_version", "--format=csv,noheader"])
        for line in (smi + command_output(["nvidia-smi", "topo", "-m"])).splitlines():
            print(f"#   {line}")
    print(f"# iters {args.iters} timed, warmup {args.warmup} untimed, per size; "
          f"{datetime.datetime.now().astimezone().strftime('%Y-%m-%d %H:%M:%S %z')}")
    if device.type == "cuda":
        print("# time: CUDA events on each rank's current stream: the stream waits for a barrier (a "
              "one-element all_reduce), records start; iters collectives issued back to back, no wait "
              "between them; the stream waits once for the last, records stop; (stop - start) / iters")
    else:
        print("# time: perf_counter on each rank after a barrier, each collective waited; / iters")
    print("# time(avg): the average over ranks (nccl-tests' default); time(max): the slowest rank; "
          "issue: host us per collective call (average over ranks)")
    print("# algbw = size / time(avg); busbw = algbw * factor (all_reduce 2(n-1)/n, all_gather and "
          "reduce_scatter (n-1)/n, broadcast 1)")
    print("# #wrong: elements (summed over ranks) differing from the closed form after one more "
          "collective on inputs (r+1)*(i%7+1); place: in (in place) or out (another tensor)")
    name = "sum" if DTYPES[args.dtype].is_floating_point else "max"
    print(f"# timed reduction: {name} (integer dtypes are timed with max: repeated in-place sums "
          "would overflow); the check's: sum\n#")


COLS = "# %10s  %12s  %8s  %6s  %5s  %5s  %10s  %10s  %8s  %7s  %7s  %6s"


def print_op_header(args, op, world):
    what = "root 0, " if op == "broadcast" else ""
    if reduces(op):
        what = f"reduction {'sum' if DTYPES[args.dtype].is_floating_point else 'max'}, "
    print(f"# {op}: {what}{'in place' if in_place(op) else 'out of place'}; "
          f"busbw factor {bus_factor(op, world):.4f}"
          + ("" if world > 1 else " (busbw n/a at world size 1: no link, NCCL's one-rank path)"))
    print(COLS % ("size", "count", "type", "redop", "root", "place", "time(avg)", "time(max)", "issue",
                  "algbw", "busbw", "#wrong"))
    print(COLS % ("(B)", "(elements)", "", "", "", "", "(us)", "(us)", "(us)", "(GB/s)", "(GB/s)", ""))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--op", default="all_reduce",
                   help="all_reduce, broadcast, all_gather, reduce_scatter, several separated by commas, or all")
    p.add_argument("--sizes", default="8B:256MB", help="MIN:MAX in bytes (B/K/M/G), doubling; or one size")
    p.add_argument("--backend", default="nccl", choices=["nccl", "gloo"])
    p.add_argument("--dtype", default="float32", choices=list(DTYPES))
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--json", action="store_true", help="one JSON object per row instead of the table")
    p.add_argument("--json-out", help="also write the rows as JSON lines to this file (rank 0)")
    args = p.parse_args()
    try:
        sizes = parse_sizes(args.sizes)
        ops = parse_ops(args.op)
    except ValueError as e:
        p.error(str(e))
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
        dist.init_process_group(args.backend, device_id=device if device.type == "cuda" else None)
    else:
        tmp = tempfile.TemporaryDirectory()
        store = dist.FileStore(os.path.join(tmp.name, "store"), 1)
        dist.init_process_group(args.backend, store=store, rank=0, world_size=1)
    world, rank = dist.get_world_size(), dist.get_rank()

    json_file = open(args.json_out, "w") if args.json_out and rank == 0 else None
    if rank == 0 and not args.json:
        print_setup(args, ops, sizes, world, device, launched)
    wrong_all = 0
    for op in ops:
        if rank == 0 and not args.json:
            print_op_header(args, op, world)
        wrong, busbw, rows = 0, 0.0, 0
        name = ("sum" if DTYPES[args.dtype].is_floating_point else "max") if reduces(op) else "none"
        root = 0 if op == "broadcast" else -1
        for size in sizes:
            r = measure(args, op, size, world, rank, device)
            if r["count"] == 0:
                continue  # below one element per rank, as collectives_bench skips it
            wrong += r["wrong"]
            busbw += r["busbw_gbps"] or 0.0
            rows += 1
            if rank != 0:
                continue
            row = {"framework": "pytorch " + torch.__version__, "backend": args.backend,
                   "launch": "processes" if launched else "one process",
                   "launcher": "torch.distributed.run" if launched else "none", "world_size": world,
                   "device": str(device), "nccl": nccl_version(), "op": op, "dtype": args.dtype,
                   "redop": name, "root": root, "place": "in" if in_place(op) else "out", **r,
                   "iters": args.iters, "warmup": args.warmup, "time_over_ranks": "avg"}
            if json_file:
                json_file.write(json.dumps(row) + "\n")
                json_file.flush()
            if args.json:
                print(json.dumps(row), flush=True)
            else:
                bus = "    n/a" if r["busbw_gbps"] is None else "%7.2f" % r["busbw_gbps"]
                print("%12d  %12d  %8s  %6s  %5d  %5s  %10.2f  %10.2f  %8.2f  %7.2f  %7s  %6d"
                      % (r["size_bytes"], r["count"], args.dtype, name, root,
                         "in" if in_place(op) else "out", r["time_us"], r["time_max_us"],
                         r["issue_us"], r["algbw_gbps"], bus, r["wrong"]), flush=True)
        if rank == 0 and not args.json:
            print(f"# Out of bounds values : {wrong} {'FAILED' if wrong else 'OK'}")
            avg = f"{busbw / rows if rows else 0.0:.4f} GB/s" if world > 1 else "n/a (world size 1)"
            print(f"# Avg bus bandwidth    : {avg} over {rows} sizes\n#", flush=True)
        wrong_all += wrong
    if json_file:
        json_file.close()
    dist.destroy_process_group()
    if tmp is not None:
        tmp.cleanup()
    sys.exit(3 if wrong_all else 0)


if __name__ == "__main__":
    main()
