#!/usr/bin/env python3
"""Calibrates the simulation from this machine (docs/projection.md, "Calibration").

Runs Loom's own measurements against the host-MPI build and writes KEY=VALUE lines:
  LOOM_SIM_PACK, LOOM_SIM_HOST_PACK   Loom's and the host's pack+unpack cost per contiguous run
                                      and per byte (loom-bench pack, vectors of 16 B, 256 B and
                                      4 KiB blocks, 1 MiB packed: a least-squares fit)
  SIM_LOOPBACK_LATENCY, _GBPS         intra-node messages: the host's one-way time of 1 KiB and
                                      pingpong's floor at 4 MiB (loom-bench pingpong)
  SIM_LINK_LATENCY, SIM_LINK_GBPS     tools/slow-link.sh's emulated 1 Gbit/s link (with
                                      --slow-link; root only): the latency of 1 KiB one way, the
                                      rate per direction of a 4 MiB exchange both ways
  LOOM_SIM_CODEC_<spec>               each codec's compress,decompress MB/s on a smooth double
                                      field (loom-codec-bench)

usage: sim/calibrate.py --build build/openmpi [--slow-link] [--out sim/calibration.env]"""
import argparse
import datetime
import json
import os
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
CODECS = ["zfp:rate=8", "zfp:rate=16", "zfp:accuracy=1e-3", "blosc", "blosc:bitshuffle:relative=1e-3"]
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_rmaps_base_oversubscribe": "1"}


def run(cmd, **kw):
    env = dict(os.environ, **MPI_ENV)
    return subprocess.run(cmd, check=True, capture_output=True, text=True, env=env, **kw)


def fit(points):
    """Least squares t = a * rows + b * bytes (no intercept) over (rows, bytes, seconds)."""
    srr = sum(r * r for r, _, _ in points)
    sbb = sum(b * b for _, b, _ in points)
    srb = sum(r * b for r, b, _ in points)
    srt = sum(r * t for r, _, t in points)
    sbt = sum(b * t for _, b, t in points)
    det = srr * sbb - srb * srb
    a = (srt * sbb - sbt * srb) / det
    b = (sbt * srr - srt * srb) / det
    return max(a, 0.0), b


def pack_costs(bench, tmp):
    out = tmp / "pack.json"
    run([str(bench), "pack", "--types", "vec1d_b16,vec1d_b256,vec1d_b4096", "--sizes", "1M",
         "--json", str(out)])
    cases = json.loads(out.read_text())["cases"]
    result = {}
    # The p90 of each engine's speed: the machine is shared, and the faster samples are those
    # the measurement had a core to itself.
    for engine in ("loom", "host"):
        points = []
        for c in cases:
            gbps = (c["pack"][f"{engine}_gbps_p90"] + c["unpack"][f"{engine}_gbps_p90"]) / 2
            t = c["packed_bytes"] / (gbps * 1e9)
            points.append((c["packed_bytes"] / c["min_block_bytes"], c["packed_bytes"], t))
        per_row, per_byte = fit(points)
        result[engine] = (per_row * 1e9, 1 / per_byte / 1e9)  # ns per run, GB/s
    return result


def pingpong(bench, tmp, wrapper=()):
    """(latency s, Gbit/s) of messages between two ranks. On one node: the latency of 1 KiB
    messages (the host's one-way median) and the bandwidth of pingpong's floor at 4 MiB (the
    fastest pack + unpack, both ranks at once: the copy every same-node transport makes). Over
    the emulated link: both from the host's one-way p10 (the machine is shared: the p10 is the
    time without preemption), the bandwidth from the 4 MiB one less the latency."""
    out = tmp / "pingpong.json"
    args = [str(bench), "pingpong", "--shapes", "vec_b1024", "--sizes", "1K,4M", "--json", str(out)]
    if wrapper:  # slow-link.sh launches the ranks itself
        cmd = list(wrapper) + ["--"] + args
    else:
        cmd = ["mpiexec.openmpi", "--allow-run-as-root", "--oversubscribe", "-n", "2"] + args
    run(cmd)
    cases = {c["packed_bytes"]: c for c in json.loads(out.read_text())["cases"]}
    small, large = cases[1024], cases[4 << 20]
    if wrapper:  # tc's token bucket lets a 1 KiB message through at once: its time is latency
        t_small, t_large = small["host_seconds"]["p10"], large["host_seconds"]["p10"]
        return t_small, ((4 << 20) - 1024) * 8 / (t_large - t_small) / 1e9
    gbps = (4 << 20) * 8 / large["floor_seconds"] / 1e9
    return max(small["host_seconds"]["median"] - 1024 * 8 / (gbps * 1e9), 0.0), gbps


