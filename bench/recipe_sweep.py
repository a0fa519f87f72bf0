"""Issue 35's recipe search: runs one training command (loom-catdog train --recipe fast ...) once
per variant, each variant's flags appended (they win over the recipe's), one seed each, all under
one deadline, and prints a table: wall seconds, seconds to the target accuracy (everything from
the start counted, as bench/time_to_accuracy.py times it), the best validation accuracy and its
epoch, the seconds to the first epoch's end (start-up, decoding, the conv benchmark, capture and
the first validation), the convolution search's share of that (loom-catdog's last lines say it)
and the steady ms/step of the last epoch. Model and checkpoint files are
deleted after each run (a resnet18 run leaves ~170 MB).
  python3 bench/recipe_sweep.py --out DIR [--budget S] [--only NAME ...] -- \\
      BUILD/apps/catdog/loom-catdog train --recipe fast --data DATA --device cuda
Writes DIR/<variant>/seed_1.log and DIR/sweep.jsonl; prints the table (markdown).
"""
import argparse
import json
import os
import re
import shlex
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import time_to_accuracy as tta  # noqa: E402

# (name, flags): the recipe as it is first (since 2026-12-06: the stride-2 stem, 30 epochs, no
# algorithm search, validation from epoch 16, chosen as docs/benchmarks.md says), then one change
# at a time around it, then the first recipe (the full-size stem, 10 epochs) and a coarser stem
# for comparison.
VARIANTS = [
    ("fast", ""),
    ("25-epochs", "--epochs 25"),
    ("35-epochs", "--epochs 35"),
    ("batch-96", "--batch-size 96"),
    ("lr-0.003", "--lr 0.003"),
    ("lr-0.004", "--lr 0.004"),
    ("wd-0.1", "--weight-decay 0.1"),
    ("warmup-2", "--warmup-epochs 2"),
    ("no-smoothing", "--label-smoothing 0"),
    ("conv-benchmark", "--conv-benchmark"),
    ("no-tta", "--tta=false"),
    # Validation's cost once it runs (from epoch 16): fewer, larger batches, or every epoch.
    ("val-batch-500", "--val-batch-size 500"),
    ("validate-every-epoch", "--validation-from 1"),
    ("full-stem-10-epochs", "--stem-stride 1 --epochs 10"),
    ("stem-4-40-epochs", "--stem-stride 4 --epochs 40"),
]

LOG_LINE = re.compile(r"^\s*(\d+(?:\.\d+)?) (.*)$")
MS_PER_STEP = re.compile(r"\b(\d+(?:\.\d+)?)ms/step\b")
# An epoch's closing line, validated or not (an epoch before --validation-from has no val_ metrics).
EPOCH_END = re.compile(r"^Epoch \d+/\d+ \d+/\d+ ")
# loom-catdog's line after training on CUDA: the convolution search's one-time cost.
SEARCH = re.compile(r"convolution algorithms chosen for (\d+) shapes and passes in (\d+(?:\.\d+)?) s")


def read_log(path):
    """[(seconds, line)] of a run's log as time_to_accuracy.run_seed writes it."""
    out = []
    with open(path) as f:
        for raw in f:
            m = LOG_LINE.match(raw.rstrip("\n"))
            if m:
                out.append((float(m.group(1)), m.group(2)))
    return out


def epoch_facts(timed_lines):
    """Seconds to the first epoch line, the last epoch line's ms/step, the best accuracy's epoch,
    and the seconds the convolution search took (None where the run does not say)."""
    first_end, last_ms, best, best_epoch, search_s = None, None, None, None, None
    for seconds, line in timed_lines:
        found = SEARCH.search(line)
        if found:
            search_s = float(found.group(2))
        if not EPOCH_END.match(line):
            continue
        if first_end is None:
            first_end = seconds
        ms = MS_PER_STEP.search(line)
        if ms:
            last_ms = float(ms.group(1))
        m = tta.EPOCH.match(line)
        if not m:
            continue
        acc = float(m.group(2))
        if best is None or acc > best:
            best, best_epoch = acc, int(m.group(1))
    return {"first_epoch_s": first_end, "ms_per_step": last_ms, "best_epoch": best_epoch,
            "search_s": search_s}


def table(rows, target):
    lines = [f"| variant | flags | rc | wall s | s to {target:g} | best val acc (epoch) | first epoch s | conv search s | ms/step |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r.get("skipped"):
            lines.append(f"| {r['variant']} | `{r['flags']}` | not run: {r['skipped']} | | | | | | |")
            continue
        hit = "-" if r["seconds_to_target"] is None else f"{r['seconds_to_target']:.1f}"
        best = "-" if r["best_val_accuracy"] is None else f"{r['best_val_accuracy']:.4f} ({r['best_epoch']})"
        first = "-" if r["first_epoch_s"] is None else f"{r['first_epoch_s']:.1f}"
        ms = "-" if r["ms_per_step"] is None else f"{r['ms_per_step']:g}"
        search = "-" if r["search_s"] is None else f"{r['search_s']:.2f}"
        lines.append(f"| {r['variant']} | `{r['flags']}` | {r['rc']} | {r['wall_s']:.1f} | {hit} | {best} | {first} | {search} | {ms} |")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--target", type=float, default=0.9)
    p.add_argument("--budget", type=float, default=540, help="seconds for the whole sweep")
    p.add_argument("--run-limit", type=float, default=120, help="seconds a run may take")
    p.add_argument("--only", nargs="+", help="run these variants only, by name")
    p.add_argument("command", nargs=argparse.REMAINDER)
    a = p.parse_args(argv)
    command = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not command:
        p.error("give the training command after --")
    known = [name for name, _ in VARIANTS]
    for name in a.only or []:
        if name not in known:
            p.error(f"--only: no variant {name!r} (known: {', '.join(known)})")
    chosen = [(n, f) for n, f in VARIANTS if not a.only or n in a.only]
    deadline = time.monotonic() + a.budget
    os.makedirs(a.out, exist_ok=True)
    rows = []
    with open(os.path.join(a.out, "sweep.jsonl"), "w") as jsonl:
        for name, flags in chosen:
            left = deadline - time.monotonic()
            if left < 10:
                rows.append({"variant": name, "flags": flags, "skipped": "the budget ran out"})
                continue
            directory = os.path.join(a.out, name)
            os.makedirs(directory, exist_ok=True)
            r = tta.run_seed(command + shlex.split(flags), 1, a.target, directory, min(left, a.run_limit))
            r.update(variant=name, flags=flags, **epoch_facts(read_log(os.path.join(directory, "seed_1.log"))))
            tta.remove_models(directory)
            print(json.dumps(r), file=jsonl, flush=True)
            rows.append(r)
    print(table(rows, a.target))
    return 0 if all(r.get("rc", 0) == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
