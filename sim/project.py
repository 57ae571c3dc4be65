#!/usr/bin/env python3
"""Loom at scale, projected with SimGrid's SMPI (docs/projection.md). Run as tools/project.sh.

  tools/project.sh validate [--quick]    measured (tools/slow-link.sh, 1 Gbit/s) against projected
                                         at 2, 4 and 8 ranks: halo exchanges, compressed all-to-all
  tools/project.sh halo [--quick]        weak scaling of the 3-D halo exchange on fat trees and
                                         dragonflies: library vs hand-written vs Neighbor_alltoallw
  tools/project.sh alltoall [--quick]    compressed all-to-all against raw per link speed: the
                                         crossover per codec
  tools/project.sh plot                  the plots again, from the CSVs in --out
  options: --smpi-build DIR (build/smpi) --build DIR (build/openmpi) --out DIR (bench-out/project)
           --calibration FILE (sim/calibration.env)

Each writes a CSV, a Markdown table and (matplotlib) plots into --out."""
import argparse
import csv
import itertools
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
PLATFORM = ROOT / "sim/make_platform.py"
# SMPI: only the charged CPU work counts (mpi/sim_clock.hpp), however small; MPI_Test and
# MPI_Iprobe cost what they cost here (SMPI's default injects 100 us per call against busy loops);
# links are taken at the rate and latency given (no SMPI piecewise factors).
# smpi_execute() runs duration x smpi/host-speed flops on a host of the platform's speed (1 Gf).
SMPI_CFG = ["--cfg=smpi/simulate-computation:no", "--cfg=smpi/cpu-threshold:0",
            "--cfg=smpi/host-speed:1Gf", "--cfg=smpi/test:5e-7", "--cfg=smpi/iprobe:5e-7",
            "--cfg=smpi/bw-factor:0:1", "--cfg=smpi/lat-factor:0:1", "--log=root.thres:critical"]
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_rmaps_base_oversubscribe": "1"}


def calibration(path):
    values = {}
    for line in pathlib.Path(path).read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            k, v = line.split("=", 1)
            values[k] = v
    return values


def codec_env(cal, spec):
    return cal.get("LOOM_SIM_CODEC_" + "".join(c if c.isalnum() else "_" for c in spec).upper())


def parse_line(text, prefix):
    for line in text.splitlines():
        if line.startswith(prefix):
            return dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)
    raise RuntimeError(f"no '{prefix}' line in:\n{text[-2000:]}")


def platform(tmp, nodes, rpn, topology, gbps, cal, latency=None, cores=0):
    base = tmp / f"p-{topology}-{nodes}x{rpn}-{gbps}"
    cmd = [sys.executable, str(PLATFORM), "--nodes", str(nodes), "--ranks-per-node", str(rpn),
           "--topology", topology, "--gbps", str(gbps), "--out", str(base),
           "--loopback-gbps", cal["SIM_LOOPBACK_GBPS"],
           "--loopback-latency", cal["SIM_LOOPBACK_LATENCY"]]
    if latency is not None:
        cmd += ["--hop-latency", str(latency)]
    if cores:
        cmd += ["--cores", str(cores)]
    subprocess.run(cmd, check=True)
    return base


def smpirun(args, program, program_args, nodes, rpn, topology, gbps, cal, env, latency=None,
            cores=0):
    with tempfile.TemporaryDirectory() as t:
        base = platform(pathlib.Path(t), nodes, rpn, topology, gbps, cal, latency, cores)
        cmd = ["smpirun", "-np", str(nodes * rpn), "-platform", f"{base}.xml", "-hostfile",
               f"{base}.hosts", str(pathlib.Path(args.smpi_build) / program)] + SMPI_CFG + program_args
        full_env = dict(os.environ, LOOM_SIM_PACK=cal["LOOM_SIM_PACK"],
                        LOOM_SIM_HOST_PACK=cal["LOOM_SIM_HOST_PACK"], **env)
        started = time.time()
        out = subprocess.run(cmd, capture_output=True, text=True, env=full_env, cwd=t)
        if out.returncode:
            raise RuntimeError(f"{' '.join(cmd)}: {out.stdout[-1500:]}{out.stderr[-1500:]}")
        return out.stdout, time.time() - started


