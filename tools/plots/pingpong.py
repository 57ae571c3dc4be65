"""Plots for `loom-bench pingpong --json`: called by tools/plot_bench.py as plot(data, outdir).

Produces one-way latency and bandwidth vs packed message size per shape (host MPI vs Loom,
error bars = p10..p90 over the timed samples), and the host/Loom ratio vs size for every shape
with its bound (host/floor, dashed: the most any transport could gain over the host). Returns the
PNG paths.
"""

import matplotlib.pyplot as plt

from common import group_by, log_panel, log_size_axis, panel_grid, save

STYLE = {  # path -> (label, color, marker)
    "host": ("host MPI", "tab:red", "o"),
    "loom": ("Loom", "tab:blue", "s"),
}


def _metric(c, path, metric):
    """(value, low, high) of one case for 'latency' (us, one-way) or 'bandwidth' (MB/s)."""
    s = c[f"{path}_seconds"]
    if metric == "latency":
        return s["median"] * 1e6, s["p10"] * 1e6, s["p90"] * 1e6
    def mbps(seconds):
        return c["packed_bytes"] / seconds / 1e6 if seconds > 0 else 0.0
    return mbps(s["median"]), mbps(s["p90"]), mbps(s["p10"])  # slow samples: low bandwidth


def _grid_figure(shapes, metric, mpi_name, outdir):
    fig, axes = panel_grid(len(shapes))
    for ax, (name, cases) in zip(axes, shapes.items()):
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
        log_size_axis(ax, x, fontsize=6, rotation=45)
        log_panel(ax, f"{name} ({cases[0]['family']})", "packed bytes per message",
                  "one-way us" if metric == "latency" else "MB/s", fontsize=8)
    axes[0].legend(fontsize=7)
    what = "one-way latency" if metric == "latency" else "bandwidth"
    fig.suptitle(f"Derived-type ping-pong {what}, 2 ranks (host: {mpi_name})", fontsize=10)
    return save(fig, outdir, f"pingpong_{metric}.png")


def _ratio_figure(shapes, mpi_name, outdir):
    fig, ax = plt.subplots(figsize=(9, 5))
    cmap = plt.get_cmap("tab20")
    for i, (name, cases) in enumerate(shapes.items()):
        x = [c["packed_bytes"] for c in cases]
        y = [c["ratio"] for c in cases]
        ax.plot(x, y, marker="o", markersize=3, color=cmap(i % 20), label=name)
        bound = [(c["packed_bytes"], c["ratio_bound"]) for c in cases if c.get("ratio_bound")]
        if bound:
            ax.plot([b[0] for b in bound], [b[1] for b in bound], linestyle="--", linewidth=0.7,
                    color=cmap(i % 20))
    ax.axhline(1.0, color="black", linestyle=":", linewidth=0.8, label="same time")
    ax.plot([], [], color="gray", linestyle="--", linewidth=0.7, label="bound (host/floor)")
    log_size_axis(ax, sorted({c["packed_bytes"] for cases in shapes.values() for c in cases}))
    log_panel(ax, f"Loom vs {mpi_name}: derived-type ping-pong", "packed bytes per message",
              "host / Loom one-way time (> 1: Loom faster)")
    ax.legend(fontsize=7, ncol=2)
    return save(fig, outdir, "pingpong_ratio.png")


def plot(data: dict, outdir: str) -> list:
    if data.get("subcommand") != "pingpong":
        raise ValueError("not a loom-bench pingpong result")
    cases = data.get("cases", [])
    if not cases:
        return []
    mpi_name = data.get("mpi", {}).get("name", "host MPI")
    shapes = group_by(cases, "shape")
    return [
        _grid_figure(shapes, "latency", mpi_name, outdir),
        _grid_figure(shapes, "bandwidth", mpi_name, outdir),
        _ratio_figure(shapes, mpi_name, outdir),
    ]
