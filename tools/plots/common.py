"""Helpers shared by the loom-bench plotters (tools/plots/<subcommand>.py)."""
import math
import os
from collections import OrderedDict

import matplotlib.pyplot as plt


def size_label(nbytes):
    """1024 -> '1K', 1536 -> '1.5K', 100 -> '100B' (binary units)."""
    for unit, div in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if nbytes >= div:
            v = nbytes / div
            return f"{v:.0f}{unit}" if abs(v - round(v)) < 0.05 else f"{v:.1f}{unit}"
    return f"{nbytes}B"


def group_by(cases, key):
    """Cases grouped by c[key], in first-seen order, each group sorted by packed size."""
    groups = OrderedDict()
    for c in cases:
        groups.setdefault(c[key], []).append(c)
    for lst in groups.values():
        lst.sort(key=lambda c: c["packed_bytes"])
    return groups


def panel_grid(n):
    """A figure with n panels, at most 4 per row; unused panels hidden."""
    cols = min(4, n)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    return fig, list(axes.flat)[:n]


def log_size_axis(ax, sizes, fontsize=7, rotation=0):
    """Log2 x axis ticked at the measured sizes."""
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes)
    ax.set_xticklabels([size_label(v) for v in sizes], fontsize=fontsize, rotation=rotation)


def log_panel(ax, title, xlabel, ylabel, fontsize=None, title_size=None):
    """Log y axis, labels, title and a light grid: the frame every plotter's panels share."""
    ax.set_yscale("log")
    ax.set_title(title, fontsize=title_size or (fontsize + 1 if fontsize else 10))
    ax.set_xlabel(xlabel, fontsize=fontsize)
    ax.set_ylabel(ylabel, fontsize=fontsize)
    ax.grid(True, which="both", alpha=0.3)


def save(fig, outdir, name, dpi=110):
    """Lays out, writes outdir/name, closes the figure; returns the path."""
    path = os.path.join(outdir, name)
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path
