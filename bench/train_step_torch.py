"""The same training step as bench/train_step_bench.cpp in PyTorch eager, for comparison in
the same run on the same machine: forward, BCEWithLogits, backward, Adam; median of --iters.

  python3 bench/train_step_torch.py --model seed_cnn --batch 32 --device cuda [--threads 2]
"""
import argparse
import json
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
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    dev = torch.device(args.device)
    model = {"seed_cnn": seed_cnn, "classic_cnn": classic_cnn, "resnet18": resnet18}[args.model]().to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.BCEWithLogitsLoss()
    x = torch.rand(args.batch, 3, 64, 64, device=dev)
    y = torch.randint(0, 2, (args.batch, 1), device=dev).float()

    def step():
        loss = loss_fn(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    for _ in range(args.warmup):
        step()
    times = []
    if dev.type == "cuda":
        torch.cuda.synchronize()
        marks = [torch.cuda.Event(enable_timing=True) for _ in range(args.iters + 1)]
        marks[0].record()
        for i in range(args.iters):
            step()
            marks[i + 1].record()
        torch.cuda.synchronize()
        times = [marks[i].elapsed_time(marks[i + 1]) for i in range(args.iters)]
    else:
        for _ in range(args.iters):
            t0 = time.perf_counter()
            step()
            times.append((time.perf_counter() - t0) * 1e3)
    print(json.dumps({"framework": "pytorch " + torch.__version__, "model": args.model,
                      "batch": args.batch, "device": args.device, "threads": torch.get_num_threads(),
                      "median_ms": round(statistics.median(times), 4), "min_ms": round(min(times), 4),
                      "iters": args.iters}))


if __name__ == "__main__":
    main()
