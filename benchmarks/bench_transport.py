"""Wall time and peak memory of the transport fluid model (queues, PFC, DCQCN) and the DCQCN delay ODE.

Run from the repository root with the project's venv::

    python benchmarks/bench_transport.py            # 1,024 hosts: incast + sprayed permutation; DCQCN ODE
    python benchmarks/bench_transport.py --quick    # 256 hosts

The 1,024-host case is the issue's: a leaf-spine of 32 leaves x 32 hosts x 32 spines at 400 Gb/s, every
host sending 2 MB to a random host on another leaf, sprayed evenly over the spines (32,768 flows), while 64
hosts also send 1 MB each to one receiver (an incast), under roce-dcqcn (PFC + DCQCN) and roce-pfc.
Peak memory is the tracemalloc peak of a second, traced run.

Figures on the shared 2-core development machine (2026-12-01, other jobs running; wall times vary +-30 %):

- 1,024 hosts, incast + permutation, roce-pfc: 40 s (timed run), peak 32 MiB; 32,832 flows, 2,643 steps of
  0.5 us, makespan 1,322 us. The issue's target is < 10 s: not met; every step touches all 131k
  (flow, hop) entries (~12-15 ms a step), and sprayed sub-flows are not yet aggregated per switch pair.
- same, roce-dcqcn: 162 s, peak 35 MiB; 6,834 steps, makespan 3,417 us (DCQCN slows the incast).
- DCQCN delay ODE, 64 flows, 70 ms of 2 us steps: 5.4 s.

Chained steps (``--chained``; each step waits one base RTT for its predecessor's ACK), 256 KiB per step,
roce-pfc, 2026-12-02 on the same loaded machine:

- ring, 128 hosts x 20 steps (2,560 chained flows): 0.78 s, 698 steps of 0.5 us, makespan 349 us;
  32 hosts x 62 steps (1,984 flows): 2.9 s, makespan 1,107 us. The issue's 128 hosts x 255 steps (32,640
  flows, ~8,900 steps) extrapolates to ~2 min: every step still touches every flow, started or not.
- serial all-to-all, 128 hosts x 127 steps (16,256 flows): 31 s, 4,558 steps, makespan 2,279 us. The
  issue's target for both is < 1 s: not met (an active-set step is the missing piece).
- the DCQCN phase margin (linearised model, 4,000 frequencies): ~10 ms per (N, tau*) point.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from collections.abc import Callable

import numpy as np

from aifabric.transport.dcqcn import simulate_dcqcn
from aifabric.transport.fluidnet import FluidConfig, simulate_fluid
from aifabric.transport.params import dcqcn_preset
from aifabric.transport.scenarios import Scenario, all_to_all, chained_ring, run_scenario, sprayed_permutation
from aifabric.transport.stability import phase_margin


def incast_plus_permutation(
    leaves: int, seed: int = 0
) -> tuple[list[tuple[int, ...]], np.ndarray, np.ndarray]:
    """Paths, sizes and capacities: a sprayed permutation plus a 64-to-1 incast on the same fabric."""
    sc = sprayed_permutation(leaves, leaves, leaves, 2e6, 50e9, seed=seed)
    hosts = leaves * leaves
    l_up, s_down = 2 * hosts, 2 * hosts + leaves * leaves
    receiver = hosts - 1
    paths = list(sc.paths)
    sizes = list(sc.bytes_per_flow)
    for src in range(64):
        leaf_s, leaf_d = src // leaves, receiver // leaves
        spine = src % leaves
        if leaf_s == leaf_d:
            paths.append((src, hosts + receiver))
        else:
            paths.append(
                (src, l_up + leaf_s * leaves + spine, s_down + leaf_d * leaves + spine, hosts + receiver)
            )
        sizes.append(1e6)
    return paths, np.array(sizes), sc.capacity_bytes_per_s


def measure(label: str, fn: Callable[[], object], memory: bool) -> None:
    t0 = time.perf_counter()
    out = fn()
    wall = time.perf_counter() - t0
    peak = ""
    if memory:
        tracemalloc.start()
        fn()
        peak = f", peak {tracemalloc.get_traced_memory()[1] / 2**20:.0f} MiB"
        tracemalloc.stop()
    print(f"{label}: {wall:.2f} s{peak}; {out}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-memory", action="store_true")
    ap.add_argument("--chained", action="store_true", help="only the chained ring and serial all-to-all")
    args = ap.parse_args()
    if args.chained:
        chained(args.quick)
        return
    leaves = 16 if args.quick else 32
    paths, sizes, caps = incast_plus_permutation(leaves)
    for name in ("roce-pfc", "roce-dcqcn"):

        def run(name: str = name) -> str:
            res = simulate_fluid(paths, sizes, caps, name, config=FluidConfig(max_time_s=0.05))
            return f"{len(paths)} flows, {res.steps} steps, makespan {res.makespan_s * 1e6:.0f} us"

        measure(f"{leaves * leaves} hosts, incast + permutation, {name}", run, not args.no_memory)
    prm = dcqcn_preset("conext16")
    measure(
        "DCQCN delay ODE, 64 flows, 70 ms at 2 us",
        lambda: f"final queue {simulate_dcqcn(prm, 64, 0.07, dt_s=2e-6).queue_bytes[-1] / 1e3:.1f} KB",
        False,
    )


def chained(quick: bool) -> None:
    """Chained ring steps and a serial all-to-all (module docstring)."""
    hosts, steps = (32, 62) if quick else (128, 20)
    for label, sc in (
        (f"chained ring, {hosts} hosts x {steps} steps", chained_ring(hosts, steps, 262144.0, 50e9)),
        (f"serial all-to-all, {hosts} hosts", all_to_all(hosts, 262144.0, 50e9, serial=True)),
    ):

        def run(sc: Scenario = sc) -> str:
            res = run_scenario(sc, "roce-pfc")
            return f"{res.flow_bytes.size} flows, {res.steps} steps, makespan {res.makespan_s * 1e6:.0f} us"

        measure(label, run, False)
    prm = dcqcn_preset("conext16-code").with_(feedback_delay_s=85e-6)
    measure(
        "DCQCN phase margin, N = 10, 85 us",
        lambda: f"{phase_margin(prm, 10).phase_margin_deg:.1f} deg",
        False,
    )


if __name__ == "__main__":
    main()
