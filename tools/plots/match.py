"""Plots for `loom-bench match --json`: depth sweeps, memory, application mixes, threads."""
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from common import save  # noqa: E402


def _sweep_plot(data, traffic, wildcard_pct, position, outdir):
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for backend in data["backends"]:
        pts = sorted(
            (p["depth"], p["ns"]["median"])
            for p in data["sweep"]
            if p["backend"] == backend and p["traffic"] == traffic
            and p["wildcard_pct"] == wildcard_pct and p["position"] == position
        )
        if not pts:
            continue
        # Depth 0 cannot sit on a log axis; plot it at 0.5 and label it.
        ax.plot([d if d > 0 else 0.5 for d, _ in pts], [v for _, v in pts], marker="o",
                markersize=3, label=backend)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("posted-queue depth (0 plotted at 0.5)")
    ax.set_ylabel("ns per matched pair (median)")
    ax.set_title(f"match at {position}, {traffic} traffic, {wildcard_pct}% wildcard receives")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, ncol=2)
    return save(fig, outdir, f"match_sweep_{traffic}_{wildcard_pct}pct_{position}.png", dpi=120)


def _bar_plot(labels, series, ylabel, title, outdir, filename):
    fig, ax = plt.subplots(figsize=(max(6, 0.8 * len(labels) * len(series)), 4.5))
    width = 0.8 / max(1, len(series))
    for i, (name, values) in enumerate(series.items()):
        ax.bar([x + i * width for x in range(len(labels))], values, width, label=name)
    ax.set_xticks([x + width * (len(series) - 1) / 2 for x in range(len(labels))])
    ax.set_xticklabels(labels, rotation=30, ha="right")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    return save(fig, outdir, filename, dpi=120)


def plot(data: dict, outdir: str) -> list[str]:
    """Writes PNGs for one `loom-bench match --json` result; returns their paths."""
    if data.get("subcommand") != "match":
        raise ValueError("not a loom-bench match result")
    os.makedirs(outdir, exist_ok=True)
    paths = []
    positions = sorted({p["position"] for p in data["sweep"]})
    for traffic in sorted({p["traffic"] for p in data["sweep"]}):
        for wild in sorted({p["wildcard_pct"] for p in data["sweep"]}):
            for position in positions:
                paths.append(_sweep_plot(data, traffic, wild, position, outdir))

    backends = [m["backend"] for m in data["memory"]]
    if backends:
        paths.append(_bar_plot(
            backends,
            {"posted": [m["posted_bytes_per_entry"] for m in data["memory"]],
             "unexpected": [m["unexpected_bytes_per_entry"] for m in data["memory"]]},
            "bytes per entry", "memory per queued entry (depth 4096)",
            outdir, "match_memory.png"))

    mixes = sorted({m["mix"] for m in data["mixes"]})
    if mixes:
        series = {}
        for backend in data["backends"]:
            vals = [next((m["ns"]["median"] for m in data["mixes"]
                          if m["mix"] == mix and m["backend"] == backend), 0) for mix in mixes]
            series[backend] = vals
        paths.append(_bar_plot(mixes, series, "ns per operation (median)",
                               "application-like mixes", outdir, "match_mixes.png"))

    if data.get("threads"):
        labels, series = [], {}
        for t in data["threads"]:
            label = f'{t["backend"]} N={t["prefill"]}'
            if label not in labels:
                labels.append(label)
        for mode in ("serial", "global-lock", "tail-queues"):
            series[mode] = [next((t["matches_per_s"] / 1e6 for t in data["threads"]
                                  if f'{t["backend"]} N={t["prefill"]}' == label
                                  and t["mode"] == mode), 0) for label in labels]
        paths.append(_bar_plot(labels, series, "million matches / s",
                               "two-thread match rate (one posting + one arriving thread)",
                               outdir, "match_threads.png"))
    return paths
