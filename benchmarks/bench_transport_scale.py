"""Scale and speed of the flow engine and the transport fluid model (issue 12, "Speed"): wall time and peak
memory of each target, at three sizes to show the growth.

Run from the repository root with the project's venv::

    python benchmarks/bench_transport_scale.py            # every target at three sizes
    python benchmarks/bench_transport_scale.py --quick    # the smallest size of each
    python benchmarks/bench_transport_scale.py --only ring

Every case runs in a fresh process (``multiprocessing`` spawn), so its peak memory is its own: the peak
resident set (``resource.getrusage``, interpreter and libraries included, ~0.1 GB). The time covers
building the topology, the plans, routing and simulating (not the imports nor reading the cluster
preset and the catalogue, done before). Targets:

- ``perm``: permutation of 8 MB per host (every GPU has its own NIC), three tiers, spraying, flow engine;
  DGX H100 SuperPOD (Quantum-2, radix 64): 2,048 / 4,096 / 8,192 hosts. Target < 10 s and < 4 GB.
- ``ring``: ring all-reduce of 1 GiB with spraying, flow engine; DGX H100 nodes on a three-tier Ethernet
  Clos of Tomahawk 6 switches (radix 256 at 400 G): 25,000 / 50,000 / 100,000 GPUs. Target < 60 s, < 8 GB.
- ``a2a``: concurrent all-to-alls of 64 MiB per rank in expert-parallel groups of 64 ranks (one GPU per
  node, as EP across nodes), spraying, flow engine: 4,096 / 8,192 / 16,384 GPUs; and one global
  all-to-all of 4,096 / 8,192 / 16,384 GPUs. Target < 60 s and < 8 GB. Also the global all-to-all under
  per-flow ECMP: 1,024 / 2,048 / 4,096 GPUs.
- ``blind``: the global all-to-all under ``spray-blind`` (each pair's 64 entropy values hashed at every
  switch, as ``route`` hashes them, summed per leaf pair): 512 / 1,024 / 2,048 GPUs, flow engine.
- ``fluid``: the transport fluid model with PFC and DCQCN on a 32-leaf leaf-spine of 1,024 hosts, a sprayed
  permutation (2 MB per host) and a 64-to-1 incast together (``bench_transport.incast_plus_permutation``):
  256 / 576 / 1,024 hosts, roce-pfc and roce-dcqcn. Target < 10 s.
- ``chain``: on a DGX H100 SuperPOD of 128 GPUs (ranks in rail-major order, so ring neighbours are on
  different nodes), a ring all-reduce chained per host (255 steps of 256 KiB to the next rank; a host's step
  starts when its previous one is acknowledged: 32,640 triggered flows) and a serial all-to-all (127 steps,
  step k to the rank k further on, each step waiting for the whole previous one); 32 / 64 / 128 hosts.
  Target < 1 s each. The same two schedules under the transport fluid model (``ib`` and ``roce-dcqcn``):
  each transfer one flow over the spray groups of ``route(aggregate=True)`` (a leaf's uplinks as one
  link of their summed capacity: exact while spraying loads them equally and nothing queues, which the
  deepest queue, 0 KB, confirms), each rank's step after its own previous one's acknowledgement (``after``:
  the fluid model chains flows one to one, so the all-to-all's steps are per rank, not a barrier); the
  credit buffer covers two steps of the fastest link and each flow's base RTT is its path's
  (:func:`~aifabric.transport.wire.path_rtt`, on the groups' latencies), as :mod:`aifabric.transport.wire`
  sets them.

Figures on the shared 2-core development machine (2026-12-02, load average 3-9 from other jobs: expect
+-50 %), as ``size: wall s, peak GB``; before this work in brackets (same machine, earlier runs):

- perm: 2,048: 0.05 s, 0.11 GB; 4,096: 0.08 s, 0.11 GB; 8,192: 0.18 s, 0.12 GB
  [2,048: 21 s, 2.5 GB; 4,096: 47 s, 4.0 GB; 8,192: 60-106 s, 6.9 GB]. Growth ~linear.
- ring: 25,000: 0.6 s, 0.24 GB; 50,000: 1.3 s, 0.38 GB; 100,000: 3.9 s, 0.65 GB [100,000: refused, routing
  estimate 48 GB]. Growth ~linear (one group per channel: a handful of events).
- a2a EP 64: 4,096: 0.3-0.4 s, 0.12 GB; 8,192: 1.0 s, 0.21 GB; 16,384: 5.1-5.3 s, 0.81 GB [16,384: 29 s].
  Growth ~n^1.6 (groups x the events their unequal finishing causes). Global all-to-all, routed from its
  ranks (``engines.allpairs``: the plan holds its ranks, not its n^2 pairs; sprayed on spray groups, one
  column per pair of leaves; exact against the pair-by-pair fold): 4,096: 0.13-0.23 s, 0.13 GB; 8,192:
  0.3-0.5 s, 0.20 GB; 16,384: 1.1-2.8 s, 0.47 GB [4,096: 88-158 s, 5.3 GB; 8,192 and 16,384 refused at
  19.5 GB and 13 GB]. Growth ~n^1.5 (ranks x the leaves they reach).
- a2a global under per-flow ECMP (pairs hashed in chunks of ~60k, as ``route`` hashes them, and summed
  per leaf pair; switch-pair viability tables computed once per switch pair): 1,024: 1.4-2.7 s, 0.21 GB;
  2,048: 9-16 s, 0.27 GB; 4,096: 46-79 s, 0.43 GB [2,048: refused, routing estimate 27 GB]. Growth ~pairs
  (every pair is hashed: ~3-5 us each).
- blind (2026-12-02 06:10-06:25, load average 10-13 on 2 cores: wall is 4-10x CPU, so CPU s are the figure):
  512: 6.2 s CPU (54-65 s wall), 0.14 GB; 1,024: 30 s CPU (242 s wall), 0.26 GB. Before (main at 1536bbb,
  same load, same command on ``route``'s old per-sub-flow tables): 512: 17.7 s CPU (225 s wall); the
  closing note of issue 12 (lighter load): 128 / 512 / 2,048 GPUs 4 / 48 / > 200 s wall. Same columns
  bit for bit (``route`` for every policy, two and three tiers, one and two planes, failed uplinks).
  Growth ~pairs x 64 (every entropy value of every pair is hashed at every switch: ~0.2-0.5 us CPU per
  sub-flow here), so 2,048 GPUs (268M sub-flows) is ~2 min of CPU, not seconds: what is left is
  per-sub-flow numpy work (hashes, picks, the sparse build), each pass over ~130k sub-flows per chunk.
  Changes: each hop's choice picked from a table per distinct switch row (plane and leaves; leaf and
  spine) instead of an (n, uplinks) array per sub-flow; a pair's ends mixed into the hash once (the
  running combination of ``hash64``), the switch tiers' hashes from one shared state; chunks summed per
  leaf pair by counting, merged amortised (was one sparse sum over the whole total per chunk).
- fluid roce-pfc: 256: 1.1 s; 576: 2.2 s; 1,024: 2.9 s [1,024: 40 s]; roce-dcqcn: 256: 3.7 s; 576: 4.8 s;
  1,024: 6.7 s [1,024: 162 s]; peak 0.15 GB. Same steps and makespans as before.
- chain, ring: 32: 0.12 s; 64: 0.27 s; 128 (32,640 flows): 0.6 s [3.9 s, as one-transfer stages];
  serial all-to-all: 32: 0.05 s; 64: 0.09 s; 128: 0.26 s. Growth ~flows.
- chain under the fluid model (2026-12-02 03:40, load average 3), wall s of ``simulate_fluid`` (CPU s the
  same): 128 hosts: ring ib 0.32, roce-dcqcn 0.33; serial all-to-all ib 0.23, roce-dcqcn 0.25 [before, at
  load 9, as CPU s (wall): ring 10.8 (49) / 26.0 (109), all-to-all 3.6 (15) / 7.1 (26); every flow stepped
  every 0.5 us]. Same steps and makespans (ring 9,708 steps, 4.854 ms; all-to-all 4,738 steps,
  2.369 ms). The model moves in closed-form epochs while nothing queues (269 epochs and 17 single steps
  for the ring). 32 / 64 hosts: ring 0.05 / 0.11 (ib), 0.06 / 0.13 (roce-dcqcn); all-to-all 0.03 / 0.07
  (ib), 0.03 / 0.08 (roce-dcqcn): growth ~flows. With each flow's base RTT from its path (2026-12-02
  04:12, load average ~8, so CPU s; issue 12): 128 hosts, ring 4,332 steps, 2.166 ms (ib and roce-dcqcn;
  was 4.854 ms with the fixed 12 us), CPU 0.36 (ib) / 0.51 (roce-dcqcn); serial all-to-all 2,049 steps,
  1.024 ms (was 2.369), CPU 0.67 / 0.76 (the paths' different RTTs desynchronise the ranks' chains: more
  epochs). Against the flow engine (ring 1.625 ms, all-to-all 0.867 ms) the fluid ring pays 2.1 us more
  per step: the 0.5 us grid (a byte moves one hop per step, the sender's last step and the start rounded
  up) and an MTU serialised per hop, no longer 12 us of ACK against the one-way latency (4.85 vs 1.63
  ms before).
"""

