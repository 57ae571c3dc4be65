"""Plots for `loom-bench pack --json`: called by tools/plot_bench.py as plot(data, outdir).

Produces, per type family, throughput vs packed size (host, Loom, memcpy; pack and unpack;
error bars = p10..p90 over the timed samples), plus bar charts of the Loom/host speed-up and of
Loom as a fraction of memcpy at the largest measured size. Returns the PNG paths.
"""
import math
from collections import OrderedDict

import matplotlib.pyplot as plt

from common import group_by, log_panel, log_size_axis, panel_grid, save, size_label

FAMILY_TITLES = {
    "1d": "1-D strided (vector, stride 2x block)",
    "2d": "2-D strided (hvector of vector)",
    "3d": "3-D strided (hvector of hvector of vector)",
    "grid": "3-D grid faces and edge (subarray)",
    "app": "application types (DDTBench)",
}
STYLE = {  # variant -> (label, color, marker)
    "host": ("host MPI", "tab:red", "o"),
    "loom": ("Loom", "tab:blue", "s"),
    "memcpy": ("memcpy", "tab:gray", None),
}


def _gbps(c, direction, variant):
    return c[direction][f"{variant}_gbps"]


def _throughput_figure(family, types, direction, mpi_name, outdir):
    fig, axes = panel_grid(len(types))
    for ax, (name, cases) in zip(axes, types.items()):
        x = [c["packed_bytes"] for c in cases]
        for variant, (label, color, marker) in STYLE.items():
            y = [_gbps(c, direction, variant) for c in cases]
            if variant == "memcpy":
                ax.plot(x, y, color=color, linestyle="--", label=label)
                continue
            lo = [max(0.0, yi - c[direction][f"{variant}_gbps_p10"]) for yi, c in zip(y, cases)]
            hi = [max(0.0, c[direction][f"{variant}_gbps_p90"] - yi) for yi, c in zip(y, cases)]
            ax.errorbar(x, y, yerr=[lo, hi], color=color, marker=marker, markersize=4,
                        capsize=2, label=label)
        for c in cases:  # mark sizes where Loom fell back to the host or failed verification
            if not c["verified"]:
                ax.annotate("MISMATCH", (c["packed_bytes"], _gbps(c, direction, "loom")),
                            color="red", fontsize=7)
            elif c[f"route_{direction}"] != "loom":
                ax.annotate("host", (c["packed_bytes"], _gbps(c, direction, "loom")),
                            color="tab:orange", fontsize=7)
        log_size_axis(ax, x)
        log_panel(ax, name, "packed bytes", "GB/s", fontsize=8)
    axes[0].legend(fontsize=7)
    fig.suptitle(f"MPI_{direction.capitalize()} throughput: {FAMILY_TITLES.get(family, family)}"
                 f" (host: {mpi_name})", fontsize=10)
    return save(fig, outdir, f"pack_{family}_{direction}.png")


def _geomean(values):
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def _speedup_figure(types, mpi_name, summary, outdir):
    names = list(types)
    pack = [_geomean([c["pack"]["speedup"] for c in types[n]]) for n in names]
    unpack = [_geomean([c["unpack"]["speedup"] for c in types[n]]) for n in names]
    fig, ax = plt.subplots(figsize=(max(8, 0.38 * len(names)), 4.5))
    xs = range(len(names))
    ax.bar([x - 0.2 for x in xs], pack, width=0.4, label="pack", color="tab:blue")
    ax.bar([x + 0.2 for x in xs], unpack, width=0.4, label="unpack", color="tab:cyan")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_xticks(list(xs))
    ax.set_xticklabels(names, rotation=70, ha="right", fontsize=7)
    ax.set_ylabel("Loom / host speed-up (geomean over sizes)")
    overall = summary.get("geomean_speedup")
    ax.set_title(f"Loom vs {mpi_name}: overall geomean {overall:.2f}x" if overall else
                 f"Loom vs {mpi_name}", fontsize=10)
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.legend(fontsize=7)
    return save(fig, outdir, "pack_speedup.png")


def _memcpy_fraction_figure(types, mpi_name, outdir):
    names, loom, host, labels = [], [], [], []
    for name, cases in types.items():
        big = cases[-1]  # largest measured size of this type
        names.append(name)
        labels.append(f"{name} ({size_label(big['packed_bytes'])}, {big['cache']})")
        loom.append(100 * min(big["pack"]["loom_vs_memcpy"], big["unpack"]["loom_vs_memcpy"]))
        host.append(100 * min(big["pack"]["host_vs_memcpy"], big["unpack"]["host_vs_memcpy"]))
    fig, ax = plt.subplots(figsize=(max(8, 0.38 * len(names)), 4.8))
    xs = range(len(names))
    ax.bar([x - 0.2 for x in xs], host, width=0.4, label="host", color="tab:red")
    ax.bar([x + 0.2 for x in xs], loom, width=0.4, label="Loom", color="tab:blue")
    ax.set_xticks(list(xs))
    ax.set_xticklabels(labels, rotation=70, ha="right", fontsize=7)
    ax.set_ylabel("% of memcpy throughput (min of pack, unpack)")
    ax.set_title(f"Fraction of memcpy at the largest size per type (host: {mpi_name})",
                 fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=7)
    return save(fig, outdir, "pack_vs_memcpy.png")


def plot(data: dict, outdir: str) -> list:
    cases = data.get("cases", [])
    if not cases:
        return []
    mpi_name = data.get("mpi", {}).get("name", "host MPI")
    families = OrderedDict()
    for c in cases:
        families.setdefault(c["family"], []).append(c)
    paths = []
    for family, fam_cases in families.items():
        types = group_by(fam_cases, "type")
        for direction in ("pack", "unpack"):
            paths.append(_throughput_figure(family, types, direction, mpi_name, outdir))
    all_types = group_by(cases, "type")
    paths.append(_speedup_figure(all_types, mpi_name, data.get("summary", {}), outdir))
    paths.append(_memcpy_fraction_figure(all_types, mpi_name, outdir))
    return paths
