#!/usr/bin/env python3
"""The project's own performance lines, checked against a loom-bench JSON result.

usage: python3 tools/bench-lines.py RESULT.json [RESULT.json ...]

For developers: loom-bench prints what a user can act on (Loom against the host, the bound,
what is within noise); the lines the project set itself for each subcommand are checked here,
from the per-case data of `loom-bench <subcommand> --json FILE`. Each line prints its value,
the line and "ok" or "below", with the case that set the value. Exit status: 0 when every line with cases is reached, 1 when one is
not, 2 on a file this script cannot read. Performance is never asserted in the unit tests; this
is a tool to run by hand on a quiet machine.
"""
import json
import math
import sys

KIB, MIB = 1024, 1024 * 1024


class Line:
    """The minimum (or maximum, or geomean) of values over cases, against a threshold."""

    def __init__(self, name, threshold, kind="min", percent=False):
        self.name, self.threshold, self.kind, self.percent = name, threshold, kind, percent
        self.values = []  # (value, case)
        self.count = None  # cases behind a value taken from a result's summary

    def add(self, value, case):
        if value is not None and value > 0:
            self.values.append((value, case))

    def value(self):
        if not self.values:
            return None, ""
        if self.kind == "geomean":
            logs = [math.log(v) for v, _ in self.values]
            return math.exp(sum(logs) / len(logs)), ""
        pick = min if self.kind == "min" else max
        return pick(self.values, key=lambda vc: vc[0])

    def reached(self):
        value, _ = self.value()
        if value is None:
            return True
        return value <= self.threshold if self.kind == "max" else value >= self.threshold

    def show(self):
        value, case = self.value()
        fmt = (lambda v: f"{100 * v:.0f}%") if self.percent else (lambda v: f"{v:.2f}x")
        relation = "<=" if self.kind == "max" else ">="
        if value is None:
            return f"  {self.name:<58} {'n/a':>8}  (no cases)"
        where = f"; {'worst' if self.kind != 'geomean' else 'over'}: {case}" if case else ""
        n = self.count if self.count is not None else len(self.values)
        return (f"  {self.name:<58} {fmt(value):>8}  line {relation} {fmt(self.threshold):<7} "
                f"{'ok' if self.reached() else 'below'} ({n} case{'' if n == 1 else 's'}{where})")


def pingpong(data):
    lines = [
        Line("min host/loom, all cases", 0.95),
        Line("min host/loom, blocks <= 16 B, >= 64 KiB", 2.0),
        Line("min host/loom, 64 B blocks, >= 64 KiB", 1.5),
        Line("min bound (host/floor), blocks <= 16 B, >= 64 KiB", 2.0),
        Line("min bound (host/floor), 64 B blocks, >= 64 KiB", 1.5),
    ]
    for c in data["cases"]:
        label = f"{c['shape']} {c['packed_bytes']} B"
        lines[0].add(c["ratio"], label)
        if c["packed_bytes"] < 64 * KIB:
            continue
        for k, fits in enumerate((c["block_bytes"] <= 16, c["block_bytes"] == 64)):
            if fits:
                lines[1 + k].add(c["ratio"], label)
                lines[3 + k].add(c["ratio_bound"], label)
    return lines


def app(data):
    mpich = "mpich" in data["mpi"]["name"].lower()
    lines = []
    for variant in ("steady", "recreate", "window"):
        cases = [c for c in data["cases"] if c["variant"] == variant]
        if not cases:
            continue
        geomean_line = {"steady": 1.4 if mpich else 1.2, "recreate": 1.0}.get(variant)
        if geomean_line is not None:
            g = Line(f"geomean host/loom, {variant}", geomean_line, "geomean")
            for c in cases:
                g.add(c["ratio"], "")
            lines.append(g)
        worst = Line(f"min host/loom, {variant}", 0.95)
        for c in cases:
            worst.add(c["ratio"], f"{c['type']} {c['packed_bytes']} B")
        lines.append(worst)
    return lines


def halo(data):
    lines = [
        Line("min library / hand-written isend", 2.5),
        Line("min library / neighbor_alltoallw", 2.0),
        Line("max library / floor", 1.3, "max"),
        Line("min library-mpi / hand-written isend", 1.0),
    ]
    keys = ("isend_over_library", "alltoallw_over_library", "library_over_floor",
            "isend_over_library_mpi")
    for c in data.get("library_cases", []):
        if c.get("verified", True):
            for line, key in zip(lines, keys):
                line.add(c[key], f"n={c['n']}")
    return lines


