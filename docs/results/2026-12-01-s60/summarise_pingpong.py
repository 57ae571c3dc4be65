#!/usr/bin/env python3
"""`loom-bench pingpong` runs here (pingpong{N}-{mpi}.json), against #23's lines: no case below
0.95x in each run; where the bound (host/floor) is >= 1.5x, Loom at >= 60% of the bound's
speed-up (ratio/bound >= 0.6)."""
import glob, json, math, os

here = os.path.dirname(os.path.abspath(__file__))
name = lambda c: "%s %d B" % (c["shape"], c["packed_bytes"])
print("| run | MPI | geomean | worst case | cases below 0.95x | bound >= 1.5x: cases, below 60% of it, worst ratio/bound |")
print("|---|---|---|---|---|---|")
for path in sorted(glob.glob(os.path.join(here, "pingpong[0-9]-*.json"))):
    run, mpi = os.path.basename(path)[8:-5].split("-")
    cases = json.load(open(path))["cases"]
    gm = math.exp(sum(math.log(c["ratio"]) for c in cases) / len(cases))
    worst = min(cases, key=lambda c: c["ratio"])
    low = [c for c in cases if c["ratio"] < 0.95]
    bounded = [c for c in cases if c["ratio_bound"] >= 1.5]
    short = [c for c in bounded if c["ratio"] / c["ratio_bound"] < 0.6]
    w = min(bounded, key=lambda c: c["ratio"] / c["ratio_bound"])
    print("| %s | %s | %.2f | %.2f %s | %d%s | %d, %d, %.2f (%s: %.2f of %.2f) |" % (
        run, mpi, gm, worst["ratio"], name(worst), len(low),
        (": " + ", ".join("%s %.2f" % (name(c), c["ratio"]) for c in low)) if low else "",
        len(bounded), len(short), w["ratio"] / w["ratio_bound"], name(w), w["ratio"],
        w["ratio_bound"]))
