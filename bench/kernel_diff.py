"""What one training-step variant's kernels add to another's, from two Nsight Compute CSV files
(`ncu --csv --metrics gpu__time_duration.sum ...`, the default details page: one row per kernel
and metric). Kernels are grouped by name (the function, without its arguments); for each name,
how many ran and their summed duration in each file, and the difference, largest first; then
the totals per step. Written for issue 34: the kernels a captured DDP step adds to the captured
plain step (bench/profile_ddp.sh).
  python3 bench/kernel_diff.py BASE.csv VARIANT.csv [--steps N] [--labels plain ddp]
ncu serialises kernels and replays each, so a duration here is the kernel's own time, not the
step's share of it: overlap and launch gaps are not counted.
"""
import argparse
import re
import csv
import sys
from collections import OrderedDict

UNIT_US = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3,
           "second": 1e6, "s": 1e6}


def short_name(name):
    """The kernel's function name: a leading "void " and the argument list dropped (ncu prints
    demangled names or bare function names, depending on --print-kernel-base), long template
    lists cut. loom's own namespaces are dropped too: two runs of the same binary have printed one
    kernel as `loom::<unnamed>::copy_kernel<...>` and as `detail::<unnamed>::copy_kernel<...>`."""
    name = re.sub(r"\b(?:loom|detail)::|<unnamed>::", "", name.strip())
    if name.startswith("void "):
        name = name[5:]
    depth = 0
    for i, ch in enumerate(name):  # the first '(' outside template brackets starts the arguments
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            name = name[:i]
            break
    return name if len(name) <= 90 else name[:87] + "..."


def read_kernels(path):
    """[(kernel name, microseconds)] in the file's order, one per profiled kernel."""
    lines = [line for line in open(path, newline="") if line.startswith('"')]
    rows = list(csv.DictReader(lines))
    if rows and "Kernel Name" not in rows[0]:
        raise SystemExit(f"kernel_diff: {path}: no 'Kernel Name' column (is it ncu --csv output?)")
    out = []
    for r in rows:
        if r.get("Metric Name") != "gpu__time_duration.sum":
            continue
        unit = r.get("Metric Unit", "nsecond")
        if unit not in UNIT_US:
            raise SystemExit(f"kernel_diff: {path}: unknown unit {unit!r}")
        value = float(r["Metric Value"].replace(",", ""))
        out.append((short_name(r["Kernel Name"]), value * UNIT_US[unit]))
    return out


def group(kernels):
    """name -> [count, microseconds], in order of first appearance."""
    table = OrderedDict()
    for name, us in kernels:
        entry = table.setdefault(name, [0, 0.0])
        entry[0] += 1
        entry[1] += us
    return table


def diff_rows(base, variant):
    """(name, base count, base us, variant count, variant us) for every name whose count or time
    differs, the largest time difference first."""
    rows = []
    for name in list(base) + [n for n in variant if n not in base]:
        bc, bt = base.get(name, [0, 0.0])
        vc, vt = variant.get(name, [0, 0.0])
        if bc != vc or abs(vt - bt) > 0.05 * max(bt, vt, 1e-9):
            rows.append((name, bc, bt, vc, vt))
    rows.sort(key=lambda r: -abs(r[4] - r[2]))
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("base")
    p.add_argument("variant")
    p.add_argument("--steps", type=int, default=1, help="steps profiled in each file (per-step figures)")
    p.add_argument("--labels", nargs=2, default=["base", "variant"])
    a = p.parse_args(argv)
    base, variant = read_kernels(a.base), read_kernels(a.variant)
    if not base or not variant:
        raise SystemExit(f"kernel_diff: no kernels in {a.base if not base else a.variant}")
    gb, gv = group(base), group(variant)
    s = a.steps
    b_label, v_label = a.labels
    print(f"| kernel | {b_label} count | {b_label} us | {v_label} count | {v_label} us | difference us |")
    print("|---|---|---|---|---|---|")
    for name, bc, bt, vc, vt in diff_rows(gb, gv):
        print(f"| `{name}` | {bc / s:g} | {bt / s:.1f} | {vc / s:g} | {vt / s:.1f} | {(vt - bt) / s:+.1f} |")
    tb, tv = sum(us for _, us in base), sum(us for _, us in variant)
    print(f"| **all kernels, per step** | {len(base) / s:g} | {tb / s:.1f} | {len(variant) / s:g} | "
          f"{tv / s:.1f} | {(tv - tb) / s:+.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
