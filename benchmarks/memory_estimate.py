"""Measured peak memory (tracemalloc) of fabric runs against the up-front estimates of aifabric.budget users.

The constants of :func:`aifabric.engines.fabric.routing_bytes` (``BYTES_PER_TRANSFER``,
``BYTES_PER_UPLINK_SLOT``, ``BYTES_PER_PATH``, ``FLOW_ENGINE_FACTOR``) come from these runs; the estimate
should stay at or above the measured peak (it is used to refuse work, not to size it exactly).

    python benchmarks/memory_estimate.py
"""

from __future__ import annotations

import tracemalloc

import numpy as np

from aifabric.cluster.presets import preset
from aifabric.cluster.topology import cached_topology
from aifabric.collectives.communicator import Communicator
from aifabric.collectives.plan import build_plan
from aifabric.engines.fabric import _check_all_to_all, fabric_collective, routing_bytes

CASES = [
    # (nodes, op, engine, routing, ranks spread evenly over the cluster)
    (256, "all_to_all", "links", "spray", 256),
    (256, "all_to_all", "links", "ecmp", 256),
    (256, "all_to_all", "flow", "ecmp", 256),
    (512, "all_to_all", "links", "ecmp", 256),
    (512, "all_to_all", "links", "qp", 256),
    (512, "all_reduce", "links", "spray", 4096),
    (512, "all_reduce", "flow", "ecmp", 4096),
    (16, "all_to_all", "flow", "reps", 128),
    (64, "all_to_all", "flow", "reps", 64),
]


def main() -> None:
    print(f"{'case':<44} {'measured MB':>12} {'estimate MB':>12} {'ratio':>6}")
    for nodes, op, engine, routing, ranks in CASES:
        spec = preset("dgx-h100-superpod", nodes=nodes)
        topo = cached_topology(spec)
        gpus = np.linspace(0, spec.n_gpus - 1, ranks).astype(np.int64)
        comm = Communicator.from_gpus(spec, gpus)
        plan = build_plan(op, 1e6, spec, gpus)
        t = x = y = 0
        for st in plan.stages:
            ls, ld = topo.leaf_of_gpu[st.src], topo.leaf_of_gpu[st.dst]
            t += st.n_transfers
            x += int(np.count_nonzero(ls != ld))
            y += int(np.count_nonzero((ls != ld) & (topo.pod_of_leaf[ls] != topo.pod_of_leaf[ld])))
        est = routing_bytes(topo, t, x, y, engine=engine, routing=routing)
        if op == "all_to_all":
            _check_all_to_all(topo, gpus, engine, routing, 4)  # the count-only bound passes too
        tracemalloc.start()
        fabric_collective(op, 1e6, spec, comm, engine=engine, routing=routing, topo=topo)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        name = f"{nodes * 8} GPUs {op} {engine}/{routing} {ranks} ranks"
        print(f"{name:<44} {peak / 1e6:>12.1f} {est / 1e6:>12.1f} {est / peak:>6.2f}")


if __name__ == "__main__":
    main()
