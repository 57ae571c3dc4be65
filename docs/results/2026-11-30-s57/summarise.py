"""Per MPI, call and size: each library's host/loom ratios over the runs of plain_calls.txt
(run_plain_calls.sh), and their median. Usage: python3 summarise.py [plain_calls.txt]"""
import statistics
import sys
from collections import defaultdict

path = sys.argv[1] if len(sys.argv) > 1 else "plain_calls.txt"
ratios = defaultdict(list)
labels, order = [], []
for line in open(path):
    label, mpi, _run, call, ints, _loom, _host, ratio = line.split()
    ratios[(mpi, call, ints, label)].append(float(ratio))
    if label not in labels:
        labels.append(label)
    if (mpi, call, ints) not in order:
        order.append((mpi, call, ints))
print("mpi call ints " + " ".join(f"{l}(runs; median)" for l in labels))
for mpi, call, ints in order:
    cells = []
    for label in labels:
        r = ratios.get((mpi, call, ints, label), [])
        cells.append(" ".join(f"{x:.2f}" for x in r) + (f"; {statistics.median(r):.2f}" if r else "-"))
    print(f"{mpi} {call} {ints} | " + " | ".join(cells))