from __future__ import annotations

import argparse
import dataclasses
import multiprocessing as mp
import resource
import time
from collections.abc import Callable

import numpy as np
from bench_transport import incast_plus_permutation

from aifabric.cluster.presets import preset
from aifabric.cluster.spec import ClusterSpec
from aifabric.cluster.topology import Topology, build_topology
from aifabric.collectives.algorithms import build_plan
from aifabric.collectives.traffic import pattern_plan
from aifabric.engines.fabric import link_capacity, simulate_plans
from aifabric.engines.flowsim import simulate_transfers
from aifabric.engines.routing import route
from aifabric.transport.fluidnet import FluidConfig, simulate_fluid
from aifabric.transport.wire import path_rtt


def _perm(spec: ClusterSpec) -> str:
    topo = build_topology(spec)
    plan = pattern_plan("permutation", np.arange(spec.n_gpus), 8e6, seed=1)
    res = simulate_plans(topo, [plan], engine="flow", routing="spray", seed=1)
    tiers = topo.shape.tiers if topo.shape else 0
    return f"{tiers} tiers, {topo.n_links:,} links, time {res.time_s * 1e6:.0f} us"


def _ring(spec: ClusterSpec) -> str:
    topo = build_topology(spec)
    plan = build_plan("all_reduce", 2**30, spec, np.arange(spec.n_gpus), algorithm="ring")
    res = simulate_plans(topo, [plan], engine="flow", routing="spray", seed=1)
    n = sum(s.n_transfers for s in plan.stages)
    return f"{n:,} transfers per step, time {res.time_s:.3f} s, efficiency {res.efficiency:.3f}"


