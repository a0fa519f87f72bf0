"""The same training step as bench/train_step_bench.cpp in PyTorch eager, for comparison in
the same run on the same machine: forward, BCEWithLogits, backward, Adam; median of --iters.

  python3 bench/train_step_torch.py --model seed_cnn --batch 32 --device cuda [--threads 2]
"""
import argparse
import json
import os
import tempfile
import statistics
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


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="seed_cnn", choices=["seed_cnn", "classic_cnn", "resnet18"])
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--device", default="cuda")
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--iters", type=int, default=100)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--ddp", action="store_true")
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    dev = torch.device(args.device)

    def trainee(wrap):
        torch.manual_seed(1)
        model = {"seed_cnn": seed_cnn, "classic_cnn": classic_cnn, "resnet18": resnet18}[args.model]().to(dev)
        if wrap:
            model = torch.nn.parallel.DistributedDataParallel(
                model, device_ids=[dev.index or 0] if dev.type == "cuda" else None)
        return model, torch.optim.Adam(model.parameters(), lr=1e-3)

    if args.ddp:
        import torch.distributed as dist
        store = tempfile.mktemp(prefix="loom-bench-store-")
        dist.init_process_group("nccl" if dev.type == "cuda" else "gloo", init_method=f"file://{store}",
                                rank=0, world_size=1)
    torch.manual_seed(1)
    x = torch.rand(args.batch, 3, 64, 64, device=dev)
    y = torch.randint(0, 2, (args.batch, 1), device=dev).float()
    loss_fn = nn.BCEWithLogitsLoss()
    runs = [("plain", *trainee(False))] + ([("ddp", *trainee(True))] if args.ddp else [])

    def step(model, opt):
        loss = loss_fn(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    def timed(model, opt, n):
        if dev.type == "cuda":
            torch.cuda.synchronize()
            marks = [torch.cuda.Event(enable_timing=True) for _ in range(n + 1)]
            marks[0].record()
            for i in range(n):
                step(model, opt)
                marks[i + 1].record()
            torch.cuda.synchronize()
            return [marks[i].elapsed_time(marks[i + 1]) for i in range(n)]
        out = []
        for _ in range(n):
            t0 = time.perf_counter()
            step(model, opt)
            out.append((time.perf_counter() - t0) * 1e3)
        return out

    for _ in range(args.warmup):
        for _, model, opt in runs:
            step(model, opt)
    blocks = 5 if args.ddp else 1
    times = {name: [] for name, _, _ in runs}
    for b in range(blocks):
        n = args.iters // blocks + (1 if b < args.iters % blocks else 0)
        for name, model, opt in runs:
            times[name] += timed(model, opt, n)
    plain = statistics.median(times["plain"])
    for name, _, _ in runs:
        row = {"framework": "pytorch " + torch.__version__, "model": args.model, "batch": args.batch,
               "device": args.device, "threads": torch.get_num_threads(), "variant": name,
               "median_ms": round(statistics.median(times[name]), 4),
               "min_ms": round(min(times[name]), 4), "iters": args.iters}
        if name == "ddp":
            row["ddp_overhead_pct"] = round(100 * (statistics.median(times[name]) / plain - 1), 2)
        print(json.dumps(row))
    if args.ddp:
        dist.destroy_process_group()
        os.unlink(store) if os.path.exists(store) else None


if __name__ == "__main__":
    main()
