"""Issue 35's table from the JSON lines of bench/train_step_bench (loom) and
bench/train_step_torch.py (PyTorch) on one GPU: per (model, batch), loom's fastest variant, PyTorch's
CUDA graph in float32 (its defaults: cuDNN's convolutions may use TF32, matrix products do not), its
CUDA graph in bf16 (the faster of channels-last
and NCHW), its torch.compile + CUDA graph in bf16 with the compile time apart, PyTorch's best of
all its rows, loom's speed against that best (2.00x: loom takes half the time), and issue 35's
target for loom. A row with a "warning" (a step that did not train) counts for no best.
  python3 bench/step_table.py train_step.jsonl [--device cuda]
"""
import argparse
import json
import sys

# Issue 35's targets for loom's best step, ms (H200).
TARGETS = {("seed_cnn", 32): 0.10, ("seed_cnn", 256): 0.19, ("classic_cnn", 32): 0.23,
           ("classic_cnn", 256): 0.65, ("resnet18", 32): 2.0, ("resnet18", 256): 10.0}
GOAL = 1.25  # loom at least this many times faster than PyTorch's best


def _fastest(rows):
    ok = [r for r in rows if "warning" not in r]
    return min(ok, key=lambda r: r["median_ms"]) if ok else None


def table_rows(rows, device="cuda"):
    """One dict per (model, batch) on `device`, in first-seen order: loom_ms and loom_mode (its
    fastest variant), torch_graph_ms, torch_bf16_ms, torch_compile_ms, compile_s, torch_best_ms
    and torch_best_mode, speedup (torch best / loom best), target_ms; None where no row has it."""
    groups = {}
    for r in rows:
        if r.get("device", "").split(":")[0] != device:
            continue
        groups.setdefault((r["model"], r["batch"]), []).append(r)
    out = []
    for (model, batch), rs in groups.items():
        loom = _fastest([r for r in rs if r["framework"] == "loom"])
        torch = [r for r in rs if r["framework"] != "loom"]
        by = lambda *variants: _fastest([r for r in torch if r["variant"] in variants])
        graph, bf16, compiled, best = by("graph"), by("bf16", "bf16_nchw"), by("compile"), _fastest(torch)
        row = {"model": model, "batch": batch,
               "loom_ms": loom and loom["median_ms"], "loom_mode": loom and loom["variant"],
               "torch_graph_ms": graph and graph["median_ms"],
               "torch_bf16_ms": bf16 and bf16["median_ms"],
               "torch_compile_ms": compiled and compiled["median_ms"],
               "compile_s": compiled and compiled.get("compile_s"),
               "torch_best_ms": best and best["median_ms"], "torch_best_mode": best and best["variant"],
               "target_ms": TARGETS.get((model, batch))}
        row["speedup"] = (row["torch_best_ms"] / row["loom_ms"]
                          if row["loom_ms"] and row["torch_best_ms"] else None)
        out.append(row)
    return out


def markdown(rows, device="cuda"):
    """The table as markdown lines."""
    def ms(v):
        return "" if v is None else f"{v:.3f}"

    lines = ["| model | batch | loom best (mode) | PyTorch graph fp32 | PyTorch graph bf16 | "
             "PyTorch compile + graph bf16 (compile s) | loom vs PyTorch's best (its mode) | "
             f"target (loom) | met |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in table_rows(rows, device):
        loom = "" if r["loom_ms"] is None else f"{r['loom_ms']:.3f} ({r['loom_mode']})"
        compiled = ms(r["torch_compile_ms"]) + (f" ({r['compile_s']:.1f} s)" if r["compile_s"] is not None else "")
        vs = "n/a" if r["speedup"] is None else f"{r['speedup']:.2f}x ({r['torch_best_mode']})"
        target = "" if r["target_ms"] is None else f"<= {r['target_ms']:g}"
        met = ""
        if r["loom_ms"] is not None and r["speedup"] is not None:
            ok = r["speedup"] >= GOAL and (r["target_ms"] is None or r["loom_ms"] <= r["target_ms"])
            met = "yes" if ok else "no"
        lines.append(f"| {r['model']} | {r['batch']} | {loom} | {ms(r['torch_graph_ms'])} | "
                     f"{ms(r['torch_bf16_ms'])} | {compiled} | {vs} | {target} | {met} |")
    lines.append("")
    lines.append(f"met: loom >= {GOAL}x PyTorch's best and within the target; "
                 "compile s: torch.compile's compile and capture, not in the step time.")
    return lines


def main():
    p = argparse.ArgumentParser()
    p.add_argument("jsonl")
    p.add_argument("--device", default="cuda")
    args = p.parse_args()
    rows = [json.loads(line) for line in open(args.jsonl) if line.strip()]
    print("\n".join(markdown(rows, args.device)))
    if not any(r["device"].split(":")[0] == args.device for r in rows):
        print(f"step_table: no {args.device} rows in {args.jsonl}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
