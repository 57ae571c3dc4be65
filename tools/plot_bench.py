#!/usr/bin/env python3
"""Turn a loom-bench JSON result into PNG plots.

usage: python3 tools/plot_bench.py RESULT.json [--out DIR]

Reads the JSON written by `loom-bench <subcommand> --json FILE`, loads
tools/plots/<subcommand>.py and calls its plot(data, outdir) -> list of PNG paths,
then prints those paths, one per line. Needs matplotlib (Debian: python3-matplotlib).
"""
import argparse
import importlib.util
import json
import os
import sys


def load_plotter(subcommand):
    here = os.path.dirname(os.path.abspath(__file__))
    plots = os.path.join(here, "plots")
    path = os.path.join(plots, f"{subcommand}.py")
    if not os.path.isfile(path):
        sys.exit(f"plot_bench: no plotter for subcommand '{subcommand}' ({path} missing)")
    # Loaded by path, so tools/plots needs no __init__.py and works from any directory;
    # the plotters import their shared helpers as `common`.
    sys.path.insert(0, plots)
    spec = importlib.util.spec_from_file_location(f"loom_plots_{subcommand}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not hasattr(module, "plot"):
        sys.exit(f"plot_bench: {path} has no plot(data, outdir) function")
    return module


def main():
    parser = argparse.ArgumentParser(description="Plot a loom-bench JSON result as PNG files.")
    parser.add_argument("result", help="JSON file written by loom-bench ... --json FILE")
    parser.add_argument("--out", help="output directory (default: next to the JSON file)")
    args = parser.parse_args()

    try:
        import matplotlib
    except ImportError:
        sys.exit("plot_bench: matplotlib is missing (apt-get install python3-matplotlib, "
                 "or pip install matplotlib)")
    matplotlib.use("Agg")  # files only, no display needed

    with open(args.result) as f:
        data = json.load(f)
    subcommand = data.get("subcommand")
    if not subcommand:
        sys.exit(f"plot_bench: {args.result} has no 'subcommand' field")
    outdir = args.out or os.path.dirname(os.path.abspath(args.result))
    os.makedirs(outdir, exist_ok=True)
    for path in load_plotter(subcommand).plot(data, outdir):
        print(path)


if __name__ == "__main__":
    main()
