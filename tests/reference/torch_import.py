"""Models trained in PyTorch, imported by loom-catdog, predict what PyTorch predicts (reference
test, label `reference`; needs torch, a CPU wheel will do, and torchvision for the ResNet).

usage: torch_import.py LOOM_CATDOG WORKDIR

PyTorch trains a few steps on random data, each model as a PyTorch user would write it:
bench/train_step_torch.py's seed_cnn (1 logit, BCEWithLogitsLoss), its classic_cnn with a
3-class head (CrossEntropyLoss, inputs through torchvision's ImageNet Normalize, which import's
--mean and --std record) and torchvision's resnet18 with the small-image stem and 2
classes (CrossEntropyLoss; training moves batch norm's running statistics and counts
num_batches_tracked), saved in nn.DataParallel's "module." names. Each state_dict is written as
safetensors (with the safetensors package when present, else by the format's definition: an
8-byte header length, a JSON header, the raw little-endian tensors) with PNG images of the input
size; `loom-catdog import` makes a loom model file of it and `loom-catdog predict --json` must
give PyTorch's probabilities (sigmoid or softmax) for those images.
"""
import json
import os
import struct
import subprocess
import sys
import zlib

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
from train_step_torch import classic_cnn, seed_cnn  # noqa: E402

catdog, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)
torch.manual_seed(3)


def train(model, size, outputs, steps=20):
    """Adam on random images: label 1 (or the class) from which colour channel is brightest."""
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model.train()
    for _ in range(steps):
        x = torch.rand(16, 3, size, size)
        means = x.mean((2, 3))
        opt.zero_grad()
        if outputs == 1:
            y = (means[:, 0] > 0.5).float().unsqueeze(1)  # brighter red: label 1
            loss = torch.nn.functional.binary_cross_entropy_with_logits(model(x), y)
        else:
            y = means[:, :outputs].argmax(1)
            loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    model.eval()
    return model


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


def three_class_cnn():
    model = classic_cnn()
    model[9] = torch.nn.Linear(128, 3)  # CrossEntropyLoss over cat, dog, fox
    return model


def small_resnet18():
    import torchvision
    model = torchvision.models.resnet18(num_classes=2)
    model.conv1 = torch.nn.Conv2d(3, 64, 3, 1, 1, bias=False)  # the small-image stem
    model.maxpool = torch.nn.Identity()
    return model


MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]  # torchvision's Normalize for ImageNet
CASES = [  # name, model, input size, outputs, extra import flags, wrap in DataParallel, normalise
    ("seed_cnn", seed_cnn, 64, 1, [], False, False),
    ("classic_cnn", three_class_cnn, 64, 3,
     ["--classes", "cat,dog,fox", "--mean", ",".join(map(str, MEAN)), "--std", ",".join(map(str, STD))],
     False, True),
    ("resnet18", small_resnet18, 32, 2, ["--image-size", "32"], True, False),
]

worst_all, states = 0.0, {}
for name, build, size, outputs, flags, wrap, normalise in CASES:
    model = train(build(), size, outputs, steps=8 if name == "resnet18" else 20)
    state = states[name] = (torch.nn.DataParallel(model) if wrap else model).state_dict()
    weights = os.path.join(work, f"{name}_torch.safetensors")
    save_safetensors(state, weights)
    images, expected = [], []
    for i in range(6):
        img = torch.randint(0, 256, (size, size, 3), dtype=torch.uint8)
        path = os.path.join(work, f"{name}_img{i}.png")
        write_png(path, img)
        images.append(path)
        with torch.no_grad():
            x = img.permute(2, 0, 1).unsqueeze(0).float() / 255.0  # torchvision's ToTensor
            if normalise:
                x = (x - torch.tensor(MEAN).view(1, 3, 1, 1)) / torch.tensor(STD).view(1, 3, 1, 1)
            logits = model(x)[0]
            probs = torch.sigmoid(logits) if outputs == 1 else torch.softmax(logits, 0)
            expected.append(probs.tolist())
    out = os.path.join(work, f"{name}_loom.safetensors")
    subprocess.run([catdog, "import", "--model", name, "--weights", weights, "--out", out, *flags],
                   check=True)
    result = subprocess.run([catdog, "predict", "--device", "cpu", "--json", "--model", out, *images],
                            check=True, capture_output=True, text=True)
    got = {r["image"]: r["outputs"] for r in json.loads(result.stdout)}
    worst = max(abs(g - e) for p, exp in zip(images, expected) for g, e in zip(got[p], exp))
    print(f"{name}: {len(state)} tensors, {outputs} output(s); probabilities of image 0",
          [round(e, 6) for e in expected[0]], "worst difference", worst)
    assert all(len(got[p]) == len(e) for p, e in zip(images, expected)), (got, expected)
    assert len(set(round(e[0], 3) for e in expected)) > 1, f"{name}: every image the same"
    assert worst < 1e-5, (name, worst)
    worst_all = max(worst_all, worst)
# The ResNet's batch norm buffers were trained, not initial ones that any import would match.
assert int(states["resnet18"]["module.bn1.num_batches_tracked"]) == 8
assert float(states["resnet18"]["module.layer1.0.bn1.running_var"].sub(1).abs().max()) > 1e-3
print(f"torch_import: OK (worst {worst_all:.3g}, torch {torch.__version__})")
