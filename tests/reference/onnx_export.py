"""loom's ONNX export run by onnxruntime gives loom's outputs, and the onnx package's checker
(full check, strict shape inference) accepts every file (reference test, label `reference`;
needs numpy, safetensors, onnx and onnxruntime from PyPI).

usage: onnx_export.py ONNX_TOOL LOOM_CATDOG WORKDIR

onnx_tool exports seed_cnn (logits, and probabilities), classic_cnn (3 logits), resnet18 (2
logits, moved batch norm statistics) and a Sequential of every other exportable layer, with a
batch of 4 random inputs and loom's outputs for it; onnxruntime runs each file on that batch
(the export's example had a batch of 1, so the batch dimension is checked free) and must agree
to 1e-5 (relative to the outputs' largest magnitude, at least 1). `loom-catdog export` of the
classic_cnn model file must give the same graph's outputs and carry the class names.
"""
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from safetensors.numpy import load_file

tool, catdog, work = sys.argv[1], sys.argv[2], sys.argv[3]
os.makedirs(work, exist_ok=True)
subprocess.run([tool, work], check=True)


def check(onnx_path):
    """The reference checker: the IR, the opset's operator schemas and shape inference."""
    model = onnx.load(onnx_path)
    onnx.checker.check_model(model, full_check=True)
    assert model.ir_version == 8 and model.opset_import[0].version == 17, model.opset_import
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    dims = [d.dim_param or d.dim_value for d in inferred.graph.output[0].type.tensor_type.shape.dim]
    return dims


def run(onnx_path, x):
    inferred = check(onnx_path)
    session = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
    (inp,), (out,) = session.get_inputs(), session.get_outputs()
    assert inp.shape[0] == "N", inp.shape
    got = session.run([out.name], {inp.name: x})[0]
    # onnx's shape inference, through every node, reaches the output loom declared.
    assert inferred == ["N", *got.shape[1:]] == out.shape, (inferred, got.shape, out.shape)
    return got, session


worst = 0.0
for name in ["seed_cnn", "seed_cnn_probabilities", "classic_cnn", "resnet18", "layers"]:
    data = load_file(os.path.join(work, name + ".safetensors"))
    got, _ = run(os.path.join(work, name + ".onnx"), data["input"])
    want = data["output"]
    assert got.shape == want.shape, (name, got.shape, want.shape)
    scale = max(1.0, float(np.abs(want).max()))
    diff = float(np.abs(got - want).max()) / scale
    spread = float(want.max() - want.min())
    print(f"{name}: output {list(want.shape)}, largest |output| {np.abs(want).max():.4g}, "
          f"max difference / scale {diff:.3g}")
    assert spread > 1e-3, f"{name}: every output the same, the comparison would say little"
    assert diff <= 1e-5, (name, diff)
    worst = max(worst, diff)

# The command line: a model file's export, with its metadata.
onnx_path = os.path.join(work, "classic_cli.onnx")
subprocess.run([catdog, "export", "--model", os.path.join(work, "classic_cnn.model.safetensors"),
                "--onnx", onnx_path], check=True)
data = load_file(os.path.join(work, "classic_cnn.safetensors"))
got, session = run(onnx_path, data["input"])
meta = session.get_modelmeta().custom_metadata_map
assert meta["loom.class_names"] == "cat,dog,fox", meta
diff = float(np.abs(got - data["output"]).max()) / max(1.0, float(np.abs(data["output"]).max()))
print(f"loom-catdog export: classic_cnn max difference / scale {diff:.3g}, metadata {sorted(meta)}")
assert diff <= 1e-5, diff
print(f"onnx_export: OK (worst {max(worst, diff):.3g}, onnxruntime {ort.__version__})")