def _a2a(spec: ClusterSpec, ep: int, routing: str = "spray") -> str:
    topo = build_topology(spec)
    ranks = np.arange(spec.n_gpus)
    groups = ranks.reshape(ep, -1).T if ep < spec.n_gpus else ranks[None, :]  # EP across nodes
    plans = [
        dataclasses.replace(
            build_plan("all_to_all", 2**26, spec, np.sort(g), algorithm="direct"), job=f"ep{i}"
        )
        for i, g in enumerate(groups)
    ]
    res = simulate_plans(topo, plans, engine="flow", routing=routing, seed=1)
    return f"{len(plans)} groups of {groups.shape[1]}, time {res.time_s * 1e3:.3f} ms"


def _fluid(spec: None, hosts: int, name: str) -> str:
    paths, sizes, caps = incast_plus_permutation(int(round(hosts**0.5)))
    res = simulate_fluid(paths, sizes, caps, name, config=FluidConfig(max_time_s=0.05))
    return f"{len(paths):,} flows, {res.steps:,} steps, makespan {res.makespan_s * 1e6:.0f} us"


def _chain_schedule(hosts: int, kind: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Sources, destinations and ranks of every step of a chained ring or serial all-to-all, step-major
    per rank (flow ``r x steps + k`` is rank r's step k), and the number of steps."""
    order = np.arange(hosts).reshape(hosts // 8, 8).T.ravel()  # rail-major: neighbours on other nodes
    if kind == "ring":
        steps, shift = 2 * hosts - 1, np.ones(2 * hosts - 1, dtype=np.int64)
    else:
        steps, shift = hosts - 1, np.arange(1, hosts)
    rank = np.repeat(np.arange(hosts), steps)
    dst = order[(rank + np.tile(shift, hosts)) % hosts]
    return order[rank], dst, rank, steps


def _chain(spec: ClusterSpec, kind: str) -> str:
    hosts = spec.n_gpus
    topo = build_topology(spec)
    src, dst, rank, steps = _chain_schedule(hosts, kind)
    step = np.tile(np.arange(steps), hosts)
    r = route(topo, src, dst, policy="spray", pxn=False, aggregate=True)
    assert r.groups is not None
    cap, lat = r.groups.capacity(link_capacity(topo)), r.groups.latency(topo.link_latency_s)
    one_way = np.asarray(r.incidence.T @ lat).ravel()
    res = simulate_transfers(
        np.full(src.size, 256 * 1024.0),
        r.incidence,
        cap,
        job=rank if kind == "ring" else None,  # ring: each host chains its own steps
        stage=step,
        start_latency_s=one_way,
        dependency_delay_s=float(one_way.max()),  # the acknowledgement's way back
    )
    return f"{src.size:,} flows, {steps} steps, makespan {res.makespan_s * 1e3:.3f} ms"


def _sprayed_paths(
    topo: Topology, src: np.ndarray, dst: np.ndarray
) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """Each transfer's path over spray groups (``route(aggregate=True)``: a leaf's uplinks as one link of
    their summed capacity, exact while spraying loads them equally and no member queues) in path order:
    the sender's link, the up groups, the down groups, the rest; the capacities and latencies of links and
    groups."""
    r = route(topo, src, dst, policy="spray", pxn=False, aggregate=True)
    g = r.groups
    assert g is not None
    inc = r.incidence.tocsc()
    rows = inc.indices
    col = np.repeat(np.arange(inc.shape[1]), np.diff(inc.indptr))
    rank_of = np.full(g.n_rows, 5)  # a link after the fabric (the receiver's)
    for key, group_rows in enumerate((g.leaf_up, g.pod_up, g.pod_down, g.leaf_down), start=1):
        rank_of[group_rows.ravel()] = key
    real = rows < g.n_links
    first = real & (topo.link_src[np.where(real, rows, 0)] == src[col])
    order = np.lexsort((np.where(first, 0, rank_of[rows]), col))
    paths = np.split(rows[order], np.cumsum(np.diff(inc.indptr))[:-1])
    return paths, g.capacity(link_capacity(topo)), g.latency(topo.link_latency_s)


def _chain_fluid(spec: ClusterSpec, kind: str, transport: str) -> str:
    hosts = spec.n_gpus
    topo = build_topology(spec)
    src, dst, _, steps = _chain_schedule(hosts, kind)
    paths, cap, lat = _sprayed_paths(topo, src, dst)
    after = np.where(np.arange(src.size) % steps > 0, np.arange(src.size) - 1, -1)  # the rank's previous step
    cfg = FluidConfig(credit_buffer_bytes=2 * float(cap.max()) * FluidConfig().dt_s)  # as transport.wire
    rtt = path_rtt([p.tolist() for p in paths], lat, cap, cfg.mss_bytes, cfg.header_bytes)  # as wire
    t0, c0 = time.perf_counter(), time.process_time()
    res = simulate_fluid(
        paths, np.full(src.size, 256 * 1024.0), cap, transport, after=after, config=cfg, rtt_s=rtt
    )
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return (
        f"{src.size:,} flows, {res.steps:,} steps of dt, makespan {res.makespan_s * 1e3:.3f} ms, deepest "
        f"queue {res.link_peak_queue_bytes.max() / 1e3:.0f} KB; fluid model {wall:.2f} s ({cpu:.2f} s CPU)"
    )


def _spec(gpus: int, tiers: int = 3, switch: str | None = None) -> ClusterSpec:
    """DGX H100 nodes; ``switch`` replaces the Quantum-2 (radix 64) by an Ethernet switch."""
    changes: dict[str, object] = {"scale_out.tiers": tiers}
    if switch is not None:
        changes |= {"scale_out.switch": switch, "scale_out.fabric": "ethernet"}
    return preset("dgx-h100-superpod", nodes=gpus // 8, **changes)


#: Target -> (label, function, its arguments after the spec, the spec's arguments or None) per size.
Case = tuple[str, Callable[..., str], tuple[object, ...], tuple[object, ...] | None]
CASES: dict[str, list[Case]] = {
    "perm": [(f"permutation, {h:,} hosts", _perm, (), (h,)) for h in (2048, 4096, 8192)],
    "ring": [
        (f"ring all-reduce, {g:,} GPUs", _ring, (), (g, 3, "tomahawk6-102t"))
        for g in (25_000, 50_000, 100_000)
    ],
    "a2a": [(f"all-to-all EP 64, {g:,} GPUs", _a2a, (64,), (g,)) for g in (4096, 8192, 16384)]
    + [(f"all-to-all global, {g:,} GPUs", _a2a, (g,), (g,)) for g in (4096, 8192, 16384)]
    + [(f"all-to-all global ECMP, {g:,} GPUs", _a2a, (g, "ecmp"), (g,)) for g in (1024, 2048, 4096)],
    "blind": [
        (f"all-to-all global spray-blind, {g:,} GPUs", _a2a, (g, "spray-blind"), (g,))
        for g in (512, 1024, 2048)
    ],
    "fluid": [
        (f"fluid {name}, {h:,} hosts", _fluid, (h, name), None)
        for name in ("roce-pfc", "roce-dcqcn")
        for h in (256, 576, 1024)
    ],
    "chain": [
        (f"chained {kind}, {h} hosts", _chain, (kind,), (h, 2))
        for kind in ("ring", "serial all-to-all")
        for h in (32, 64, 128)
    ]
    + [
        (f"chained {kind}, {h} hosts, fluid {name}", _chain_fluid, (kind, name), (h, 2))
        for name in ("ib", "roce-dcqcn")
        for kind in ("ring", "serial all-to-all")
        for h in (32, 64, 128)
    ],
}


def _child(case: Case, out: mp.Queue) -> None:  # type: ignore[type-arg]
    _, fn, fn_args, spec_args = case
    # input parsing and first-use catalogue loads (the NCCL release table) are not what is measured
    spec = _spec(*spec_args) if spec_args is not None else None  # type: ignore[arg-type]
    if spec is not None:
        build_plan("all_reduce", 1e6, spec, np.arange(min(spec.n_gpus, 16)), algorithm="ring")
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        what = fn(spec, *fn_args)
    except Exception as err:  # report the refusal or failure, do not hide it
        what = f"{type(err).__name__}: {err}"
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    out.put((wall, cpu, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9, what))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="only the smallest size of each target")
    ap.add_argument("--only", choices=sorted(CASES), help="one target")
    args = ap.parse_args()
    ctx = mp.get_context("spawn")
    for key, cases in CASES.items():
        if args.only and key != args.only:
            continue
        for i, case in enumerate(cases):
            if args.quick and i % 3:
                continue
            out = ctx.Queue()
            proc = ctx.Process(target=_child, args=(case, out))
            proc.start()
            wall, cpu, peak, what = out.get()
            proc.join()
            print(f"{case[0]}: {wall:.2f} s ({cpu:.2f} s CPU), peak {peak:.2f} GB; {what}", flush=True)


if __name__ == "__main__":
    main()
