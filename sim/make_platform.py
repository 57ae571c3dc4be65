#!/usr/bin/env python3
"""Writes a SimGrid platform for N nodes x R ranks per node, and its hostfile (docs/projection.md).

Two levels, as in multi-level network models: the ranks of a node are cores of one simulated
host, and talk through the host's loopback link (bandwidth and latency measured on this machine:
sim/calibration.env); the nodes sit on a fat tree or a dragonfly (SimGrid's own cluster
topologies) whose links have the bandwidth asked (10, 25, 100, 200 Gbit/s...) and a per-hop
latency from published system figures (docs/projection.md, "Platforms"), or on one flat switch.

    sim/make_platform.py --nodes 64 --ranks-per-node 16 --topology fattree --gbps 100 \\
        --out /tmp/p            # writes /tmp/p.xml and /tmp/p.hosts
    sim/make_platform.py ... --describe   # prints the counts the generator expects, as JSON

The generator is tested by tests/sim/check_platform.py (counts against simgrid-graphicator's
graph, every pair of nodes reachable)."""
import argparse
import json
import math
import sys

# Per switch hop, seconds: the order of the published figures for each link class
# (docs/projection.md cites them). Ethernet at 10/25 Gbit/s: data-centre switches, about 1 us;
# 100 Gbit/s: InfiniBand EDR/HDR switches, 0.1-0.13 us port to port; 200 Gbit/s: Slingshot's
# Rosetta, a few hundred ns.
HOP_LATENCY = {10: 1.0e-6, 25: 1.0e-6, 100: 0.13e-6, 200: 0.35e-6}


