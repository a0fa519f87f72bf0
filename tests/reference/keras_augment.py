"""loom's Keras augmentation against Keras' own ImageDataGenerator (reference test, label
`reference`).

usage: keras_augment.py TOOL WORKDIR   (TOOL: the augment_tool binary)

Random uint8 images of several shapes (square and not, 3 channels and 1) and random transform
parameters (rotation, both shifts in pixels, shear, independent zx/zy, flip) go through
loom's transform_matrix + augment_image (bilinear, rescale 1) and through tf_keras'
ImageDataGenerator.apply_transform (scipy order=1), for fill_mode nearest and constant (cval 17).
Every pixel must agree to 1e-3 (0..255 units). To prove the comparison can fail, the same
inputs with zx and zy swapped must disagree.
Needs numpy, safetensors, scipy, tensorflow-cpu and tf-keras.
"""
import os
import subprocess
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import numpy as np  # noqa: E402
from safetensors.numpy import load_file, save_file  # noqa: E402
from tf_keras.preprocessing.image import ImageDataGenerator  # noqa: E402

TOLERANCE = 1e-3   # max abs difference, 0..255 units
CVAL = 17.0
SHAPES = [(64, 64, 3), (37, 50, 3), (50, 37, 3), (20, 20, 1)]
FILLS = ["nearest", "constant"]
RANDOM_SAMPLES = 10  # per (shape, fill), after the single-component cases below

tool, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)
rng = np.random.default_rng(20260)

# One component at a time first (a failure then names the culprit), then random mixtures.
# Points that land exactly on the border are left out: there scipy's 'constant' mode decides
# by rounding noise (it fills at -4e-15; loom allows 1e-9 of slack). They come from exact
# multiples of 90 degrees, and from pure shear on an odd width, where Keras' centre row
# (w/2 - 0.5, an integer) maps column 0 onto itself; the shear case carries a small shift.
SINGLES = [
    (0, 0, 0, 0, 1, 1, 1),       # flip only
    (23, 0, 0, 0, 1, 1, 0),      # rotation
    (0, 4.5, 0, 0, 1, 1, 0),     # tx
    (0, 0, -6.25, 0, 1, 1, 0),   # ty
    (0, 0.3, 0, 17, 1, 1, 0),    # shear
    (0, 0, 0, 0, 0.8, 1, 0),     # zx
    (0, 0, 0, 0, 1, 1.2, 0),     # zy
]
NAMES = ("theta", "tx", "ty", "shear", "zx", "zy", "flip")


def random_params(n):
    return [(rng.uniform(-45, 45), rng.uniform(-8, 8), rng.uniform(-8, 8), rng.uniform(-30, 30),
             rng.uniform(0.7, 1.3), rng.uniform(0.7, 1.3), float(k % 2)) for k in range(n)]


def run_loom(images, params, fill, name):
    src = os.path.join(work, name + ".in.safetensors")
    dst = os.path.join(work, name + ".out.safetensors")
    save_file({"images": images, "params": np.asarray(params, dtype=np.float64)}, src,
              metadata={"fill_mode": fill, "cval": repr(CVAL)})
    subprocess.run([tool, src, dst], check=True)
    out = load_file(dst)["out"]
    n, h, w, c = images.shape
    assert out.dtype == np.float32 and out.shape == (n, c, h, w), (out.dtype, out.shape)
    return out.transpose(0, 2, 3, 1)  # CHW -> HWC


def run_keras(images, params, fill):
    gen = ImageDataGenerator(fill_mode=fill, cval=CVAL)
    return np.stack([gen.apply_transform(image.astype(np.float64), {
        "theta": p[0], "tx": p[1], "ty": p[2], "shear": p[3], "zx": p[4], "zy": p[5],
        "flip_horizontal": bool(p[6])}) for image, p in zip(images, params)])


def describe(p):
    return ", ".join(f"{k}={v:.3g}" for k, v in zip(NAMES, p))


worst, worst_where, failures = 0.0, "", []
swapped_worst = []  # per case: the smallest per-sample worst difference with zx/zy swapped
for shape in SHAPES:
    for fill in FILLS:
        case = f"{shape[0]}x{shape[1]}x{shape[2]}-{fill}"
        params = SINGLES + random_params(RANDOM_SAMPLES)
        images = rng.integers(0, 256, (len(params),) + shape, dtype=np.uint8)
        ref = run_keras(images, params, fill)
        got = run_loom(images, params, fill, case)
        for k, p in enumerate(params):
            diff = np.abs(got[k].astype(np.float64) - ref[k])
            d = float(diff.max())
            if d > worst:
                worst, worst_where = d, f"{case} sample {k} ({describe(p)})"
            if d > TOLERANCE:
                i, j, c = np.unravel_index(int(diff.argmax()), diff.shape)
                failures.append(f"{case} sample {k} ({describe(p)}): max |diff| {d:.4g} over "
                                f"{int((diff > TOLERANCE).sum())} values; "
                                f"at row {i} col {j} ch {c} "
                                f"loom {got[k][i, j, c]:.4f} keras {ref[k][i, j, c]:.4f}")

        # Sensitivity: a deliberately wrong transform (zx and zy swapped) must not pass.
        wrong = [(p[0], p[1], p[2], p[3], p[5], p[4], p[6]) for p in params]
        bad = run_loom(images, wrong, fill, case + "-swapped")
        uneven = [k for k, p in enumerate(params) if abs(p[4] - p[5]) > 0.1]
        assert uneven, case
        swapped_worst.append(min(float(np.abs(bad[k] - ref[k]).max()) for k in uneven))

print(f"keras augment: {len(SHAPES) * len(FILLS)} cases x {len(SINGLES) + RANDOM_SAMPLES} images; "
      f"worst |loom - keras| = {worst:.3g} at {worst_where}")
print(f"keras augment: with zx/zy swapped, every uneven-zoom image differs by at least "
      f"{min(swapped_worst):.3g}")
if failures:
    print(f"keras augment: {len(failures)} images differ by more than {TOLERANCE}:")
    for line in failures[:24]:
        print("  " + line)
    if len(failures) > 24:
        print(f"  ... and {len(failures) - 24} more")
    sys.exit(1)
assert min(swapped_worst) > 1.0, \
    f"the comparison is not sensitive: zx/zy swapped still within {min(swapped_worst)}"
print("keras augment: loom matches ImageDataGenerator.apply_transform")
