#!/usr/bin/env python3
"""Plots training and validation loss and accuracy per epoch from a loom metrics CSV (written
by loom-catdog train or train::CsvLogger) into a PNG. Needs matplotlib (optional for loom:
LOOM_WITH_PLOTTING=1 scripts/install-deps.sh installs it).

  python3 tools/plot_metrics.py catdog.metrics.csv [-o catdog.png] [--saved-epoch N]

Epochs are counted from 1, as the CSV counts them. --saved-epoch N marks epoch N on both charts
as the one the model file holds (loom-catdog's final line prints the command with it).
"""
import argparse
import csv
import os
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv")
    ap.add_argument("-o", "--output", help="PNG path (default: the CSV's name with .png)")
    ap.add_argument("--saved-epoch", type=int, help="the epoch the model file holds (from 1)")
    args = ap.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import MaxNLocator
    except ImportError:
        sys.exit("plot_metrics: matplotlib is not installed; from loom's source folder run "
                 "LOOM_WITH_PLOTTING=1 scripts/install-deps.sh (Debian's python3-matplotlib), "
                 "or pip install matplotlib")
    with open(args.csv, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        sys.exit(f"plot_metrics: {args.csv} has no epochs")
    epochs = [int(r["epoch"]) for r in rows]
    if args.saved_epoch is not None and args.saved_epoch not in epochs:
        sys.exit(f"plot_metrics: --saved-epoch {args.saved_epoch} is not an epoch of {args.csv} "
                 f"({epochs[0]} to {epochs[-1]})")

    def series(name):
        return [float(r[name]) if r.get(name) else float("nan") for r in rows]

    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(10, 4))
    for ax, metric in ((ax_loss, "loss"), (ax_acc, "accuracy")):
        ax.plot(epochs, series(metric), "o-", label="training")
        if "val_" + metric in rows[0]:
            ax.plot(epochs, series("val_" + metric), "s-", label="validation")
        if args.saved_epoch is not None:
            ax.axvline(args.saved_epoch, color="gray", linestyle="--",
                       label=f"saved (epoch {args.saved_epoch})")
        ax.set_xlabel("epoch")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # epochs are whole
        ax.set_ylabel(metric)
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle(os.path.basename(args.csv))
    fig.tight_layout()
    out = args.output or os.path.splitext(args.csv)[0] + ".png"
    fig.savefig(out, dpi=100)
    print(f"plot_metrics: wrote {out}")


if __name__ == "__main__":
    main()
