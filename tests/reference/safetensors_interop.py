"""Python's safetensors and loom read each other's files (reference test, label `reference`).

usage: safetensors_interop.py TOOL WORKDIR   (TOOL: the safetensors_tool binary)
"""
import json
import os
import subprocess
import sys

import numpy as np
from safetensors.numpy import load_file, save_file

tool, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)

# loom writes, Python reads: shapes, dtypes and values as loom reports them.
loom_file = os.path.join(work, "from_loom.safetensors")
subprocess.run([tool, "write", loom_file], check=True)
from_loom = load_file(loom_file)
dumped = [json.loads(line) for line in subprocess.run([tool, "dump", loom_file], check=True,
                                                      capture_output=True, text=True).stdout.splitlines()]
tensors = {d["name"]: d for d in dumped if "name" in d}
assert set(tensors) == set(from_loom), (set(tensors), set(from_loom))
for name, array in from_loom.items():
    ref = tensors[name]
    assert list(array.shape) == ref["shape"], (name, array.shape, ref["shape"])
    assert str(array.dtype) == ref["dtype"], (name, array.dtype, ref["dtype"])
    np.testing.assert_array_equal(array.astype(np.float64).ravel(), np.array(ref["values"]))

# Python writes, loom reads.
rng = np.random.default_rng(7)
arrays = {
    "a": rng.standard_normal((3, 5)).astype(np.float32),
    "b": rng.standard_normal((4,)),
    "c": rng.integers(-1000, 1000, (2, 3), dtype=np.int64),
    "d": rng.integers(-9, 9, (6,), dtype=np.int32),
    "e": rng.integers(0, 255, (5, 1), dtype=np.uint8),
}
py_file = os.path.join(work, "from_python.safetensors")
save_file(arrays, py_file, metadata={"origin": "python"})
out = subprocess.run([tool, "dump", py_file], check=True, capture_output=True, text=True).stdout
seen = {}
for line in out.splitlines():
    d = json.loads(line)
    if "name" in d:
        seen[d["name"]] = d
        np.testing.assert_array_equal(arrays[d["name"]].astype(np.float64).ravel(), np.array(d["values"]))
        assert list(arrays[d["name"]].shape) == d["shape"]
assert set(seen) == set(arrays)
assert '{"metadata": "origin"}' in out
print("safetensors interop: 5 + 5 tensors agree both ways")
