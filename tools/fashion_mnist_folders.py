#!/usr/bin/env python3
"""Writes Fashion-MNIST classes as class folders of PNG images, OUT/{train,val}/<class>/<i>.png
(28x28, grey as RGB), for trying loom-catdog on more than two classes without photographs.
The training images come from Fashion-MNIST's training set, the validation images from its
test set, the first N of each class in the files' order. Needs only Python's standard library
and Debian's dataset-fashion-mnist (or --source with the four idx .gz files).

  python3 tools/fashion_mnist_folders.py OUT tshirt,shirt,sneaker,boot [--train 500] [--val 100]
"""
import argparse
import gzip
import os
import struct
import sys
import zlib

CLASSES = ["tshirt", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker", "bag", "boot"]


def read_idx(path, offset):
    with gzip.open(path) as f:
        return f.read()[offset:]


def png(pixels, side):
    """An 8-bit RGB PNG of a side x side grey image (bytes, row-major)."""
    rows = b"".join(b"\x00" + bytes(v for v in pixels[r * side:(r + 1) * side] for _ in range(3))
                    for r in range(side))
    chunk = lambda kind, data: (struct.pack(">I", len(data)) + kind + data +
                                struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("classes", help="comma-separated, of: " + ", ".join(CLASSES))
    ap.add_argument("--train", type=int, default=500, help="training images per class")
    ap.add_argument("--val", type=int, default=100, help="validation images per class")
    ap.add_argument("--source", default="/usr/share/datasets/fashion-mnist")
    args = ap.parse_args()
    wanted = args.classes.split(",")
    unknown = [c for c in wanted if c not in CLASSES]
    if unknown or len(wanted) < 2:
        sys.exit(f"fashion_mnist_folders.py: expected at least 2 of {', '.join(CLASSES)}; got {args.classes}")
    for split, prefix, count in (("train", "train", args.train), ("val", "t10k", args.val)):
        images = read_idx(os.path.join(args.source, f"{prefix}-images-idx3-ubyte.gz"), 16)
        labels = read_idx(os.path.join(args.source, f"{prefix}-labels-idx1-ubyte.gz"), 8)
        for name in wanted:
            folder = os.path.join(args.out, split, name)
            os.makedirs(folder, exist_ok=True)
            indices = [i for i, label in enumerate(labels) if label == CLASSES.index(name)][:count]
            for n, i in enumerate(indices):
                with open(os.path.join(folder, f"{n}.png"), "wb") as f:
                    f.write(png(images[i * 784:(i + 1) * 784], 28))
    print(f"{args.out}: {len(wanted)} classes, {args.train} training and {args.val} validation images each")


if __name__ == "__main__":
    main()
