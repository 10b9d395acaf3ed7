"""A traffic scenario on a cluster's real links: jobs placed, each running a collective or a pattern.

This is what ``aifabric fabric`` and :func:`aifabric.fabric` run: build the Topology, place ``jobs`` equal
jobs, decompose each job's traffic into a :class:`~aifabric.collectives.plan.CommPlan` (a collective through
:func:`~aifabric.collectives.plan.build_plan`, a pattern through
:func:`~aifabric.collectives.traffic.pattern_plan`), fail links, and simulate the plans together with
:func:`~aifabric.engines.fabric.simulate_plans`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from aifabric.cluster.placement import place_jobs
from aifabric.cluster.spec import ClusterSpec
from aifabric.cluster.topology import Topology, build_topology
from aifabric.collectives.algorithms import Algorithm, build_plan
from aifabric.collectives.communicator import Communicator
from aifabric.collectives.ops import Collective, busbw_factor
from aifabric.collectives.plan import CommPlan
from aifabric.collectives.traffic import PATTERNS, pattern_plan
from aifabric.engines.fabric import FabricResult, nccl_plan_choice, nccl_protocol_choice, simulate_plans
from aifabric.engines.failures import parse_failures
from aifabric.engines.flowsim import Progress
from aifabric.errors import NoRoute

__all__ = ["DEFAULT_ROUTING", "JobTime", "Scenario", "run_scenario"]

#: The routing of a fabric scenario when none is given: per-flow ECMP hashing, what a deployed Clos does
#: without packet spraying or adaptive routing (the links and flow engines alone default to the
#: contention-free ``spray``, :data:`aifabric.engines.routing.DEFAULT_POLICY`).
DEFAULT_ROUTING = "ecmp"


@dataclass(frozen=True)
class JobTime:
    """One job's completion: ``time_s`` (s) and its bus bandwidth (bytes/s per direction; nccl-tests busbw
    for a collective, bytes per flow / time / ranks for a pattern)."""

    job: str
    n_ranks: int
    time_s: float
    busbw_bytes_per_s: float


@dataclass(frozen=True)
class Scenario:
    """A simulated scenario: its inputs, the plans, the engine's result and per-tier utilisation.

    ``tiers`` maps a tier name to (mean, max) utilisation over the links of that tier that carried traffic.
    """

    traffic: str
    message_bytes: float
    spec: ClusterSpec
    topology: Topology
    plans: tuple[CommPlan, ...]
    result: FabricResult
    jobs: tuple[JobTime, ...]
    tiers: dict[str, tuple[float, float]]
    engine: str
    routing: str
    placement: str
    seed: int
    nodes_per_job: int
    notes: tuple[str, ...] = ()

    @property
    def is_pattern(self) -> bool:
        """True for a traffic pattern (sizes per flow), False for a collective (nccl-tests size)."""
        return self.traffic in PATTERNS

    def run_fields(self) -> dict[str, object]:
        """How the scenario ran and its headline figures, as the JSON documents give them: engine,
        routing, placement, seed, completion and ideal time (s), efficiency (ideal / completion) and mean
        job efficiency."""
        res = self.result
        return {
            "engine": self.engine,
            "routing": self.routing,
            "placement": self.placement,
            "seed": self.seed,
            "time_s": res.time_s,
            "ideal_time_s": res.ideal_time_s,
            "efficiency": res.efficiency,
            "mean_job_efficiency": self.mean_job_efficiency,
        }

    @property
    def mean_job_efficiency(self) -> float:
        """Mean over jobs of ideal time / job time (1.0 with no job times)."""
        res = self.result
        if not res.job_time_s:
            return 1.0
        return float(np.mean([res.ideal_time_s / t for t in res.job_time_s.values()]))


def _collective_plan(
    traffic: str, message_bytes: float, spec: ClusterSpec, gpus: np.ndarray, algorithm: str | None
) -> tuple[CommPlan, str]:
    """One job's collective plan over ``gpus`` with ``algorithm`` (default: what NCCL's tuner picks,
    :func:`~aifabric.engines.fabric.nccl_plan_choice`) and the protocol the tuner picks for it
    (:func:`~aifabric.engines.fabric.nccl_protocol_choice`), and the tuner's note ("" when none)."""
    comm = Communicator.from_gpus(spec, gpus)
    chosen, note = (
        (algorithm, "")
        if algorithm is not None
        else nccl_plan_choice(Collective.parse(traffic), message_bytes, spec, comm)
    )
    op = Collective.parse(traffic)
    proto = nccl_protocol_choice(op, message_bytes, spec, comm, Algorithm.parse(chosen))
    return build_plan(op, message_bytes, spec, gpus, algorithm=chosen, protocol=proto), note


def _job_plans(
    traffic: str,
    message_bytes: float,
    spec: ClusterSpec,
    placed: list[np.ndarray],
    algorithm: str | None,
    seed: int,
) -> tuple[list[CommPlan], list[str]]:
    """The plan of each placed job (named ``job0``, ``job1``...; a pattern seeded ``seed + j``) and the
    first job's note on the algorithm NCCL's tuner would run, if any."""
    _check_pair_jobs(traffic, placed)
    plans = []
    notes: list[str] = []
    for j, g in enumerate(placed):
        if traffic in PATTERNS:
            p = pattern_plan(traffic, g, message_bytes, seed=seed + j, job=f"job{j}")
        else:
            plan, note = _collective_plan(traffic, message_bytes, spec, g, algorithm)
            notes += [note.removeprefix("; ")] if note and not notes else []
            p = dataclasses.replace(plan, job=f"job{j}")
        plans.append(p)
    return plans, notes


