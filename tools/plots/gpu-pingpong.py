"""Plots for `loom-bench gpu-pingpong --json`: called by tools/plot_bench.py.

One-way time vs packed bytes per vector shape, Loom (device buffers through the interposer)
against the application's path on a host MPI that is not CUDA-aware (copy the extent to the
host, send with the datatype, copy back), and the ratio of the two. Returns the PNG paths.
"""

import matplotlib.pyplot as plt

from common import group_by, log_panel, log_size_axis, panel_grid, save


def plot(data: dict, outdir: str) -> list:
    shapes = group_by(data["cases"], "case")
    fig, axes = panel_grid(len(shapes))
    for ax, (name, cases) in zip(axes, shapes.items()):
        x = [c["packed_bytes"] for c in cases]
        ax.plot(x, [c["loom_seconds"] * 1e6 for c in cases], marker="s", color="tab:blue",
                label="Loom")
        ax.plot(x, [c["app_seconds"] * 1e6 for c in cases], marker="o", color="tab:red",
                label="copy extent + host datatype")
        for c in cases:
            if not c["verified"]:
                ax.annotate("MISMATCH", (c["packed_bytes"], c["loom_seconds"] * 1e6), color="red",
                            fontsize=7)
        log_size_axis(ax, x, fontsize=6, rotation=45)
        log_panel(ax, name, "packed bytes per message", "one-way us", fontsize=8)
    axes[0].legend(fontsize=7)
    fig.suptitle("Device-buffer vector ping-pong, 2 ranks, host MPI not CUDA-aware", fontsize=10)
    paths = [save(fig, outdir, "gpu_pingpong_time.png")]

    fig, ax = plt.subplots(figsize=(9, 5))
    cmap = plt.get_cmap("tab10")
    for i, (name, cases) in enumerate(shapes.items()):
        ax.plot([c["packed_bytes"] for c in cases],
                [c["app_seconds"] / c["loom_seconds"] for c in cases], marker="o", markersize=3,
                color=cmap(i % 10), label=name)
    ax.axhline(1, color="black", linestyle=":", linewidth=0.8, label="same time")
    log_size_axis(ax, sorted({c["packed_bytes"] for c in data["cases"]}))
    log_panel(ax, "Loom vs the application's copy-to-host path", "packed bytes per message",
              "application / Loom one-way time (> 1: Loom faster)")
    ax.legend(fontsize=7, ncol=2)
    paths.append(save(fig, outdir, "gpu_pingpong_ratio.png"))
    return paths
