"""Markdown table of a training-step benchmark's JSON lines: one row per (model, batch, device),
a median_ms column per (framework, variant), and loom best / PyTorch best (below 1 means loom's
fastest variant beats PyTorch's). A row carrying a "warning" (a step that did not train) is
marked with "!" and counts for no best.
  python3 bench/summarize.py train_step.jsonl
"""
import json
import sys

ORDER = {"eager": 0, "graph": 1, "bf16": 2, "bf16_nchw": 3, "compile": 4, "ddp": 5}
ALIAS = {"plain": "eager"}  # loom's train_step_bench calls its eager step "plain"


def main():
    rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
    table, columns, versions, warnings = {}, set(), set(), []
    for r in rows:
        fw = "loom" if r["framework"] == "loom" else "pytorch"
        if fw == "pytorch":
            versions.add(r["framework"])
        col = (fw, ALIAS.get(r["variant"], r["variant"]))
        key = (r["model"], r["batch"], r["device"].split(":")[0])
        cells = table.setdefault(key, {})
        if col in cells:
            print(f"summarize: two rows for {key} {col}; keeping the first", file=sys.stderr)
            continue
        cells[col] = r
        columns.add(col)
        if "warning" in r:
            warnings.append(f"{' '.join(map(str, key))} {' '.join(col)}: {r['warning']}")
    columns = sorted(columns, key=lambda c: (c[0] != "loom", ORDER.get(c[1], len(ORDER)), c[1]))

    def best(cells, fw):
        ok = [(r["median_ms"], v) for (f, v), r in cells.items() if f == fw and "warning" not in r]
        return min(ok) if ok else None

    names = {"loom": "loom", "pytorch": "PyTorch"}
    print("| model | batch | device | " + " | ".join(f"{names[f]} {v} ms" for f, v in columns)
          + " | loom best / PyTorch best |")
    print("|---|---|---|" + "---|" * (len(columns) + 1))
    for key, cells in table.items():
        out = []
        for col in columns:
            r = cells.get(col)
            out.append("" if r is None else f"{r['median_ms']:.3f}" + ("!" if "warning" in r else ""))
        lb, pb = best(cells, "loom"), best(cells, "pytorch")
        ratio = f"{lb[0] / pb[0]:.2f} ({lb[1]} / {pb[1]})" if lb and pb else "n/a"
        print(f"| {key[0]} | {key[1]} | {key[2]} | " + " | ".join(out) + f" | {ratio} |")
    if versions:
        print("\n" + ", ".join(sorted(versions)))
    for w in warnings:
        print(f"! {w}")


if __name__ == "__main__":
    main()
