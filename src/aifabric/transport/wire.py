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

On a credit-based fabric the receive buffer is raised to two steps of the fastest link when the
configured one is smaller (a floor of the step discretisation). This is a small-scale model (it steps
every 0.5 us); its memory is checked before a run
(:func:`~aifabric.transport.fluidnet.fluid_bytes`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
from scipy import sparse

from aifabric.errors import ConfigError
from aifabric.transport.fluidnet import FluidConfig, simulate_fluid, transport

__all__ = ["TransportRun", "decompose_paths", "run_transport"]

_EPS = 1e-9


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
    """

    transport: str
    job_time_s: list[float]
    link_pause_s: np.ndarray
    link_peak_queue_bytes: np.ndarray
    link_bytes: np.ndarray
    retransmitted_bytes: float
    victims: int

    def summary(self) -> str:
        """One line: the transport, pause time, the deepest queue, victims and retransmitted bytes."""
        return (
            f"transport {self.transport} (fluid queue model): pause {self.link_pause_s.sum() * 1e6:.1f} us "
            f"over {int((self.link_pause_s > 0).sum())} links, deepest queue "
            f"{self.link_peak_queue_bytes.max(initial=0.0) / 1e3:.0f} KB, {self.victims} victim flow(s) of "
            f"head-of-line blocking, {self.retransmitted_bytes / 1e6:.3g} MB retransmitted"
        )


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
    config: FluidConfig | None = None,
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
    config : FluidConfig, optional

    Raises
    ------
    ConfigError
        Unknown transport, a run above the memory limit, or a column that is not a path DAG.
    """
    transport(name)
    inc = sparse.csc_matrix(incidence)
    n_links = inc.shape[0]
    cap = np.asarray(capacity_bytes_per_s, dtype=np.float64)
    cfg = config or FluidConfig()
    # the credit buffer covers two steps of the fastest link (NVLink, 800G), so that the step
    # discretisation never caps a link below its rate on a credit-based fabric [modelling floor]
    floor = 2 * float(cap.max(initial=0.0)) * cfg.dt_s
    if cfg.credit_buffer_bytes < floor:
        cfg = replace(cfg, credit_buffer_bytes=floor)
    live = cap > 0
    sim_cap = np.where(live, cap, 1.0)  # failed links carry no path; a placeholder keeps the model valid
    job_time = np.zeros(n_jobs)
    pause = np.zeros(n_links)
    peak = np.zeros(n_links)
    carried = np.zeros(n_links)
    retx = 0.0
    victims = 0
    for k in np.unique(stage).tolist():
        cols = np.flatnonzero(stage == k)
        paths: list[list[int]] = []
        sizes: list[float] = []
        owner: list[int] = []
        for c in cols.tolist():
            lo, hi = inc.indptr[c], inc.indptr[c + 1]
            reps = repeat(int(job[c]), int(k))
            for path, w in decompose_paths(inc.indices[lo:hi], inc.data[lo:hi], link_src, link_dst):
                paths.append(path)
                sizes.append(float(bytes_per_column[c]) * w * reps)
                owner.append(int(job[c]))
        keep = np.array(sizes) > 0
        if not keep.any():
            continue
        paths = [p for p, ok in zip(paths, keep, strict=True) if ok]
        sizes_a = np.array(sizes)[keep]
        owner_a = np.array(owner)[keep]
        res = simulate_fluid(paths, sizes_a, sim_cap, name, config=cfg)
        for j in np.unique(owner_a).tolist():
            job_time[j] += float(np.nanmax(res.flow_end_s[owner_a == j]))
        pause += res.link_pause_s
        np.maximum(peak, res.link_peak_queue_bytes, out=peak)
        for p, b in zip(paths, sizes_a, strict=True):
            carried[p] += b
        retx += float(res.trimmed_bytes.sum())
        victims += int(res.victims.size)
    return TransportRun(name, job_time.tolist(), pause, peak, carried, retx, victims)