def _check_pair_jobs(traffic: str, placed: list[np.ndarray]) -> None:
    """Refuse ``send_recv`` on jobs that are not a pair of GPUs, saying what times a pair: a send_recv is
    between two ranks, and the fabric command places jobs of whole nodes (``--nodes``, ``--job-nodes``),
    so it runs one only where a job is two GPUs. ``aifabric collective send_recv --ranks 2`` times one
    pair; the ``permutation`` pattern loads the whole fabric with pairs."""
    sizes = sorted({int(g.size) for g in placed})
    if traffic not in PATTERNS and Collective.parse(traffic) is Collective.SEND_RECV and sizes != [2]:
        raise ValueError(
            f"send_recv: a pair of ranks, but fabric's jobs are whole nodes ({sizes[-1]} GPUs a job here); "
            "time one pair with aifabric collective send_recv --ranks 2 --engine flow, or pairs across the "
            "fabric with aifabric fabric permutation"
        )


def _tier_utilisation(topo: Topology, res: FabricResult) -> dict[str, tuple[float, float]]:
    """Tier name -> (mean, max) utilisation over the links of that tier that carried bytes."""
    tiers = {}
    for t in np.unique(topo.link_tier):
        sel = (topo.link_tier == t) & (res.link_bytes > 0)
        if sel.any():
            tiers[topo.tier_name(int(t))] = (
                float(res.link_utilisation[sel].mean()),
                float(res.link_utilisation[sel].max()),
            )
    return tiers


def _job_times(traffic: str, plans: list[CommPlan], res: FabricResult) -> tuple[JobTime, ...]:
    """Each job's completion time (s; the run's makespan for a job without its own) and bus bandwidth
    (bytes/s per direction: nccl-tests busbw for a collective, bytes / time / ranks for a pattern)."""
    rows = []
    for p in plans:
        t = res.job_time_s.get(p.job, res.time_s)
        bus = (
            p.message_bytes / t / p.n_ranks
            if traffic in PATTERNS
            else p.message_bytes / t * busbw_factor(p.op, p.n_ranks)
        )
        rows.append(JobTime(p.job, p.n_ranks, t, bus))
    return tuple(rows)


@contextmanager
def _named_failures(fail: str | None) -> Iterator[None]:
    """A :class:`NoRoute` raised under ``--fail`` names the failures that left no route."""
    try:
        yield
    except NoRoute as e:
        if fail is None:
            raise
        raise NoRoute(f"--fail {fail!r} leaves no route: {e}") from None


def run_scenario(
    traffic: str,
    message_bytes: float,
    spec: ClusterSpec,
    *,
    engine: str = "flow",
    routing: str = DEFAULT_ROUTING,
    qps: int = 4,
    polarized: bool = False,
    jobs: int = 1,
    job_nodes: int | None = None,
    placement: str = "packed",
    algorithm: str | None = None,
    fail: str | None = None,
    seed: int = 0,
    top: int = 5,
    progress: Progress | None = None,
    transport: str | None = None,
) -> Scenario:
    """Simulate ``jobs`` equal jobs of ``traffic`` on ``spec``'s links.

    Parameters
    ----------
    traffic : str
        A collective (nccl-tests size convention) or a pattern of
        :data:`~aifabric.collectives.traffic.PATTERNS` (``message_bytes`` per flow).
    message_bytes : float
        Bytes, > 0.
    spec : ClusterSpec
        A switched (Clos) cluster.
    engine, routing, qps, polarized, seed, top, progress, transport
        As :func:`~aifabric.engines.fabric.simulate_plans`.
    jobs, job_nodes, placement
        Equal jobs of ``job_nodes`` nodes (default: all nodes / jobs), placed by
        :func:`~aifabric.cluster.placement.place_jobs`.
    algorithm : str, optional
        Collective decomposition (``ring``, ``hierarchical``, ``flat_ring`` ...); default: what NCCL's tuner
        picks (:func:`~aifabric.engines.fabric.nccl_plan_choice`), with a note when that has no plan.
    fail : str, optional
        Failures (``fabric:0.05``, ``spine:3``, ``link:120``), read by
        :func:`~aifabric.engines.failures.parse_failures`.

    Raises
    ------
    ValueError
        A torus cluster (no switched links), or jobs that do not fit the nodes.
    ConfigError, NoRoute
        Unknown engine, routing or placement; failures that disconnect two ranks.
    """
    if spec.scale_up.kind == "torus":
        raise ValueError(
            f"--cluster: {spec.name} is a torus (TPU ICI); the links/flow engines model switched Clos "
            "fabrics only: time its collectives with aifabric collective --engine formula"
        )
    topo = build_topology(spec)
    n_job = job_nodes or spec.n_nodes // jobs
    if n_job < 1:
        raise ValueError(f"--jobs: {jobs} jobs do not fit {spec.n_nodes} nodes")
    placed = place_jobs(topo, [n_job] * jobs, policy=placement, seed=seed)
    plans, notes = _job_plans(traffic, message_bytes, spec, placed, algorithm, seed)
    with _named_failures(fail):
        res = simulate_plans(
            topo,
            plans,
            engine=engine,
            routing=routing,
            seed=seed,
            qps=qps,
            polarized=polarized,
            link_alive=parse_failures(topo, fail, seed=seed),
            top=top,
            progress=progress,
            transport=transport,
        )
    return Scenario(
        traffic=traffic,
        message_bytes=float(message_bytes),
        spec=spec,
        topology=topo,
        plans=tuple(plans),
        result=res,
        jobs=_job_times(traffic, plans, res),
        tiers=_tier_utilisation(topo, res),
        engine=engine,
        routing=routing,
        placement=placement,
        seed=seed,
        nodes_per_job=n_job,
        notes=tuple(notes),
    )