def measured(args, program, program_args, nodes, rpn, env):
    cmd = [str(ROOT / "tools/slow-link.sh"), "--mpi", "openmpi", "--nodes", str(nodes),
           "--ranks-per-node", str(rpn), "--rate", "1gbit", "--no-check", "--timeout", "600", "--",
           str(pathlib.Path(args.build) / program)] + program_args
    full_env = dict(os.environ, LOOM_RANKS_PER_NODE=str(rpn), **MPI_ENV, **env)
    out = subprocess.run(cmd, capture_output=True, text=True, env=full_env)
    if out.returncode:
        raise RuntimeError(f"{' '.join(cmd)}: {out.stdout[-1500:]}{out.stderr[-1500:]}")
    return out.stdout


def write_table(out, name, header, rows):
    with open(out / f"{name}.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    (out / f"{name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def validate(args, cal):
    """Measured on the emulated link against projected on its simulated twin."""
    link = dict(gbps=float(cal["SIM_LINK_GBPS"]), latency=float(cal["SIM_LINK_LATENCY"]))
    halo = ["--n", "48", "--radius", "2", "--fields", "4", "--iterations", "20", "--warmup", "3"]
    codec = "blosc:bitshuffle:relative=1e-3"
    a2a = ["--count", "131072", "--iterations", "8", "--warmup", "2"]
    rows = []
    for nodes, rpn in [(2, 1), (2, 2), (2, 4)]:
        cases = [("halo library", "loom-sim-halo", halo + ["--variant", "library"], {}),
                 ("halo isend", "loom-sim-halo", halo + ["--variant", "isend"], {}),
                 ("halo alltoallw", "loom-sim-halo", halo + ["--variant", "alltoallw"], {}),
                 ("alltoall raw", "loom-sim-alltoall", a2a + ["--variant", "raw"], {}),
                 (f"alltoall {codec}", "loom-sim-alltoall", a2a + ["--variant", "compressed"],
                  {"LOOM_COMPRESS": codec, "LOOM_LINK_MBPS": "1"})]
        for name, program, pargs, env in cases:
            key = "seconds_per_exchange" if "halo" in program else "seconds_per_call"
            prefix = program
            # Measured: the mean and the best exchange of the run (the machine is shared); the
            # simulation has no such noise.
            line = parse_line(measured(args, program, pargs, nodes, rpn, env), prefix)
            mean, best = float(line[key]), float(line["best_seconds"])
            sim_env = dict(env)
            if "LOOM_COMPRESS" in env:
                sim_env["LOOM_SIM_CODEC"] = codec_env(cal, codec)
            # The twin of this machine: its cores shared by the virtual nodes (the ranks of
            # a node take turns on theirs, as the real ones do on this machine's).
            text, _ = smpirun(args, program, pargs, nodes, rpn, "flat", link["gbps"], cal, sim_env,
                              latency=link["latency"], cores=max(1, (os.cpu_count() or 2) // nodes))
            p = float(parse_line(text, prefix)[key])
            rows.append([nodes * rpn, f"{nodes}x{rpn}", name, f"{mean * 1e3:.3f}",
                         f"{best * 1e3:.3f}", f"{p * 1e3:.3f}", f"{(p - mean) / mean * 100:+.1f}%",
                         f"{(p - best) / best * 100:+.1f}%"])
            print(rows[-1], flush=True)
    write_table(args.out, "validation", ["ranks", "nodes x ranks", "exchange", "measured ms (mean)",
                                         "measured ms (best)", "projected ms", "vs mean", "vs best"],
                rows)


def halo(args, cal):
    """Weak scaling of the 3-D halo exchange."""
    if args.quick:
        grid = dict(nodes=[1, 8], rpn=[4], n=[32], radius=[2], topologies=["fattree"], gbps=[100])
    else:
        grid = dict(nodes=[1, 4, 16, 64], rpn=[4, 16], n=[32], radius=[1, 3],
                    topologies=args.topologies.split(","), gbps=[100])
    fields = "4"
    # Under SMPI MPI_Neighbor_alltoallw runs as Open MPI's basic algorithm (sim/halo_exchange.cpp),
    # the same messages as isend: --alltoallw adds it to the sweep.
    variants = [("library", []), ("isend", ["--order", "rank"]), ("isend-reordered", ["--order", "node"])]
    if args.alltoallw:
        variants += [("alltoallw", ["--order", "rank"]), ("alltoallw-reordered", ["--order", "node"])]
    header = ["topology", "Gbit/s", "nodes", "ranks/node", "n", "radius", "fields", "library ms",
              "isend ms", "isend reordered ms", "alltoallw ms", "isend/library",
              "isend reordered/library", "alltoallw/library", "inside-node share (node order)"]
    rows = []
    for topology, gbps, nodes, rpn, n, radius in itertools.product(
            grid["topologies"], grid["gbps"], grid["nodes"], grid["rpn"], grid["n"], grid["radius"]):
        if nodes * rpn > args.max_ranks:
            continue
        times, share = {}, None
        for name, extra in variants:
            variant = name.split("-")[0]
            pargs = ["--n", str(n), "--radius", str(radius), "--fields", fields, "--iterations", "2",
                     "--warmup", "1", "--no-check", "--variant", variant] + extra
            text, wall = smpirun(args, "loom-sim-halo", pargs, nodes, rpn, topology, gbps, cal,
                                 {"LOOM_SIM_FOLD": "1"})
            line = parse_line(text, "loom-sim-halo")
            times[name] = float(line["seconds_per_exchange"])
            if name == "isend-reordered":
                share = float(line["inside_node_share"])
            print(f"{topology} {gbps}G {nodes}x{rpn} n={n} r={radius} {name}: "
                  f"{times[name] * 1e3:.3f} ms (simulated in {wall:.0f} s)", flush=True)
        lib = times["library"]
        a2aw = times.get("alltoallw")
        rows.append([topology, gbps, nodes, rpn, n, radius, fields,
                     f"{lib * 1e3:.3f}", f"{times['isend'] * 1e3:.3f}",
                     f"{times['isend-reordered'] * 1e3:.3f}",
                     f"{a2aw * 1e3:.3f}" if a2aw else "as isend",
                     f"{times['isend'] / lib:.2f}", f"{times['isend-reordered'] / lib:.2f}",
                     f"{a2aw / lib:.2f}" if a2aw else "as isend", f"{share:.2f}"])
        write_table(args.out, "halo", *halo_limits(header, rows))  # a long sweep keeps its rows
    plot_halo(args.out, header, rows)


def halo_limits(header, rows):
    """Adds what bounds each case: the node's link (the bytes that leave a node, in the
    node-aware layout, at the link's rate: a floor for every code) and the library's time over it.
    Near 1, the link limits the library and no code can be much faster than it; far above, copies
    and latency do."""
    col = {h: i for i, h in enumerate(header)}
    extra = ["link floor ms", "library/floor", "limit"]
    out = []
    for r in rows:
        n, radius, fields = int(r[col["n"]]), int(r[col["radius"]]), int(r[col["fields"]])
        rpn, gbps = int(r[col["ranks/node"]]), float(r[col["Gbit/s"]])
        share = float(r[col["inside-node share (node order)"]])
        per_rank = fields * 8 * (6 * n * n * radius + 12 * n * radius ** 2 + 8 * radius ** 3)
        floor = rpn * per_rank * (1 - share) * 8 / (gbps * 1e9)
        lib = float(r[col["library ms"]]) / 1e3
        if floor <= 0:
            out.append(list(r) + ["0", "-", "copies (one node)"])
            continue
        ratio = lib / floor
        limit = "node's link" if ratio < 1.5 else "copies and latency"
        out.append(list(r) + [f"{floor * 1e3:.3f}", f"{ratio:.2f}", limit])
    return header + extra, out


def plot_halo(out, header, rows):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no plot")
        return
    col = {h: i for i, h in enumerate(header)}
    keys = sorted({(r[col["topology"]], r[col["ranks/node"]], r[col["n"]], r[col["radius"]]) for r in rows})
    fig, axes = plt.subplots(1, len(keys), figsize=(4 * len(keys), 3.6), squeeze=False)
    for ax, key in zip(axes[0], keys):
        sel = [r for r in rows if (r[col["topology"]], r[col["ranks/node"]], r[col["n"]],
                                   r[col["radius"]]) == key]
        sel.sort(key=lambda r: r[col["nodes"]])
        x = [r[col["nodes"]] for r in sel]
        for label, c in [("library", "library ms"), ("isend (= Neighbor_alltoallw)", "isend ms"),
                         ("isend, node-aware order", "isend reordered ms")]:
            ax.plot(x, [float(r[col[c]]) for r in sel], marker="o", label=label)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("nodes")
        ax.set_ylabel("ms per exchange")
        ax.set_title(f"{key[0]}, {key[1]} ranks/node, {key[2]}^3, r={key[3]}", fontsize=8)
        ax.set_ylim(bottom=0)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "halo.png", dpi=110)


def alltoall(args, cal):
    """Compressed all-to-all against the host's, per link speed; the crossover per codec."""
    codecs = ["zfp:rate=8", "zfp:rate=16", "blosc", "blosc:bitshuffle:relative=1e-3"]
    if args.quick:
        shapes, speeds = [(4, 4)], [10, 100]
    else:
        shapes, speeds = [(4, 4), (16, 4), (4, 16)], [1, 10, 25, 100, 200]
    if args.speeds:
        speeds = [float(x) for x in args.speeds.split(",")]
    if args.shapes:
        shapes = [tuple(int(v) for v in x.split("x")) for x in args.shapes.split(",")]
    count = "8192"  # 64 KiB to every peer
    header = ["codec", "ranks", "nodes x ranks", "Gbit/s", "raw ms", "compressed ms",
              "raw/compressed", "codec MB/s (comp,dec)"]
    rows, raw = [], {}
    for (nodes, rpn), gbps in itertools.product(shapes, speeds):
        pargs = ["--count", count, "--iterations", "2", "--warmup", "1"]
        text, _ = smpirun(args, "loom-sim-alltoall", pargs + ["--variant", "raw"], nodes, rpn,
                          "fattree", gbps, cal, {})
        raw[(nodes, rpn, gbps)] = float(parse_line(text, "loom-sim-alltoall")["seconds_per_call"])
        for codec in codecs:
            env = {"LOOM_COMPRESS": codec, "LOOM_LINK_MBPS": "1",
                   "LOOM_SIM_CODEC": codec_env(cal, codec)}
            text, wall = smpirun(args, "loom-sim-alltoall", pargs + ["--variant", "compressed"],
                                 nodes, rpn, "fattree", gbps, cal, env)
            line = parse_line(text, "loom-sim-alltoall")
            t = float(line["seconds_per_call"])
            r = raw[(nodes, rpn, gbps)]
            rows.append([codec, nodes * rpn, f"{nodes}x{rpn}", gbps, f"{r * 1e3:.3f}", f"{t * 1e3:.3f}",
                         f"{r / t:.2f}", codec_env(cal, codec)])
            print(rows[-1], f"(simulated in {wall:.0f} s)", flush=True)
            write_table(args.out, "alltoall", header, rows)
    plot_alltoall(args.out, header, rows)
    crossovers(args.out, header, rows)


def crossovers(out, header, rows):
    """Per codec and node shape: the link speed (Gbit/s, log-interpolated) below which the
    compressed exchange beats the raw one."""
    import math
    col = {h: i for i, h in enumerate(header)}
    table = []
    for codec, shape in sorted({(r[col["codec"]], r[col["nodes x ranks"]]) for r in rows}):
        pts = sorted((float(r[col["Gbit/s"]]), float(r[col["raw/compressed"]])) for r in rows
                     if r[col["codec"]] == codec and r[col["nodes x ranks"]] == shape)
        where = (f"pays at every speed simulated (up to {pts[-1][0]:g})" if all(g > 1 for _, g in pts)
                 else f"below {pts[0][0]:g} Gbit/s (the slowest simulated)")
        for (s0, g0), (s1, g1) in zip(pts, pts[1:]):
            if g0 > 1 >= g1:
                f = math.log(g0) / (math.log(g0) - math.log(g1)) if g1 > 0 else 1
                where = f"{math.exp(math.log(s0) + f * (math.log(s1) - math.log(s0))):.2g} Gbit/s"
        speeds = [r[col["codec MB/s (comp,dec)"]] for r in rows if r[col["codec"]] == codec][0]
        table.append([codec, shape, where, speeds])
    write_table(out, "crossover", ["codec", "nodes x ranks", "compression pays below",
                                   "codec MB/s (comp,dec)"], table)


def plot_alltoall(out, header, rows):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no plot")
        return
    col = {h: i for i, h in enumerate(header)}
    shapes = sorted({r[col["nodes x ranks"]] for r in rows})
    fig, axes = plt.subplots(1, len(shapes), figsize=(4 * len(shapes), 3.6), squeeze=False)
    for ax, shape in zip(axes[0], shapes):
        for codec in sorted({r[col["codec"]] for r in rows}):
            sel = sorted((float(r[col["Gbit/s"]]), float(r[col["raw/compressed"]])) for r in rows
                         if r[col["codec"]] == codec and r[col["nodes x ranks"]] == shape)
            ax.plot([x for x, _ in sel], [y for _, y in sel], marker="o", label=codec)
        ax.axhline(1, color="grey", lw=0.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("link Gbit/s")
        ax.set_ylabel("raw / compressed time")
        ax.set_title(f"all-to-all, {shape} nodes x ranks, 64 KiB/peer", fontsize=8)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "alltoall.png", dpi=110)


def plot(args, cal):
    """Plots again from the CSVs a sweep wrote."""
    for name, draw in (("halo", plot_halo), ("alltoall", plot_alltoall)):
        path = args.out / f"{name}.csv"
        if path.exists():
            with open(path) as f:
                table = list(csv.reader(f))
            rows = [[int(c) if c.isdigit() else c for c in r] for r in table[1:]]
            header = table[0]
            if name == "halo" and "limit" not in header:
                header, rows = halo_limits(header, rows)
                write_table(args.out, name, header, rows)
            draw(args.out, header, rows)
            if name == "alltoall":
                crossovers(args.out, header, rows)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("what", choices=["validate", "halo", "alltoall", "plot"])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--alltoallw", action="store_true", help="halo: also Neighbor_alltoallw")
    p.add_argument("--max-ranks", type=int, default=1024, help="halo: skip larger cases")
    p.add_argument("--topologies", default="fattree,dragonfly", help="halo: which, comma-separated")
    p.add_argument("--speeds", help="alltoall: link Gbit/s, comma-separated")
    p.add_argument("--shapes", help="alltoall: NODESxRANKS, comma-separated")
    p.add_argument("--smpi-build", default=str(ROOT / "build/smpi"))
    p.add_argument("--build", default=str(ROOT / "build/openmpi"))
    p.add_argument("--calibration", default=str(ROOT / "sim/calibration.env"))
    p.add_argument("--out", default=str(ROOT / "bench-out/project"))
    args = p.parse_args(argv)
    args.out = pathlib.Path(args.out)
    args.out.mkdir(parents=True, exist_ok=True)
    cal = calibration(args.calibration)
    {"validate": validate, "halo": halo, "alltoall": alltoall, "plot": plot}[args.what](args, cal)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