def pack(data):
    gm = {d: Line(f"geomean Loom/host speed-up, {d}", 3.0, "geomean")
          for d in ("pack", "unpack", "overall")}
    tiny = Line("min Loom/memcpy, 1-4 B blocks, >= 32 MiB", 0.35, percent=True)
    large = Line("min Loom/memcpy, >= 16 B blocks, >= 32 MiB", 0.60, percent=True)
    worst = Line("min Loom/host speed-up, every case", 0.95)
    floor = Line("min Loom/faster of (loop, memcpy), DRAM", 0.90, percent=True)
    in_cache = Line("geomean Loom/host, packed <= 256 KiB", 3.0, "geomean")
    for c in data["cases"]:
        for d in ("pack", "unpack"):
            x = c[d]
            label = f"{c['type']} {c['target_bytes']} B {d}"
            gm[d].add(x["speedup"], "")
            gm["overall"].add(x["speedup"], "")
            worst.add(x["speedup"], label)
            if c["packed_bytes"] <= 256 * KIB:
                in_cache.add(x["speedup"], "")
            if c["cache"] == "dram" and "loom_vs_faster_of_loop_and_memcpy" in x:
                floor.add(x["loom_vs_faster_of_loop_and_memcpy"], label)
            if c["regular"] and c["target_bytes"] >= 32 * MIB:
                block = c["min_block_bytes"]
                bucket = tiny if 1 <= block <= 4 else large if block >= 16 else None
                if bucket:
                    bucket.add(x["loom_vs_memcpy"], label)
    return [gm["pack"], gm["unpack"], gm["overall"], tiny, large, worst, floor, in_cache]


def summary_line(stats, name, threshold, percent=False):
    line = Line(name, threshold, percent=percent)
    if stats and stats.get("cases"):
        line.add(stats["min"], stats["min_case"])
        line.count = stats["cases"]
    return line


def gpu(data):
    s = data.get("summary", {})
    return [
        summary_line(s.get("of_memcpy"), "min of device memcpy, blocks >= 8 B, >= 16 MiB", 0.80,
                     True),
        summary_line(s.get("of_bound"), "min of the memory's bound, same cases", 0.80, True),
        summary_line(s.get("over_block_loop"), "min over cudaMemcpyAsync per block, <= 16 B",
                     1000),
        summary_line(s.get("over_memcpy2d"), "min over cudaMemcpy2DAsync, blocks <= 64 B", 3),
    ]


def gpu_pingpong(data):
    s = data.get("summary", {})
    worst = Line("min over the copy-to-host path, every case", 1.0)
    comparison = s.get("comparison", {})
    if comparison.get("cases"):
        worst.add(comparison["worst_ratio"], comparison["worst_case"])
        worst.count = comparison["cases"]
    return [summary_line(s.get("small_blocks"), "min over the copy-to-host path, <= 16 B", 10),
            worst]


def match(data):
    found = {f["key"]: f for f in data.get("summary", []) if f.get("measured")}
    lines = [
        Line("fastest backend over list, depth 1024", 10),
        Line("growth per doubling, hash or adaptive", 1.1, "max"),
        Line("adaptive over list, depth <= 8", 1.1, "max"),
        Line("tail queues over the single lock", 1.0),
    ]
    keys = ("best_over_list_1024", "growth_per_doubling", "adaptive_over_list_shallow",
            "tail_queues_over_lock")
    for line, key in zip(lines, keys):
        if key in found:
            line.add(found[key]["value"], "")
    return lines


def rma(data):
    """Derived put and get of the corpus' 4 B-block vector and indexed types into a
    contiguous target at >= 64 KiB, on shared and created windows; every derived case; and the
    same transfers as MPI_Isend/MPI_Irecv through Loom (bandwidth, created windows)."""
    shared = Line("min host/loom, derived put/get, contiguous target, >= 64 KiB, shared", 3.0)
    created = Line("min host/loom, the same, created window", 3.0)
    worst = Line("min host/loom, every derived case", 0.95)
    p2p = Line("min isend-irecv/one-sided, derived put/get bandwidth", 1.0)
    for c in data["cases"]:
        if "speedup" not in c:
            continue
        label = (f"{c['measure']} {c['op']} {c['types']} {c['sync']} {c['window']} "
                 f"threads={c['threads']} {c['bytes']} B")
        worst.add(c["speedup"], label)
        if "vs_p2p" in c:
            p2p.add(c["vs_p2p"], label)
        if (c["op"] in ("put", "get") and c["bytes"] >= 64 * KIB
                and c["types"] in ("vector-to-contig", "indexed-to-contig")):
            if c["window"] == "shared":
                shared.add(c["speedup"], label)
            elif c["window"] == "create":
                created.add(c["speedup"], label)
    return [shared, created, worst, p2p]


CHECKS = {"pingpong": pingpong, "app": app, "halo": halo, "pack": pack, "gpu": gpu,
          "gpu-pingpong": gpu_pingpong, "match": match, "rma": rma}


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(sys.argv) >= 2 else 2
    status = 0
    for path in sys.argv[1:]:
        try:
            with open(path) as f:
                data = json.load(f)
            if data.get("subcommand") not in CHECKS:
                print(f"bench-lines: {path}: no lines for loom-bench {data.get('subcommand')!r}"
                      f" (lines exist for {', '.join(CHECKS)})", file=sys.stderr)
                return 2
            lines = CHECKS[data["subcommand"]](data)
        except (OSError, ValueError, KeyError) as e:
            print(f"bench-lines: {path}: cannot read a loom-bench result ({e!r})", file=sys.stderr)
            return 2
        print(f"{path} ({data['subcommand']}, {data.get('mpi', {}).get('name', 'no MPI')}):")
        for line in lines:
            print(line.show())
            if not line.reached():
                status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
