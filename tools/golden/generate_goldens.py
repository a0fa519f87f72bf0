#!/usr/bin/env python3
"""Writes tests/golden/pytorch_goldens.json: PyTorch's optimizer trajectories and a few ops'
forward and backward values, on fixed float64 inputs stored in the same file, which
tests/optim/pytorch_golden_test.cpp and tests/ops/pytorch_golden_test.cpp compare loom with.

Regenerate (needs torch, CPU build is enough, and numpy) and commit the JSON with the change:

  python3 tools/golden/generate_goldens.py            # writes tests/golden/pytorch_goldens.json
  python3 tools/golden/generate_goldens.py --out F    # somewhere else

Everything is float64 on the CPU, so loom and PyTorch should agree to rounding (~1e-13). The
inputs come from numpy's seeded RandomState, so a rerun with another torch version changes
only the expected values, and a diff of the JSON shows exactly what that version changed.
"""
import argparse
import json
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

STEPS = 5


def arr(a):
    a = np.asarray(a)
    return {"shape": list(a.shape), "data": [float(v) for v in a.reshape(-1)]}


def t(x):
    return torch.tensor(np.asarray(x), dtype=torch.float64)


def leaf(x):
    return t(x).requires_grad_()


def grad_of(x):
    return arr(x.grad.detach().numpy())


def optimizer_cases(rng):
    start = rng.uniform(-2, 2, size=(2, 3))
    grads = [rng.normal(size=(2, 3)) for _ in range(STEPS)]
    configs = [
        ("sgd", "SGD", dict(lr=0.1)),
        ("sgd_momentum_dampening_weight_decay", "SGD",
         dict(lr=0.05, momentum=0.9, dampening=0.25, weight_decay=0.01)),
        ("sgd_nesterov_weight_decay", "SGD", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1)),
        ("adam", "Adam", dict(lr=0.01)),
        ("adam_l2_betas_eps", "Adam", dict(lr=0.02, betas=(0.8, 0.99), eps=1e-3, weight_decay=0.1)),
        ("adamw", "AdamW", dict(lr=0.01, weight_decay=0.01)),
        ("adamw_betas_eps", "AdamW", dict(lr=0.003, betas=(0.85, 0.995), eps=1e-6, weight_decay=0.5)),
    ]
    cases = []
    for name, kind, options in configs:
        p = leaf(start)
        opt = getattr(torch.optim, kind)([p], foreach=False, **options)
        trajectory = []
        for g in grads:
            p.grad = t(g)
            opt.step()
            trajectory.append(arr(p.detach().numpy()))
        record = dict(options)
        if "betas" in record:
            record["betas"] = list(record["betas"])
        cases.append({"name": name, "optimizer": kind, "options": record, "start": arr(start),
                      "grads": [arr(g) for g in grads], "trajectory": trajectory})
    return cases


# Each op case: its inputs, the upstream gradient `grad_output` of its result (a loss's is 1),
# the result and the gradients of the inputs that require one.
def conv2d_case(rng, name, x_shape, w_shape, stride, padding):
    x, w, b = leaf(rng.normal(size=x_shape)), leaf(rng.normal(size=w_shape)), leaf(rng.normal(size=w_shape[0]))
    y = F.conv2d(x, w, b, stride=stride, padding=padding)
    g = rng.normal(size=y.shape)
    y.backward(t(g))
    return {"name": name, "op": "conv2d", "stride": list(stride), "padding": list(padding),
            "x": arr(x.detach()), "weight": arr(w.detach()), "bias": arr(b.detach()), "grad_output": arr(g),
            "y": arr(y.detach()), "grad_x": grad_of(x), "grad_weight": grad_of(w), "grad_bias": grad_of(b)}


def max_pool2d_case(rng, name, x_shape, kernel, stride, padding):
    x = leaf(rng.normal(size=x_shape))  # continuous values: no ties for the gradient to choose between
    y = F.max_pool2d(x, kernel, stride, padding)
    g = rng.normal(size=y.shape)
    y.backward(t(g))
    return {"name": name, "op": "max_pool2d", "kernel": list(kernel), "stride": list(stride),
            "padding": list(padding), "x": arr(x.detach()), "grad_output": arr(g), "y": arr(y.detach()),
            "grad_x": grad_of(x)}


def batch_norm_case(rng):
    n, c, h, w = 4, 3, 5, 5
    x = leaf(rng.normal(loc=1.5, scale=2.0, size=(n, c, h, w)))
    weight, bias = leaf(rng.uniform(0.5, 1.5, size=c)), leaf(rng.normal(size=c))
    running_mean0, running_var0 = rng.normal(size=c), rng.uniform(0.5, 2.0, size=c)
    running_mean, running_var = t(running_mean0), t(running_var0)
    y = F.batch_norm(x, running_mean, running_var, weight, bias, training=True, momentum=0.1, eps=1e-5)
    g = rng.normal(size=y.shape)
    y.backward(t(g))
    return {"name": "batch_norm_training", "op": "batch_norm", "momentum": 0.1, "eps": 1e-5,
            "x": arr(x.detach()), "weight": arr(weight.detach()), "bias": arr(bias.detach()),
            "running_mean": arr(running_mean0), "running_var": arr(running_var0), "grad_output": arr(g),
            "y": arr(y.detach()), "grad_x": grad_of(x), "grad_weight": grad_of(weight),
            "grad_bias": grad_of(bias), "running_mean_after": arr(running_mean.numpy()),
            "running_var_after": arr(running_var.numpy())}


