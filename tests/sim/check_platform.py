#!/usr/bin/env python3
"""The platform generator (sim/make_platform.py) against SimGrid's own view of what it wrote.

For fat trees and dragonflies of several sizes: SimGrid loads the platform (simgrid-graphicator
writes its graph), the hosts are the nodes asked for, the network links are the generator's
count, and every host reaches every other through them. With --smpi-build, SMPI also routes an
all-to-all between every pair of nodes of a 32-node fat tree and dragonfly (loom-sim-alltoall).
Prints 'N passed, N failed'."""
import argparse
import collections
import json
import pathlib
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
PLATFORM = ROOT / "sim/make_platform.py"
CASES = [("fattree", 1), ("fattree", 4), ("fattree", 16), ("fattree", 128),
         ("dragonfly", 4), ("dragonfly", 32), ("dragonfly", 128), ("dragonfly", 512), ("flat", 8)]


def generate(tmp, topology, nodes, rpn=1):
    base = tmp / f"{topology}-{nodes}"
    out = subprocess.run([sys.executable, str(PLATFORM), "--nodes", str(nodes), "--ranks-per-node",
                          str(rpn), "--topology", topology, "--gbps", "100", "--out", str(base),
                          "--describe"], check=True, capture_output=True, text=True).stdout
    return base, json.loads(out)


def graph(base):
    dot = base.with_suffix(".dot")
    subprocess.run(["simgrid-graphicator", f"{base}.xml", str(dot)], check=True,
                   capture_output=True, text=True)
    text = dot.read_text()
    vertices = re.findall(r'^\s*"([^"]+)";', text, re.M)
    edges = re.findall(r'^\s*"([^"]+)"\s*--\s*"([^"]+)"', text, re.M)
    return vertices, edges


def check(tmp, topology, nodes):
    base, expected = generate(tmp, topology, nodes)
    vertices, edges = graph(base)
    hosts = {v for v in vertices if re.fullmatch(r"node-\d+", v)}
    # Vertices: hosts, links (each direction of a split-duplex one apart), and the routers
    # SimGrid adds to some zones.
    links = {re.sub(r"_(UP|DOWN)$", "", v) for v in vertices if re.search(r"link|backbone", v)}
    problems = []
    if hosts != {f"node-{i}" for i in range(nodes)}:
        problems.append(f"{len(hosts)} hosts, expected {nodes}")
    if len(links) != expected["network_links"]:
        problems.append(f"{len(links)} links, expected {expected['network_links']}")
    adjacent = collections.defaultdict(set)
    for a, b in edges:
        adjacent[a].add(b)
        adjacent[b].add(a)
    seen, todo = {"node-0"}, ["node-0"]
    while todo:
        for w in adjacent[todo.pop()] - seen:
            seen.add(w)
            todo.append(w)
    if not hosts <= seen:
        problems.append(f"{len(hosts - seen)} hosts unreachable from node-0")
    return problems


def routed(tmp, smpi_build, topology, nodes):
    base, _ = generate(tmp, topology, nodes)
    out = subprocess.run(["smpirun", "-np", str(nodes), "-platform", f"{base}.xml", "-hostfile",
                          f"{base}.hosts", str(smpi_build / "loom-sim-alltoall"),
                          "--log=root.thres:critical", "--count", "16", "--iterations", "1",
                          "--variant", "raw"], capture_output=True, text=True, cwd=tmp)
    line = [l for l in out.stdout.splitlines() if l.startswith("loom-sim-alltoall")]
    if out.returncode or not line or "max_abs_error=0" not in line[0]:
        return [f"SMPI all-to-all failed: {out.stdout[-500:]}{out.stderr[-500:]}"]
    return []


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--smpi-build", type=lambda text: pathlib.Path(text).resolve())
    args = p.parse_args(argv)
    passed = failed = 0
    with tempfile.TemporaryDirectory() as t:
        tmp = pathlib.Path(t)
        checks = [(f"graph {topo} {n}", lambda topo=topo, n=n: check(tmp, topo, n)) for topo, n in CASES]
        if args.smpi_build:
            checks += [(f"routes {topo} 32", lambda topo=topo: routed(tmp, args.smpi_build, topo, 32))
                       for topo in ("fattree", "dragonfly")]
        for name, run in checks:
            problems = run()
            print(f"{'ok  ' if not problems else 'FAIL'} {name}" + (": " + "; ".join(problems) if problems else ""))
            passed += not problems
            failed += bool(problems)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
