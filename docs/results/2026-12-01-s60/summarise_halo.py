#!/usr/bin/env python3
"""Per MPI and n, over the halo runs here (default nodes): the host's exchanges over the floor
(the most any exchange of these bytes can gain over them), the library's ratios, and what the
issue's 2.5x / 2x lines would ask of the library against the floor."""
import glob, json, os, statistics

here = os.path.dirname(os.path.abspath(__file__))
rows = {}
for path in sorted(glob.glob(os.path.join(here, "halo[0-9]-*-rpn*.json"))):
    name = os.path.basename(path)
    mpi, rpn = name.split("-")[1], name.split("-")[2][3:-5]
    for c in json.load(open(path))["library_cases"]:
        t = {k[:-8]: c[k]["median"] for k in c if k.endswith("_seconds")}
        rows.setdefault((mpi, rpn, c["n"]), []).append(t)

print("| MPI | nodes | n | isend/floor | a2aw/floor | isend/lib | a2aw/lib | lib/floor | isend/lib-mpi "
      "| lib/floor the 2.5x line needs | runs |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for (mpi, rpn, n), ts in sorted(rows.items()):
    med = lambda f: statistics.median(f(t) for t in ts)
    span = lambda f: "%.2f [%.2f-%.2f]" % (med(f), min(f(t) for t in ts), max(f(t) for t in ts))
    need = med(lambda t: t["isend"] / t["floor"]) / 2.5
    print("| %s | %s | %d | %s | %s | %s | %s | %s | %s | %.2f | %d |" % (
        mpi, "virtual (1 a node)" if rpn == "1" else "machine", n,
        span(lambda t: t["isend"] / t["floor"]), span(lambda t: t["alltoallw"] / t["floor"]),
        span(lambda t: t["isend"] / t["library"]), span(lambda t: t["alltoallw"] / t["library"]),
        span(lambda t: t["library"] / t["floor"]), span(lambda t: t["isend"] / t["library-mpi"]),
        need, len(ts)))
