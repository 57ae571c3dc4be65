"""Medians of run_persistent.sh's rounds per case: native, Loom, native/Loom, checksums."""
import collections
import re
import statistics
import sys

cases = collections.defaultdict(lambda: {"native": [], "loom": [], "checksums": set()})
pattern = re.compile(
    r"(\w+) round=\d (native|loom):\s+\w+ n=(\d+) stride=(\d+) starts=(\d+) "
    r"bytes_per_peer=(\d+) median_us_per_start=([\d.]+) checksum=(\S+)")
for line in open(sys.argv[1]):
    m = pattern.match(line)
    if not m:
        continue
    mpi, side, n, stride, starts, per_peer, us, checksum = m.groups()
    case = cases[(mpi, int(per_peer), int(stride), int(starts))]
    case[side].append(float(us))
    case["checksums"].add(checksum)
print("| MPI | per peer | stride | starts | native us | Loom us | native/Loom | checksums |")
print("|---|---|---|---|---|---|---|---|")
for (mpi, per_peer, stride, starts), case in cases.items():
    native, loom = statistics.median(case["native"]), statistics.median(case["loom"])
    same = "same" if len(case["checksums"]) == 1 else "DIFFER"
    print(f"| {mpi} | {per_peer} B | {stride} | {starts} | {native:.1f} | {loom:.1f} | "
          f"{native / loom:.2f}x | {same} |")
