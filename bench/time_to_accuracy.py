"""Time to accuracy (issue 35, DAWNBench's measure): runs a training command once per seed and
times, from the moment it is started (so loading, decoding and warm-up count), the first epoch line
whose validation accuracy reaches the target; then the mean and spread over the seeds. The
command's epoch lines are the ones loom-catdog (train::fit) prints when its output is not a
terminal: "Epoch 3/12 47/47 - ... - val_accuracy 0.9050", flushed as each epoch ends.
  python3 bench/time_to_accuracy.py --target 0.9 --seeds 1 2 3 4 5 --out DIR -- \
      BUILD/apps/catdog/loom-catdog train --recipe fast --data ../shared/data/cats_dogs --device cuda
Each seed's run gets "--seed S --out DIR/seed_S.safetensors" appended; its log is DIR/seed_S.log.
The model and checkpoint files are deleted after each run (--keep-models keeps them): a resnet18
run leaves ~170 MB.
Prints one JSON line per seed and a summary line (JSON) last.
"""
import argparse
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import time

EPOCH = re.compile(r"^Epoch (\d+)/\d+ .*\bval_accuracy (\d+(?:\.\d+)?)")


def first_reach(timed_lines, target):
    """(seconds, epoch, accuracy) of the first epoch line at or above target in (seconds, line)
    pairs, else None; also the best accuracy seen. Returns (hit, best)."""
    hit, best = None, None
    for seconds, line in timed_lines:
        m = EPOCH.match(line)
        if not m:
            continue
        acc = float(m.group(2))
        best = acc if best is None else max(best, acc)
        if hit is None and acc >= target:
            hit = (seconds, int(m.group(1)), acc)
    return hit, best


def summary(results, target):
    """The seeds' mean, standard deviation, min and max time to target (over the runs that reached
    it) and how many reached it."""
    times = [r["seconds_to_target"] for r in results if r["seconds_to_target"] is not None]
    out = {"target": target, "runs": len(results), "reached": len(times)}
    if times:
        out.update(mean_s=round(statistics.mean(times), 3),
                   stdev_s=round(statistics.stdev(times), 3) if len(times) > 1 else 0.0,
                   min_s=round(min(times), 3), max_s=round(max(times), 3))
    return out


def run_seed(command, seed, target, out_dir, timeout):
    model = os.path.join(out_dir, f"seed_{seed}.safetensors")
    args = command + ["--seed", str(seed), "--out", model]
    lines = []
    start = time.monotonic()
    with open(os.path.join(out_dir, f"seed_{seed}.log"), "w") as log:
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
        try:
            for line in proc.stdout:
                lines.append((time.monotonic() - start, line.rstrip("\n")))
                log.write(f"{lines[-1][0]:9.3f} {line}")
                if time.monotonic() - start > timeout:
                    proc.kill()
                    break
            rc = proc.wait()
        finally:
            if proc.poll() is None:
                proc.kill()
    wall = time.monotonic() - start
    hit, best = first_reach(lines, target)
    return {"seed": seed, "rc": rc, "wall_s": round(wall, 3),
            "seconds_to_target": None if hit is None else round(hit[0], 3),
            "epoch_at_target": None if hit is None else hit[1],
            "accuracy_at_target": None if hit is None else hit[2], "best_val_accuracy": best}


def remove_models(directory):
    """Deletes the seed_*.safetensors model files and their checkpoints in directory."""
    for path in glob.glob(os.path.join(directory, "seed_*.safetensors*")):
        os.remove(path)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--target", type=float, default=0.9)
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    p.add_argument("--out", default="time_to_accuracy")
    p.add_argument("--timeout", type=float, default=300, help="seconds a run may take")
    p.add_argument("--keep-models", action="store_true", help="keep each run's model and checkpoint")
    p.add_argument("command", nargs=argparse.REMAINDER)
    args = p.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        p.error("give the training command after --")
    os.makedirs(args.out, exist_ok=True)
    results = []
    for seed in args.seeds:
        r = run_seed(command, seed, args.target, args.out, args.timeout)
        if not args.keep_models:
            remove_models(args.out)
        print(json.dumps(r), flush=True)
        results.append(r)
    s = summary(results, args.target)
    s["command"] = " ".join(command)
    print(json.dumps(s))
    return 0 if all(r["rc"] == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
