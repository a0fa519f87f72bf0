#!/usr/bin/env python3
"""The same pipeline as bench/data_loader_bench.cpp in torchvision, for comparison on the GPU machine.

ImageFolder of JPEGs -> Resize((64, 64)) -> RandomAffine(shear 0.2 deg, scale 0.8-1.2)
-> RandomHorizontalFlip -> ToTensor (rescale 1/255), batch 32, shuffled; images/s over one epoch
after a few warm-up batches, for 1, 4 and 16 workers. torchvision's RandomAffine zooms both axes
by one factor (Keras draws two); the cost is the same.

    python3 bench/torchvision_loader.py --root ../shared/data/cats_dogs/train --workers 1,4,16
"""
import argparse
import json
import os
import time

import torch
from torchvision import datasets, transforms


def measure(root, workers, size, batch, warmup, max_batches, device):
    tf = transforms.Compose([
        transforms.Resize((size, size)),
        transforms.RandomAffine(degrees=0, shear=0.2, scale=(0.8, 1.2)),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
    ])
    data = datasets.ImageFolder(root, transform=tf)
    loader = torch.utils.data.DataLoader(
        data, batch_size=batch, shuffle=True, num_workers=workers,
        pin_memory=device.startswith("cuda"), persistent_workers=False)
    it = iter(loader)
    for _ in range(warmup):
        next(it)
    images = batches = wrong = 0
    start = time.perf_counter()
    for x, y in it:
        if device.startswith("cuda"):
            x = x.to(device, non_blocking=True)
            y = y.to(device, non_blocking=True)
        batches += 1
        images += x.shape[0]
        if tuple(x.shape[1:]) != (3, size, size):
            wrong += 1
        if batches >= max_batches:
            break
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    return {"path": "torchvision", "threads": workers, "batches": batches, "images": images,
            "seconds": seconds, "images_per_s": images / seconds, "wrong": wrong}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--root", default="../shared/data/cats_dogs/train")
    p.add_argument("--workers", default="1,4,16")
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--max-batches", type=int, default=10**9)
    p.add_argument("--device", default="cpu")
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    import torchvision
    print(f"# torchvision {torchvision.__version__}, torch {torch.__version__}, "
          f"host cpus {os.cpu_count()}, device {a.device}")
    rows = [measure(a.root, int(w), a.size, a.batch, a.warmup, a.max_batches, a.device)
            for w in a.workers.split(",")]
    if a.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"# {'path':<28} {'threads':>8} {'batches':>8} {'images':>9} {'seconds':>9} "
          f"{'images/s':>12} {'#wrong':>7}")
    for r in rows:
        print(f"  {r['path']:<28} {r['threads']:>8} {r['batches']:>8} {r['images']:>9} "
              f"{r['seconds']:>9.3f} {r['images_per_s']:>12.1f} {r['wrong']:>7}")


if __name__ == "__main__":
    main()
