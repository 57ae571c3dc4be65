#!/usr/bin/env python3
"""`loom-bench app` runs here (app{N}-{mpi}.json): per variant, each run's geomean and worst case,
then the per-case median over the runs, its geomean and the cases below 0.95x (#23's lines)."""
import collections, glob, json, math, os, statistics

here = os.path.dirname(os.path.abspath(__file__))


def gm(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs))


for mpi in ("openmpi", "mpich"):
    runs = sorted(glob.glob(os.path.join(here, "app[0-9]-%s.json" % mpi)))
    per_case = collections.defaultdict(list)
    per_run = collections.defaultdict(list)
    for path in runs:
        by_variant = collections.defaultdict(list)
        for c in json.load(open(path))["cases"]:
            key = (c["variant"], c["type"], c["packed_bytes"])
            per_case[key].append(c["ratio"])
            by_variant[c["variant"]].append((c["ratio"], "%s %d B" % (c["type"], c["packed_bytes"])))
        for v, xs in by_variant.items():
            per_run[v].append("%.2f (worst %.2f %s)" % (gm([x for x, _ in xs]), *min(xs)))
    print("\n%s, %d runs" % (mpi, len(runs)))
    print("| variant | per run: geomean (worst case) | geomean of per-case medians | cases below 0.95x in the medians |")
    print("|---|---|---|---|")
    for v in sorted(per_run):
        med = {k: statistics.median(r) for k, r in per_case.items() if k[0] == v}
        low = ["%s %d B %.2f" % (k[1], k[2], m) for k, m in sorted(med.items()) if m < 0.95]
        print("| %s | %s | %.2f | %s |" % (v, "; ".join(per_run[v]), gm(list(med.values())),
                                          ", ".join(low) or "none"))
