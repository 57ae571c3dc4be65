"""Plots for `loom-bench pingpong --json`: called by tools/plot_bench.py as plot(data, outdir).

Produces one-way latency and bandwidth vs packed message size per shape (host MPI vs Loom,
error bars = p10..p90 over the timed samples), and the host/Loom ratio vs size for every shape
with the issue's targets drawn in. Returns the PNG paths.
"""
import math
import os
from collections import OrderedDict

import matplotlib.pyplot as plt

STYLE = {  # path -> (label, color, marker)
    "host": ("host MPI", "tab:red", "o"),
    "loom": ("Loom", "tab:blue", "s"),
}
TARGETS = [  # (ratio, label, style)
    (2.0, "2x: blocks <= 16 B, >= 64 KiB", "--"),
    (1.5, "1.5x: 64 B blocks, >= 64 KiB", "-."),
    (0.95, "0.95x floor", ":"),
]


def _size_label(nbytes):
    for unit, div in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if nbytes >= div:
            v = nbytes / div
            return f"{v:.0f}{unit}" if abs(v - round(v)) < 0.05 else f"{v:.1f}{unit}"
    return f"{nbytes}B"


def _by_shape(cases):
    shapes = OrderedDict()
    for c in cases:
        shapes.setdefault(c["shape"], []).append(c)
    for lst in shapes.values():
        lst.sort(key=lambda c: c["packed_bytes"])
    return shapes


def _metric(c, path, metric):
    """(value, low, high) of one case for 'latency' (us, one-way) or 'bandwidth' (MB/s)."""
    s = c[f"{path}_seconds"]
    if metric == "latency":
        return s["median"] * 1e6, s["p10"] * 1e6, s["p90"] * 1e6
    def mbps(seconds):
        return c["packed_bytes"] / seconds / 1e6 if seconds > 0 else 0.0
    return mbps(s["median"]), mbps(s["p90"]), mbps(s["p10"])  # slow samples: low bandwidth


def _grid_figure(shapes, metric, mpi_name, outdir):
    n = len(shapes)
    cols = min(4, n)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    for ax, (name, cases) in zip(axes.flat, shapes.items()):
        x = [c["packed_bytes"] for c in cases]
        for path, (label, color, marker) in STYLE.items():
            vals = [_metric(c, path, metric) for c in cases]
            y = [v[0] for v in vals]
            lo = [max(0.0, v[0] - v[1]) for v in vals]
            hi = [max(0.0, v[2] - v[0]) for v in vals]
            ax.errorbar(x, y, yerr=[lo, hi], color=color, marker=marker, markersize=4,
                        capsize=2, label=label)
        for c in cases:
            if not c["verified"]:
                ax.annotate("MISMATCH", (c["packed_bytes"], _metric(c, "loom", metric)[0]),
                            color="red", fontsize=7)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(x)
        ax.set_xticklabels([_size_label(v) for v in x], fontsize=6, rotation=45)
        ax.set_title(f"{name} ({cases[0]['family']})", fontsize=9)
        ax.set_xlabel("packed bytes per message", fontsize=8)
        ax.set_ylabel("one-way us" if metric == "latency" else "MB/s", fontsize=8)
        ax.grid(True, which="both", alpha=0.3)
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    axes.flat[0].legend(fontsize=7)
    what = "one-way latency" if metric == "latency" else "bandwidth"
    fig.suptitle(f"Derived-type ping-pong {what}, 2 ranks (host: {mpi_name})", fontsize=10)
    fig.tight_layout()
    path = os.path.join(outdir, f"pingpong_{metric}.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _ratio_figure(shapes, mpi_name, outdir):
    fig, ax = plt.subplots(figsize=(9, 5))
    cmap = plt.get_cmap("tab20")
    for i, (name, cases) in enumerate(shapes.items()):
        x = [c["packed_bytes"] for c in cases]
        y = [c["ratio"] for c in cases]
        ax.plot(x, y, marker="o", markersize=3, color=cmap(i % 20), label=name)
    for ratio, label, style in TARGETS:
        ax.axhline(ratio, color="black", linestyle=style, linewidth=0.8, label=label)
    ax.axvline(64 * 1024, color="gray", linewidth=0.6)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    sizes = sorted({c["packed_bytes"] for cases in shapes.values() for c in cases})
    ax.set_xticks(sizes)
    ax.set_xticklabels([_size_label(v) for v in sizes], fontsize=7)
    ax.set_xlabel("packed bytes per message")
    ax.set_ylabel("host / Loom one-way time (> 1: Loom faster)")
    ax.set_title(f"Loom vs {mpi_name}: derived-type ping-pong", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    path = os.path.join(outdir, "pingpong_ratio.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot(data: dict, outdir: str) -> list:
    if data.get("subcommand") != "pingpong":
        raise ValueError("not a loom-bench pingpong result")
    cases = data.get("cases", [])
    if not cases:
        return []
    mpi_name = data.get("mpi", {}).get("name", "host MPI")
    shapes = _by_shape(cases)
    return [
        _grid_figure(shapes, "latency", mpi_name, outdir),
        _grid_figure(shapes, "bandwidth", mpi_name, outdir),
        _ratio_figure(shapes, mpi_name, outdir),
    ]
