"""Pairs loom and PyTorch rows of a benchmark's JSON lines and prints a markdown table with the
ratio (PyTorch time / loom time: above 1 means loom is faster)."""
import json
import sys

rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
key = lambda r: (r["model"], r["batch"], r["device"].split(":")[0])
loom = {key(r): r for r in rows if r["framework"] == "loom"}
torch = {key(r): r for r in rows if r["framework"].startswith("pytorch")}
print("| model | batch | device | loom ms | PyTorch ms | PyTorch / loom |")
print("|---|---|---|---|---|---|")
for k, r in loom.items():
    t = torch.get(k)
    ratio = f"{t['median_ms'] / r['median_ms']:.2f}" if t else "n/a"
    print(f"| {k[0]} | {k[1]} | {k[2]} | {r['median_ms']:.3f} | {t['median_ms'] if t else 'n/a'} | {ratio} |")
if torch:
    print(f"\n{next(iter(torch.values()))['framework']}")
