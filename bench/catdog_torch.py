#!/usr/bin/env python3
"""The cat/dog recipe of issue 5 in PyTorch + torchvision, as the shared data's README measured it.

64x64 input, batch 32, Adam 1e-3, 25 epochs, binary cross-entropy, torchvision augmentation
(Resize((64, 64)) -> RandomAffine(shear 0.2, scale 0.8-1.2) -> RandomHorizontalFlip -> ToTensor).
It is the yardstick beside `loom-catdog train` on the same GPU: same files, same recipe, its own
framework. Prints one line per epoch and a last line `validation accuracy: A` (final epoch).

    python3 bench/catdog_torch.py --data ../shared/data/cats_dogs --model seed_cnn --seed 1
"""
import argparse
import time

import torch
from torch import nn
from torchvision import datasets, transforms


def build(model):
    if model == "seed_cnn":  # Conv2D(32, 3, strides=3) as the seed wrote it
        return nn.Sequential(nn.Conv2d(3, 32, 3, stride=3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                             nn.Linear(32 * 10 * 10, 128), nn.ReLU(), nn.Linear(128, 1))
    if model == "classic_cnn":
        return nn.Sequential(nn.Conv2d(3, 32, 3), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(32, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                             nn.Linear(32 * 14 * 14, 128), nn.ReLU(), nn.Linear(128, 1))
    raise SystemExit(f"unknown model {model}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default="../shared/data/cats_dogs")
    p.add_argument("--model", default="seed_cnn")
    p.add_argument("--augment", default="torchvision", choices=["torchvision", "none"])
    p.add_argument("--shear", type=float, default=0.2, help="torchvision shear, in degrees")
    p.add_argument("--epochs", type=int, default=25)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = p.parse_args()
    torch.manual_seed(args.seed)

    resize = [transforms.Resize((64, 64))]
    augment = [transforms.RandomAffine(degrees=0, shear=args.shear, scale=(0.8, 1.2)),
               transforms.RandomHorizontalFlip()] if args.augment == "torchvision" else []
    train = datasets.ImageFolder(f"{args.data}/train", transforms.Compose(resize + augment + [transforms.ToTensor()]))
    val = datasets.ImageFolder(f"{args.data}/val", transforms.Compose(resize + [transforms.ToTensor()]))
    kwargs = dict(batch_size=32, num_workers=args.workers, pin_memory=True, persistent_workers=args.workers > 0)
    train_loader = torch.utils.data.DataLoader(train, shuffle=True, **kwargs)
    val_loader = torch.utils.data.DataLoader(val, shuffle=False, **kwargs)

    model = build(args.model).to(args.device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.BCEWithLogitsLoss()
    start = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        model.train()
        for x, y in train_loader:
            x, y = x.to(args.device, non_blocking=True), y.to(args.device, non_blocking=True).float()
            loss = loss_fn(model(x).squeeze(1), y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        model.eval()
        correct = total = 0
        with torch.no_grad():
            for x, y in val_loader:
                x, y = x.to(args.device), y.to(args.device)
                correct += ((model(x).squeeze(1) >= 0).long() == y).sum().item()
                total += y.numel()
        print(f"epoch {epoch} train_loss {loss.item():.4f} val_accuracy {correct / total:.4f}", flush=True)
    print(f"validation accuracy: {correct / total:.4f} wall {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
