"""Plots for `loom-bench halo --json`: called by tools/plot_bench.py as plot(data, outdir).

One bar chart: time per 26-neighbour halo exchange, host MPI vs Loom, per variant and local
grid size (error bars = p10..p90 over the timed samples), with the host/Loom ratio on top; and,
when the run has the library variant, one more: the host's isend and neighbor_alltoallw, Loom's
halo library (all transports, MPI only) and the one-process floor per local grid size, with
isend/library on top. Returns the PNG paths.
"""

import matplotlib.pyplot as plt

from common import save


LIBRARY_PATHS = (("isend", "host isend", "tab:red"), ("alltoallw", "host neighbor_alltoallw",
                 "tab:orange"), ("library", "Loom halo library", "tab:blue"),
                 ("library-mpi", "library, MPI only", "tab:cyan"), ("floor", "floor", "tab:gray"))


def plot_library(data: dict, outdir: str) -> list:
    cases = data.get("library_cases", [])
    if not cases:
        return []
    mpi = data.get("mpi", {})
    opts = data.get("options", {})
    xs = list(range(len(cases)))
    width = 0.8 / len(LIBRARY_PATHS)
    fig, ax = plt.subplots(figsize=(max(6, 1.8 * len(cases) + 2), 4.5))
    for k, (path, label, color) in enumerate(LIBRARY_PATHS):
        med = [c[f"{path}_seconds"]["median"] * 1e3 for c in cases]
        lo = [max(0.0, m - c[f"{path}_seconds"]["p10"] * 1e3) for m, c in zip(med, cases)]
        hi = [max(0.0, c[f"{path}_seconds"]["p90"] * 1e3 - m) for m, c in zip(med, cases)]
        ax.bar([x - 0.4 + (k + 0.5) * width for x in xs], med, width=width, yerr=[lo, hi],
               capsize=2, color=color, label=label)
    for x, c in zip(xs, cases):
        text = f"isend/lib {c['isend_over_library']:.2f}x" if c["verified"] else "MISMATCH"
        ax.annotate(text, (x, c["isend_seconds"]["median"] * 1e3), ha="center", va="bottom",
                    fontsize=8, color="black" if c["verified"] else "red")
    ax.set_xticks(xs)
    ax.set_xticklabels([f"n={c['n']}" for c in cases], fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("ms per exchange (slowest rank, median; p10-p90)")
    ax.set_title(f"halo library vs hand-written exchange, {mpi.get('ranks', '?')} ranks, radius "
                 f"{opts.get('radius', '?')}, {opts.get('fields', '?')} fields; host: "
                 f"{mpi.get('name', 'host MPI')}", fontsize=9)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=7)
    return [save(fig, outdir, "halo_library.png")]


def plot(data: dict, outdir: str) -> list:
    if data.get("subcommand") != "halo":
        raise ValueError("not a loom-bench halo result")
    cases = data.get("cases", [])
    if not cases:
        return plot_library(data, outdir)
    mpi = data.get("mpi", {})
    opts = data.get("options", {})
    labels = [f"{c['variant']}\nn={c['n']}" for c in cases]
    xs = list(range(len(cases)))
    fig, ax = plt.subplots(figsize=(max(6, 1.4 * len(cases) + 2), 4.5))
    for offset, path, label, color in ((-0.2, "host", "host MPI", "tab:red"),
                                       (0.2, "loom", "Loom", "tab:blue")):
        med = [c[f"{path}_seconds"]["median"] * 1e3 for c in cases]
        lo = [max(0.0, m - c[f"{path}_seconds"]["p10"] * 1e3) for m, c in zip(med, cases)]
        hi = [max(0.0, c[f"{path}_seconds"]["p90"] * 1e3 - m) for m, c in zip(med, cases)]
        ax.bar([x + offset for x in xs], med, width=0.4, yerr=[lo, hi], capsize=3, color=color,
               label=label)
    for x, c in zip(xs, cases):
        top = max(c["host_seconds"]["p90"], c["loom_seconds"]["p90"]) * 1e3
        text = f"{c['ratio']:.2f}x" if c["verified"] else "MISMATCH"
        ax.annotate(text, (x, top), ha="center", va="bottom", fontsize=8,
                    color="black" if c["verified"] else "red")
    ax.set_xticks(xs)
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_ylabel("ms per exchange (slowest rank, median)")
    dims = "x".join(str(d) for d in mpi.get("dims", []))
    ax.set_title(f"26-neighbour halo exchange, {mpi.get('ranks', '?')} ranks ({dims}), radius "
                 f"{opts.get('radius', '?')}, {opts.get('fields', '?')} fields "
                 f"({opts.get('layout', '?')}); host: {mpi.get('name', 'host MPI')}", fontsize=9)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    return [save(fig, outdir, "halo_exchange.png")] + plot_library(data, outdir)
