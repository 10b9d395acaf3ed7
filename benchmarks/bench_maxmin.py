"""Wall time and peak memory of the max-min solver and the fluid simulator on random instances.

Run from the repository root with the project's venv::

    python benchmarks/bench_maxmin.py            # full: 10k x 30k and 100k x 300k, flowsim with 30k transfers
    python benchmarks/bench_maxmin.py --quick    # the small instances only
    python benchmarks/bench_maxmin.py --no-memory

Instances: every flow crosses 4-6 distinct links drawn uniformly (weight 1; a tenth are sprayed, weight
1/2 on each link), link capacities are 400 or 800 Gb/s (50e9 or 100e9 bytes/s) at random. Uniform random
paths on mixed capacities are a hard case for water-filling: nearly every link is its own bottleneck
level, so the number of filling rounds is in the tens of thousands (a symmetric Clos has a handful).

Wall time is measured without tracing; peak memory is the tracemalloc peak of a second, traced run (numpy
and scipy allocations are traced), excluding the instance itself.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from collections.abc import Callable

import numpy as np
from scipy import sparse

from aifabric.engines.flowsim import simulate_transfers
from aifabric.engines.maxmin import max_min_rates, validate_max_min


def random_incidence(n_links: int, n_flows: int, rng: np.random.Generator) -> sparse.csr_matrix:
    """(n_links, n_flows) incidence; each flow crosses 4-6 distinct links (vectorised draw)."""
    hops = rng.integers(4, 7, n_flows)
    cols = np.repeat(np.arange(n_flows), hops)
    # Distinct links per flow: a random start plus positive steps whose sum stays below n_links.
    steps = rng.integers(1, max(2, n_links // 6), cols.size)
    first = np.cumsum(hops) - hops
    steps[first] = rng.integers(0, n_links, n_flows)
    offsets = np.cumsum(steps) - np.repeat(np.cumsum(steps)[first] - steps[first], hops)
    rows = offsets % n_links
    weights = np.where(rng.random(n_flows) < 0.1, 0.5, 1.0)[cols]
    return sparse.csr_matrix((weights, (rows, cols)), shape=(n_links, n_flows))


def random_capacity(n_links: int, rng: np.random.Generator) -> np.ndarray:
    return rng.choice([50e9, 100e9], n_links)


def measure(fn: Callable[[], object], memory: bool) -> tuple[object, float, float, float]:
    """Result, wall seconds, CPU seconds, and the tracemalloc peak in MiB of a second run (nan if not
    measured). CPU time is the figure to trust on a shared machine."""
    start, cpu_start = time.perf_counter(), time.process_time()
    out = fn()
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    peak = float("nan")
    if memory:
        tracemalloc.start()
        fn()
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    return out, wall, cpu, peak


def bench_max_min(n_links: int, n_flows: int, seed: int, memory: bool) -> dict:
    rng = np.random.default_rng(seed)
    a, capacity = random_incidence(n_links, n_flows, rng), random_capacity(n_links, rng)
    rates, wall, cpu, peak = measure(lambda: max_min_rates(a, capacity), memory)
    start = time.perf_counter()
    violations = validate_max_min(a, capacity, rates, 1e-7)
    check = time.perf_counter() - start
    return {
        "case": f"max_min_rates {n_links // 1000}k links x {n_flows // 1000}k flows",
        "size": f"nnz {a.nnz:,}",
        "detail": f"{np.unique(rates).size:,} levels, {len(violations)} violations ({check:.2f} s check)",
        "wall_s": wall,
        "cpu_s": cpu,
        "peak_mib": peak,
    }


def channel_workload(n_transfers: int, n_links: int, seed: int) -> dict:
    """Many small lock-step groups: 16 jobs x 4 stages, each stage a set of 8-hop ring steps (a group per
    ring step; ~59 rings per stage at 30k transfers), message 16-256 MB per job in 8 chunks, 5 us latency.
    Every group finishes at its own time, so events ~ groups and each solve has ~1k moving groups."""
    rng = np.random.default_rng(seed)
    n_jobs, n_stages, ring = 16, 4, 8
    job = np.arange(n_transfers) % n_jobs
    return {
        "bytes_per_transfer": rng.choice([16e6, 64e6, 256e6], n_jobs)[job] / ring,
        "incidence": random_incidence(n_links, n_transfers, rng).tocsc(),
        "capacity_bytes_per_s": random_capacity(n_links, rng),
        "job": job,
        "stage": (np.arange(n_transfers) // n_jobs) % n_stages,
        "group": np.arange(n_transfers) // (n_jobs * n_stages * ring),
        "start_latency_s": 5e-6,
    }


def ring_workload(n_transfers: int, n_links: int, seed: int) -> dict:
    """16 concurrent ring AllReduce jobs: per job a reduce-scatter and an all-gather stage, each one ring
    step (one lock-step group of n hops, n = n_transfers / 32) repeated n - 1 times; message 16-256 MB
    per job, chunk = message / n; 5 us latency per step. Jobs overlap, so every repetition is simulated
    (none can be fast-forwarded): events ~ 32 (n - 1), each solve has <= 16 groups of n hops."""
    rng = np.random.default_rng(seed)
    n_jobs, n_stages = 16, 2
    ranks = n_transfers // (n_jobs * n_stages)
    n = ranks * n_jobs * n_stages
    job = np.arange(n) % n_jobs
    stage = (np.arange(n) // n_jobs) % n_stages
    return {
        "bytes_per_transfer": rng.choice([16e6, 64e6, 256e6], n_jobs)[job] / ranks,
        "incidence": random_incidence(n_links, n, rng).tocsc(),
        "capacity_bytes_per_s": random_capacity(n_links, rng),
        "job": job,
        "stage": stage,
        "start_latency_s": 5e-6,
        "group": np.zeros(n, dtype=np.int64),  # groups are scoped to their stage: one group per stage
        "stage_repeat": {(j, s): ranks - 1 for j in range(n_jobs) for s in range(n_stages)},
    }


WORKLOADS = {"channels": channel_workload, "rings": ring_workload}


def bench_flowsim(kind: str, n_transfers: int, n_links: int, seed: int, memory: bool) -> dict:
    w = WORKLOADS[kind](n_transfers, n_links, seed)
    res, wall, cpu, peak = measure(lambda: simulate_transfers(**w), memory)
    return {
        "case": f"simulate_transfers {kind}: {w['bytes_per_transfer'].size:,} transfers, "
        f"{n_links // 1000}k links",
        "size": f"{len(res.stage_keys)} stages",
        "detail": (
            f"{res.n_events:,} events, {res.n_rate_solves:,} solves + {res.n_rate_reuses:,} reused, "
            f"{res.n_fast_forwarded_repeats} reps fast-fwd, makespan {res.makespan_s * 1e3:.1f} ms"
        ),
        "wall_s": wall,
        "cpu_s": cpu,
        "peak_mib": peak,
    }


def print_table(rows: list[dict]) -> None:
    headers = ("case", "size", "wall s", "cpu s", "peak MiB", "detail")
    cells = [
        (r["case"], r["size"], f"{r['wall_s']:.2f}", f"{r['cpu_s']:.2f}", f"{r['peak_mib']:.0f}", r["detail"])
        for r in rows
    ]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))
    print(line)
    print("-" * len(line))
    for c in cells:
        print("  ".join(v.ljust(w) for v, w in zip(c, widths, strict=True)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small instances only (10k x 30k, 3k transfers)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--no-memory", action="store_true", help="skip the traced run for peak memory")
    parser.add_argument(
        "--transfers", type=int, default=30_000, help="transfers per flowsim run (default 30k)"
    )
    parser.add_argument(
        "--flowsim", choices=[*WORKLOADS, "both", "none"], default="both", help="flowsim workload(s) to run"
    )
    args = parser.parse_args()
    memory = not args.no_memory

    sizes = [(10_000, 30_000)] + ([] if args.quick else [(100_000, 300_000)])
    rows = [bench_max_min(n_links, n_flows, args.seed, memory) for n_links, n_flows in sizes]
    kinds = list(WORKLOADS) if args.flowsim == "both" else [] if args.flowsim == "none" else [args.flowsim]
    transfers = 3_000 if args.quick else args.transfers
    rows += [bench_flowsim(kind, transfers, 10_000, args.seed, memory) for kind in kinds]
    print_table(rows)


if __name__ == "__main__":
    main()
