"""Foundation benchmarks: formula collective per call and Topology build at 32,768 GPUs (three tiers).

Run: ``python benchmarks/bench_foundation.py``. Prints a table of wall times and peak memory.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

from aifabric.cluster.presets import preset
from aifabric.cluster.topology import build_topology
from aifabric.collectives.communicator import Communicator
from aifabric.engines.formula import formula_collective, tier_model


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", type=int, default=4096, help="nodes of 8 GPUs (default 4096 = 32,768 GPUs)")
    ap.add_argument("--calls", type=int, default=2000)
    args = ap.parse_args()
    spec = preset("dgx-h100-superpod", nodes=args.nodes, **{"scale_out.tiers": 3})
    comm = Communicator.contiguous(spec)
    tm = tier_model(spec)
    rows = []
    for label, kwargs in (
        ("formula all_reduce 1 GiB (tier model reused)", {"tiers": tm}),
        ("formula all_reduce 1 GiB (cold)", {}),
    ):
        formula_collective("all_reduce", 2**30, spec, comm, **kwargs)
        t0 = time.perf_counter()
        for _ in range(args.calls):
            formula_collective("all_reduce", 2**30, spec, comm, **kwargs)
        rows.append((label, (time.perf_counter() - t0) / args.calls * 1e6, "us/call"))
    tracemalloc.start()
    t0 = time.perf_counter()
    topo = build_topology(spec)
    dt = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rows.append((f"build_topology {spec.n_gpus} GPUs, {topo.n_links} links", dt * 1e3, "ms"))
    rows.append(("build_topology peak memory", peak / 1e6, "MB"))
    width = max(len(r[0]) for r in rows)
    for label, value, unit in rows:
        print(f"{label:<{width}}  {value:10.2f} {unit}")


if __name__ == "__main__":
    main()
