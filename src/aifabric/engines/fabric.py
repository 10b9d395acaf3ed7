"""The ``links`` and ``flow`` engines: CommPlans on the real Topology.

- ``links``: each stage's transfers routed (by default sprayed ideally over their equal-cost paths); the
  stage takes as long as its most loaded link needs, times its repeats. The contention-free lower bound on
  the real topology.

A collective's plan carries its algorithm's latency (NCCL's per-step latencies for the protocol NCCL's
tuner picks, :func:`nccl_protocol_choice`: the latency the formula engine charges; LL/LL128 also as the
plan's bandwidth floor), added once to its job's time; traffic patterns without one pay the
latency of their paths per stage instead. So on a non-blocking fabric with spraying the engines differ
only where their bandwidth models do.
- ``flow``: max-min fair rates over the real links, event-driven as transfers finish
  (:mod:`aifabric.engines.flowsim`), with the routing policy's paths (:mod:`aifabric.engines.routing`).

With ``spray`` on a regular Clos without failed fabric links both engines run on spray groups (one row
per set of links spraying loads equally, :class:`~aifabric.engines.routing.SprayGroups`) and fold the
results back onto the links: the same times, link bytes and utilisation, at a fraction of the memory
(8,192 hosts, three tiers: 6.9 GB -> 0.2 GB).

Link capacities are line rates scaled, with ``efficiency="nccl"`` (default), by what NCCL reaches: scale-up
links by the NCCL per-link constant over the line rate (370.8/450 on H100), scale-out links by the NIC's
payload efficiency, so that on an ideal fabric the three engines agree with the formula engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from scipy import sparse

from aifabric.budget import check_memory
from aifabric.cluster.spec import ClusterSpec
from aifabric.cluster.topology import Topology, cached_topology
from aifabric.collectives.algorithms import ALGORITHMS, Algorithm, build_plan, default_plan_algorithm
from aifabric.collectives.communicator import Communicator
from aifabric.collectives.nccl_env import host_staging_efficiency
from aifabric.collectives.ops import Collective, busbw_factor
from aifabric.collectives.plan import FIXED_EXCHANGES, AllPairsStage, CommPlan, Stage
from aifabric.collectives.tiers import Protocol
from aifabric.engines.allpairs import (
    PER_PAIR_POLICIES,
    AllPairsColumns,
    all_pairs_columns,
    all_pairs_entries,
    per_pair_columns,
    per_pair_entries,
)
from aifabric.engines.flowsim import Progress, Simulation
from aifabric.engines.formula import check_forced_algorithm, formula_collective
from aifabric.engines.one_rank import one_rank_result
from aifabric.engines.result import CollectiveResult, bottleneck
from aifabric.engines.routing import (
    Routes,
    SprayGroups,
    check_one_tier_pairs,
    equal_subflows,
    pxn_relays_possible,
    route,
    spray_groups,
    subflows,
)
from aifabric.errors import ConfigError, NoRoute
from aifabric.transport.wire import run_transport

#: Independent flows (groups) above which the event-driven flow engine refuses, pointing to the links
#: engine: each finishing flow is an event with a max-min solve (a 1,024-GPU uniform all-to-all is 1M flows,
#: minutes and ~20 GB); rings and collectives move in lock-step groups and stay far below it. The work
#: grows about as the square of the flows that run at once (events x active flows per solve): measured on
#: one core of the project's 2-core machine, a uniform all-to-all on gb200-nvl72 of 55k flows took 5 s,
#: 83k 17 s and 110k 90 s (``aifabric fabric uniform -c gb200-nvl72 -s "1 GiB" --engine flow --jobs 6|4|3``),
#: so the limit keeps a run within about 20 s. Aggregating sprayed traffic (routing.SprayGroups) shrinks
#: each flow's column, not the number of independent flows nor the events, so the limit stays: with
#: spraying the same all-to-alls took 5 s (55k), 13 s (83k) and 44 s (110k) (2026-12-02, loaded machine).
#: Flows that move in lock-step groups (rings, collectives, all-to-all stages) count once per group.
MAX_FLOW_GROUPS = 64_000

#: Peak bytes of routing and simulating one transfer (per sub-flow), measured with ``tracemalloc`` on
#: DGX H100 SuperPOD all_to_all and all_reduce runs (``benchmarks/memory_estimate.py``): every transfer
#: ~600 B (plan, routes, result arrays); one that crosses leaves ~100 B per leaf uplink slot (candidate
#: tables of shape (transfers, leaf_up)) plus ~600 B per path it is sprayed over (incidence entries in
#: COO, CSC and slices). The flow engine's event state adds about a half (x 1.5).
BYTES_PER_TRANSFER = 600
BYTES_PER_UPLINK_SLOT = 100
BYTES_PER_PATH = 600
FLOW_ENGINE_FACTOR = 1.5

#: Peak bytes per sub-flow (entropy value) of a ``reps`` run, either engine, and more per sub-flow that
#: crosses pods (two more links, more recycling rounds): REPS recycles EVs by the load of every path, so
#: all of a stage's ``64 T`` EVs are routed at once (a few incidence entries each, their keys, shares and
#: marks), then each transfer's EVs on one path fold into one column (:func:`_fold_subflows`), so the
#: engines see far fewer. Measured with ``tracemalloc`` (``benchmarks/memory_estimate.py``,
#: ``benchmarks/bench_reps.py``, 2026-12-02): per EV 190 B on a 128-GPU all_to_all (1.04M EVs, 197 MB),
#: 313-349 B on 32-64 ranks across 256-512 GPUs, 690 B across pods (megatron-a100, three tiers, 90% of
#: 9,120 pairs across pods, 403 MB), 137-150 B on 256-512-rank ring all_reduces (one stage's EVs at a
#: time). The fit is 0.9-1.7x of the all_to_alls and 2.2-2.3x of the rings.
BYTES_PER_REPS_SUBFLOW = 320
BYTES_PER_REPS_POD_SUBFLOW = 420

#: Peak bytes per transfer of a sprayed run whose transfers are folded (:func:`fold_transfers`: the split
#: and sorted copies, the plan, the ideal-time loads), measured as the peak resident set of the 4,096-GPU
#: global all-to-all of ``benchmarks/bench_transport_scale.py --only a2a`` (16.8M transfers, 5.3 GB).
BYTES_PER_FOLDED_TRANSFER = 320

#: Peak bytes per incidence entry of an all-pairs stage routed from its ranks (:func:`all_pairs_bytes`):
#: the entry in COO, CSC and the flow engine's copies, and the columns' arrays. Measured with
#: ``tracemalloc`` around ``simulate_plans`` (flow engine, spray) of the global all-to-all of
#: ``benchmarks/bench_transport_scale.py``: 155 B per entry at 4,096 GPUs (195k entries), 143 B at 16,384
#: (2.45M entries, 0.35 GB).
BYTES_PER_ALL_PAIRS_ENTRY = 160

#: Bytes that routing one chunk of an all-pairs stage's pairs may take under a per-pair policy
#: (:func:`~aifabric.engines.allpairs.per_pair_columns`): the chunk's size is set from it with
#: :func:`routing_bytes`, so the pairs' routes never exist all at once (a design bound, not a measurement).
CHUNK_ROUTING_BYTES = 256 * 2**20

#: Routes of uniform all-to-alls a run routes one by one at most (pairs x routes per pair: sub-flows, or
#: paths under spray, :func:`_routes_per_pair`; a policy of ``PER_PAIR_POLICIES`` off spray groups:
#: :func:`~aifabric.engines.allpairs.per_pair_columns`). Routing and summing take ~1.2 us per sub-flow,
#: measured with ``aifabric fabric all_to_all --nodes 256`` (ECMP, 4.19M pairs in 5.1 s on a 2-core
#: host), ~3.3 us per sprayed path (``--nodes 64 --routing spray --fail fabric:0.05``: 262k pairs x 32
#: paths in 28 s), and grow with the square of the ranks: 2^24 (4,096 ranks under ECMP, 512 DGX nodes)
#: is ~20 s (~55 s sprayed), 8,192 ranks four times that. A design bound, so that a command answers or
#: refuses at once instead of running for minutes without output.
MAX_PAIRS_ROUTED = 2**24

__all__ = [
    "BYTES_PER_ALL_PAIRS_ENTRY",
    "CHUNK_ROUTING_BYTES",
    "MAX_PAIRS_ROUTED",
    "BYTES_PER_FOLDED_TRANSFER",
    "BYTES_PER_PATH",
    "BYTES_PER_REPS_POD_SUBFLOW",
    "BYTES_PER_REPS_SUBFLOW",
    "BYTES_PER_TRANSFER",
    "BYTES_PER_UPLINK_SLOT",
    "FLOW_ENGINE_FACTOR",
    "MAX_FLOW_GROUPS",
    "FabricResult",
    "FoldedTransfers",
    "LinkReport",
    "all_pairs_bytes",
    "check_one_tier_route",
    "fabric_collective",
    "fold_transfers",
    "ideal_time",
    "link_capacity",
    "nccl_plan_choice",
    "nccl_protocol_choice",
    "routing_bytes",
    "simulate_plans",
]


def routing_bytes(
    topo: Topology,
    n_transfers: float,
    n_cross_leaf: float,
    n_cross_pod: float,
    *,
    engine: str = "links",
    routing: str = "spray",
    qps: int = 4,
    flowlets: int = 8,
    aggregated: bool = False,
) -> float:
    """Estimate of the bytes routing and simulating transfers needs, from counts (no allocation).

    With ``k`` sub-flows per transfer (:func:`~aifabric.engines.routing.subflows`), ``u1``
    leaf and ``u2`` spine uplinks, and ``P`` paths per transfer (1; with ``spray`` ``u1`` within a pod and
    ``u1 u2`` across pods)::

        bytes = f k (600 T + 100 u1 X + 600 (P_leaf (X - Y) + P_pod Y))

    for ``T`` transfers of which ``X`` cross leaves and ``Y`` cross pods, ``f`` = 1.5 for the flow engine
    and 1 for links (constants: ``BYTES_PER_*`` above, measured). Sprayed traffic ``aggregated`` on
    spray groups (:class:`~aifabric.engines.routing.SprayGroups`) has no candidate tables (``u1`` term 0)
    and one group row per leaf or pod instead of its paths (``P_leaf = P_pod = 1``). Under ``reps``
    (every EV routed at once, then folded) it is ``k (BYTES_PER_REPS_SUBFLOW T + BYTES_PER_REPS_POD_SUBFLOW
    Y)`` for either engine.
    """
    shape = topo.shape
    k = subflows(routing, qps, flowlets)
    if routing == "reps":
        return k * (BYTES_PER_REPS_SUBFLOW * n_transfers + BYTES_PER_REPS_POD_SUBFLOW * n_cross_pod)
    u1 = shape.leaf_up if shape else 0
    u2 = shape.spine_up if shape else 0
    p_leaf, p_pod = (u1, u1 * max(1, u2)) if routing == "spray" and not aggregated else (1, 1)
    if routing == "spray" and aggregated:
        u1 = 0
    per = (
        BYTES_PER_TRANSFER * n_transfers
        + BYTES_PER_UPLINK_SLOT * u1 * n_cross_leaf
        + BYTES_PER_PATH * (p_leaf * (n_cross_leaf - n_cross_pod) + p_pod * n_cross_pod)
    )
    return (FLOW_ENGINE_FACTOR if engine == "flow" else 1.0) * k * per


def _check_routing(
    topo: Topology,
    stages: list[FoldedTransfers],
    engine: str,
    routing: str,
    qps: int,
    *,
    aggregated: bool = False,
    extra_bytes: float = 0.0,
) -> None:
    """Refuse (ConfigError) folded stages whose routing (:func:`routing_bytes`), plus ``extra_bytes``
    (all-pairs stages routed from their ranks, :func:`all_pairs_bytes`), would exceed the memory limit."""
    t = x = y = 0
    for st in stages:
        t += st.src.size
        if topo.shape is None:
            continue
        ls, ld = topo.leaf_of_gpu[st.src], topo.leaf_of_gpu[st.dst]
        cross = ls != ld
        x += int(np.count_nonzero(cross))
        if topo.shape.tiers == 3:
            y += int(np.count_nonzero(cross & (topo.pod_of_leaf[ls] != topo.pod_of_leaf[ld])))
    need = extra_bytes + routing_bytes(
        topo, t, x, y, engine=engine, routing=routing, qps=qps, aggregated=aggregated
    )
    # only spraying folds transfers (fold_transfers): under another policy say that it would
    g = topo.spec.gpus_per_node
    hint = "" if routing == "spray" else f"; with --routing spray an all_to_all's pairs fold about {g}x"
    check_memory(f"routing {t:,} transfers ({routing}, {engine} engine{hint})", need, "ranks")


@dataclass(frozen=True)
class FoldedTransfers:
    """One stage's transfers after :func:`fold_transfers`. Arrays of shape (n_folded,).

    ``count[i]`` identical transfers ``src[i] -> dst[i]`` of ``bytes_[i]`` each, in ``group[i]`` of the
    stage's member ``member[i]`` (the index of the job's stage among the stage's members); sorted by member.
    """

    src: np.ndarray
    dst: np.ndarray
    bytes_: np.ndarray
    group: np.ndarray
    member: np.ndarray
    count: np.ndarray


def fold_transfers(
    topo: Topology,
    src: np.ndarray,
    dst: np.ndarray,
    bytes_: np.ndarray,
    group: np.ndarray,
    member: np.ndarray,
    split: np.ndarray,
) -> FoldedTransfers:
    """Transfers of one stage folded into fewer, without changing what the engines compute.

    1. A transfer marked in ``split`` (bool, shape (n,)) that NCCL's PXN sends across rails (different
       scale-up domains, different rails, on a rail-optimised fabric: the rule of
       :func:`~aifabric.engines.routing.route`) is split at its relay ``r = s - rail(s) + rail(d)`` into
       the NVLink hop ``s -> r`` and the network part ``r -> d``, both of the same bytes and group. Its
       routed column is the sum of theirs when the network part does not depend on ``s`` (spraying: no
       per-flow hash; the caller marks only such transfers) and its path latency is not charged (a plan
       with its own ``latency_s``).
    2. Identical transfers (same member, group, source, destination and bytes) become one with a
       ``count``; its column is multiplied by ``count``.

    A group moves as one flow whose column is ``sum_m A_m s_m / s_max`` (the flow engine's groups,
    :func:`~aifabric.engines.flowsim.simulate_transfers`; the links engine adds ``A_m s_m``), and both
    steps keep that sum and ``s_max``: link bytes, rates and times are those of the unfolded transfers.
    A uniform all-to-all of ``N`` full nodes of ``g`` GPUs (``n = N g`` ranks) keeps ``N g (g - 1)``
    NVLink transfers (count ``N``) and ``N (N - 1) g`` network ones (count ``g``) of its ``n (n - 1)``.

    Raises nothing; arrays of shape (n,) in, a :class:`FoldedTransfers` out.
    """
    spec = topo.spec
    src = np.asarray(src, np.int64)
    dst = np.asarray(dst, np.int64)
    bytes_ = np.asarray(bytes_, np.float64)
    group = np.asarray(group, np.int64)
    member = np.asarray(member, np.int64)
    split = np.asarray(split, bool) & ((src // spec.domain_gpus) != (dst // spec.domain_gpus))
    if split.any() and pxn_relays_possible(topo):
        r_s, r_d = topo.rail_of(src), topo.rail_of(dst)
        split &= r_s != r_d
        relay = src - r_s + r_d
        idx = np.nonzero(split)[0]
        keep = np.concatenate([np.arange(src.size), idx])  # the split ones appear twice
        src = np.concatenate([np.where(split, relay, src), src[idx]])  # network part, then NVLink hop
        dst = np.concatenate([dst, relay[idx]])
        bytes_, group, member = bytes_[keep], group[keep], member[keep]
    rep, count = _first_of_equal(bytes_, dst, src, group, member)
    return FoldedTransfers(src[rep], dst[rep], bytes_[rep], group[rep], member[rep], count)


def _n_groups(st: Stage | AllPairsStage) -> int:
    """Flow groups of a stage (an all-pairs stage is one), without building an all-pairs stage's pairs."""
    return 1 if isinstance(st, AllPairsStage) else int(np.unique(st.group).size)


