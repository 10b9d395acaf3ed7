"""The transport's fluid model over the flow engine's links: the hook behind ``--transport NAME``.

The flow engine routes every transfer of a plan onto the topology's links as a column of a links x
sub-flows incidence matrix, whose entries are the fraction of the sub-flow crossing each link (1 on a
single path; ``1/k`` on each of ``k`` sprayed paths). The fluid model needs ordered paths, so each column
is decomposed into paths (the standard flow decomposition of a DAG: from the column's source node follow
the out-link with the most residual fraction to a sink, take the path's smallest residual as its weight,
subtract, repeat), ordered by the links' ``link_src -> link_dst``.

Stages run in order, the k-th stages of all jobs together (as the flow engine routes them). A stage that
repeats ``r`` times (the 2 (n - 1) steps of a ring) runs as one transfer of ``r`` times its bytes: NCCL
pipelines a ring's steps over ``NCCL_STEPS = 8`` buffer slots (NVIDIA/nccl ``src/include/device.h``), so a
step does not wait for its predecessor's acknowledgement; a schedule whose steps do wait is a chain of
flows (:func:`~aifabric.transport.fluidnet.simulate_fluid`, ``after``). A job's time is the sum of its
stages'.

Before anything runs, the work is estimated: per stage, ``ceil(T_k / dt) x E_k`` with ``T_k`` the stage's
contention-free time (its busiest link's bytes at the link's capacity, or its slowest path alone; a lower
bound of the steps the model takes) and ``E_k`` its (flow, hop) entries; a plan whose total exceeds
``max_work`` (default :data:`MAX_FLUID_WORK`) is refused with the figure, never run silently for minutes.

Every flow's base round trip is its path's (:func:`path_rtt`), from the same link latencies the flow engine
charges (the catalogue's switch latency of each tier), not the fluid model's 12 us default: it sets the
ACK wait of chained steps, NACK delays, BDP windows and DCQCN's feedback delay of that flow.

On a credit-based fabric the receive buffer is raised to two steps of the fastest link when the
configured one is smaller (a floor of the step discretisation, applied to every fluid run by
:func:`~aifabric.transport.fluidnet.with_step_floor`). This is a small-scale model (it steps
every 0.5 us while anything queues; quiet stretches move in closed form and cost less than the work
estimate counts); its memory is checked before a run (:func:`~aifabric.transport.fluidnet.fluid_bytes`).
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
from scipy import sparse

from aifabric.errors import ConfigError
from aifabric.transport.fluidnet import FluidConfig, FluidResult, simulate_fluid, transport

__all__ = [
    "MAX_FLUID_WORK",
    "TransportRun",
    "decompose_paths",
    "fluid_work",
    "path_rtt",
    "probe_fluid_work",
    "run_transport",
]

_EPS = 1e-9
MAX_FLUID_WORK = 1e9
"""Most (step x (flow, hop) entry) updates a transport run may take (module docstring): a CLI budget of
about half a minute, the fluid model costing about 2.4e-8 s per update on one core (measured: ``aifabric
fabric all_reduce --nodes 128 --routing spray --transport roce-pfc``, 2.2e8 updates in 5.4 s)."""

_T = TypeVar("_T")
_PROBING: ContextVar[bool] = ContextVar("fluid_work_probing", default=False)


class _Probed(Exception):
    """Raised by :func:`run_transport` under :func:`probe_fluid_work`: its estimated work, nothing run."""

    def __init__(self, work: float) -> None:
        super().__init__(work)
        self.work = work


def probe_fluid_work(call: Callable[[], _T]) -> tuple[float, _T | None]:
    """The work a call's transport run would take, estimated without running it.

    Within the probe :func:`run_transport` stops once its work (:func:`fluid_work`, summed over stages) is
    known, before its own ``max_work`` check, so a sweep can add its sizes' work up front and refuse the
    whole. Returns ``(work, None)`` when the call reached a transport run, ``(0.0, result)`` when it ran to
    the end without one (its result, to be reused rather than computed again).
    """
    token = _PROBING.set(True)
    try:
        return 0.0, call()
    except _Probed as probed:
        return probed.work, None
    finally:
        _PROBING.reset(token)


def decompose_paths(
    links: np.ndarray, fractions: np.ndarray, link_src: np.ndarray, link_dst: np.ndarray
) -> list[tuple[list[int], float]]:
    """Ordered paths and their weights (fractions of the sub-flow) of one incidence column.

    Parameters
    ----------
    links : ndarray of int
        The links the sub-flow crosses.
    fractions : ndarray of float
        The fraction crossing each (in (0, 1]).
    link_src, link_dst : ndarray of int
        The topology's link endpoints (nodes).

    Raises
    ------
    ConfigError
        If the links do not form a path DAG from one source node (a routing inconsistency).

    Examples
    --------
    A sprayed sub-flow: NIC link 0 (a -> L), two uplinks 1, 2 (L -> S1, S2), two downlinks 3, 4 (S1, S2 ->
    M), NIC link 5 (M -> b):

    >>> src, dst = np.array([0, 1, 1, 2, 3, 4]), np.array([1, 2, 3, 4, 4, 5])
    >>> decompose_paths(np.arange(6), np.array([1, .5, .5, .5, .5, 1]), src, dst)
    [([0, 1, 3, 5], 0.5), ([0, 2, 4, 5], 0.5)]
    """
    residual = {int(k): float(f) for k, f in zip(links, fractions, strict=True)}
    out_of: dict[int, list[int]] = {}
    for k in residual:
        out_of.setdefault(int(link_src[k]), []).append(k)
    heads = {int(link_dst[k]) for k in residual}
    sources = [node for node in out_of if node not in heads]
    if len(sources) != 1:
        raise ConfigError(f"routing: a sub-flow's links have {len(sources)} source nodes, not one")
    paths: list[tuple[list[int], float]] = []
    while True:
        node, path = sources[0], []
        while True:
            live = [k for k in out_of.get(node, []) if residual[k] > _EPS]
            if not live:
                break
            k = max(live, key=lambda x: residual[x])
            path.append(k)
            node = int(link_dst[k])
            if len(path) > len(residual):
                raise ConfigError("routing: a sub-flow's links contain a cycle")
        if not path:
            return paths
        weight = min(residual[k] for k in path)
        for k in path:
            residual[k] -= weight
        paths.append((path, weight))


@dataclass(frozen=True)
class TransportRun:
    """What a transport's fluid run adds to a flow-engine result (seconds, bytes; per link or in all).

    Attributes
    ----------
    transport : str
    job_time_s : list of float
        Per job (without the plan's own latency, which the engine adds).
    link_pause_s, link_peak_queue_bytes : ndarray, shape (n_links,)
        Summed, resp. the maximum, over the stages.
    link_bytes : ndarray, shape (n_links,)
        Bytes carried (payload, first transmissions).
    retransmitted_bytes : float
    victims : int
        Flows slowed by a pause without crossing a congested link (summed over stages).
    rtt_s : tuple of float
        The flows' base round trips (:func:`path_rtt`): min, median and max over every path of every
        stage, s (0 each without flows).
    """

    transport: str
    job_time_s: list[float]
    link_pause_s: np.ndarray
    link_peak_queue_bytes: np.ndarray
    link_bytes: np.ndarray
    retransmitted_bytes: float
    victims: int
    rtt_s: tuple[float, float, float] = (0.0, 0.0, 0.0)

    def to_dict(self) -> dict[str, Any]:
        """The run's figures, JSON-ready (SI units): name, pause, deepest queue, victims, retransmitted
        bytes and the flows' base RTTs (min, median, max)."""
        return {
            "name": self.transport,
            "pause_s": float(self.link_pause_s.sum()),
            "peak_queue_bytes": float(self.link_peak_queue_bytes.max(initial=0.0)),
            "victims": self.victims,
            "retransmitted_bytes": self.retransmitted_bytes,
            "base_rtt_s": dict(zip(("min", "median", "max"), self.rtt_s, strict=True)),
        }

    def summary(self) -> str:
        """One line: the transport, base RTTs, pause time, the deepest queue, victims, retransmitted bytes."""
        lo, mid, hi = (t * 1e6 for t in self.rtt_s)
        return (
            f"transport {self.transport} (fluid queue model): base RTT {lo:.2f}/{mid:.2f}/{hi:.2f} us "
            f"(min/median/max), pause {self.link_pause_s.sum() * 1e6:.1f} us "
            f"over {int((self.link_pause_s > 0).sum())} links, deepest queue "
            f"{self.link_peak_queue_bytes.max(initial=0.0) / 1e3:.0f} KB, {self.victims} victim flow(s) of "
            f"head-of-line blocking, {self.retransmitted_bytes / 1e6:.3g} MB retransmitted"
        )


def fluid_work(
    paths: list[list[int]], sizes: np.ndarray, capacity_bytes_per_s: np.ndarray, dt_s: float
) -> float:
    """Lower bound of one fluid run's work: ``ceil(T / dt) x E`` (module docstring), steps x entries.

    Parameters
    ----------
    paths : list of list of int
        Links of each flow.
    sizes : ndarray, shape (n_flows,)
        Bytes of each flow.
    capacity_bytes_per_s : ndarray, shape (n_links,)
    dt_s : float
        The fluid model's time step, s.
    """
    cap = np.asarray(capacity_bytes_per_s, dtype=np.float64)
    hops = np.array([len(p) for p in paths])
    if hops.sum() == 0:
        return 0.0
    links = np.concatenate([np.asarray(p, dtype=np.int64) for p in paths])
    flow = np.repeat(np.arange(len(paths)), hops)
    load = np.bincount(links, weights=np.asarray(sizes, dtype=np.float64)[flow], minlength=cap.size)
    path_cap = np.full(len(paths), np.inf)
    np.minimum.at(path_cap, flow, cap[links])
    t = max(float((load / cap).max()), float((sizes / path_cap).max()))
    return float(np.ceil(round(t / dt_s, 9)) * hops.sum())  # round: 20 us / 0.5 us is 40 steps, not 41


def path_rtt(
    paths: list[list[int]],
    latency_s: np.ndarray,
    capacity_bytes_per_s: np.ndarray,
    mtu_bytes: float,
    ack_bytes: float,
) -> np.ndarray:
    """Each path's base round trip (no queueing), s::

        RTT = sum over the path's links l of ( 2 lat_l + (mtu + ack) / C_l )

    the data packet one way (each link's latency, and one MTU serialised per hop: store and forward) and
    its acknowledgement back over the same cables (a cable's two directions have the same latency and
    rate). ``lat_l`` is the link latency the flow engine charges (:attr:`Topology.link_latency_s`: the
    catalogue's latency of the switch the link climbs into, per tier), so the flow engine's one-way path
    latency is ``sum lat_l``. Not counted: cable propagation (the catalogue has no cable lengths per tier)
    and the NIC's latency (the catalogue's is NCCL's ``hwLat``, which the plan's NCCL latency charges once
    per operation).

    Parameters
    ----------
    paths : list of list of int
        Links of each path.
    latency_s, capacity_bytes_per_s : ndarray, shape (n_links,)
        Per link, s and bytes/s (> 0 on every link a path crosses).
    mtu_bytes, ack_bytes : float
        The data packet (the fluid model's MSS, 4 KiB) and the acknowledgement (a header, 64 B).

    Returns
    -------
    ndarray, shape (n_paths,)

    Examples
    --------
    Two hops of 0.6 us at 400 Gb/s (50e9 B/s): 2 x 2 x 0.6 + 2 x 4160 / 50e9 s = 2.5664 us.

    >>> rtt = path_rtt([[0, 1]], np.array([0.6e-6, 0.6e-6]), np.array([50e9, 50e9]), 4096.0, 64.0)
    >>> round(float(rtt[0]) * 1e6, 4)
    2.5664
    """
    hops = np.array([len(p) for p in paths], dtype=np.int64)
    if not hops.size:
        return np.zeros(0)
    links = np.concatenate([np.asarray(p, dtype=np.int64) for p in paths])
    per_link = 2 * np.asarray(latency_s, dtype=np.float64) + (mtu_bytes + ack_bytes) / np.asarray(
        capacity_bytes_per_s, dtype=np.float64
    )
    return np.bincount(np.repeat(np.arange(hops.size), hops), weights=per_link[links], minlength=hops.size)


def run_transport(
    name: str,
    incidence: sparse.csc_matrix,
    bytes_per_column: np.ndarray,
    capacity_bytes_per_s: np.ndarray,
    link_src: np.ndarray,
    link_dst: np.ndarray,
    *,
    job: np.ndarray,
    stage: np.ndarray,
    repeat: Callable[[int, int], int],
    n_jobs: int,
    latency_s: np.ndarray,
    config: FluidConfig | None = None,
    progress: Callable[[int, int], None] | None = None,
    max_work: float = MAX_FLUID_WORK,
) -> TransportRun:
    """Run the routed columns under transport ``name``, stage by stage (module docstring).

    Parameters
    ----------
    name : str
        A transport of :data:`~aifabric.transport.fluidnet.TRANSPORTS`.
    incidence : scipy.sparse.csc_matrix, shape (n_links, n_columns)
    bytes_per_column : ndarray, shape (n_columns,)
        Bytes of one step of each column.
    capacity_bytes_per_s : ndarray, shape (n_links,)
        0 for a failed link.
    link_src, link_dst : ndarray, shape (n_links,)
    job, stage : ndarray of int, shape (n_columns,)
    repeat : callable
        ``repeat(job, stage)``: how many times the stage runs.
    n_jobs : int
    latency_s : ndarray, shape (n_links,)
        Each link's latency, s (the flow engine's): every flow's base RTT is its path's (:func:`path_rtt`).
    config : FluidConfig, optional
    progress : callable, optional
        ``progress(done, total)`` in units of estimated work (:func:`fluid_work`), as the flow engine's.
    max_work : float
        The most estimated work accepted (:data:`MAX_FLUID_WORK`).

    Raises
    ------
    ConfigError
        Unknown transport, a run above ``max_work`` or the memory limit, or a column that is not a path
        DAG.
    """
    transport(name)
    inc = sparse.csc_matrix(incidence)
    cap = np.asarray(capacity_bytes_per_s, dtype=np.float64)
    cfg = config or FluidConfig()
    sim_cap = np.where(cap > 0, cap, 1.0)  # failed links carry no path; a placeholder keeps the model valid
    stages = [
        _stage_flows(inc, bytes_per_column, link_src, link_dst, job, stage, repeat, k)
        for k in np.unique(stage).tolist()
    ]
    work = [fluid_work(p, s, sim_cap, cfg.dt_s) for p, s, _ in stages]
    total = sum(work)
    if _PROBING.get():
        raise _Probed(total)
    if total > max_work:
        raise ConfigError(
            f"transport: the {name} fluid model would take about {total:.3g} step x (flow, hop) updates "
            f"(over {len(stages)} stage(s), limit {max_work:.3g}, about half a minute); use fewer nodes, a "
            "smaller size, or no --transport"
        )
    tally = _Tally.empty(n_jobs, inc.shape[0])
    done = 0.0
    for (paths, sizes_a, owner_a), w in zip(stages, work, strict=True):
        if not paths:
            continue

        def report(fraction: float, base: float = done, w: float = w) -> None:
            if progress is not None:
                progress(int(base + fraction * w), int(total))

        rtt = path_rtt(paths, latency_s, sim_cap, cfg.mss_bytes, cfg.header_bytes)
        res = simulate_fluid(paths, sizes_a, sim_cap, name, config=cfg, progress=report, rtt_s=rtt)
        done += w
        if progress is not None:
            progress(int(done), int(total))
        tally.add(res, paths, sizes_a, owner_a, rtt)
    return tally.run(name)


@dataclass
class _Tally:
    """Figures of :func:`run_transport` summed over its stages: per job its time (s), per link its pause
    (s), deepest queue and carried bytes, the retransmitted bytes, the victims and each stage's path RTTs."""

    job_time: np.ndarray
    pause: np.ndarray
    peak: np.ndarray
    carried: np.ndarray
    retx: float = 0.0
    victims: int = 0
    rtts: list[np.ndarray] = field(default_factory=list)

    @classmethod
    def empty(cls, n_jobs: int, n_links: int) -> _Tally:
        """Nothing yet, for ``n_jobs`` jobs on ``n_links`` links."""
        return cls(np.zeros(n_jobs), np.zeros(n_links), np.zeros(n_links), np.zeros(n_links))

    def add(
        self,
        res: FluidResult,
        paths: list[list[int]],
        sizes: np.ndarray,
        owner: np.ndarray,
        rtt: np.ndarray,
    ) -> None:
        """Add one stage's fluid result: each job's time is its last flow's end; pauses add up, the
        deepest queue is kept; ``paths`` carry ``sizes`` bytes; ``rtt``, the paths' base RTTs (s)."""
        self.rtts.append(rtt)
        for j in np.unique(owner).tolist():
            self.job_time[j] += float(np.nanmax(res.flow_end_s[owner == j]))
        self.pause += res.link_pause_s
        np.maximum(self.peak, res.link_peak_queue_bytes, out=self.peak)
        for p, b in zip(paths, sizes, strict=True):
            self.carried[p] += b
        self.retx += float(res.trimmed_bytes.sum())
        self.victims += int(res.victims.size)

    def run(self, name: str) -> TransportRun:
        """The run of transport ``name``: the tallies and the min, median and max RTT (0 each without
        flows)."""
        every = np.concatenate(self.rtts) if self.rtts else np.zeros(1)
        spread = (float(every.min()), float(np.median(every)), float(every.max()))
        return TransportRun(
            name, self.job_time.tolist(), self.pause, self.peak, self.carried, self.retx, self.victims, spread
        )


def _stage_flows(
    inc: sparse.csc_matrix,
    bytes_per_column: np.ndarray,
    link_src: np.ndarray,
    link_dst: np.ndarray,
    job: np.ndarray,
    stage: np.ndarray,
    repeat: Callable[[int, int], int],
    k: int,
) -> tuple[list[list[int]], np.ndarray, np.ndarray]:
    """Stage ``k``'s flows: ordered paths, bytes (a repeated stage as one transfer) and owning jobs."""
    cols = np.flatnonzero(stage == k)
    paths: list[list[int]] = []
    sizes: list[float] = []
    owner: list[int] = []
    for c in cols.tolist():
        lo, hi = inc.indptr[c], inc.indptr[c + 1]
        reps = repeat(int(job[c]), int(k))
        for path, w in decompose_paths(inc.indices[lo:hi], inc.data[lo:hi], link_src, link_dst):
            if bytes_per_column[c] * w * reps > 0:
                paths.append(path)
                sizes.append(float(bytes_per_column[c]) * w * reps)
                owner.append(int(job[c]))
    return paths, np.array(sizes), np.array(owner, dtype=np.int64)
