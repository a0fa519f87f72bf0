#!/usr/bin/env python3
"""Checks a loom model file against PyTorch: rebuilds the network from the file's loom.spec in
PyTorch, loads the weights with Python's safetensors (strict), runs the inputs that loom itself
preprocessed and compares with loom's outputs (max abs difference under --tol, 1e-5 default).

  loom-catdog predict --model MODEL.safetensors --dump DUMP.safetensors IMAGE... 
  python3 tools/compare_torch.py MODEL.safetensors DUMP.safetensors [--device cuda]

The dump holds "inputs" [N, C, H, W] (after decoding, resizing and rescaling) and "outputs"
[N, K] (loom's probabilities), so decoding differences cannot hide or fake a mismatch.
"""
import argparse
import json
import sys

import torch
import torch.nn as tnn
from safetensors import safe_open
from safetensors.torch import load_file


def pair(v):
    return tuple(v) if isinstance(v, (list, tuple)) else (v, v)


class BasicBlock(tnn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = tnn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = tnn.BatchNorm2d(cout)
        self.conv2 = tnn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = tnn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = tnn.Sequential(tnn.Conv2d(cin, cout, 1, stride, bias=False), tnn.BatchNorm2d(cout))

    def forward(self, x):
        out = torch.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return torch.relu(out + (self.downsample(x) if self.downsample is not None else x))


class GlobalAvgPool(tnn.Module):
    def forward(self, x):
        return x.mean(dim=(2, 3))


def build(spec):
    t, c = spec["type"], spec.get("config", {})
    if t == "Sequential":
        seq = tnn.Sequential()
        for layer in c["layers"]:
            seq.add_module(layer["name"], build(layer))
        return seq
    if t == "Conv2d":
        return tnn.Conv2d(c["in_channels"], c["out_channels"], pair(c["kernel"]), pair(c["stride"]),
                          pair(c["padding"]), pair(c["dilation"]), bias=c["bias"])
    if t == "Linear":
        return tnn.Linear(c["in_features"], c["out_features"], bias=c["bias"])
    if t == "MaxPool2d":
        stride = pair(c["stride"])
        return tnn.MaxPool2d(pair(c["kernel"]), stride if stride != (0, 0) else None, pair(c["padding"]))
    if t == "BatchNorm2d":
        return tnn.BatchNorm2d(c["num_features"], eps=c["eps"], momentum=c["momentum"])
    if t == "BasicBlock":
        return BasicBlock(c["in_channels"], c["out_channels"], c.get("stride", 1))
    if t == "GlobalAvgPool2d":
        return GlobalAvgPool()
    simple = {"ReLU": tnn.ReLU, "Sigmoid": tnn.Sigmoid, "Tanh": tnn.Tanh, "Dropout": lambda: tnn.Dropout(c.get("p", 0.5))}
    if t == "Flatten":
        return tnn.Flatten(c.get("start_dim", 1), c.get("end_dim", -1))
    if t in simple:
        return simple[t]()
    sys.exit(f"compare_torch: layer type {t} is not mapped to PyTorch yet")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("dump")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--tol", type=float, default=1e-5)
    args = ap.parse_args()
    with safe_open(args.model, framework="pt") as f:
        meta = f.metadata()
    net = build(json.loads(meta["loom.spec"]))
    state = load_file(args.model)
    state = {k: v for k, v in state.items()}
    # PyTorch's BatchNorm has a num_batches_tracked buffer that loom does not keep.
    missing, unexpected = net.load_state_dict(state, strict=False)
    missing = [k for k in missing if not k.endswith("num_batches_tracked")]
    if missing or unexpected:
        sys.exit(f"compare_torch: names differ: missing {missing}, unexpected {unexpected}")
    net.eval().to(args.device)
    dump = load_file(args.dump)
    with torch.no_grad():
        logits = net(dump["inputs"].to(args.device).float())
        probs = torch.sigmoid(logits) if logits.shape[1] == 1 else torch.softmax(logits, 1)
    diff = (probs.cpu() - dump["outputs"].float()).abs().max().item()
    print(f"{dump['inputs'].shape[0]} images, max |torch - loom| = {diff:.3g} (tolerance {args.tol:g})")
    sys.exit(0 if diff < args.tol else 1)


if __name__ == "__main__":
    main()
