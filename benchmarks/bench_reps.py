"""REPS (recycled entropy packet spraying) against blind spraying: time and peak memory of a uniform
all_to_all on the fabric engines, and the up-front memory estimate against the measured peak.

    python benchmarks/bench_reps.py [--nodes 16] [--engine flow]

Prints, per policy: the CPU time of ``fabric_collective`` (routing, folding, simulation; median of 3
runs after one warm-up; CPU time because the project's machine is shared, wall time beside it), its
peak traced memory (``tracemalloc``) and, for ``reps``, the estimate the memory check uses
(:func:`aifabric.engines.fabric.routing_bytes` of the all_to_all's pairs, as ``_check_all_to_all``
computes it) and its ratio to the peak. Issue 8 asks REPS within ~3x of ``spray-blind``'s time and the
estimate within 2x of the peak.
"""

from __future__ import annotations

import argparse
import statistics
import time
import tracemalloc

import numpy as np

from aifabric.cluster.presets import preset
from aifabric.cluster.topology import cached_topology
from aifabric.collectives.communicator import Communicator
from aifabric.engines.fabric import fabric_collective, routing_bytes


def measure(nodes: int, engine: str, routing: str) -> tuple[float, float, float, float]:
    """(median CPU s, median wall s, peak traced bytes, result time s) of the all_to_all of every GPU of
    ``nodes``."""
    spec = preset("dgx-h100-superpod", nodes=nodes)
    topo = cached_topology(spec)
    comm = Communicator.from_gpus(spec, np.arange(spec.n_gpus))

    def once() -> float:
        return fabric_collective(
            "all_to_all", 2**30, spec, comm, engine=engine, routing=routing, topo=topo
        ).time_s

    once()  # warm-up: lazy imports, caches
    cpus, walls = [], []
    for _ in range(3):
        c0, t0 = time.process_time(), time.perf_counter()
        result = once()
        cpus.append(time.process_time() - c0)
        walls.append(time.perf_counter() - t0)
    tracemalloc.start()
    once()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return statistics.median(cpus), statistics.median(walls), float(peak), result


def reps_estimate(nodes: int, engine: str) -> float:
    """The memory check's estimate for the all_to_all of ``measure`` under ``reps`` (bytes)."""
    spec = preset("dgx-h100-superpod", nodes=nodes)
    topo = cached_topology(spec)
    n = float(spec.n_gpus)
    dom = np.bincount(np.arange(spec.n_gpus) // spec.domain_gpus).astype(float)
    return routing_bytes(
        topo, n * (n - 1), n * n - float((dom * dom).sum()), 0.0, engine=engine, routing="reps"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=16)
    ap.add_argument("--engine", default="flow", choices=("links", "flow"))
    args = ap.parse_args()
    rows = {r: measure(args.nodes, args.engine, r) for r in ("spray-blind", "reps")}
    for routing, (cpu, wall, peak, t) in rows.items():
        print(
            f"{routing:<12} CPU {cpu:6.2f} s (wall {wall:6.2f} s)  peak {peak / 1e6:7.1f} MB  "
            f"all_to_all time {t * 1e3:.3f} ms"
        )
    est = reps_estimate(args.nodes, args.engine)
    print(
        f"reps / spray-blind CPU time {rows['reps'][0] / rows['spray-blind'][0]:.2f}x; reps estimate "
        f"{est / 1e6:.1f} MB = {est / rows['reps'][2]:.2f}x its peak"
    )


if __name__ == "__main__":
    main()
