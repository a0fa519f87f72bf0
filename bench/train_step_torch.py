"""The same training step as bench/train_step_bench.cpp in PyTorch, for comparison in the same run
on the same machine: forward, BCEWithLogits, backward, Adam; median of --iters. --mode picks
PyTorch's eager step, the whole step captured in one CUDA graph, bf16 autocast + channels-last
+ CUDA graph, or bf16 autocast + CUDA graph in NCHW (what channels-last adds to bf16); --mode all
prints one JSON line for each. --mode compile is PyTorch's best (issue 35): the model and its loss
compiled by torch.compile (inductor), bf16 autocast, channels-last, cudnn.benchmark and the fused
capturable Adam, the whole step then captured in one CUDA graph; the compile (and capture) time is
its row's "compile_s", apart from the step times. On the CPU --mode compile runs the compiled
step without a graph, in float32 (a check that the script works, not a figure for the table).

  python3 bench/train_step_torch.py --model seed_cnn --batch 32 --device cuda [--mode all] [--threads 2]
  python3 bench/train_step_torch.py --model resnet18 --batch 256 --device cuda --mode compile
"""
import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time

import torch
from torch import nn


def seed_cnn():
    return nn.Sequential(nn.Conv2d(3, 32, 3, stride=3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(3200, 128), nn.ReLU(), nn.Linear(128, 1))


def classic_cnn():
    return nn.Sequential(nn.Conv2d(3, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 32, 3),
                         nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(6272, 128), nn.ReLU(),
                         nn.Linear(128, 1))


def resnet18():
    import torchvision
    m = torchvision.models.resnet18(num_classes=1)
    m.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
    m.maxpool = nn.Identity()
    return m


MODELS = {"seed_cnn": seed_cnn, "classic_cnn": classic_cnn, "resnet18": resnet18}
MODES = ("eager", "graph", "bf16", "bf16_nchw")
# torch.compile's mode for --mode compile. max-autotune-no-cudagraphs: inductor's fastest kernels
# (its Triton templates for matrix products and convolutions benchmarked against cuBLAS and
# cuDNN) without its own CUDA graphs (reduce-overhead's "cudagraph trees"), which could not sit
# inside the one graph this script captures around forward, loss, backward and the optimizer.
COMPILE_MODES = ("max-autotune-no-cudagraphs", "default")


class WithLoss(nn.Module):
    """The model and its loss as one module, so that torch.compile fuses the loss (and its
    backward) into the last layer's kernels as it would in a user's compiled training step."""

    def __init__(self, model, loss_fn):
        super().__init__()
        self.model, self.loss_fn = model, loss_fn

    def forward(self, x, y):
        return self.loss_fn(self.model(x), y)


def captured(model, opt, x, y, loss_fn, bf16):
    """PyTorch's whole-network capture (CUDA semantics notes): eager warm-up on a side stream, grads
    set to None so backward allocates them from the graph's private pool, then forward, loss,
    backward and the capturable Adam step in one graph. Returns a step that replays it and the
    graph's static loss, which each replay overwrites."""
    def loss():
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=bf16, cache_enabled=False):
            # loss_fn None: `model` is a WithLoss (compiled), which takes the labels itself.
            return model(x, y) if loss_fn is None else loss_fn(model(x), y)

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            opt.zero_grad(set_to_none=True)
            loss().backward()
            opt.step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        static_loss = loss()
        static_loss.backward()
        opt.step()

    # The graph writes into the model's parameters, the optimizer's state and reads x and y at
    # the addresses captured: the step must keep them alive (nothing else here does).
    keep_alive = (model, opt, x, y)

    def step():
        graph.replay()
        return static_loss
    step.keep_alive = keep_alive
    return step


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="seed_cnn", choices=list(MODELS))
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--device", default="cuda")
    p.add_argument("--mode", default="eager", choices=[*MODES, "compile", "all"],
                   help="eager; graph: the whole step in one CUDA graph; bf16: autocast bf16 + "
                        "channels-last + CUDA graph; bf16_nchw: the same without channels-last; all: each "
                        "of them (on the CPU only eager); compile: torch.compile + bf16 + channels-last + "
                        "cudnn.benchmark + fused capturable Adam, the step in one CUDA graph (not in all: "
                        "its compile takes seconds to a minute; on the CPU compiled, fp32, no graph)")
    p.add_argument("--compile-mode", default=COMPILE_MODES[0], choices=COMPILE_MODES,
                   help="torch.compile's mode for --mode compile")
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--iters", type=int, default=100)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--cudnn-benchmark", action="store_true",
                   help="torch.backends.cudnn.benchmark = True (algorithms chosen by timing), for every mode")
    p.add_argument("--profile-steps", type=int, default=0,
                   help="then N more steps of each mode inside torch.cuda.profiler.start()/stop(), for a "
                        "profiler started with its capture off (ncu --profile-from-start off)")
    p.add_argument("--ddp", action="store_true", help="eager only: also time the model inside "
                   "DistributedDataParallel (one rank); rows 'plain' and 'ddp'")
    args = p.parse_args()
    torch.backends.cudnn.benchmark = args.cudnn_benchmark
    if args.threads:
        torch.set_num_threads(args.threads)
    dev = torch.device(args.device)
    modes = list(MODES) if args.mode == "all" else [args.mode]
    if args.mode == "compile":
        if args.ddp:
            p.error("--ddp times eager steps only: use it with --mode eager")
        torch.backends.cudnn.benchmark = True  # part of PyTorch's best, whatever the flag says
    elif dev.type != "cuda":
        if args.mode not in ("eager", "all"):
            p.error(f"--mode {args.mode} needs a CUDA device (on {args.device} only eager is valid)")
        for m in modes[1:]:
            print(f"train_step_torch: --mode {m} skipped: it needs a CUDA device", file=sys.stderr)
        modes = ["eager"]
    if args.ddp and modes != ["eager"]:
        p.error("--ddp times eager steps only: use it with --mode eager")
    if dev.type == "cuda":
        torch.cuda.set_device(dev.index or 0)

    if args.ddp:
        import torch.distributed as dist
        store = tempfile.mktemp(prefix="loom-bench-store-")
        dist.init_process_group("nccl" if dev.type == "cuda" else "gloo", init_method=f"file://{store}",
                                rank=0, world_size=1)
    torch.manual_seed(1)
    x = torch.rand(args.batch, 3, 64, 64, device=dev)
    y = torch.randint(0, 2, (args.batch, 1), device=dev).float()
    loss_fn = nn.BCEWithLogitsLoss()

    def trainee(mode, wrap=False):
        """A step function for `mode` on a freshly seeded model; each returns its loss tensor."""
        torch.manual_seed(1)
        model = MODELS[args.model]().to(dev)
        if wrap:
            model = torch.nn.parallel.DistributedDataParallel(
                model, device_ids=[dev.index or 0] if dev.type == "cuda" else None)
        if mode == "compile":
            return compiled_trainee(model)
        if mode == "eager":
            opt = torch.optim.Adam(model.parameters(), lr=1e-3)

            def step():
                loss = loss_fn(model(x), y)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                return loss
            return step
        bf16 = mode in ("bf16", "bf16_nchw")
        channels_last = mode == "bf16"
        if channels_last:
            model = model.to(memory_format=torch.channels_last)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3, capturable=True)
        inputs = x.contiguous(memory_format=torch.channels_last) if channels_last else x
        return captured(model, opt, inputs, y, loss_fn, bf16)

    compile_s = {}

    def compiled_trainee(model):
        """--mode compile's step. Its first steps compile (inductor autotunes in them) and, on
        CUDA, the graph is captured: that time goes to compile_s, not to the step's."""
        cuda = dev.type == "cuda"
        inputs = x
        if cuda:
            model = model.to(memory_format=torch.channels_last)
            inputs = x.contiguous(memory_format=torch.channels_last)
        whole = torch.compile(WithLoss(model, loss_fn), mode=args.compile_mode, dynamic=False)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3, capturable=cuda, fused=True)
        start = time.perf_counter()
        if cuda:
            step = captured(whole, opt, inputs, y, None, bf16=True)
            torch.cuda.synchronize()
        else:
            def step():
                loss = whole(inputs, y)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                return loss
            step()  # compiles the forward and the backward
        compile_s["compile"] = time.perf_counter() - start
        return step

    if args.ddp:
        runs = [("plain", trainee("eager")), ("ddp", trainee("eager", wrap=True))]
    else:
        runs = [(m, trainee(m)) for m in modes]

    def timed(step, n):
        """Per-step milliseconds (CUDA events on the current stream on the GPU) and the last loss."""
        loss = None
        if dev.type == "cuda":
            torch.cuda.synchronize()
            marks = [torch.cuda.Event(enable_timing=True) for _ in range(n + 1)]
            marks[0].record()
            for i in range(n):
                loss = step()
                marks[i + 1].record()
            torch.cuda.synchronize()
            return [marks[i].elapsed_time(marks[i + 1]) for i in range(n)], loss
        out = []
        for _ in range(n):
            t0 = time.perf_counter()
            loss = step()
            out.append((time.perf_counter() - t0) * 1e3)
        return out, loss

    loss_before = {}
    for _ in range(max(1, args.warmup)):
        for name, step in runs:
            loss_before[name] = step()
    loss_before = {name: loss.item() for name, loss in loss_before.items()}
    # Alternating blocks: a clock change or a neighbour's load falls on every variant alike.
    blocks = 5 if len(runs) > 1 else 1
    times = {name: [] for name, _ in runs}
    loss_after = {}
    for b in range(blocks):
        n = args.iters // blocks + (1 if b < args.iters % blocks else 0)
        if n == 0:
            continue
        for name, step in runs:
            ms, loss = timed(step, n)
            times[name] += ms
            loss_after[name] = loss
    loss_after = {name: loss.item() for name, loss in loss_after.items()}
    if args.profile_steps and dev.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        for name, step in runs:
            for _ in range(args.profile_steps):
                step()
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
    for name, _ in runs:
        before, after = loss_before[name], loss_after[name]
        row = {"framework": "pytorch " + torch.__version__, "model": args.model, "batch": args.batch,
               "device": args.device, "threads": torch.get_num_threads(), "variant": name,
               "median_ms": round(statistics.median(times[name]), 4),
               "min_ms": round(min(times[name]), 4), "iters": args.iters,
               "loss_before": round(before, 6), "loss_after": round(after, 6)}
        if name == "compile":
            row["compile_s"] = round(compile_s[name], 2)
            row["compile_mode"] = args.compile_mode
            row["precision"] = "bf16" if dev.type == "cuda" else "fp32"
            row["cuda_graph"] = dev.type == "cuda"
        if name == "ddp":
            row["ddp_overhead_pct"] = round(100 * (statistics.median(times[name]) /
                                                   statistics.median(times["plain"]) - 1), 2)
        # A capture that lost the backward or the optimizer step replays fast and trains nothing.
        if not math.isfinite(after) or after == before:
            row["warning"] = f"loss did not change over {args.iters} steps ({before} -> {after}): not training"
        print(json.dumps(row))
    if args.ddp:
        dist.destroy_process_group()
        os.unlink(store) if os.path.exists(store) else None


if __name__ == "__main__":
    main()