def _direct_all_pairs(plans: list[CommPlan], routing: str, transport: str | None) -> set[tuple[int, int]]:
    """(job, stage) of the all-pairs stages routed from their ranks (:mod:`aifabric.engines.allpairs`):
    a policy that routes every pair on its own (``PER_PAIR_POLICIES``), no transport model, and the
    plan's latency charged once (path latencies unused)."""
    if routing not in PER_PAIR_POLICIES or transport is not None:
        return set()
    return {
        (j, k)
        for j, p in enumerate(plans)
        if p.latency_s is not None
        for k, st in enumerate(p.stages)
        if isinstance(st, AllPairsStage)
    }


def _check_all_pairs(
    topo: Topology, plans: list[CommPlan], direct: set[tuple[int, int]], routing: str, grouped: bool, qps: int
) -> float:
    """Bytes the ``direct`` all-pairs stages need (:func:`all_pairs_bytes`); ConfigError naming ``ranks``
    with the figure when they exceed the memory limit."""
    need, pairs = 0.0, 0
    for j, k in direct:
        st = plans[j].stages[k]
        if isinstance(st, AllPairsStage):
            need += all_pairs_bytes(
                topo, st.ranks, pxn=plans[j].pxn, routing=routing, grouped=grouped, qps=qps
            )
            pairs += st.n_transfers
    if direct:
        if not (routing == "spray" and grouped):
            check_pairs_routed(pairs, routing, _routes_per_pair(topo, routing, qps))
        what = f"routing {len(direct)} all_to_all stage(s) of {pairs:,} pairs from their ranks ({routing})"
        check_memory(what, need, "ranks")
    return need


def check_pairs_routed(pairs: int, routing: str, per_pair: int) -> None:
    """Refuse (ConfigError naming ``ranks``) all-to-all ``pairs`` routed one by one under ``routing`` in
    ``per_pair`` routes each (:func:`_routes_per_pair`), above :data:`MAX_PAIRS_ROUTED` routes, with what
    answers instead."""
    if pairs * per_pair <= MAX_PAIRS_ROUTED:
        return
    each = f" of {per_pair} routes" if per_pair > 1 else ""
    spray = "spray on a fabric without failed links" if routing == "spray" else "--routing spray"
    raise ConfigError(
        f"ranks: the all_to_all has {pairs:,} pairs{each} to route one by one under {routing}, above the "
        f"{MAX_PAIRS_ROUTED:,} routes this engine takes; use fewer nodes, {spray} (pairs "
        "folded from their ranks), or aifabric collective all_to_all --engine formula"
    )


