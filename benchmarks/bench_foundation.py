"""Foundation benchmarks: formula collective per call and Topology build at 32,768 GPUs (three tiers).

Run: ``python benchmarks/bench_foundation.py``. Prints a table of times and peak memory. The formula
rows are CPU time per call (``time.process_time``: the machine is shared), best and median of ``--runs``
runs of ``--calls`` calls, next to the figures measured the same way before the formula engine kept its
size-independent terms per tier model (commit 3348072, same 2-core machine, best of 4 runs) and before
it built its results without the dataclasses' ``__init__``, found recent specs' tier models by identity
and read an NCCL environment once per mapping (commit 1536bbb).

Figures of commit 1536bbb and of the change after it, measured alternately on the same 2-core machine
under a load average of ~10 (best of 3 x 40 runs of 100 calls each, CPU us per call)::

    1536bbb   reused 46.3  cold 49.6  env 97.6
    after     reused 43.4  cold 44.7  env 44.6

``env`` is the cold call with ``NCCL_ALGO=ring,tree NCCL_PROTO=Simple,LL128``.

Since then the engine grew (~64 us reused and cold on this machine at a load average of ~4.8), and a call
with an environment read, checked and resolved it again on every call (~7 us); the formula engine now keeps
what an environment resolves to per spec, tier model, collective and options (``_env_options``). Measured
alternately against commit 2a3054c, 4 runs of this benchmark each at its defaults (best of the bests, CPU us
per call)::

    2a3054c   reused 63.4  cold 62.8  env 68.8
    after     reused 63.4  cold 63.4  env 53.5

The env row runs 6 candidates (ring and tree, Simple and LL128, and the textbook two) where the cold row
runs 9, hence below it.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
import tracemalloc

from aifabric.cluster.presets import preset
from aifabric.cluster.topology import build_topology
from aifabric.collectives.communicator import Communicator
from aifabric.engines.formula import formula_collective, tier_model

#: Best CPU us per call at 32,768 GPUs before the per-tier-model memo (commit 3348072), this benchmark.
_BEFORE_US = {"reused": 76.9, "cold": 101.3, "env": math.nan}
#: The same before the result, tier-model and environment caches of commit 1536bbb's successor (docstring).
_BEFORE_1536BBB_US = {"reused": 46.3, "cold": 49.6, "env": 97.6}
#: The NCCL environment of the ``env`` row: the tuned choice a sweep states.
_ENV = {"NCCL_ALGO": "ring,tree", "NCCL_PROTO": "Simple,LL128"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", type=int, default=4096, help="nodes of 8 GPUs (default 4096 = 32,768 GPUs)")
    ap.add_argument("--calls", type=int, default=500)
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    spec = preset("dgx-h100-superpod", nodes=args.nodes, **{"scale_out.tiers": 3})
    comm = Communicator.contiguous(spec)
    tm = tier_model(spec)
    rows = []
    for label, kwargs, key in (
        ("formula all_reduce 1 GiB (tier model reused)", {"tiers": tm}, "reused"),
        ("formula all_reduce 1 GiB (cold)", {}, "cold"),
        ("formula all_reduce 1 GiB (cold, NCCL env)", {"env": _ENV}, "env"),
    ):
        formula_collective("all_reduce", 2**30, spec, comm, **kwargs)
        per_call = []
        for _ in range(args.runs):
            t0 = time.process_time()
            for _ in range(args.calls):
                formula_collective("all_reduce", 2**30, spec, comm, **kwargs)
            per_call.append((time.process_time() - t0) / args.calls * 1e6)
        before = f"before: 1536bbb {_BEFORE_1536BBB_US[key]:.0f}" + (
            f", 3348072 {_BEFORE_US[key]:.0f}" if math.isfinite(_BEFORE_US[key]) else ""
        )
        rows.append((f"{label}, best", min(per_call), f"us/call CPU ({before})"))
        rows.append((f"{label}, median", statistics.median(per_call), "us/call CPU"))
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
