"""A model trained in PyTorch, imported by loom-catdog, predicts what PyTorch predicts
(reference test, label `reference`; needs torch, which the GPU machines have).

usage: torch_import.py LOOM_CATDOG WORKDIR

PyTorch trains bench/train_step_torch.py's seed_cnn for a few steps on random data, writes its
state_dict as safetensors (with the safetensors package when present, else by the format's
definition: an 8-byte header length, a JSON header, the raw little-endian tensors), and writes
PNG images of the input size; `loom-catdog import` makes a loom model file of it and
`loom-catdog predict --json` must give PyTorch's probabilities for those images.
"""
import json
import os
import struct
import subprocess
import sys
import zlib

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
from train_step_torch import seed_cnn  # noqa: E402

catdog, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)
torch.manual_seed(3)

model = seed_cnn()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for _ in range(20):
    x = torch.rand(16, 3, 64, 64)
    y = (x[:, 0].mean((1, 2)) > 0.5).float().unsqueeze(1)  # brighter red: label 1
    opt.zero_grad()
    torch.nn.functional.binary_cross_entropy_with_logits(model(x), y).backward()
    opt.step()
model.eval()


def save_safetensors(tensors, path):
    try:
        from safetensors.torch import save_file
        save_file(tensors, path)
        return
    except ImportError:
        pass
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        data = t.detach().contiguous().to(torch.float32).numpy().tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def write_png(path, rgb):  # rgb: uint8 [H, W, 3]
    h, w, _ = rgb.shape
    raw = b"".join(b"\x00" + rgb[i].numpy().tobytes() for i in range(h))
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


weights = os.path.join(work, "seed_torch.safetensors")
save_safetensors(model.state_dict(), weights)
images, expected = [], []
for i in range(6):
    img = torch.randint(0, 256, (64, 64, 3), dtype=torch.uint8)
    path = os.path.join(work, f"img{i}.png")
    write_png(path, img)
    images.append(path)
    with torch.no_grad():
        x = img.permute(2, 0, 1).unsqueeze(0).float() / 255.0  # torchvision's ToTensor
        expected.append(torch.sigmoid(model(x)).item())

out = os.path.join(work, "seed_loom.safetensors")
subprocess.run([catdog, "import", "--model", "seed_cnn", "--weights", weights, "--out", out], check=True)
result = subprocess.run([catdog, "predict", "--device", "cpu", "--json", "--model", out, *images],
                        check=True, capture_output=True, text=True)
got = {r["image"]: r["outputs"][0] for r in json.loads(result.stdout)}
worst = max(abs(got[p] - e) for p, e in zip(images, expected))
print("probabilities:", [round(e, 6) for e in expected], "worst difference", worst)
assert len(set(round(e, 3) for e in expected)) > 1, "the PyTorch model gives every image the same probability"
assert worst < 1e-5, worst
print("torch_import: OK")
