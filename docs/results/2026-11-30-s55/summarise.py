#!/usr/bin/env python3
"""Summarises run_neighbour_sizes.sh output: per MPI, shape and size, the host/Loom ratio of
each mode (the median over runs of each job's own ratio; >1: Loom faster)."""
import collections
import statistics
import sys

ratios = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) != 9:
        continue
    mpi, mode, _run, topo, call, shape = f[:6]
    size, loom, host = int(f[6]), float(f[7]), float(f[8])
    ratios[(mpi, topo, call, shape, size, mode)].append(host / loom)
modes = ["native", "auto", "1", "0"]
print("| MPI | topology | call | type | bytes/peer | " + " | ".join(
    {"native": "no Loom (noise)", "auto": "Loom default", "1": "window always", "0": "window off"}[m]
    for m in modes) + " |")
print("|---|---|---|---|---|" + "---|" * len(modes))
for key in sorted({k[:5] for k in ratios}):
    cells = []
    for m in modes:
        r = ratios.get(key + (m,), [])
        cells.append(" ".join(f"{x:.2f}" for x in r) if r else "-")
    print(f"| {' | '.join(str(k) for k in key)} | " + " | ".join(cells) + " |")
