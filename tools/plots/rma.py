"""Plots for `loom-bench rma --json`: called by tools/plot_bench.py as plot(data, outdir).

Produces, per measure, one panel per operation and window: host time / Loom time against the
bytes per operation for every derived type case and synchronisation (single-thread cases, or
the fewest threads measured), the 1x line drawn in; and the bandwidth of host and Loom for
derived put and get. Returns the PNG paths.
"""

from collections import OrderedDict

from common import log_panel, log_size_axis, panel_grid, save

SYNC_STYLE = {"fence": "o", "pscw": "s", "lock": "^", "lockall-flush": "v", "lockall": "D"}


def _derived(cases):
    return [c for c in cases if "loom" in c and "host" in c and c["types"] != "contig"]


def _fewest_threads(cases):
    if not cases:
        return cases
    fewest = min(c["threads"] for c in cases)
    return [c for c in cases if c["threads"] == fewest]


def _speedup_figure(cases, measure, mpi_name, outdir):
    cases = _fewest_threads([c for c in _derived(cases) if c["measure"] == measure])
    panels = OrderedDict()
    for c in cases:
        panels.setdefault((c["op"], c["window"]), []).append(c)
    if not panels:
        return None
    fig, axes = panel_grid(len(panels))
    sizes = sorted({c["bytes"] for c in cases})
    for ax, ((op, window), group) in zip(axes, panels.items()):
        lines = OrderedDict()
        for c in group:
            lines.setdefault((c["types"], c["sync"]), []).append(c)
        for (types, sync), line in lines.items():
            line.sort(key=lambda c: c["bytes"])
            ax.plot([c["bytes"] for c in line], [c["speedup"] for c in line],
                    marker=SYNC_STYLE.get(sync, "o"), markersize=3, linewidth=0.8,
                    label=f"{types}, {sync}")
        ax.axhline(1.0, color="black", linewidth=0.8)
        log_size_axis(ax, sizes, fontsize=6, rotation=45)
        log_panel(ax, f"{op}, {window} window", "bytes per operation",
                  "host / Loom time", fontsize=7)
    axes[0].legend(fontsize=5, ncol=2)
    threads = cases[0]["threads"]
    fig.suptitle(f"One-sided {measure}: Loom vs {mpi_name} ({threads} thread(s) per rank)",
                 fontsize=10)
    return save(fig, outdir, f"rma_{measure}_speedup.png")


def _bandwidth_figure(cases, mpi_name, outdir):
    cases = _fewest_threads([c for c in _derived(cases) if c["measure"] == "bandwidth"
                             and c["op"] in ("put", "get")])
    panels = OrderedDict()
    for c in cases:
        panels.setdefault((c["op"], c["window"], c["types"]), []).append(c)
    if not panels:
        return None
    fig, axes = panel_grid(len(panels))
    sizes = sorted({c["bytes"] for c in cases})
    for ax, ((op, window, types), group) in zip(axes, panels.items()):
        for path, color in (("host", "tab:red"), ("loom", "tab:blue")):
            lines = OrderedDict()
            for c in group:
                lines.setdefault(c["sync"], []).append(c)
            for sync, line in lines.items():
                line.sort(key=lambda c: c["bytes"])
                ax.plot([c["bytes"] for c in line], [c[path]["figure"] for c in line],
                        color=color, marker=SYNC_STYLE.get(sync, "o"), markersize=3,
                        linewidth=0.8, label=f"{path}, {sync}")
        log_size_axis(ax, sizes, fontsize=6, rotation=45)
        log_panel(ax, f"{op} {types}, {window}", "bytes per operation", "MB/s", fontsize=7)
    axes[0].legend(fontsize=5, ncol=2)
    fig.suptitle(f"Derived-type put/get bandwidth: host ({mpi_name}) vs Loom", fontsize=10)
    return save(fig, outdir, "rma_bandwidth.png")


def plot(data: dict, outdir: str) -> list:
    if data.get("subcommand") != "rma":
        raise ValueError("not a loom-bench rma result")
    cases = data.get("cases", [])
    mpi_name = data.get("mpi", {}).get("name", "host MPI")
    paths = []
    for measure in ("latency", "bandwidth", "rate", "halo"):
        path = _speedup_figure(cases, measure, mpi_name, outdir)
        if path:
            paths.append(path)
    path = _bandwidth_figure(cases, mpi_name, outdir)
    if path:
        paths.append(path)
    return paths
