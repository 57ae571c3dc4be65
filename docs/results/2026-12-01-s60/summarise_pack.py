#!/usr/bin/env python3
"""Out-of-cache cases of `loom-bench pack` here: Loom, the plain strided loop and the host
against memcpy of the same bytes (the item-6 line asks Loom >= 90% of the faster of loop and
memcpy), plus every case below 0.95x of the host."""
import json, os, sys

here = os.path.dirname(os.path.abspath(__file__))
for mpi in ("openmpi", "mpich"):
    path = os.path.join(here, "pack-%s.json" % mpi)
    if not os.path.exists(path):
        continue
    cases = json.load(open(path))["cases"]
    print("\n%s, out of cache: Loom / loop / host as fractions of memcpy (worst 8 by Loom)" % mpi)
    rows = []
    for c in cases:
        if c["cache"] == "cache":
            continue
        for side in ("pack", "unpack"):
            s = c[side]
            loop = s.get("loop_gbps")
            rows.append((s["loom_gbps"] / s["memcpy_gbps"], c["type"], c["packed_bytes"], side,
                         (loop or 0) / s["memcpy_gbps"], s["host_gbps"] / s["memcpy_gbps"],
                         c["span_bytes"] / c["packed_bytes"]))
    rows.sort()
    print("| case | side | span/packed | Loom | plain loop | host |")
    print("|---|---|---|---|---|---|")
    for r in rows[:8]:
        print("| %s %d MiB | %s | %.1f | %.0f%% | %.0f%% | %.0f%% |" % (
            r[1], r[2] >> 20, r[3], r[6], 100 * r[0], 100 * r[4], 100 * r[5]))
    print("\n%s: cases below 0.95x of the host" % mpi)
    print("| case | side | Loom/host [p10-p90] | Loom GB/s | host GB/s | loop GB/s | memcpy GB/s |")
    print("|---|---|---|---|---|---|---|")
    for c in cases:
        for side in ("pack", "unpack"):
            s = c[side]
            if s["speedup"] < 0.95:
                sp = s["speedup_spread"]
                print("| %s %d KiB | %s | %.2f [%.2f-%.2f] | %.2f | %.2f | %.2f | %.2f |" % (
                    c["type"], c["packed_bytes"] >> 10, side, s["speedup"], sp["p10"], sp["p90"],
                    s["loom_gbps"], s["host_gbps"], s.get("loop_gbps") or 0, s["memcpy_gbps"]))