def fat_tree_shape(nodes):
    """SimGrid FAT_TREE parameters for a non-blocking tree of `nodes` hosts: one switch up to 16
    hosts, else leaves of k hosts, each with k uplinks, one to each of k spines."""
    if nodes <= 16:
        return {"levels": 1, "down": [nodes], "up": [1], "parallel": [1]}
    k = 16
    while nodes % k:
        k //= 2
    return {"levels": 2, "down": [k, nodes // k], "up": [1, k], "parallel": [1, 1]}


def fat_tree_counts(shape, nodes):
    if shape["levels"] == 1:
        return {"switches": 1, "network_links": nodes}
    k, leaves = shape["down"][0], shape["down"][1]
    spines = shape["up"][1]
    return {"switches": leaves + spines, "network_links": nodes + leaves * spines}


def dragonfly_shape(nodes):
    """SimGrid DRAGONFLY parameters: 4 nodes per router up to 256 nodes (fewer below 4 nodes),
    then 8, then 16 (SimGrid 3.32 fails on more than 4 groups of 16 routers), 4 routers per
    chassis, up to 4 chassis per group, as many groups as needed; one link between each pair of
    routers of a chassis, of chassis of a group, and of groups."""
    per_router = min(4, nodes) if nodes <= 256 else 8 if nodes <= 512 else 16
    routers_total = math.ceil(nodes / per_router)
    if nodes % per_router:
        raise ValueError(f"{nodes} nodes do not fill routers of {per_router}")
    routers = min(4, routers_total)
    while routers_total % routers:
        routers -= 1
    chassis_total = routers_total // routers
    chassis = min(4, chassis_total)
    while chassis_total % chassis:
        chassis -= 1
    groups = chassis_total // chassis
    return {"groups": groups, "group_links": 1, "chassis": chassis, "chassis_links": 1,
            "routers": routers, "router_links": 1, "nodes_per_router": per_router}


def dragonfly_counts(shape, nodes):
    g, c, r = shape["groups"], shape["chassis"], shape["routers"]
    routers = g * c * r
    # Links inside a chassis (all-to-all among its routers), between the chassis of a group
    # (router i of every chassis joined to router i of every other), between groups.
    green = g * c * r * (r - 1) // 2
    black = g * r * c * (c - 1) // 2
    blue = g * (g - 1) // 2
    return {"switches": routers, "network_links": nodes + green + black + blue}


def platform_xml(args):
    gbps = args.gbps
    hop = args.hop_latency if args.hop_latency is not None else HOP_LATENCY.get(int(gbps), 1e-6)
    topology = args.topology if args.nodes > 1 else "flat"  # one node: no network to shape
    common = (f'prefix="node-" suffix="" radical="0-{args.nodes - 1}" speed="1Gf" '
              f'core="{args.cores or args.ranks_per_node}" bw="{gbps}Gbps" lat="{hop:.9g}s" '
              f'loopback_bw="{args.loopback_gbps}Gbps" loopback_lat="{args.loopback_latency:.9g}s"')
    if topology == "fattree":
        s = fat_tree_shape(args.nodes)
        params = ";".join([str(s["levels"]), ",".join(map(str, s["down"])),
                           ",".join(map(str, s["up"])), ",".join(map(str, s["parallel"]))])
        cluster = f'<cluster id="fabric" {common} topology="FAT_TREE" topo_parameters="{params}"/>'
    elif topology == "dragonfly":
        s = dragonfly_shape(args.nodes)
        params = (f'{s["groups"]},{s["group_links"]};{s["chassis"]},{s["chassis_links"]};'
                  f'{s["routers"]},{s["router_links"]};{s["nodes_per_router"]}')
        cluster = f'<cluster id="fabric" {common} topology="DRAGONFLY" topo_parameters="{params}"/>'
    else:  # one switch: each node's private link, then a backbone shared by all
        cluster = (f'<cluster id="fabric" {common} sharing_policy="SPLITDUPLEX" '
                   f'bb_bw="{gbps * args.nodes}Gbps" bb_lat="0s"/>')
    return ("<?xml version='1.0'?>\n"
            '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
            '<platform version="4.1">\n'
            f"  {cluster}\n"
            "</platform>\n")


def describe(args):
    if args.nodes == 1 or args.topology == "flat":  # private links and one backbone
        shape, counts = {}, {"switches": 0, "network_links": args.nodes + 1}
    elif args.topology == "fattree":
        shape = fat_tree_shape(args.nodes)
        counts = fat_tree_counts(shape, args.nodes)
    elif args.topology == "dragonfly":
        shape = dragonfly_shape(args.nodes)
        counts = dragonfly_counts(shape, args.nodes)
    return {"topology": args.topology, "nodes": args.nodes, "ranks": args.nodes * args.ranks_per_node,
            "shape": shape, **counts}


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--nodes", type=int, required=True)
    p.add_argument("--ranks-per-node", type=int, default=1)
    p.add_argument("--topology", choices=["fattree", "dragonfly", "flat"], default="fattree")
    p.add_argument("--gbps", type=float, default=100, help="network link rate, Gbit/s")
    p.add_argument("--cores", type=int, default=0,
                   help="cores per node (default: one per rank; the validation's twin of this "
                        "machine gives its nodes the machine's cores between them)")
    p.add_argument("--hop-latency", type=float, default=None, help="seconds per switch hop")
    p.add_argument("--loopback-gbps", type=float, default=None,
                   help="intra-node rate, Gbit/s (default: sim/calibration.env)")
    p.add_argument("--loopback-latency", type=float, default=None, help="intra-node latency, s")
    p.add_argument("--calibration", default=None, help="calibration file (KEY=VALUE lines)")
    p.add_argument("--out", help="writes OUT.xml and OUT.hosts")
    p.add_argument("--describe", action="store_true", help="prints the expected counts as JSON")
    args = p.parse_args(argv)
    if args.nodes < 1 or args.ranks_per_node < 1:
        p.error("--nodes and --ranks-per-node must be at least 1")
    cal = {}
    if args.calibration:
        with open(args.calibration) as f:
            for line in f:
                line = line.strip()
                if line and not line.startswith("#") and "=" in line:
                    k, v = line.split("=", 1)
                    cal[k.strip()] = v.strip()
    if args.loopback_gbps is None:
        args.loopback_gbps = float(cal.get("SIM_LOOPBACK_GBPS", 40))
    if args.loopback_latency is None:
        args.loopback_latency = float(cal.get("SIM_LOOPBACK_LATENCY", 0.5e-6))
    if args.describe:
        print(json.dumps(describe(args), sort_keys=True))
    if args.out:
        with open(args.out + ".xml", "w") as f:
            f.write(platform_xml(args))
        with open(args.out + ".hosts", "w") as f:
            for n in range(args.nodes):
                f.write(f"node-{n}:{args.ranks_per_node}\n")
    if not args.out and not args.describe:
        sys.stdout.write(platform_xml(args))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
