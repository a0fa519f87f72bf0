"""The work of bench/pipeline_bench.cpp on one GPU in PyTorch, for comparison in the same run:
the batch cut into micro-batches whose forward and backward run one after another, gradients
accumulated, then one Adam step (what a GPipe step does when every stage shares one device,
without the stages' streams); median of --iters, and the peak memory of a step.

  python3 bench/pipeline_torch.py --model resnet18 --batch 256 --micro-batches 1,2,4,8
"""
import argparse
import json
import statistics
import time

import torch

from train_step_torch import MODELS


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="resnet18", choices=list(MODELS))
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--image-size", type=int, default=64)
    p.add_argument("--micro-batches", default="1,2,4,8")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--iters", type=int, default=10)
    args = p.parse_args()
    torch.manual_seed(1)
    dev = torch.device("cuda")
    model = MODELS[args.model]().to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    x = torch.randn(args.batch, 3, args.image_size, args.image_size, device=dev)
    y = torch.randint(0, 2, (args.batch, 1), device=dev).float()
    for micro in (int(m) for m in args.micro_batches.split(",")):
        def step():
            opt.zero_grad(set_to_none=True)
            for xc, yc in zip(x.chunk(micro), y.chunk(micro)):
                (loss_fn(model(xc), yc) * (xc.shape[0] / args.batch)).backward()
            opt.step()
        for _ in range(args.warmup):
            step()
        torch.cuda.synchronize()
        ms = []
        for _ in range(args.iters):
            start = time.perf_counter()
            step()
            torch.cuda.synchronize()
            ms.append(1000 * (time.perf_counter() - start))
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        step()
        torch.cuda.synchronize()
        peak = (torch.cuda.max_memory_allocated() - before) / 2**20
        print(json.dumps({"framework": "pytorch", "model": args.model, "batch": args.batch, "micro_batches": micro,
                          "step_ms": statistics.median(ms), "peak_mib": peak}), flush=True)


if __name__ == "__main__":
    main()
