"""bench/flat_copy_bench.cpp's gather in PyTorch, on the same GPU: each model's float32 gradients
copied into one flat bucket, as DDP's reducer does it (one copy_ per gradient into its bucket
view), as torch._foreach_copy_ does it (multi-tensor kernels), and the one-block copy of the same
bytes. Medians of --iters, CUDA events around each; one JSON line per model.

  python3 bench/flat_copy_torch.py [--model seed_cnn,classic_cnn,resnet18] [--iters 200]
"""
import argparse
import json
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_step_torch import MODELS  # noqa: E402


def median_us(run, iters, warmup):
    for _ in range(warmup):
        run()
    marks = [torch.cuda.Event(enable_timing=True) for _ in range(iters + 1)]
    torch.cuda.synchronize()
    marks[0].record()
    for i in range(iters):
        run()
        marks[i + 1].record()
    marks[-1].synchronize()
    return statistics.median(1000.0 * marks[i].elapsed_time(marks[i + 1]) for i in range(iters))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="seed_cnn,classic_cnn,resnet18")
    p.add_argument("--iters", type=int, default=200)
    p.add_argument("--warmup", type=int, default=20)
    a = p.parse_args()
    torch.manual_seed(7)
    for name in a.model.split(","):
        params = list(MODELS[name]().parameters())
        grads = [torch.rand_like(q, device="cuda") * 2 - 1 for q in params]
        total = sum(g.numel() for g in grads)
        bucket = torch.zeros(total, device="cuda")
        views = [v.view_as(g) for v, g in zip(bucket.split([g.numel() for g in grads]), grads)]
        block = torch.rand(total, device="cuda")

        def per_gradient():
            for v, g in zip(views, grads):
                v.copy_(g)

        rows = {"per_gradient_us": median_us(per_gradient, a.iters, a.warmup),
                "foreach_us": median_us(lambda: torch._foreach_copy_(views, grads), a.iters, a.warmup),
                "one_block_us": median_us(lambda: bucket.copy_(block), a.iters, a.warmup)}
        torch._foreach_copy_(views, grads)
        assert all(torch.equal(v, g) for v, g in zip(views, grads)), "the gather misplaced a gradient"
        nbytes = 4 * total
        print(json.dumps({"bench": "flat_copy", "framework": f"pytorch {torch.__version__}",
                          "model": name, "tensors": len(grads), "bytes": nbytes,
                          **{k: round(v, 2) for k, v in rows.items()},
                          "foreach_gbps": round(2 * nbytes / rows["foreach_us"] / 1e3, 1)}), flush=True)


if __name__ == "__main__":
    main()
