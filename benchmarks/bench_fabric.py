"""Fabric-engine benchmarks: ring all-reduce with ECMP on the flow engine, 1k to 32k GPUs.

Run: ``python benchmarks/bench_fabric.py [--max-nodes 4096]``. Prints, per size: GPUs, tiers, directed links,
sub-flows per ring step, wall time of routing + event-driven max-min simulation, peak traced memory, and
everything the CLI does (routing, event-driven max-min simulation, and the contention-free ideal). Also a
permutation on 1,024 and 8,192 hosts (the classic packet-level-simulator benchmark: about 36 s and 14 min
in a packet-level simulator), and 16 concurrent jobs.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np

from aifabric.cluster.presets import preset
from aifabric.cluster.topology import build_topology
from aifabric.collectives.algorithms import build_plan
from aifabric.collectives.traffic import pattern_plan
from aifabric.engines.fabric import simulate_plans


def run(nodes: int, tiers: int, routing: str, traffic: str = "ring") -> tuple:
    spec = preset("dgx-h100-superpod", nodes=nodes, **{"scale_out.tiers": tiers})
    tracemalloc.start()
    t0 = time.perf_counter()
    topo = build_topology(spec)
    gpus = np.arange(spec.n_gpus)
    if traffic == "ring-random":  # hosts handed out in random order: most ring hops cross the spines
        order = np.random.default_rng(1).permutation(spec.n_nodes)
        gpus = (order[:, None] * spec.gpus_per_node + np.arange(spec.gpus_per_node)).ravel()
        traffic = "ring"
    if traffic == "ring":
        plan = build_plan("all_reduce", 1e9, spec, gpus)
    else:  # every GPU is a host with its own NIC
        plan = pattern_plan("permutation", gpus, 1e9, seed=1)
    res = simulate_plans(topo, [plan], engine="flow", routing=routing, seed=1, top=0)
    dt = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    n_flows = sum(s.n_transfers for s in plan.stages)
    return spec.n_gpus, tiers, topo.n_links, n_flows, dt, peak / 1e6, res.time_s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--max-nodes", type=int, default=4096)
    ap.add_argument("--routing", default="ecmp")
    args = ap.parse_args()
    print(
        f"{'GPUs':>6} {'tiers':>5} {'links':>8} {'flows/step':>10} {'wall s':>8} {'peak MB':>8} "
        f"{'sim time s':>10}  traffic"
    )
    sizes = [(128, 2), (256, 2), (512, 3), (1024, 3), (2048, 3), (4096, 3)]
    for nodes, tiers in sizes:
        if nodes > args.max_nodes:
            break
        g, t, links, flows, dt, mb, sim = run(nodes, tiers, args.routing)
        print(
            f"{g:6d} {t:5d} {links:8d} {flows:10d} {dt:8.2f} {mb:8.0f} {sim:10.4f}  ring all_reduce 1 GB, "
            f"{args.routing}"
        )
        g, t, links, flows, dt, mb, sim = run(nodes, tiers, args.routing, traffic="ring-random")
        print(
            f"{g:6d} {t:5d} {links:8d} {flows:10d} {dt:8.2f} {mb:8.0f} {sim:10.4f}  same, hosts in random "
            "order"
        )
    for jobs, nodes in ((16, 128), (16, 1024)):
        spec = preset("dgx-h100-superpod", nodes=nodes)
        topo = build_topology(spec)
        from aifabric.cluster.placement import place_jobs

        t0 = time.perf_counter()
        placed = place_jobs(topo, [nodes // jobs] * jobs, policy="fragmented", seed=1)
        plans = [build_plan("all_reduce", 1e9, spec, g) for g in placed]
        res = simulate_plans(topo, plans, engine="flow", routing=args.routing, seed=1, top=0)
        dt = time.perf_counter() - t0
        print(
            f"{spec.n_gpus:6d} {spec.scale_out.tiers:5d} {topo.n_links:8d} "
            f"{sum(p.stages[0].n_transfers for p in plans):10d} {dt:8.2f} {'-':>8} {res.time_s:10.4f}  "
            f"{jobs} fragmented all_reduce jobs, {args.routing}"
        )
    for nodes, tiers in ((128, 2), (1024, 3)):
        g, t, links, flows, dt, mb, sim = run(nodes, tiers, args.routing, traffic="permutation")
        print(
            f"{g:6d} {t:5d} {links:8d} {flows:10d} {dt:8.2f} {mb:8.0f} {sim:10.4f}  permutation, {g} hosts "
            "(one NIC each)"
        )


if __name__ == "__main__":
    main()
