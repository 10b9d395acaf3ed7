"""The algorithm registry: every collective algorithm declared once.

Each :class:`AlgorithmSpec` names the collectives it serves, where it applies (a rule on the communicator
and the cluster's tiers), the protocols it runs with, its cost function (formula engine; the formula is
in the function's docstring) and, where it has one, its CommPlan builder (links and flow engines). The
formula engine, the topology engines, the CLI's ``--algo`` choices and the tests all read
:data:`ALGORITHMS`; nothing else compares algorithm names.

=============  ===============================  =========================================  ===========
algorithm      collectives                      applies when                               plan
=============  ===============================  =========================================  ===========
ring           all_reduce, all_gather,          always (not on one torus domain)           ring_plan
               reduce_scatter
tree           all_reduce                       several domains                            --
nvls           all_reduce; all_gather,          one NVSwitch domain with NVLS, g > 1,      --
               reduce_scatter (NCCL >= 2.19.1,  NCCL enables it (release, arch, g); several
               asked for only)                  only with CollNet (SHARP), all_reduce only
nvls_tree      all_reduce                       several such domains, g > 1, NCCL          --
                                                enables it (release, nodes)
hierarchical*  all_reduce                       several uniform domains, g > 1             hierarchical_plan
flat_ring*     all_reduce, all_gather,          several domains joined by NICs             flat_ring_plan
               reduce_scatter
direct         all_to_all                       always                                     direct_plan
chain          broadcast, reduce                always                                     ring_plan
pat            all_gather, reduce_scatter       one rank per domain, several domains       --
p2p            send_recv                        always (a pair, or a ring of sends)        p2p_plan
collnet_direct all_reduce, all_gather,          several uniform NVSwitch nodes of <= 8 GPUs, --
               reduce_scatter (NCCL >= 2.20.3)  CollNet on (NCCL_COLLNET_ENABLE=1, SHARP
                                                switches: TierModel.collnet)
collnet_chain  all_reduce                       several uniform nodes, CollNet on          --
torus          every collective                 one torus domain (and then only it)        --
msccl          all_reduce                       RCCL's tables (a stated RCCL release), one  --
                                                xGMI mesh of gfx942, a kernel for the rank
                                                count; runs, where a kernel serves the
                                                size, whatever the tuner prices
=============  ===============================  =========================================  ===========

``*``: textbook algorithms NCCL never picks by itself; timed only when asked for.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from aifabric.catalog import nccl
from aifabric.catalog.nccl import NvlsSupport, nccl_release, nccl_release_versions, nvls_support
from aifabric.cluster.spec import ClusterSpec
from aifabric.collectives import plan as plans
from aifabric.collectives.collnet import collnet_chain_cost, collnet_direct_cost
from aifabric.collectives.communicator import Communicator
from aifabric.collectives.cost import Algorithm, Cost
from aifabric.collectives.direct import direct_cost, p2p_channel_floor_s, p2p_cost
from aifabric.collectives.hierarchical import hierarchical_cost
from aifabric.collectives.msccl import msccl_allpairs_applies, msccl_allpairs_cost
from aifabric.collectives.nccl_env import env_tiers
from aifabric.collectives.nvls import nvls_collective_cost, nvls_tree_cost
from aifabric.collectives.ops import Collective
from aifabric.collectives.pat import pat_cost
from aifabric.collectives.plan import AllPairsStage, CommPlan, Stage
from aifabric.collectives.ring import chain_cost, flat_ring_cost, ring_cost
from aifabric.collectives.tiers import Protocol, TierModel, tier_model
from aifabric.collectives.torus import torus_cost
from aifabric.collectives.tree import tree_cost
from aifabric.lazy_import import lazy_module

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_module("numpy")  # loaded when a plan is built: the formula engine never needs numpy

__all__ = [
    "ALGORITHMS",
    "Algorithm",
    "AlgorithmSpec",
    "Cost",
    "Protocol",
    "applicable",
    "build_plan",
    "collnet_release_note",
    "default_plan_algorithm",
    "plan_algorithms",
    "plan_tiers",
    "release_note",
]

CostFunction = Callable[[Collective, Protocol, float, Communicator, TierModel], Cost | None]
AppliesFunction = Callable[[Communicator, TierModel], bool]
PlanFunction = Callable[
    [Collective, float, ClusterSpec, "np.ndarray", TierModel], tuple[Stage | AllPairsStage, ...]
]
FloorFunction = Callable[[Collective, float, Communicator, TierModel], float]

_RING_OPS = frozenset({Collective.ALL_REDUCE, Collective.ALL_GATHER, Collective.REDUCE_SCATTER})
_ALL_REDUCE = frozenset({Collective.ALL_REDUCE})
_GATHER_SCATTER = frozenset({Collective.ALL_GATHER, Collective.REDUCE_SCATTER})
_ALL_PROTOCOLS = frozenset(Protocol)
_SIMPLE = frozenset({Protocol.SIMPLE})


@dataclass(frozen=True)
class AlgorithmSpec:
    """One collective algorithm, once: where it applies, its closed-form cost, its transfers.

    Attributes
    ----------
    algorithm : Algorithm
    ops : frozenset of Collective
        The collectives it serves.
    applies : callable (Communicator, TierModel) -> bool
        Whether it can run on this communicator and cluster (beyond serving the collective).
    cost : callable
        ``cost(op, protocol, message_bytes, comm, tiers) -> Cost | None``, seconds; the formula engine.
    plan : callable or None
        ``plan(op, message_bytes, spec, gpus) -> stages``; None: formula engine only.
    floor : callable or None
        ``floor(op, message_bytes, comm, tiers) -> seconds``: the least bandwidth time the algorithm's
        endpoints allow whatever the links carry (NCCL's p2p channels to a network peer), which the links
        and flow engines charge as the plan's ``floor_s``; None: no such bound.
    protocols : frozenset of Protocol
        The protocols it runs with (NVLS, the textbook algorithms and the torus: Simple only).
    nccl : bool
        False for a textbook algorithm NCCL never picks by itself (timed only when asked for).
    exclusive : bool
        When it applies, nothing else does (a TPU torus runs no NCCL algorithm).
    release_gated : bool
        NCCL runs it for a collective only from the release whose tuning tables cost it for that collective
        (``NcclRelease.algorithms``: CollNet Direct all_gather / reduce_scatter from 2.20.3).
    preempts : bool
        The library runs it wherever its cost function returns a cost, before its tuner compares the
        others (RCCL's MSCCL scheduler, ``msccl_lifecycle.cc``, ahead of ``tuning.cc``).
    asked_only : frozenset of Collective
        The collectives for which the formula engine times it only when nothing else NCCL runs is left
        (``NCCL_ALGO`` or ``algorithm=`` asks for it). NVLS all_gather / reduce_scatter: NCCL's tuner
        prices them under the ring on every default channel count (:func:`~aifabric.collectives.nvls.
        nvls_gather_tuner_price`: 208 against 423.8 GB/s on 8 x H100, 2.29.2), so NCCL runs the ring. Only
        a ring capped by ``NCCL_MAX_NCHANNELS`` (<= 12 channels on 8 x H100) loses that price, and NCCL then
        runs NVLS though it gives fewer channels more time; the engine keeps the ring there (more channels
        never slower, tests/collectives/test_more_bandwidth_never_slower.py).
    """

    algorithm: Algorithm
    ops: frozenset[Collective]
    applies: AppliesFunction
    cost: CostFunction
    plan: PlanFunction | None = None
    protocols: frozenset[Protocol] = _ALL_PROTOCOLS
    nccl: bool = True
    exclusive: bool = False
    release_gated: bool = False
    preempts: bool = False
    asked_only: frozenset[Collective] = frozenset()
    floor: FloorFunction | None = None


def _always(comm: Communicator, tm: TierModel) -> bool:
    return True


def _single_torus(comm: Communicator, tm: TierModel) -> bool:
    return tm.intra_kind == "torus" and comm.n_domains == 1


def _several_domains(comm: Communicator, tm: TierModel) -> bool:
    return comm.n_domains > 1


@cache
def _nvls_enabled(version: str, row: str, nnodes: int, local_gpus: int, collnet: bool) -> NvlsSupport:
    return nvls_support(nccl_release(version), row, nnodes=nnodes, local_gpus=local_gpus, collnet=collnet)


def _nvls(comm: Communicator, tm: TierModel) -> NvlsSupport:
    """NCCL's NVLS / NVLS-tree enablement for this release, architecture, node count, local GPUs and CollNet
    (:func:`aifabric.catalog.nccl.nvls_support`: nvls.cc and tuning.cc)."""
    return _nvls_enabled(tm.release.version, tm.tuning_row, comm.n_domains, comm.ranks_per_domain, tm.collnet)


def _nvls_flat(comm: Communicator, tm: TierModel) -> bool:
    """Flat NVLS: one domain, or several with CollNet (SHARP) and the same GPUs in each."""
    several = comm.n_domains > 1 and tm.collnet and comm.uniform
    return tm.nvls and comm.ranks_per_domain > 1 and (comm.n_domains == 1 or several) and _nvls(comm, tm).nvls


def _nvls_several_domains(comm: Communicator, tm: TierModel) -> bool:
    return tm.nvls and comm.ranks_per_domain > 1 and comm.n_domains > 1 and _nvls(comm, tm).nvls_tree


def _uniform_domains(comm: Communicator, tm: TierModel) -> bool:
    return comm.n_domains > 1 and comm.ranks_per_domain > 1 and comm.uniform


def _one_rank_per_domain(comm: Communicator, tm: TierModel) -> bool:
    return comm.n_domains > 1 and comm.ranks_per_domain == 1 and tm.nic_bytes_per_s > 0


def _across_nics(comm: Communicator, tm: TierModel) -> bool:
    return comm.n_domains > 1 and tm.nic_bytes_per_s > 0


#: NCCL's CollNet Direct serves at most NCCL_MAX_DIRECT_ARITY + 1 = 8 local ranks (src/include/device.h).
_COLLNET_DIRECT_MAX_LOCAL = 8


def _collnet_chain(comm: Communicator, tm: TierModel) -> bool:
    """CollNet on (``tm.collnet``), >= 2 nodes (NCCL_COLLNET_NODE_THRESHOLD, init.cc), same GPUs per node."""
    return tm.collnet and comm.n_domains > 1 and comm.uniform and tm.nic_bytes_per_s > 0


def _collnet_direct(comm: Communicator, tm: TierModel) -> bool:
    """As :func:`_collnet_chain`, on NVSwitch nodes (tuning.cc: no Direct without) of <= 8 ranks."""
    return (
        _collnet_chain(comm, tm)
        and tm.intra_kind == "nvlink"
        and comm.ranks_per_domain <= _COLLNET_DIRECT_MAX_LOCAL
    )


#: Every algorithm aifabric knows, in the order the formula engine lists candidates.
ALGORITHMS: dict[Algorithm, AlgorithmSpec] = {
    a.algorithm: a
    for a in (
        AlgorithmSpec(
            Algorithm.TORUS,
            frozenset(Collective),
            _single_torus,
            torus_cost,
            protocols=_SIMPLE,
            exclusive=True,
        ),
        AlgorithmSpec(Algorithm.RING, _RING_OPS, _always, ring_cost, plans.ring_plan),
        AlgorithmSpec(
            Algorithm.HIERARCHICAL,
            _ALL_REDUCE,
            _uniform_domains,
            hierarchical_cost,
            plans.hierarchical_plan,
            protocols=_SIMPLE,
            nccl=False,
        ),
        AlgorithmSpec(
            Algorithm.FLAT_RING,
            _RING_OPS,
            _across_nics,
            flat_ring_cost,
            plans.flat_ring_plan,
            protocols=_SIMPLE,
            nccl=False,
        ),
        AlgorithmSpec(Algorithm.TREE, _ALL_REDUCE, _several_domains, tree_cost),
        AlgorithmSpec(
            Algorithm.NVLS,
            _RING_OPS,
            _nvls_flat,
            nvls_collective_cost,
            protocols=_SIMPLE,
            asked_only=_GATHER_SCATTER,
        ),
        AlgorithmSpec(
            Algorithm.NVLS_TREE, _ALL_REDUCE, _nvls_several_domains, nvls_tree_cost, protocols=_SIMPLE
        ),
        AlgorithmSpec(
            Algorithm.DIRECT,
            frozenset({Collective.ALL_TO_ALL}),
            _always,
            direct_cost,
            plans.direct_plan,
            _SIMPLE,
        ),
        AlgorithmSpec(
            Algorithm.CHAIN,
            frozenset({Collective.BROADCAST, Collective.REDUCE}),
            _always,
            chain_cost,
            plans.ring_plan,
        ),
        AlgorithmSpec(
            Algorithm.PAT,
            _GATHER_SCATTER,
            _one_rank_per_domain,
            pat_cost,
            protocols=_SIMPLE,
            release_gated=True,  # NCCL 2.23 on (nccl_releases.yaml: pat_bw_factor null before)
        ),
        AlgorithmSpec(
            Algorithm.P2P,
            frozenset({Collective.SEND_RECV}),
            _always,
            p2p_cost,
            plans.p2p_plan,
            _SIMPLE,
            floor=p2p_channel_floor_s,
        ),
        AlgorithmSpec(
            Algorithm.COLLNET_DIRECT,
            _RING_OPS,
            _collnet_direct,
            collnet_direct_cost,
            protocols=_SIMPLE,
            release_gated=True,
        ),
        AlgorithmSpec(
            Algorithm.COLLNET_CHAIN, _ALL_REDUCE, _collnet_chain, collnet_chain_cost, protocols=_SIMPLE
        ),
        AlgorithmSpec(
            Algorithm.MSCCL,
            _ALL_REDUCE,
            msccl_allpairs_applies,
            msccl_allpairs_cost,
            protocols=frozenset({Protocol.LL, Protocol.SIMPLE}),
            preempts=True,
        ),
    )
}


def applicable(op: Collective, comm: Communicator, tm: TierModel) -> list[AlgorithmSpec]:
    """The algorithms that serve ``op`` and apply on ``comm`` and ``tm``, in registry order."""
    serving = [
        a
        for a in ALGORITHMS.values()
        if op in a.ops and a.applies(comm, tm) and release_note(a.algorithm, op, tm) is None
    ]
    exclusive = [a for a in serving if a.exclusive]
    return exclusive[:1] if exclusive else serving


def release_note(algorithm: Algorithm, op: Collective, tm: TierModel) -> str | None:
    """Why ``tm.release`` does not run ``algorithm`` for ``op`` (one line naming the release the user
    stated and the table it uses), or None when it does or the algorithm is not release-gated
    (:attr:`AlgorithmSpec.release_gated`)."""
    if not ALGORITHMS[algorithm].release_gated:
        return None
    return _release_note(tm.nccl_version, tm.release.version, algorithm, op)


@cache
def _release_note(asked: str, version: str, algorithm: Algorithm, op: Collective) -> str | None:
    name, coll = nccl.Algorithm(algorithm.value), nccl.Collective(op.value)
    costed = nccl_release(version).algorithms.get(coll, ())
    if name in costed:
        return None
    runs = [v for v in nccl_release_versions() if name in nccl_release(v).algorithms.get(coll, ())]
    since = f" (NCCL runs it from {runs[0]} on)" if runs else ""
    exact = asked.lstrip("v") in ("", version) or asked.count(".") < 2  # "2.19": that series' newest
    label = version if exact else f"{asked} (tuning tables of {version})"
    return (
        f"algorithm: NCCL {label} has no {algorithm.value} {op.value}{since}; its tuning.cc costs "
        f"{', '.join(a.value for a in costed)}"
    )


def collnet_release_note(op: Collective, tm: TierModel) -> str | None:
    """Why CollNet does not run ``op`` on ``tm``'s NCCL release (:func:`release_note` of the first
    release-gated CollNet algorithm for ``op``), or None when the release has it or ``op`` has none."""
    for algo in (Algorithm.COLLNET_DIRECT, Algorithm.COLLNET_CHAIN):
        if op in ALGORITHMS[algo].ops and (note := release_note(algo, op, tm)) is not None:
            return note
    return None


def plan_algorithms() -> tuple[Algorithm, ...]:
    """The algorithms that have a transfer-level plan (what the links and flow engines can run)."""
    return tuple(a.algorithm for a in ALGORITHMS.values() if a.plan is not None)


def default_plan_algorithm(op: Collective) -> Algorithm:
    """The first NCCL algorithm with a plan that serves ``op`` (ring, direct, chain or p2p)."""
    return next(a.algorithm for a in ALGORITHMS.values() if a.nccl and a.plan is not None and op in a.ops)


def build_plan(
    op: Collective | str,
    message_bytes: float,
    spec: ClusterSpec,
    gpus: np.ndarray,
    *,
    algorithm: Algorithm | str | None = None,
    job: str = "job0",
    protocol: Protocol | str = Protocol.SIMPLE,
) -> CommPlan:
    """Decompose a collective on the GPUs ``gpus`` (rank i on ``gpus[i]``) into a :class:`CommPlan`.

    Parameters
    ----------
    op : Collective or str
    message_bytes : float
        nccl-tests size convention (:mod:`aifabric.collectives.ops`), > 0.
    spec : ClusterSpec
    gpus : ndarray of int, shape (n_ranks,)
    algorithm : Algorithm or str, optional
        One of :func:`plan_algorithms`; default :func:`default_plan_algorithm`.
    protocol : Protocol or str, optional
        The NCCL protocol the plan runs with (default Simple): its latency and, for LL/LL128, its
        bandwidth as the endpoints' floor (:func:`_plan_timing`).

    Raises
    ------
    ValueError
        For a size <= 0, an unknown algorithm, one without a plan, one that does not serve ``op``, or a
        protocol NCCL has no latency for there.

    Examples
    --------
    >>> from aifabric.cluster.presets import preset
    >>> p = build_plan("all_reduce", 1.6e9, preset("h100-ib-2node"), np.arange(16))
    >>> p.stages[0].repeat, p.stages[0].n_transfers, float(p.stages[0].bytes_[0])  # 2(n-1), 16 x 8, S/(n g)
    (30, 128, 12500000.0)
    """
    op = Collective.parse(op)
    if not message_bytes > 0:
        raise ValueError(f"size: message size must be > 0 bytes, got {message_bytes!r}")
    algo = default_plan_algorithm(op) if algorithm is None else Algorithm.parse(algorithm)
    entry = ALGORITHMS[algo]
    if entry.plan is None:
        known = ", ".join(a.value for a in plan_algorithms())
        raise ValueError(
            f"algorithm: {algo.value!r} has no transfer-level decomposition; the links/flow engines know "
            f"{known}"
        )
    if op not in entry.ops:
        serves = ", ".join(sorted(o.value for o in entry.ops))
        raise ValueError(f"algorithm: {algo.value!r} does not apply to {op.value} (it serves {serves})")
    gpus = np.asarray(gpus, dtype=np.int64)
    tm = plan_tiers(spec)
    stages = entry.plan(op, float(message_bytes), spec, gpus, tm)
    proto = Protocol(protocol)
    latency, floor = _plan_timing(entry, op, proto, float(message_bytes), gpus, spec, tm)
    return CommPlan(
        op.value,
        algo.value,
        float(message_bytes),
        int(gpus.size),
        stages,
        job=job,
        latency_s=latency,
        floor_s=floor,
        protocol=proto.value,
    )


def plan_tiers(spec: ClusterSpec) -> TierModel:
    """The tiers the formula engine prices a plan's collective with, on the transports the default
    environment selects (:func:`~aifabric.collectives.nccl_env.env_tiers`: a host copy per network hop
    with GPUDirect RDMA off): a plan built on them (a full mesh's NCCL rings, its release's search tables)
    and its timing read the same release as the formula engine, so the engines cannot diverge."""
    return env_tiers(None, spec, tier_model(spec)).tiers


def _plan_timing(
    entry: AlgorithmSpec,
    op: Collective,
    proto: Protocol,
    message_bytes: float,
    gpus: np.ndarray,
    spec: ClusterSpec,
    tm: TierModel,
) -> tuple[float, float]:
    """The latency the formula engine charges ``entry`` with ``proto`` on ``tm`` (:func:`plan_tiers`), and
    its endpoints' floor, seconds; both 0 for one rank.

    The floor is ``AlgorithmSpec.floor`` (0 without one) and, with LL or LL128, the protocol's bandwidth
    seconds as the formula engine prices them: ``tuning.cc``'s refinements (ring LL128 ``busBw x 0.92``,
    LL ``min(llMaxBw, busBw x 1/4)``) and the per-channel caps ``enqueue.cc`` runs the call's channels at
    (:func:`~aifabric.collectives.tiers.call_bandwidth`) bound what the ranks' kernels move, whatever the
    links carry; the links and flow engines move the payload on the links and take the larger time.

    Raises
    ------
    ValueError
        ``protocol: ...`` where NCCL has no latency for ``proto`` on these tiers.
    """
    if gpus.size < 2:
        return 0.0, 0.0
    comm = Communicator.from_gpus(spec, gpus)
    cost = entry.cost(op, proto, message_bytes, comm, tm)
    if proto not in entry.protocols or (cost is None and proto is not Protocol.SIMPLE):
        raise ValueError(f"protocol: NCCL has no {proto.value} latency for {entry.algorithm.value} here")
    floor = entry.floor(op, message_bytes, comm, tm) if entry.floor is not None else 0.0
    if cost is not None and proto is not Protocol.SIMPLE:
        floor = max(floor, sum(cost.bandwidth_s.values()))
    return (cost.latency_s if cost is not None else 0.0), floor