def _routes_per_pair(topo: Topology, routing: str, qps: int) -> int:
    """Routes one pair of an all-to-all takes when routed on its own: its sub-flows
    (:func:`~aifabric.engines.routing.subflows`), or under ``spray`` every path (``u1`` leaf uplinks x
    ``u2`` spine uplinks, as :func:`routing_bytes` counts them across pods)."""
    if routing == "spray" and topo.shape is not None:
        return topo.shape.leaf_up * max(1, topo.shape.spine_up)
    return subflows(routing, qps)


def _all_pairs_upper_bytes(topo: Topology, gpus: np.ndarray, engine: str, routing: str, qps: int) -> float:
    """Upper bound of the bytes routing every pair of a uniform all-to-all over ``gpus`` takes
    (:func:`routing_bytes`), from rank counts per domain and pod, before its pairs exist: pairs across
    domains (n^2 - the sum of squares of ranks per domain) counted as crossing leaves, pairs across pods
    likewise."""
    n = float(np.unique(gpus).size)
    dom = np.bincount(gpus // topo.spec.domain_gpus).astype(float)
    x = n * n - float((dom * dom).sum())
    y = 0.0
    if topo.shape is not None and topo.shape.tiers == 3:
        pods = np.bincount(topo.pod_of_leaf[topo.leaf_of_gpu[gpus]]).astype(float)
        y = n * n - float((pods * pods).sum())
    return routing_bytes(topo, n * (n - 1), x, y, engine=engine, routing=routing, qps=qps)


def all_pairs_bytes(
    topo: Topology,
    ranks: np.ndarray,
    *,
    pxn: bool,
    routing: str = "spray",
    grouped: bool = True,
    qps: int = 4,
) -> float:
    """Estimate of the bytes an all-pairs stage routed from its ranks needs, from counts (no pair arrays):
    ``BYTES_PER_ALL_PAIRS_ENTRY`` x the entries of its columns, sprayed on spray groups (``grouped``:
    :func:`~aifabric.engines.allpairs.all_pairs_entries`) or routed pair by pair in chunks
    (:func:`~aifabric.engines.allpairs.per_pair_entries`, plus the routing of one chunk: at most
    ``CHUNK_ROUTING_BYTES``)."""
    if routing == "spray" and grouped:
        return BYTES_PER_ALL_PAIRS_ENTRY * all_pairs_entries(topo, ranks, pxn=pxn)
    k = subflows(routing, qps)
    entries = per_pair_entries(topo, ranks, pxn=pxn, subflows=k)
    pairs = float(np.unique(np.asarray(ranks)).size) ** 2
    chunk = min(
        CHUNK_ROUTING_BYTES,
        routing_bytes(topo, pairs, pairs, pairs, engine="links", routing=routing, qps=qps),
    )
    return BYTES_PER_ALL_PAIRS_ENTRY * entries + chunk


def _chunk_pairs(topo: Topology, routing: str, qps: int) -> int:
    """Pairs per chunk of :func:`~aifabric.engines.allpairs.per_pair_columns`: ``CHUNK_ROUTING_BYTES`` over
    the routing bytes of one pair crossing pods (:func:`routing_bytes`, links engine), at least 1,024."""
    one = routing_bytes(topo, 1, 1, 1, engine="links", routing=routing, qps=qps)
    return max(1024, int(CHUNK_ROUTING_BYTES // max(one, 1.0)))


def _fold_stage(
    topo: Topology,
    plans: list[CommPlan],
    k: int,
    members: list[tuple[int, Stage | AllPairsStage]],
    direct: set[tuple[int, int]],
    routing: str,
    transport: str | None,
) -> FoldedTransfers:
    """The k-th stage's transfers of the members not in ``direct``, folded when sprayed without a
    transport model (:func:`fold_transfers`; other policies place transfers by hash or in order, and a
    transport's fluid model runs every transfer on its own: kept as they are). ``member`` indexes
    ``members``."""
    idx = [i for i, (j, _) in enumerate(members) if (j, k) not in direct]
    sts = [members[i][1] for i in idx]
    member = np.repeat(np.array(idx, dtype=np.int64), [st.n_transfers for st in sts])
    if not sts:
        empty = np.zeros(0, np.int64)
        return FoldedTransfers(empty, empty, np.zeros(0), empty, empty, np.zeros(0))
    src = np.concatenate([st.src for st in sts])
    dst = np.concatenate([st.dst for st in sts])
    byt = np.concatenate([st.bytes_ for st in sts]).astype(np.float64)
    grp = np.concatenate([st.group for st in sts]).astype(np.int64)
    if routing == "spray" and transport is None:
        split = np.array(
            [
                plans[members[i][0]].pxn and plans[members[i][0]].latency_s is not None
                for i in range(len(members))
            ],
            bool,
        )
        return fold_transfers(topo, src, dst, byt, grp, member, split[member])
    return FoldedTransfers(src, dst, byt, grp, member, np.ones(src.size))


@dataclass(frozen=True)
class _RouteOptions:
    """What :func:`~aifabric.engines.routing.route` needs besides the transfers."""

    policy: str
    seed: int
    qps: int
    polarized: bool
    link_alive: np.ndarray | None
    groups: SprayGroups | None
    #: Fold a transfer's sub-flows on one path into one column (:func:`_fold_subflows`): exact for the
    #: links and max-min flow engines; a transport's fluid model runs every sub-flow on its own.
    fold: bool = True


def _all_pairs_stage_columns(
    topo: Topology, ranks: np.ndarray, pxn: bool, opt: _RouteOptions
) -> tuple[AllPairsColumns, float]:
    """An all-pairs stage's columns and the share of a pair's bytes each carries: from its ranks on spray
    groups, else its pairs routed in chunks (:mod:`aifabric.engines.allpairs`)."""
    if opt.policy == "spray" and opt.groups is not None:
        return all_pairs_columns(topo, opt.groups, ranks, pxn=pxn), 1.0
    return per_pair_columns(
        topo,
        ranks,
        policy=opt.policy,
        seed=opt.seed,
        qps=opt.qps,
        polarized=opt.polarized,
        pxn=pxn,
        link_alive=opt.link_alive,
        chunk_pairs=_chunk_pairs(topo, opt.policy, opt.qps),
    )


@dataclass(frozen=True)
class _StageColumns:
    """One stage's routed columns, sorted by member: ``incidence`` (n_rows, m) with each folded
    transfer's count applied, and per column its bytes, member, group, charged path latency, source and
    destination."""

    incidence: sparse.csc_matrix
    bytes_: np.ndarray
    member: np.ndarray
    group: np.ndarray
    latency: np.ndarray
    src: np.ndarray
    dst: np.ndarray


def _stage_columns(
    topo: Topology,
    plans: list[CommPlan],
    k: int,
    members: list[tuple[int, Stage | AllPairsStage]],
    fs: FoldedTransfers,
    direct: set[tuple[int, int]],
    opt: _RouteOptions,
    row_latency: np.ndarray,
) -> _StageColumns:
    """Route the folded transfers ``fs`` of stage ``k`` and add the columns of its ``direct`` all-pairs
    members (:func:`~aifabric.engines.allpairs.all_pairs_columns`), in member order."""
    pxn = np.array([plans[j].pxn for j, _ in members], dtype=bool)[fs.member]
    r = route(
        topo,
        fs.src,
        fs.dst,
        policy=opt.policy,
        seed=opt.seed,
        qps=opt.qps,
        polarized=opt.polarized,
        link_alive=opt.link_alive,
        bytes_=fs.bytes_,
        pxn=pxn,
        aggregate=opt.groups is not None,
    )
    csc, parent, sub_share, mult = (
        _fold_subflows(r) if opt.fold else (r.incidence.tocsc(), r.parent, r.share, np.ones(r.parent.size))
    )
    member = fs.member[parent]
    charged = np.array([plans[j].latency_s is None for j, _ in members])[member]
    parts = [
        (
            # a folded transfer loads its links count times, a column of equal sub-flows mult times
            csc @ sparse.diags(fs.count[parent] * mult),
            fs.bytes_[parent] * sub_share,
            member,
            fs.group[parent],
            np.where(charged, csc.T @ row_latency, 0.0),
            fs.src[parent],
            fs.dst[parent],
        )
    ]
    for i, (j, st) in enumerate(members):
        if (j, k) in direct and isinstance(st, AllPairsStage):
            ap, share = _all_pairs_stage_columns(topo, st.ranks, plans[j].pxn, opt)
            m = ap.src.size
            zero = np.zeros(m)
            parts.append(
                (
                    ap.incidence,
                    np.full(m, st.bytes_per_pair * share),
                    np.full(m, i),
                    zero.astype(np.int64),
                    zero,
                    ap.src,
                    ap.dst,
                )
            )
    cat = [np.concatenate([part[f] for part in parts]) for f in range(1, 7)]
    order = np.argsort(cat[1], kind="stable")
    inc = sparse.hstack([part[0] for part in parts], format="csc")[:, order]
    return _StageColumns(inc, *(a[order] for a in cat))


def _fold_subflows(r: Routes) -> tuple[sparse.csc_matrix, np.ndarray, np.ndarray, np.ndarray]:
    """``r``'s incidence, parents, shares and each column's multiplicity, the sub-flows of one transfer
    on one path folded into one column when the policy makes several per transfer
    (:func:`~aifabric.engines.routing.equal_subflows`: exact; each column keeps one sub-flow's share)."""
    csc = r.incidence.tocsc()
    if r.parent.size == 0 or r.parent.size == np.unique(r.parent).size:
        return csc, r.parent, r.share, np.ones(r.parent.size)
    keep, mult = equal_subflows(csc, r.parent)
    return csc[:, keep], r.parent[keep], r.share[keep], mult


def link_capacity(topo: Topology, efficiency: str = "nccl") -> np.ndarray:
    """Per-direction capacity of every link, bytes/s, under ``efficiency`` (``nccl`` or ``line_rate``).

    ``nccl``: scale-up links at NCCL's effective per-link bandwidth; scale-out links at the NIC's payload
    efficiency on the cluster's transport, ``B_eff / B_line`` of
    :attr:`~aifabric.cluster.spec.ClusterSpec.nic_effective_bytes_per_s` (``min(e_NIC, e_T)`` off the
    native transport: 0.59 through EFA's SRD plugin), the efficiency the formula engine's ``B_o`` carries;
    with GPUDirect RDMA off (``nic_path`` beyond NCCL's default ``NCCL_NET_GDR_LEVEL``) every NIC's bytes
    are staged in host memory, so its NIC links carry ``e_staging`` of that
    (:func:`~aifabric.collectives.nccl_env.host_staging_efficiency`, as the formula engine's ``B_o``).
    A NIC link also carries no more than its GPUs' own PCIe links to it (``B_o / B_payload`` of
    :attr:`~aifabric.cluster.spec.ClusterSpec.nic_effective_bytes_per_s`, 1 where the NIC is the slower):
    GPUDirect RDMA crosses them; the switch links beyond are wires at the NIC's payload efficiency.
    """
    cap = topo.link_capacity_bytes_per_s.copy()
    if efficiency == "line_rate":
        return cap
    if efficiency != "nccl":
        raise ConfigError(f"efficiency: unknown {efficiency!r}; use nccl or line_rate")
    spec = topo.spec
    su = topo.link_tier == 0
    if su.any():
        cap[su] *= spec.scaleup_effective_bytes_per_s / spec.scaleup_line_rate_bytes_per_s
    if spec.nic_spec is not None and spec.nic_line_rate_bytes_per_s > 0:
        cap[~su] *= spec.nic_payload_bytes_per_s / spec.nic_line_rate_bytes_per_s
        host_link = spec.nic_effective_bytes_per_s / spec.nic_payload_bytes_per_s
        cap[topo.link_tier == 1] *= host_link * host_staging_efficiency(spec)
    return cap


@dataclass(frozen=True)
class LinkReport:
    """A loaded link and why: its label, tier, utilisation over the run, and the flows that cross it."""

    link: int
    label: str
    tier: str
    utilisation: float
    bytes_: float
    n_flows: int
    flows: tuple[str, ...]


@dataclass(frozen=True)
class FabricResult:
    """Outcome of plans on a fabric.

    ``time_s`` is the makespan; ``job_time_s`` per job; ``ideal_time_s`` the contention-free lower bound
    (:func:`ideal_time`: spraying, no failures); ``efficiency`` = ideal / time. ``link_utilisation`` = bytes /
    (capacity x time) per link; ``tier_utilisation`` maps tier name -> array of the links of that tier.
    """

    engine: str
    routing: str
    seed: int
    time_s: float
    job_time_s: dict[str, float]
    ideal_time_s: float
    link_bytes: np.ndarray
    link_utilisation: np.ndarray
    top_links: tuple[LinkReport, ...]
    failed_links: int = 0
    link_peak_utilisation: np.ndarray | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def efficiency(self) -> float:
        """Ideal (contention-free) time / achieved time, in (0, 1] (latency rounding can exceed 1 by
        ~1e-6)."""
        return min(1.0, self.ideal_time_s / self.time_s) if self.time_s > 0 else 1.0


def _check_engine(engine: str, transport: str | None, plans: list[CommPlan]) -> None:
    """Refuse (ConfigError naming ``engine`` or ``transport``) an unknown engine, a transport model outside
    the flow engine, or a flow-engine run of more than ``MAX_FLOW_GROUPS`` independent flows."""
    if engine not in ("links", "flow"):
        raise ConfigError(f"engine: unknown engine {engine!r}; use links or flow")
    if transport is not None and engine != "flow":
        raise ConfigError(f"transport: the {engine} engine does not use a transport model; use --engine flow")
    if engine == "flow":
        n_groups = sum(_n_groups(st) for p in plans for st in p.stages)
        if n_groups > MAX_FLOW_GROUPS:
            raise ConfigError(
                f"engine: the flow engine would track {n_groups:,} independent flows (each its own max-min "
                f"event source; limit {MAX_FLOW_GROUPS:,}); use --engine links for this traffic, or fewer "
                "GPUs"
            )


def _fold_plans(
    topo: Topology, plans: list[CommPlan], engine: str, opt: _RouteOptions, transport: str | None
) -> tuple[list[tuple[list[tuple[int, Stage | AllPairsStage]], FoldedTransfers]], set[tuple[int, int]]]:
    """Each stage index's members (job, stage) and their folded transfers, and the (job, stage) of the
    all-pairs stages routed from their ranks.

    Fold each stage first (exact, see :func:`fold_transfers`: PXN transfers split at their relay when the
    policy sprays and the path latency is not charged; identical transfers of one group counted once), so
    the memory check and routing see the folded transfers. Uniform all-to-alls sprayed on groups are folded
    from their ranks, without their pairs (:mod:`aifabric.engines.allpairs`).

    Raises
    ------
    ConfigError
        Folding (``BYTES_PER_FOLDED_TRANSFER`` per transfer) or routing (:func:`routing_bytes`) that would
        need more memory than the limit of :mod:`aifabric.budget`.
    """
    routing, grouped = opt.policy, opt.groups is not None
    n_stages = max((len(p.stages) for p in plans), default=0)
    direct = _direct_all_pairs(plans, routing, transport)
    direct_bytes = _check_all_pairs(topo, plans, direct, routing, grouped, opt.qps)
    _check_pairs_to_route(topo, plans, direct, engine, opt)
    if routing == "spray" and transport is None:
        n_all = sum(
            st.n_transfers
            for j, p in enumerate(plans)
            for k, st in enumerate(p.stages)
            if (j, k) not in direct
        )
        check_memory(
            f"folding {n_all:,} sprayed transfers",
            BYTES_PER_FOLDED_TRANSFER * float(n_all) + direct_bytes,
            "ranks",
        )
    folded = []
    for k in range(n_stages):
        members = [(j, p.stages[k]) for j, p in enumerate(plans) if k < len(p.stages)]
        folded.append((members, _fold_stage(topo, plans, k, members, direct, routing, transport)))
    _check_routing(
        topo, [f for _, f in folded], engine, routing, opt.qps, aggregated=grouped, extra_bytes=direct_bytes
    )
    return folded, direct


def _check_pairs_to_route(
    topo: Topology, plans: list[CommPlan], direct: set[tuple[int, int]], engine: str, opt: _RouteOptions
) -> None:
    """Refuse (ConfigError naming ``ranks``), before their pairs exist, the all-pairs stages routed pair by
    pair (not in ``direct``) whose routing would exceed the memory limit (:func:`_all_pairs_upper_bytes`).
    Sprayed stages fold first and are checked folded."""
    if opt.policy == "spray":
        return
    stages = [
        st
        for j, p in enumerate(plans)
        for k, st in enumerate(p.stages)
        if isinstance(st, AllPairsStage) and (j, k) not in direct
    ]
    if stages:
        need = sum(_all_pairs_upper_bytes(topo, st.ranks, engine, opt.policy, opt.qps) for st in stages)
        pairs = sum(st.n_transfers for st in stages)
        what = f"routing {pairs:,} all_to_all pairs one by one ({opt.policy}, {engine} engine)"
        check_memory(what, need, "ranks")


@dataclass(frozen=True)
class _PlanColumns:
    """Every routed column of a run, stages one after another: ``incidence`` (n_rows, n_cols);
    ``repeats`` maps (job, stage) to the stage's repeats; ``stage_info`` lists (job, stage, first column,
    end column); then per column its bytes, job, stage, group, charged path latency (s), stage repeats,
    source and destination."""

    incidence: sparse.csc_matrix
    repeats: dict[tuple[int, int], int]
    stage_info: list[tuple[int, int, int, int]]
    bytes_: np.ndarray
    job: np.ndarray
    stage: np.ndarray
    group: np.ndarray
    latency: np.ndarray
    repeat: np.ndarray
    src: np.ndarray
    dst: np.ndarray


def _plan_columns(
    topo: Topology,
    plans: list[CommPlan],
    engine: str,
    opt: _RouteOptions,
    transport: str | None,
    row_latency: np.ndarray,
) -> _PlanColumns:
    """Fold (:func:`_fold_plans`) and route the plans' stages into one incidence of ``row_latency.size``
    rows. The k-th stages of all jobs are routed together (they run at about the same time, so adaptive
    routing sees all of their load), with seed ``opt.seed + 7919 k``, then kept as one column block per
    (job, stage). Raises as :func:`_fold_plans`."""
    folded, direct = _fold_plans(topo, plans, engine, opt, transport)
    parts: list[tuple[np.ndarray, ...]] = []
    repeats: dict[tuple[int, int], int] = {}
    stage_info = []
    ncol = 0
    for k, (members, fs) in enumerate(folded):
        r = replace(opt, seed=opt.seed + 7919 * k)
        blk = _stage_columns(topo, plans, k, members, fs, direct, r, row_latency)
        a = blk.incidence.tocoo()
        job = np.array([j for j, _ in members], dtype=np.int64)[blk.member]
        rep = np.array([st.repeat for _, st in members], dtype=float)[blk.member]
        stage = np.full(blk.member.size, k)
        parts.append(
            (
                a.data,
                a.row,
                a.col + ncol,
                blk.bytes_,
                job,
                stage,
                blk.group,
                blk.latency,
                rep,
                blk.src,
                blk.dst,
            )
        )
        bounds = np.searchsorted(blk.member, np.arange(len(members) + 1))
        for i, (j, st) in enumerate(members):
            repeats[(j, k)] = st.repeat
            stage_info.append((j, k, ncol + int(bounds[i]), ncol + int(bounds[i + 1])))
        ncol += blk.member.size
    vals, rows, cols, *per_column = (np.concatenate([part[f] for part in parts]) for f in range(11))
    inc = sparse.csc_matrix((vals, (rows, cols)), shape=(row_latency.size, ncol))
    return _PlanColumns(inc, repeats, stage_info, *per_column)


@dataclass(frozen=True)
class _EngineRun:
    """What an engine gives back: bytes per row (per link or spray-group row), each job's time (s) with
    its plan's latency, peak utilisation per row (flow engine without a transport model; else None) and
    the run's ``meta``."""

    link_bytes: np.ndarray
    job_time_s: list[float]
    peak: np.ndarray | None = None
    meta: dict[str, Any] = field(default_factory=dict)


def _run_links(
    cols: _PlanColumns, cap: np.ndarray, plans: list[CommPlan], efficiency: str, progress: Progress | None
) -> _EngineRun:
    """The links engine (:func:`_links_engine`) on the routed columns; ``progress`` is told once, done.
    Raises NoRoute when a transfer crosses a failed link."""
    link_bytes, job_t = _links_engine(
        cols.incidence, cols.bytes_, cap, cols.latency, cols.stage_info, cols.repeats, len(plans)
    )
    job_t = [_plan_end(t, p, efficiency) for t, p in zip(job_t, plans, strict=True)]
    if progress is not None:
        progress(1, 1)
    return _EngineRun(link_bytes, job_t)


def _run_transport_model(
    transport: str,
    cols: _PlanColumns,
    cap: np.ndarray,
    topo: Topology,
    plans: list[CommPlan],
    efficiency: str,
    progress: Progress | None,
) -> _EngineRun:
    """The transport's fluid model (:func:`~aifabric.transport.wire.run_transport`) over the same routed
    links; its run goes to ``meta["transport"]``."""
    run = run_transport(
        transport,
        cols.incidence,
        cols.bytes_,
        cap,
        topo.link_src,
        topo.link_dst,
        job=cols.job,
        stage=cols.stage,
        repeat=lambda j, k: cols.repeats[(j, k)],
        n_jobs=len(plans),
        latency_s=topo.link_latency_s,
        progress=progress,
    )
    job_t = [_plan_end(t, p, efficiency) for t, p in zip(run.job_time_s, plans, strict=True)]
    return _EngineRun(run.link_bytes, job_t, meta={"transport": run})


def _run_flow(
    cols: _PlanColumns,
    cap: np.ndarray,
    plans: list[CommPlan],
    efficiency: str,
    merge_repeats: bool | None,
    progress: Progress | None,
) -> _EngineRun:
    """The max-min flow engine (:class:`~aifabric.engines.flowsim.Simulation`) on the routed columns, with
    its peak utilisation per row. With ``merge_repeats`` (default: several jobs) each repeated stage runs
    as one transfer of all its steps' bytes and latencies (see :func:`simulate_plans`)."""
    merge = len(plans) > 1 if merge_repeats is None else merge_repeats
    if merge:
        sim_bytes, sim_lat, sim_repeat = cols.bytes_ * cols.repeat, cols.latency * cols.repeat, None
    else:
        sim_bytes, sim_lat, sim_repeat = cols.bytes_, cols.latency, cols.repeats
    res = Simulation(
        sim_bytes,
        cols.incidence,
        cap,
        job=cols.job,
        stage=cols.stage,
        group=cols.group,
        start_latency_s=sim_lat,
        stage_repeat=sim_repeat,
    ).run(progress)
    job_t = [_plan_end(float(res.job_end_time_s(j)), p, efficiency) for j, p in enumerate(plans)]
    return _EngineRun(np.asarray(res.link_bytes), job_t, np.asarray(res.link_peak_utilisation))


def _member_peak(
    topo: Topology, groups: SprayGroups, row_peak: np.ndarray, cap: np.ndarray, link_cap: np.ndarray
) -> np.ndarray:
    """Peak utilisation per link from per-row peaks on spray groups: a member's peak is its group's load
    (peak x row capacity ``cap``, bytes/s) shared evenly over the group, over the member's own capacity
    ``link_cap`` (0 where that is 0), or the link's own row's peak if higher."""
    peak = np.asarray(row_peak)[: topo.n_links].copy()
    row_load = row_peak * np.where(np.isfinite(cap), cap, 0.0)
    member_load = row_load[groups.member_row] / groups.size[groups.member_row - topo.n_links]
    with np.errstate(divide="ignore", invalid="ignore"):
        member_util = np.where(
            link_cap[groups.member_link] > 0, member_load / link_cap[groups.member_link], 0.0
        )
    np.maximum.at(peak, groups.member_link, member_util)
    return peak


def _job_names(plans: list[CommPlan]) -> list[str]:
    """Each plan's job name, or ``job0``, ``job1``... when two plans share a name."""
    names = [p.job for p in plans]
    if len(set(names)) < len(names):
        names = [f"job{j}" for j in range(len(plans))]
    return names


def simulate_plans(
    topo: Topology,
    plans: list[CommPlan],
    *,
    engine: str = "flow",
    routing: str = "spray",
    seed: int = 0,
    qps: int = 4,
    polarized: bool = False,
    link_alive: np.ndarray | None = None,
    efficiency: str = "nccl",
    top: int = 8,
    compute_ideal: bool = True,
    merge_repeats: bool | None = None,
    progress: Progress | None = None,
    transport: str | None = None,
) -> FabricResult:
    """Run ``plans`` (one per job, concurrently) on ``topo`` with the ``links`` or ``flow`` engine.

    Parameters
    ----------
    topo : Topology
    plans : list of CommPlan
        One per job; jobs start together, each runs its stages in order.
    engine : {"links", "flow"}
    routing : {"ecmp", "pinning", "qp", "spray", "adaptive", "spray-blind", "reps"}
    seed : int
        Seed of every random choice (hash seeds, adaptive order); same seed, same result.
    qps : int
        Queue pairs per connection for ``routing="qp"``.
    polarized : bool
        Same hash seed in every switch.
    link_alive : ndarray of bool, optional
        False for failed links.
    efficiency : {"nccl", "line_rate"}
        See :func:`link_capacity`.
    top : int
        How many of the most loaded links to explain.
    merge_repeats : bool, optional
        Flow engine: run each repeated stage (the 2(n-1) steps of a ring) as one transfer of all its steps'
        bytes, paying the steps' latencies once in total. Exact when the rates do not change between steps
        (a job alone, whose repeats the simulator fast-forwards anyway); with several jobs it assumes
        the jobs' steps interleave smoothly (fluid), which is what lets 16 jobs x 2,000 steps run in
        seconds instead of simulating every step's events. Default: on when there are several jobs.
    progress : callable, optional
        Flow engine: ``progress(done, total)`` during the run
        (:meth:`~aifabric.engines.flowsim.Simulation.run`); the links engine reports once, done.
    transport : str, optional
        Flow engine only: run the routed transfers under this transport's fluid queue model
        (:func:`aifabric.transport.wire.run_transport`: queues, PFC pauses, ECN/DCQCN, credits, trimming)
        instead of max-min fair rates; the run's pause, queue and retransmission figures go to ``meta``.

    Raises
    ------
    ConfigError
        Unknown engine or routing, or folding (``BYTES_PER_FOLDED_TRANSFER`` per transfer) or routing
        that would need more memory than the limit of :mod:`aifabric.budget` (estimate:
        :func:`routing_bytes` of the folded transfers).
    NoRoute
        A failure set disconnects two ranks that must talk (the message names them).
    """
    _check_engine(engine, transport, plans)
    # a transport's fluid model needs every sub-flow's own links, not groups of links
    groups = spray_groups(topo, link_alive) if routing == "spray" and transport is None else None
    link_cap = link_capacity(topo, efficiency)
    if link_alive is not None:
        link_cap = np.where(link_alive, link_cap, 0.0)
    # Sprayed traffic on a regular healthy Clos is routed on groups of equally loaded links (exact, see
    # routing.SprayGroups): the engines run on their rows and fold the results back onto the links.
    cap = link_cap if groups is None else groups.capacity(link_cap)
    lat = topo.link_latency_s if groups is None else groups.latency(topo.link_latency_s)
    opt = _RouteOptions(routing, seed, qps, polarized, link_alive, groups, transport is None)
    cols = _plan_columns(topo, plans, engine, opt, transport, lat)
    if engine == "links":
        run = _run_links(cols, cap, plans, efficiency, progress)
    elif transport is not None:
        run = _run_transport_model(transport, cols, cap, topo, plans, efficiency, progress)
    else:
        run = _run_flow(cols, cap, plans, efficiency, merge_repeats, progress)
    peak, link_bytes = run.peak, run.link_bytes
    if groups is not None:
        peak = None if peak is None else _member_peak(topo, groups, peak, cap, link_cap)
        link_bytes = groups.fold(link_bytes)
    time_s = max(run.job_time_s, default=0.0)
    ideal = ideal_time(topo, plans, efficiency=efficiency) if compute_ideal else time_s
    with np.errstate(divide="ignore", invalid="ignore"):
        util = np.where(link_cap > 0, link_bytes / (link_cap * max(time_s, 1e-30)), 0.0)
    group_row = None if groups is None else groups.group_of_link()
    tops = _explain(
        topo, cols.incidence, util, link_bytes, cols.src, cols.dst, cols.job, plans, top, group_row
    )
    return FabricResult(
        engine=engine,
        routing=routing,
        seed=seed,
        time_s=time_s,
        job_time_s=dict(zip(_job_names(plans), run.job_time_s, strict=True)),
        ideal_time_s=ideal,
        link_bytes=link_bytes,
        link_utilisation=util,
        top_links=tops,
        failed_links=0 if link_alive is None else int((~np.asarray(link_alive)).sum()),
        link_peak_utilisation=peak,
        meta=run.meta,
    )


def _spray_stage(
    topo: Topology,
    cap: np.ndarray,
    src: np.ndarray,
    dst: np.ndarray,
    byt: np.ndarray,
    pxn: np.ndarray,
    extra: tuple[SprayGroups, np.ndarray] | None = None,
) -> tuple[float, np.ndarray]:
    """(time of the most loaded link, path latency of each transfer) of one stage sprayed on a healthy fabric.

    Spraying over every equal-cost path of a Clos with no failures loads all uplinks of one switch
    equally, so it is enough to add the bytes per switch and direction (leaf up, leaf down, spine up to
    the cores, spine down from the cores) and divide by that switch's uplink capacity; access links
    (GPU-NVSwitch, PXN relays, NIC-leaf) are added link by link. Exactly the links engine with
    ``routing="spray"``, without a per-path incidence matrix (a 16k-GPU random ring has ~100M paths).
    ``extra``: the loads, bytes per row of the spray groups, of traffic routed from ranks
    (:mod:`aifabric.engines.allpairs`), added to the transfers'.
    """
    spec = topo.spec
    shape = topo.shape
    loads, fabric = _loads_of_rows(topo, extra)
    lat_of = topo.link_latency_s
    same = (src // spec.domain_gpus) == (dst // spec.domain_gpus)
    latency = np.zeros(src.size)
    latency[same] = _load_scale_up_hops(topo, loads, src[same], dst[same], byt[same])
    x = ~same
    if x.any() and shape is not None:
        s, d, b = src[x], dst[x], byt[x]
        nic_src = s
        path_lat = np.zeros(s.size)
        if topo.has_scale_up_links and shape.rails == spec.gpus_per_node:
            r_s, r_d = topo.rail_of(s), topo.rail_of(d)
            cross = (r_s != r_d) & pxn[x]
            if cross.any():
                relay = s - r_s + r_d
                path_lat[cross] += _load_scale_up_hops(topo, loads, s[cross], relay[cross], b[cross])
                nic_src = np.where(cross, relay, s)
        planes = topo.planes
        for p in range(planes):
            np.add.at(loads, topo.nic_up[p, nic_src], b / planes)
            np.add.at(loads, topo.nic_down[p, d], b / planes)
        path_lat += lat_of[topo.nic_up[0, nic_src]] + lat_of[topo.nic_down[0, d]]
        path_lat += _add_fabric_bytes(topo, fabric, topo.leaf_of_gpu[nic_src], topo.leaf_of_gpu[d], b)
        latency[x] = path_lat
    with np.errstate(divide="ignore", invalid="ignore"):
        access = np.where(loads > 0, loads / cap, 0.0)
    return max([float(access.max(initial=0.0)), *_fabric_ratios(topo, cap, fabric)]), latency


def _load_scale_up_hops(
    topo: Topology, loads: np.ndarray, src: np.ndarray, dst: np.ndarray, byt: np.ndarray
) -> np.ndarray:
    """Add ``byt[i]`` to every scale-up hop of ``src[i] -> dst[i]`` (one domain: through its switch, or the
    pair's link of a full mesh, which a GPU sending to itself does not cross); returns each one's latency."""
    latency = np.zeros(src.size)
    moved = (src != dst) if topo.is_mesh else np.ones(src.size, bool)
    for links in topo.scale_up_hops(src[moved], dst[moved]):
        np.add.at(loads, links, byt[moved])
        latency[moved] += topo.link_latency_s[links]
    return latency


def _loads_of_rows(
    topo: Topology, extra: tuple[SprayGroups, np.ndarray] | None
) -> tuple[np.ndarray, list[np.ndarray]]:
    """Per-link loads and the per-plane fabric bytes of :func:`_add_fabric_bytes` (leaf up, leaf down,
    and with three tiers pod up and down per spine of the pod) of loads on spray-group rows, or zeros."""
    shape = topo.shape
    loads = np.zeros(topo.n_links)
    fabric = [np.zeros(shape.n_leaves), np.zeros(shape.n_leaves)] if shape else []
    fabric += [np.zeros(shape.n_pods), np.zeros(shape.n_pods)] if shape and shape.tiers == 3 else []
    if extra is not None and shape is not None:
        groups, rows = extra
        loads += rows[: topo.n_links]
        fabric[0] += rows[groups.leaf_up].max(axis=0)
        fabric[1] += rows[groups.leaf_down].max(axis=0)
        if shape.tiers == 3:
            fabric[2] += rows[groups.pod_up].max(axis=0) / shape.spines_per_pod
            fabric[3] += rows[groups.pod_down].max(axis=0) / shape.spines_per_pod
    return loads, fabric


def _add_fabric_bytes(
    topo: Topology, fabric: list[np.ndarray], leaf_s: np.ndarray, leaf_d: np.ndarray, b: np.ndarray
) -> np.ndarray:
    """Add sprayed transfers' bytes to ``fabric`` (per plane: leaf up, leaf down, and with three tiers
    pod up and down per spine of the pod); returns their fabric path latency, s."""
    shape = topo.shape
    assert shape is not None
    lat_of = topo.link_latency_s
    path_lat = np.zeros(b.size)
    xl = leaf_s != leaf_d
    if not xl.any():
        return path_lat
    planes = topo.planes
    path_lat[xl] += 2 * float(lat_of[topo.link_tier == 2].max())
    fabric[0] += np.bincount(leaf_s[xl], b[xl], shape.n_leaves) / planes
    fabric[1] += np.bincount(leaf_d[xl], b[xl], shape.n_leaves) / planes
    if shape.tiers == 3:
        pod_s, pod_d = topo.pod_of_leaf[leaf_s], topo.pod_of_leaf[leaf_d]
        xp = xl & (pod_s != pod_d)
        if xp.any():
            path_lat[xp] += 2 * float(lat_of[topo.link_tier == 3].max())
            per_spine = shape.spines_per_pod * planes
            fabric[2] += np.bincount(pod_s[xp], b[xp], shape.n_pods) / per_spine
            fabric[3] += np.bincount(pod_d[xp], b[xp], shape.n_pods) / per_spine
    return path_lat


def _fabric_ratios(topo: Topology, cap: np.ndarray, fabric: list[np.ndarray]) -> list[float]:
    """Seconds each loaded direction of ``fabric`` (:func:`_add_fabric_bytes`) needs: the bytes per
    switch over its uplinks' capacity (leaf: ``leaf_up`` links of tier 2; spine: ``spine_up`` of tier 3)."""
    shape = topo.shape
    out = []
    for i, per_switch in enumerate(fabric):
        if shape is None or not per_switch.any():
            continue
        tier, width = (2, shape.leaf_up) if i < 2 else (3, shape.spine_up)
        out.append(float(per_switch.max()) / (width * float(cap[topo.link_tier == tier].min())))
    return out


def ideal_time(topo: Topology, plans: list[CommPlan], *, efficiency: str = "nccl") -> float:
    """Contention-free lower bound of ``plans`` on a healthy ``topo`` (loads sprayed as in the links
    engine), seconds: each stage its busiest link's time after its shortest path latency
    (:func:`_stage_bound`).

    The k-th stages of all jobs are loaded together, as in the links engine. Capacities are per direction,
    scaled by ``efficiency`` (:func:`link_capacity`). All-pairs stages of plans that charge their own
    latency are loaded from their ranks (:mod:`aifabric.engines.allpairs`) where the fabric has spray
    groups. Raises ConfigError for an unknown efficiency.
    """
    cap = link_capacity(topo, efficiency)
    groups = spray_groups(topo)
    direct = _direct_all_pairs(plans, "spray", None) if groups is not None else set()
    job_t = [0.0] * len(plans)
    for k in range(max((len(p.stages) for p in plans), default=0)):
        members = [(j, p.stages[k]) for j, p in enumerate(plans) if k < len(p.stages)]
        extra = None
        if groups is not None and any((j, k) in direct for j, _ in members):
            rows = np.zeros(groups.n_rows)
            for j, st in members:
                if (j, k) in direct and isinstance(st, AllPairsStage):
                    inc = all_pairs_columns(topo, groups, st.ranks, pxn=plans[j].pxn).incidence
                    rows += np.asarray(inc.sum(axis=1)).ravel() * st.bytes_per_pair
            extra = (groups, rows)
        rest = [(j, st) for j, st in members if (j, k) not in direct]
        src = np.concatenate([st.src for _, st in rest] + [np.zeros(0, np.int64)])
        dst = np.concatenate([st.dst for _, st in rest] + [np.zeros(0, np.int64)])
        byt = np.concatenate([st.bytes_ for _, st in rest] + [np.zeros(0)])
        pxn = np.concatenate([np.full(st.n_transfers, plans[j].pxn) for j, st in rest] + [np.zeros(0, bool)])
        step, lat = _spray_stage(topo, cap, src, dst, byt, pxn, extra)
        start = 0
        for j, st in rest:
            own = lat[start : start + st.n_transfers] if plans[j].latency_s is None else np.zeros(0)
            start += st.n_transfers
            job_t[j] += st.repeat * _stage_bound(step, own)
        for j, st in members:
            if (j, k) in direct:
                job_t[j] += st.repeat * step
    return max((_plan_end(t, p, efficiency) for t, p in zip(job_t, plans, strict=True)), default=0.0)


def _stage_bound(step_s: float, latency_s: np.ndarray) -> float:
    """The least time one stage can take: its busiest link's bytes at capacity (``step_s``) after the
    shortest path latency of its transfers (``latency_s``; none charged: 0), and never less than its
    longest path latency. The links engine charges ``step_s`` plus the longest latency, the flow engine
    starts each transfer after its own; both stay above this bound, which a stage whose transfers share
    one latency (a ring step) meets exactly."""
    if latency_s.size == 0:
        return step_s
    return max(step_s + float(latency_s.min()), float(latency_s.max()))


def _plan_latency(plan: CommPlan, efficiency: str) -> float:
    """The latency a plan charges once (its algorithm's NCCL latency; none under ``line_rate``), seconds."""
    return (plan.latency_s or 0.0) if efficiency == "nccl" else 0.0


def _plan_end(fabric_s: float, plan: CommPlan, efficiency: str) -> float:
    """A plan's time from its fabric time: at least its endpoints' floor (``plan.floor_s``, NCCL's p2p
    channels to a network peer; none under ``line_rate``), then its latency once, seconds."""
    floor = plan.floor_s if efficiency == "nccl" else 0.0
    return max(fabric_s, floor) + _plan_latency(plan, efficiency)


def _links_engine(
    inc: sparse.csc_matrix,
    bytes_all: np.ndarray,
    cap: np.ndarray,
    lat_all: np.ndarray,
    stage_info: list[tuple[int, int, int, int]],
    repeats: dict[tuple[int, int], int],
    n_jobs: int,
) -> tuple[np.ndarray, list[float]]:
    """Stage time = max link load / capacity + max path latency; concurrent jobs' k-th stages overlap.

    Jobs run together, so the k-th stages of all jobs are loaded at once (a synchronous approximation).
    """
    link_bytes = np.zeros(inc.shape[0])
    job_t = [0.0] * n_jobs
    by_k: dict[int, list[tuple[int, int, int]]] = {}
    for j, k, a, b in stage_info:
        by_k.setdefault(k, []).append((j, a, b))
    for k, members in sorted(by_k.items()):
        load = np.zeros(inc.shape[0])
        for _j, a, b in members:
            load += inc[:, a:b] @ bytes_all[a:b]
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(load > 0, load / cap, 0.0)
        if np.isinf(ratio).any():
            raise NoRoute("a transfer crosses a failed link with no alternative")
        step = float(ratio.max()) if ratio.size else 0.0
        for j, a, b in members:
            reps = repeats[(j, k)]
            own_lat = float(lat_all[a:b].max()) if b > a else 0.0
            job_t[j] += reps * (step + own_lat)
            link_bytes += reps * (inc[:, a:b] @ bytes_all[a:b])
    return link_bytes, job_t


def _explain(
    topo: Topology,
    inc: sparse.csc_matrix,
    util: np.ndarray,
    link_bytes: np.ndarray,
    src: np.ndarray,
    dst: np.ndarray,
    job: np.ndarray,
    plans: list[CommPlan],
    top: int,
    group_row: np.ndarray | None = None,
) -> tuple[LinkReport, ...]:
    """The ``top`` most utilised links and the flows that cross them (``group_row``: the row of each
    link's spray group in ``inc``, -1 for none, when the incidence has group rows)."""
    if top <= 0:
        return ()
    order = np.argsort(-util, kind="stable")[:top]
    csr = inc.tocsr()
    out = []
    for link in order:
        rows = [int(link)] + ([] if group_row is None or group_row[link] < 0 else [int(group_row[link])])
        cols = np.concatenate([csr.indices[csr.indptr[r] : csr.indptr[r + 1]] for r in rows])
        pairs = sorted({(int(job[c]), int(src[c]), int(dst[c])) for c in cols})
        names = tuple(
            f"{plans[j].job if len(plans) > 1 else 'gpu'}:{s}->{d}" if len(plans) > 1 else f"gpu {s}->{d}"
            for j, s, d in pairs[:6]
        )
        out.append(
            LinkReport(
                int(link),
                topo.link_label(int(link)),
                topo.tier_name(int(topo.link_tier[link])),
                float(util[link]),
                float(link_bytes[link]),
                len(pairs),
                names,
            )
        )
    return tuple(out)


def _first_of_equal(
    bytes_: np.ndarray, dst: np.ndarray, src: np.ndarray, group: np.ndarray, member: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(index of the first of each set of equal rows, rows in the set), sets sorted by member, group,
    source, destination, bytes. One int64 key per row (a sort of one array) when it fits, else lexsort."""
    if bytes_.size == 0:
        return np.zeros(0, np.int64), np.zeros(0)
    codes, sizes = [], []
    for a in (bytes_, dst, src, group, member):
        if a.dtype.kind == "f":  # sizes: usually one value
            same = bool((a == a[0]).all())
            inv = np.zeros(a.size, np.int64) if same else np.unique(a, return_inverse=True)[1]
        else:
            inv = a - a.min()
        codes.append(inv)
        sizes.append(int(inv.max()) + 1)
    if float(np.prod(np.array(sizes, dtype=float))) < 2.0**62:
        key = np.zeros(bytes_.size, np.int64)
        for inv, size in zip(reversed(codes), reversed(sizes), strict=True):
            key = key * size + inv
        _, rep, count = np.unique(key, return_index=True, return_counts=True)
        return rep, count.astype(np.float64)
    order = np.lexsort(tuple(codes))  # member (last) is the primary key
    new = np.zeros(order.size, bool)
    new[0] = True
    for inv in codes:
        sorted_ = inv[order]
        new[1:] |= sorted_[1:] != sorted_[:-1]
    starts = np.nonzero(new)[0]
    return order[starts], np.diff(np.append(starts, order.size)).astype(np.float64)


def check_one_tier_route(op: Collective, spec: ClusterSpec, comm: Communicator) -> None:
    """Refuse (:class:`NoRoute`, one line for every engine) a collective whose fixed transfers
    (:data:`~aifabric.collectives.plan.FIXED_EXCHANGES`: an all_to_all's pairs, a send_recv's sends) join
    two ranks on leaves of a one-tier fabric that no spine or PXN relay joins
    (:func:`~aifabric.engines.routing.check_one_tier_pairs`). Rings and trees, laid along the rails, are
    the plan's to route."""
    pairs = FIXED_EXCHANGES.get(op)
    if pairs is None or spec.scale_out is None or spec.scale_out.tiers != 1:
        return
    gpus = np.asarray(comm.gpus if comm.gpus is not None else np.arange(comm.n_ranks), dtype=np.int64)
    check_one_tier_pairs(cached_topology(spec), *pairs(gpus))


def _check_all_to_all(
    topo: Topology, gpus: np.ndarray, engine: str, routing: str, qps: int, link_alive: np.ndarray | None
) -> None:
    """Refuse (ConfigError naming ``ranks``) an all_to_all whose routing would exceed the memory limit,
    estimated before its plan exists. Under a policy that routes pairs on their own it is routed from its
    ranks (:func:`all_pairs_bytes`). Under ``adaptive`` every pair is routed: :func:`routing_bytes` from
    rank counts per domain and pod, pairs across domains (n^2 - sum of squares of ranks per domain)
    counted as crossing leaves (an upper bound), pairs across pods likewise."""
    what = f"routing an all_to_all of {gpus.size:,} ranks ({routing}, {engine} engine)"
    if routing in PER_PAIR_POLICIES:
        grouped = spray_groups(topo, link_alive) is not None
        if not (routing == "spray" and grouped):
            check_pairs_routed(gpus.size * (gpus.size - 1), routing, _routes_per_pair(topo, routing, qps))
        check_memory(
            what, all_pairs_bytes(topo, gpus, pxn=True, routing=routing, grouped=grouped, qps=qps), "ranks"
        )
        return
    check_memory(what, _all_pairs_upper_bytes(topo, gpus, engine, routing, qps), "ranks")


def _check_wired_scale_up(spec: ClusterSpec, engine: str) -> None:
    """Refuse (one ConfigError line naming ``engine``, the one asked, and what runs it: the formula
    engine) a torus scale-up of more than one GPU: the links and flow engines do not wire a torus link by
    link."""
    if spec.scale_up.kind == "torus" and spec.domain_gpus > 1:
        raise ConfigError(
            f"engine: the links and flow engines do not wire a torus link by link (--engine {engine} asked; "
            f"{spec.name!r} has a TPU ICI torus scale-up); use --engine formula, which times TPU slices"
        )


def _tier_bytes(topo: Topology, res: FabricResult) -> dict[int, float]:
    """Bytes the run moved over the links of each tier (tier index -> bytes)."""
    return {
        int(tier): float(res.link_bytes[topo.link_tier == tier].sum()) for tier in np.unique(topo.link_tier)
    }


def _fabric_explanation(
    plan: CommPlan, routing: str, seed: int, res: FabricResult, note: str, time_setter: str
) -> str:
    """One line on what ran: the plan's transfers and stages, the routing, what set the time (the share of
    the contention-free time, or the p2p channels' floor), the hottest link, the transport model's summary
    (when one ran) and ``note``; ``time_setter`` is :func:`_time_setter`'s."""
    hot = res.top_links[0] if res.top_links else None
    return (
        f"{plan.algorithm} decomposed into {sum(s.n_transfers for s in plan.stages)} transfers per step "
        f"over {len(plan.stages)} stage(s); routing {routing} (seed {seed}); "
        + time_setter
        + (f"; hottest link {hot.label} at {hot.utilisation:.0%} carrying {hot.n_flows} flows" if hot else "")
        + (f"; {res.meta['transport'].summary()}" if "transport" in res.meta else "")
        + note
    )


def _time_setter(plan: CommPlan, res: FabricResult, message_bytes: float, efficiency: str) -> str:
    """What set the plan's time: its LL/LL128 protocol's bandwidth where that floor is above the fabric's
    time; the p2p channels to a network peer where their floor (``plan.floor_s``,
    :func:`~aifabric.collectives.direct.p2p_channel_floor_s`, charged under ``nccl`` efficiency only) is
    above the fabric's time, else the run's share of the contention-free time."""
    floor = plan.floor_s if efficiency == "nccl" else 0.0
    if floor > 0 and floor + (plan.latency_s or 0.0) >= res.time_s * (1 - 1e-9) and plan.protocol != "Simple":
        return (
            f"{plan.protocol}'s bandwidth as NCCL's kernels move it sets the time: "
            f"{message_bytes / floor / 1e9:.1f} GB/s algbw (tuning.cc's {plan.protocol} refinements, "
            "per-channel caps), below what the links carry"
        )
    if floor > 0 and floor + (plan.latency_s or 0.0) >= res.time_s * (1 - 1e-9):
        return (
            f"the p2p channels to the network peer set the time: {message_bytes / floor / 1e9:.1f} GB/s per "
            "send (channels per peer x NCCL's P2P_PER_CHANNEL_NET_BW), below what the links carry"
        )
    return f"{res.efficiency:.0%} of the contention-free time"


def _host_link_note(topo: Topology, res: FabricResult, efficiency: str) -> str:
    """``; <why>`` when the hottest link is a NIC link held to its GPUs' PCIe links
    (:attr:`~aifabric.cluster.spec.ClusterSpec.nic_host_link_note`), else empty."""
    hot = res.top_links[0] if res.top_links else None
    note = topo.spec.nic_host_link_note
    if note is None or hot is None or efficiency != "nccl" or hot.tier != topo.tier_name(1):
        return ""
    return f"; {note}"


def fabric_collective(
    op: Collective | str,
    message_bytes: float,
    spec: ClusterSpec,
    comm: Communicator,
    *,
    engine: str = "flow",
    routing: str = "spray",
    seed: int = 0,
    algorithm: Algorithm | str | None = None,
    qps: int = 4,
    topo: Topology | None = None,
    link_alive: np.ndarray | None = None,
    efficiency: str = "nccl",
    transport: str | None = None,
    progress: Progress | None = None,
) -> CollectiveResult:
    """Time one collective with the ``links`` or ``flow`` engine on the real topology.

    The communicator must list its GPUs or be contiguous. Returns a :class:`CollectiveResult` (seconds,
    bytes/s per direction) whose ``extra["fabric"]`` holds the :class:`FabricResult` (links, utilisation,
    ideal time). Decompositions: :func:`aifabric.collectives.algorithms.build_plan`. Without an
    ``algorithm`` it runs what the formula engine (NCCL's tuner) picks when that has a plan, else the
    default plan of the collective (ring, direct, chain, p2p), and says so in the explanation.

    Raises
    ------
    ValueError
        A size <= 0, or an algorithm without a transfer-level decomposition (NVLS, tree).
    ConfigError, NoRoute
        Unknown engine/routing, a torus scale-up (not wired link by link), or failed links that
        disconnect two ranks (named in the message).
    """
    op = Collective.parse(op)
    _check_wired_scale_up(spec, engine)
    topo = topo or cached_topology(spec)
    gpus = np.asarray(comm.gpus if comm.gpus is not None else np.arange(comm.n_ranks), dtype=np.int64)
    if gpus.size == 1:
        return one_rank_result(
            op, message_bytes, spec, convention=f"per_direction/{efficiency}", engine=engine
        )
    check_one_tier_route(op, spec, comm)
    if op is Collective.ALL_TO_ALL:
        _check_all_to_all(topo, gpus, engine, routing, qps, link_alive)
    if algorithm is not None:
        check_forced_algorithm(op, algorithm, spec, comm)
    algorithm, note = (
        (algorithm, "") if algorithm is not None else nccl_plan_choice(op, message_bytes, spec, comm)
    )
    proto = nccl_protocol_choice(op, message_bytes, spec, comm, Algorithm.parse(algorithm), efficiency)
    plan = build_plan(op, message_bytes, spec, gpus, algorithm=algorithm, protocol=proto)
    res = simulate_plans(
        topo,
        [plan],
        engine=engine,
        routing=routing,
        seed=seed,
        qps=qps,
        link_alive=link_alive,
        efficiency=efficiency,
        transport=transport,
        progress=progress,
    )
    t = res.time_s
    algbw = message_bytes / t if t > 0 else float("inf")
    hot = res.top_links[0] if res.top_links else None
    latency_s = _plan_latency(plan, efficiency)
    return CollectiveResult(
        op=op.value,
        message_bytes=float(message_bytes),
        n_ranks=comm.n_ranks,
        algorithm=plan.algorithm,
        protocol=plan.protocol,
        time_s=t,
        latency_s=latency_s,
        algbw_bytes_per_s=algbw,
        busbw_bytes_per_s=algbw * busbw_factor(op, comm.n_ranks),
        network_time_s={
            ("scale-up" if hot.tier == topo.tier_name(0) else "scale-out") if hot else "scale-out": t
        },
        bottleneck=bottleneck(hot.tier if hot else "none", latency_s, t),
        explanation=_fabric_explanation(
            plan,
            routing,
            seed,
            res,
            note + _host_link_note(topo, res, efficiency),
            _time_setter(plan, res, message_bytes, efficiency),
        ),
        convention=f"per_direction/{efficiency}",
        engine=engine,
        extra={"fabric": res, "tier_bytes": _tier_bytes(topo, res)},
    )


def nccl_protocol_choice(
    op: Collective,
    message_bytes: float,
    spec: ClusterSpec,
    comm: Communicator,
    algorithm: Algorithm,
    efficiency: str = "nccl",
) -> Protocol:
    """The protocol NCCL's tuner (the formula engine) picks for ``algorithm`` at this size: the one the
    plan runs, so that its latency and LL/LL128 bandwidth are those of the call NCCL makes (Simple under
    ``efficiency="line_rate"``, which charges neither, and for one rank).

    1 GiB ring all_reduce on 32 x 8 H100 (dgx-h100-superpod): ring/LL128, 7.03 ms, where Simple pays 510
    steps of per-step latency x 1.4 on its plateau (tuning.cc) and takes 8.80 ms. An algorithm without a
    plan for ``op`` gets Simple here: :func:`~aifabric.collectives.algorithms.build_plan` refuses it."""
    entry = ALGORITHMS[algorithm]
    if comm.n_ranks < 2 or efficiency != "nccl" or entry.plan is None or op not in entry.ops:
        return Protocol.SIMPLE
    picked = formula_collective(op, message_bytes, spec, comm, algorithm=algorithm.value)
    return Protocol(picked.protocol)


def nccl_plan_choice(
    op: Collective, message_bytes: float, spec: ClusterSpec, comm: Communicator
) -> tuple[Algorithm, str]:
    """The algorithm NCCL's tuner (the formula engine) picks when it has a plan, else the collective's
    default plan and a note saying what NCCL would run instead."""
    if comm.n_ranks < 2:
        return default_plan_algorithm(op), ""
    picked = Algorithm.parse(formula_collective(op, message_bytes, spec, comm).algorithm)
    if ALGORITHMS[picked].plan is not None:
        return picked, ""
    fallback = default_plan_algorithm(op)
    return fallback, (
        f"; NCCL's tuner would run {picked.value} here, which has no transfer-level plan: this is "
        f"{fallback.value}"
    )
