"""Plots for `loom-bench gpu --json` (and loom-gpu-bench): called by tools/plot_bench.py.

Transfers (Comm|Scope's method): GB/s vs bytes for every transfer kind. Packs: per case,
Loom's device pack and unpack against the device memcpy of the same packed bytes and the
memory's bound, and Loom's speed-up over cudaMemcpy2DAsync and one cudaMemcpyAsync per block.
A result holds either part or both. Returns the PNG paths.
"""

import matplotlib.pyplot as plt

from common import group_by, log_panel, log_size_axis, save, size_label


def _device(data):
    d = data.get("device", {})
    return d.get("name", "GPU") if isinstance(d, dict) else str(d)


def _transfers(data, outdir):
    kinds = group_by(
        [dict(t, packed_bytes=t["bytes"]) for t in data["transfers"] if not t.get("bidirectional")
         or "bidirectional" in t["kind"]], "kind")
    fig, ax = plt.subplots(figsize=(10, 6))
    cmap = plt.get_cmap("tab20")
    for i, (kind, rows) in enumerate(kinds.items()):
        ax.plot([r["bytes"] for r in rows], [r["gbps"] for r in rows], marker="o", markersize=3,
                color=cmap(i % 20), label=kind)
    sizes = sorted({t["bytes"] for t in data["transfers"]})
    log_size_axis(ax, sizes[:: max(1, len(sizes) // 12)], fontsize=7)
    log_panel(ax, f"CUDA transfers on {_device(data)}", "bytes per transfer",
              "GB/s (median, CUDA events)")
    ax.legend(fontsize=7, ncol=2)
    return save(fig, outdir, "gpu_transfers.png")


def _packs(data, outdir):
    packs = data["packs"]
    paths = []
    largest = max(p["packed_bytes"] for p in packs)
    rows = [p for p in packs if p["packed_bytes"] == largest]
    names = [p["case"] for p in rows]
    x = range(len(rows))

    def share(p, key):
        return p["memcpy_seconds"]["median"] / p[key]["median"]

    def bound(p, key, bound_key):
        return p[bound_key] / p[key]["median"]

    fig, ax = plt.subplots(figsize=(11, 5))
    width = 0.2
    series = [
        ("pack, of memcpy", [share(p, "pack_seconds") for p in rows], "tab:blue"),
        ("unpack, of memcpy", [share(p, "unpack_seconds") for p in rows], "tab:cyan"),
        ("pack, of bound", [bound(p, "pack_seconds", "pack_bound_seconds") for p in rows],
         "tab:green"),
        ("unpack, of bound", [bound(p, "unpack_seconds", "unpack_bound_seconds") for p in rows],
         "tab:olive"),
    ]
    for i, (label, ys, color) in enumerate(series):
        ax.bar([v + (i - 1.5) * width for v in x], ys, width, label=label, color=color)
    ax.axhline(1.0, color="gray", linewidth=0.6)
    ax.set_xticks(list(x))
    ax.set_xticklabels(names, rotation=45, ha="right", fontsize=7)
    ax.set_ylabel("memcpy (or bound) time / Loom time")
    ax.set_title(f"Device packs at {size_label(largest)} packed on {_device(data)}", fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=7, ncol=3)
    paths.append(save(fig, outdir, "gpu_packs_of_memcpy.png"))

    fig, ax = plt.subplots(figsize=(11, 5))
    speed_2d = [p["memcpy2d_seconds"] / p["pack_seconds"]["median"] if p.get("memcpy2d_calls")
                else 0 for p in rows]
    speed_loop = [p["block_loop_seconds"] / p["pack_seconds"]["median"] for p in rows]
    ax.bar([v - 0.2 for v in x], speed_2d, 0.4, label="over cudaMemcpy2DAsync", color="tab:purple")
    ax.bar([v + 0.2 for v in x], speed_loop, 0.4, label="over one cudaMemcpyAsync per block",
           color="tab:orange")
    ax.axhline(1, color="gray", linewidth=0.6)
    ax.set_yscale("log")
    ax.set_xticks(list(x))
    ax.set_xticklabels(names, rotation=45, ha="right", fontsize=7)
    ax.set_ylabel("their time / Loom's pack time")
    ax.set_title(f"Loom's device pack vs the copy engines, {size_label(largest)} packed",
                 fontsize=10)
    ax.grid(True, which="both", axis="y", alpha=0.3)
    ax.legend(fontsize=7)
    paths.append(save(fig, outdir, "gpu_packs_speedup.png"))
    return paths


def plot(data: dict, outdir: str) -> list:
    paths = []
    if data.get("transfers"):
        paths.append(_transfers(data, outdir))
    if data.get("packs"):
        paths += _packs(data, outdir)
    return paths
