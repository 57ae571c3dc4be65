#!/usr/bin/env python3
"""The table of tools/perf-compare.sh: how fast build B runs each loom-bench case against A.

usage: python3 tools/perf_compare.py [--a LABEL] [--b LABEL] DIR

DIR holds `loom-bench <pack|pingpong|app> --json` results named MPI-BENCH-A-R.json and
MPI-BENCH-B-R.json (R = round). Each case's speed-up over the host (host time / Loom time, both
measured in the same run) is taken from every result; B/A is B's speed-up over A's in the same
round, so drift of the machine between runs cancels. Per case: the median of the rounds' B/A
and their range; "within noise" when the range reaches both sides of 1. Exit status 0, or 2
when DIR holds no pair of results.
"""
import argparse
import glob
import json
import math
import os
import re
import statistics
import sys

SLOWER = 0.95  # a case below this, beyond noise, is named in the summary


def human(n):
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} B"


def cases(bench, data):
    """{case name: Loom's speed-up over the host} of one loom-bench JSON result."""
    out = {}
    for c in data.get("cases", []):
        if bench == "pack":
            for direction in ("pack", "unpack"):
                d = c.get(direction) or {}
                ratio = d.get("speedup") or d.get("speedup_of_medians")
                name = f"{c.get('type')} {human(c.get('target_bytes', 0))} {direction}"
                out[name] = ratio
        elif bench == "pingpong":
            out[f"{c.get('shape')} {human(c.get('packed_bytes', 0))}"] = c.get("ratio")
        else:
            name = f"{c.get('variant')} {c.get('type')} {human(c.get('packed_bytes', 0))}"
            out[name] = c.get("ratio")
    return {k: v for k, v in out.items() if isinstance(v, (int, float)) and v > 0}


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        print(f"perf_compare: cannot read {path}: {e}", file=sys.stderr)
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--a", default="A")
    ap.add_argument("--b", default="B")
    args = ap.parse_args()

    runs = {}  # (mpi, bench) -> {round: {"A": cases, "B": cases}}
    pattern = re.compile(r"^(openmpi|mpich)-(pack|pingpong|app)-([AB])-(\d+)\.json$")
    for path in sorted(glob.glob(os.path.join(args.dir, "*.json"))):
        m = pattern.match(os.path.basename(path))
        if not m:
            continue
        data = load(path)
        if data is None:
            continue
        mpi, bench, which, rnd = m.group(1), m.group(2), m.group(3), int(m.group(4))
        runs.setdefault((mpi, bench), {}).setdefault(rnd, {})[which] = cases(bench, data)

    print(f"\nB = {args.b} against A = {args.a}: B/A above 1 means B is faster")
    print("(each build's Loom-over-host speed-up, paired by round; range over the rounds)\n")
    every = []  # (ratio, within_noise, label)
    only = []
    for (mpi, bench), by_round in sorted(runs.items()):
        pairs = [r for r in by_round.values() if "A" in r and "B" in r]
        if not pairs:
            continue
        names = []
        for r in pairs:
            for n in list(r["A"]) + list(r["B"]):
                if n not in names:
                    names.append(n)
        rows = []
        for name in names:
            ratios = [r["B"][name] / r["A"][name] for r in pairs if name in r["A"] and name in r["B"]]
            if not ratios:
                only.append(f"{mpi} {bench} {name}")
                continue
            a = statistics.median(r["A"][name] for r in pairs if name in r["A"])
            b = statistics.median(r["B"][name] for r in pairs if name in r["B"])
            mid = statistics.median(ratios)
            noise = min(ratios) <= 1.0 <= max(ratios)
            rows.append((name, a, b, mid, min(ratios), max(ratios), noise))
            every.append((mid, noise, f"{mpi} {bench} {name}"))
        width = max(len(r[0]) for r in rows)
        print(f"{mpi} · loom-bench {bench} · {len(pairs)} round(s)")
        print(f"  {'case':<{width}}  {'A: Loom/host':>12}  {'B: Loom/host':>12}  {'B/A':>6}  range")
        for name, a, b, mid, lo, hi, noise in rows:
            note = "  within noise" if noise else ""
            print(f"  {name:<{width}}  {a:>11.2f}x  {b:>11.2f}x  {mid:>6.2f}  "
                  f"{lo:.2f}-{hi:.2f}{note}")
        print()

    if not every:
        print("perf_compare: no pair of A and B results to compare", file=sys.stderr)
        return 2
    logs = [math.log(r) for r, _, _ in every]
    worst = min(every)
    slower = [e for e in every if e[0] < SLOWER and not e[1]]
    faster = [e for e in every if e[0] > 1 / SLOWER and not e[1]]
    print(f"summary: {len(every)} cases; B/A geomean {math.exp(sum(logs) / len(logs)):.2f}; "
          f"worst {worst[0]:.2f} ({worst[2]}{', within noise' if worst[1] else ''})")
    print(f"  {len(faster)} faster than {1 / SLOWER:.2f}x beyond noise, "
          f"{len(slower)} slower than {SLOWER:.2f}x beyond noise, "
          f"{sum(1 for e in every if e[1])} within noise")
    for r, _, label in sorted(slower):
        print(f"  slower: {label} {r:.2f}")
    if only:
        print(f"  {len(only)} case(s) measured by one build only (new or removed cases)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