def cross_entropy_case(rng, name, reduction, label_smoothing):
    logits = leaf(rng.normal(scale=3.0, size=(6, 5)))
    targets = rng.randint(0, 5, size=6)
    loss = F.cross_entropy(logits, torch.tensor(targets), reduction=reduction, label_smoothing=label_smoothing)
    loss.backward()
    return {"name": name, "op": "cross_entropy", "reduction": reduction, "label_smoothing": label_smoothing,
            "logits": arr(logits.detach()), "targets": [int(v) for v in targets],
            "loss": float(loss.detach()), "grad_logits": grad_of(logits)}


def bce_with_logits_case(rng, name, reduction):
    logits = rng.normal(scale=4.0, size=(3, 4))
    logits[0, 0], logits[1, 1] = 40.0, -35.0  # saturated: the stable form must not overflow
    logits = leaf(logits)
    targets = rng.uniform(size=(3, 4))
    targets[2, :2] = [0.0, 1.0]
    loss = F.binary_cross_entropy_with_logits(logits, t(targets), reduction=reduction)
    loss.backward()
    return {"name": name, "op": "binary_cross_entropy_with_logits", "reduction": reduction,
            "logits": arr(logits.detach()), "targets": arr(targets), "loss": float(loss.detach()),
            "grad_logits": grad_of(logits)}


def softmax_case(rng, name, op, shape, dim):
    x = leaf(rng.normal(scale=2.0, size=shape))
    y = getattr(F, op)(x, dim=dim)
    g = rng.normal(size=shape)
    y.backward(t(g))
    return {"name": name, "op": op, "dim": dim, "x": arr(x.detach()), "grad_output": arr(g),
            "y": arr(y.detach()), "grad_x": grad_of(x)}


def linear_case(rng):
    x, w, b = leaf(rng.normal(size=(4, 5))), leaf(rng.normal(size=(3, 5))), leaf(rng.normal(size=3))
    y = F.linear(x, w, b)
    g = rng.normal(size=y.shape)
    y.backward(t(g))
    return {"name": "linear", "op": "linear", "x": arr(x.detach()), "weight": arr(w.detach()),
            "bias": arr(b.detach()), "grad_output": arr(g), "y": arr(y.detach()), "grad_x": grad_of(x),
            "grad_weight": grad_of(w), "grad_bias": grad_of(b)}


def op_cases(rng):
    return [
        conv2d_case(rng, "conv2d_stride2_pad1", (2, 3, 7, 6), (4, 3, 3, 3), (2, 2), (1, 1)),
        conv2d_case(rng, "conv2d_stride1x2_pad0x1", (1, 2, 6, 7), (3, 2, 2, 3), (1, 2), (0, 1)),
        max_pool2d_case(rng, "max_pool2d_k3_s2_p1", (2, 2, 7, 7), (3, 3), (2, 2), (1, 1)),
        max_pool2d_case(rng, "max_pool2d_k2", (1, 3, 6, 5), (2, 2), (2, 2), (0, 0)),
        batch_norm_case(rng),
        cross_entropy_case(rng, "cross_entropy_mean", "mean", 0.0),
        cross_entropy_case(rng, "cross_entropy_sum_label_smoothing", "sum", 0.1),
        bce_with_logits_case(rng, "bce_with_logits_mean", "mean"),
        bce_with_logits_case(rng, "bce_with_logits_sum", "sum"),
        softmax_case(rng, "softmax_dim1", "softmax", (3, 5), 1),
        softmax_case(rng, "softmax_dim0", "softmax", (4, 3), 0),
        softmax_case(rng, "log_softmax_dim1", "log_softmax", (3, 5), 1),
        softmax_case(rng, "log_softmax_dim0", "log_softmax", (4, 3), 0),
        linear_case(rng),
    ]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default_out = os.path.join(here, "..", "..", "tests", "golden", "pytorch_goldens.json")
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=os.path.normpath(default_out))
    args = parser.parse_args()

    torch.use_deterministic_algorithms(True)
    goldens = {
        "generator": "tools/golden/generate_goldens.py",
        "torch_version": torch.__version__,
        "numpy_version": np.__version__,
        "python_version": sys.version.split()[0],
        "dtype": "float64",
        "note": "float64 on the CPU throughout; loom is expected to match to rounding",
        "optimizers": optimizer_cases(np.random.RandomState(2024)),
        "ops": op_cases(np.random.RandomState(7)),
    }
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(goldens, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {args.out} ({os.path.getsize(args.out)} bytes, torch {torch.__version__})")


if __name__ == "__main__":
    main()