def duplex_gbps(build, wrapper):
    """The emulated link's rate per direction while both directions carry 4 MiB (a raw
    all-to-all of two ranks, one per node): what the exchanges use. On a loaded machine the TCP
    stack's CPU time, not tc, can set it, and then it is well below the one-way rate."""
    out = run(list(wrapper) + ["--", str(build / "loom-sim-alltoall"), "--variant", "raw",
                               "--count", str(1 << 19), "--iterations", "5", "--warmup", "1"]).stdout
    line = [l for l in out.splitlines() if l.startswith("loom-sim-alltoall")][0]
    seconds = float(dict(kv.split("=", 1) for kv in line.split()[1:])["seconds_per_call"])
    return (4 << 20) * 8 / seconds / 1e9


def codec_speeds(codec_bench, runs=3):
    """The fastest of `runs` runs of each codec (the machine is shared)."""
    speeds = {}
    for _ in range(runs):
        out = run([str(codec_bench), "--double", "--seconds", "0.2"] + CODECS).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) >= 5 and parts[0] in CODECS and parts[1] == "smooth":
                comp, dec, ratio = float(parts[3]), float(parts[4]), float(parts[2])
                old = speeds.get(parts[0], (0, 0, ratio))
                speeds[parts[0]] = (max(old[0], comp), max(old[1], dec), ratio)
    return speeds


def env_name(spec):
    return "LOOM_SIM_CODEC_" + "".join(c if c.isalnum() else "_" for c in spec).upper()


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default=str(ROOT / "build/openmpi"))
    p.add_argument("--slow-link", action="store_true", help="also measure the emulated link")
    p.add_argument("--out", default=str(ROOT / "sim/calibration.env"))
    args = p.parse_args(argv)
    build = pathlib.Path(args.build)
    bench = build / "loom-bench"
    load = open("/proc/loadavg").read().split()[0]
    lines = [f"# sim/calibrate.py, {datetime.date.today()}, {os.cpu_count()} cores, load {load}"]
    with tempfile.TemporaryDirectory() as t:
        tmp = pathlib.Path(t)
        costs = pack_costs(bench, tmp)
        lines.append(f"LOOM_SIM_PACK={costs['loom'][0]:.3f},{costs['loom'][1]:.3f}")
        lines.append(f"LOOM_SIM_HOST_PACK={costs['host'][0]:.3f},{costs['host'][1]:.3f}")
        latency, gbps = pingpong(bench, tmp)
        lines.append(f"SIM_LOOPBACK_LATENCY={latency:.3g}")
        lines.append(f"SIM_LOOPBACK_GBPS={gbps:.3g}")
        if args.slow_link:
            wrapper = [str(ROOT / "tools/slow-link.sh"), "--nodes", "2", "--rate", "1gbit",
                       "--no-check"]
            latency, gbps = pingpong(bench, tmp, wrapper=wrapper)
            lines.append(f"# emulated link, one way (pingpong): {gbps:.3g} Gbit/s")
            lines.append(f"SIM_LINK_LATENCY={latency:.3g}")
            lines.append(f"SIM_LINK_GBPS={duplex_gbps(build, wrapper):.3g}")
        for spec, (comp, dec, ratio) in codec_speeds(build / "codec/loom-codec-bench").items():
            lines.append(f"# {spec}: ratio {ratio} on loom-codec-bench's smooth double field")
            lines.append(f"{env_name(spec)}={comp:g},{dec:g}")
    pathlib.Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
