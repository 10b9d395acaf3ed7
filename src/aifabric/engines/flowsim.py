"""Event-driven fluid (flow-level) simulation of staged transfers sharing capacitated links.

Transfers move bytes over fixed link sets at max-min fair rates
(:func:`~aifabric.engines.maxmin.max_min_rates`); the rates are solved again whenever the set of moving
transfers changes. Transfers are organised the way a collective or a training step is: in *groups* that move
in lock-step (the hops of one ring step), *stages* that start when the stages they depend on are done, and
*jobs* that each run their own chain of stages concurrently with the others.

The core reads like SimPy's: all state on a :class:`Simulation`, a heap of ``(time, seq, kind, payload)``
events with a counter for deterministic ties, :meth:`Simulation.step` advances to the next event time and
:meth:`Simulation.run` steps until every stage is done. Fluid completions are not stored on the heap (rates
change at every event); the next one is computed from the rates at each step.
"""

from __future__ import annotations

import heapq
import itertools
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import sparse
from scipy.sparse import csgraph

from aifabric.engines.maxmin import (
    _as_incidence,
    _as_vector,
    _check_tol,
    _few,
    _gather,
    _Incidence,
    _water_fill,
)
from aifabric.errors import Infeasible, NoRoute

__all__ = ["FlowSimResult", "Simulation", "simulate_transfers"]

StageKey = tuple[int, int]
"""A stage is named by ``(job, stage)``."""

_STAGE_START = "stage_start"  # payload: array of stage indices
_READY = "ready"  # payload: array of group indices whose start latency has elapsed
_STAGE_END = "stage_end"  # payload: array of stage indices (end of fast-forwarded repetitions)
_RATE_CACHE_FLOATS = 1 << 22  # rates kept for reuse, in all (32 MiB)
_PROGRESS_EVERY_S = 0.2  # wall seconds between progress reports

Progress = Callable[[int, int], None]
"""A progress report: ``(units done, units in all)``."""


def _read_only(arr: np.ndarray) -> np.ndarray:
    arr.flags.writeable = False
    return arr


@dataclass(frozen=True)
class FlowSimResult:
    """Outcome of one fluid simulation. Times are seconds from t = 0; arrays are read-only.

    Attributes
    ----------
    transfer_end_s : numpy.ndarray, shape (n_transfers,)
        When each transfer finished its last repetition, s.
    stage_keys : tuple of (int, int)
        ``(job, stage)`` of every stage, sorted; indexes the two arrays below.
    stage_start_s, stage_end_s : numpy.ndarray, shape (n_stages,)
        When each stage started (its dependencies were done) and ended (all repetitions done), s.
    job_ids : tuple of int
        Job ids, sorted; indexes ``job_end_s``.
    job_end_s : numpy.ndarray, shape (n_jobs,)
        End of each job's last stage, s.
    makespan_s : float
        End of the last stage, s (0.0 without transfers).
    link_bytes : numpy.ndarray, shape (n_links,)
        Bytes each link carried over the whole run, repetitions included.
    link_peak_utilisation : numpy.ndarray, shape (n_links,)
        Highest load / capacity each link saw, in [0, 1] (up to the max-min ``tol``); 0 for links of
        infinite capacity.
    n_events : int
        Distinct event times processed.
    n_rate_solves : int
        Max-min solves run.
    n_rate_reuses : int
        Times an allocation was reused because the same set of groups was moving as at an earlier solve.
    n_fast_forwarded_repeats : int
        Stage repetitions not simulated but extrapolated (see :class:`Simulation`, "Repeats").
    n_local_updates : int
        Events whose rate changes were local (the groups that started or stopped share no link with
        another moving group), so no max-min solve was needed (see :class:`Simulation`, "Events").
    """

    transfer_end_s: np.ndarray
    stage_keys: tuple[StageKey, ...]
    stage_start_s: np.ndarray
    stage_end_s: np.ndarray
    job_ids: tuple[int, ...]
    job_end_s: np.ndarray
    makespan_s: float
    link_bytes: np.ndarray
    link_peak_utilisation: np.ndarray
    n_events: int
    n_rate_solves: int
    n_rate_reuses: int
    n_fast_forwarded_repeats: int
    n_local_updates: int = 0

    def stage_span_s(self, job: int, stage: int) -> tuple[float, float]:
        """``(start, end)`` of stage ``stage`` of job ``job``, in seconds.

        Raises
        ------
        KeyError
            If there is no such stage.
        """
        try:
            i = self.stage_keys.index((job, stage))
        except ValueError:
            raise KeyError(f"no stage {stage} in job {job}") from None
        return float(self.stage_start_s[i]), float(self.stage_end_s[i])

    def job_end_time_s(self, job: int) -> float:
        """End of job ``job``, in seconds.

        Raises
        ------
        KeyError
            If there is no such job.
        """
        try:
            return float(self.job_end_s[self.job_ids.index(job)])
        except ValueError:
            raise KeyError(f"no job {job}") from None


def _as_ids(values: ArrayLike | None, size: int, name: str, default: np.ndarray) -> np.ndarray:
    """Integer id per transfer; ``default`` when ``values`` is None."""
    if values is None:
        return default
    arr = np.asarray(values).reshape(-1)
    if arr.size != size:
        raise ValueError(f"{name} must have {size} entries, got shape {np.shape(values)}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        as_int = arr.astype(np.int64)
        if not np.array_equal(as_int, arr):
            raise ValueError(f"{name} ids must be integers, got {arr[as_int != arr][0].item()!r}")
        arr = as_int
    return arr.astype(np.int64)


def _stage_dependencies(
    keys: tuple[StageKey, ...], stage_deps: Mapping[StageKey, Iterable[StageKey]] | None
) -> tuple[np.ndarray, np.ndarray]:
    """Dependencies as edges ``(waiting[e], before[e])``, stage indices: each stage waits for the previous
    stage of the same job, unless ``stage_deps`` says otherwise.

    Raises
    ------
    ValueError
        If a key is unknown or the dependencies form a cycle (a strongly connected set of two or more
        stages, or a stage waiting for itself: it would never start).
    """
    n = len(keys)
    job = np.fromiter((j for j, _ in keys), dtype=np.int64, count=n)
    waiting = np.flatnonzero(job[1:] == job[:-1]) + 1
    before = waiting - 1
    if not stage_deps:
        return waiting, before
    index: dict[tuple[int, ...], int] = {key: i for i, key in enumerate(keys)}
    replaced, extra_w, extra_b = [], [], []
    for key, after in stage_deps.items():
        if tuple(key) not in index:
            raise ValueError(f"stage_deps names stage {key!r} (job, stage), which has no transfers")
        unknown = [b for b in after if tuple(b) not in index]
        if unknown:
            raise ValueError(f"stage {key!r} depends on {unknown[0]!r}, which has no transfers")
        i = index[tuple(key)]
        replaced.append(i)
        for d in sorted({index[tuple(b)] for b in after}):
            extra_w.append(i)
            extra_b.append(d)
    keep = ~np.isin(waiting, replaced)
    waiting = np.concatenate([waiting[keep], np.array(extra_w, dtype=np.int64)])
    before = np.concatenate([before[keep], np.array(extra_b, dtype=np.int64)])
    graph = sparse.csr_matrix((np.ones(waiting.size), (before, waiting)), shape=(n, n))
    _, label = csgraph.connected_components(graph, directed=True, connection="strong")
    in_cycle = np.bincount(label)[label] > 1
    in_cycle[waiting[waiting == before]] = True
    if in_cycle.any():
        cyclic = [keys[i] for i in np.flatnonzero(in_cycle)]
        raise ValueError(f"stage dependencies form a cycle through stages {cyclic[:6]}")
    return waiting, before


def _unique_pairs(first: np.ndarray, second: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct ``(first, second)`` pairs, sorted, shape (k, 2), and the index of each input's pair.

    Optimisation: the pair is packed into one int64 when the ranges allow (a 1-D unique is several times
    faster than ``np.unique(axis=0)``), else the rows are compared.
    """
    if first.size == 0:
        return np.zeros((0, 2), dtype=np.int64), np.zeros(0, dtype=np.int64)
    lo1, lo2 = int(first.min()), int(second.min())
    span1, span2 = int(first.max()) - lo1 + 1, int(second.max()) - lo2 + 1
    if span1 * span2 < 2**62:
        packed, inverse = np.unique((first - lo1) * span2 + (second - lo2), return_inverse=True)
        keys = np.column_stack([packed // span2 + lo1, packed % span2 + lo2])
        return keys, inverse.reshape(-1)
    keys, inverse = np.unique(np.column_stack([first, second]), axis=0, return_inverse=True)
    return keys, inverse.reshape(-1)


class Simulation:
    """State of one fluid simulation of staged transfers; :meth:`run` it to get a :class:`FlowSimResult`.

    Parameters
    ----------
    bytes_per_transfer : array_like, shape (n_transfers,)
        Bytes each transfer moves (per repetition of its stage); finite, ``>= 0``.
    incidence : scipy.sparse matrix or array, or 2-D ndarray
        ``A``, shape ``(n_links, n_transfers)``; ``A[l, m]`` is the fraction of transfer ``m``'s rate that
        crosses link ``l`` (1.0 on a pinned path, ``1/k`` per path when sprayed over ``k``), as for
        :func:`~aifabric.engines.maxmin.max_min_rates`.
    capacity_bytes_per_s : array_like, shape (n_links,)
        Link capacity in one direction, bytes/s; ``>= 0``, ``inf`` allowed.
    job : array_like of int, shape (n_transfers,), optional
        Job of each transfer (default: all job 0). Jobs run concurrently.
    stage : array_like of int, shape (n_transfers,), optional
        Stage of each transfer within its job (default: all stage 0). A stage is named ``(job, stage)``.
    group : array_like of int, shape (n_transfers,), optional
        Transfers of one stage with equal group id move in lock-step (default: every transfer alone).
        Group ids are scoped to their stage.
    start_latency_s : float or array_like, shape (n_transfers,), default 0.0
        Seconds between the start of a transfer's stage repetition and the moment it starts moving
        (alpha: software, NIC and propagation latency); a group waits for its largest latency.
    stage_repeat : mapping of (job, stage) to int, optional
        Number of back-to-back repetitions of a stage (default 1), e.g. ``2 (n - 1)`` for the steps of a
        ring AllReduce.
    stage_deps : mapping of (job, stage) to iterable of (job, stage), optional
        Stages that must be done before the keyed stage starts, replacing its default (the previous stage
        of the same job in increasing ``stage`` order; none for a job's first stage). May cross jobs.
    dependency_delay_s : float, default 0.0
        Seconds between the end of the last stage a stage depends on and its start: the time the sender
        needs to learn that its previous step is complete. A transport starts a chained step when the
        acknowledgement of the previous one's last byte is back, so pass the one-way latency of the way
        back; with ``start_latency_s`` (the way there) a chained step then pays one round trip, not a
        one-way latency (issue 12, item 5).
    tol : float, default 1e-9
        Relative tolerance for max-min ties and for transfers finishing "at the same time".

    Raises
    ------
    ValueError
        If shapes disagree, a size, capacity or latency is negative or not finite, a repeat is not a
        positive integer, a dependency names an unknown stage or forms a cycle, or a transfer crosses only
        links of infinite capacity (its rate would be unbounded).
    NoRoute
        If a transfer with bytes to move crosses no link, or crosses a link of zero capacity (its rate
        would be 0 forever).
    Infeasible
        From :meth:`step`, if no event can ever happen again while work is left (a guard; the checks
        above should make it unreachable).

    Notes
    -----
    **Groups.** A group is solved as *one* max-min flow. Its rate ``r`` is that of its largest member
    (``s_max`` bytes); member ``m`` moves at ``r * s_m / s_max``, so all members finish together, and the
    group's incidence column is ``sum_m A[:, m] * s_m / s_max``, the load its members put on each link per
    unit of ``r``. For equal-size members (the hops of a ring step) this is the plain sum of their columns
    and ``r`` is the common rate of every hop: the slowest hop's pace, found jointly with the other
    traffic. Letting members run independently and taking the slowest would be wrong: the faster members
    would keep a max-min share they cannot use (they wait for the slowest anyway), starving other traffic
    on their links. The price of the choice: a group is one flow for fairness, so two of its members on the
    same link share one fair rate between them, as sub-flows of one connection would.

    **Repeats.** A stage with ``repeat = k`` runs its transfers ``k`` times back to back; each repetition
    pays the start latency again. A repetition is simulated event by event unless it is provably identical
    to the previous one: when a repetition ends and no other stage was active at any instant of it nor is
    active now, nothing else can happen until this stage ends, so the remaining ``j`` repetitions are
    fast-forwarded (stage end = now + ``j`` x the duration of the last one, exact). A stage that shares
    the network with another stage is never extrapolated, because contention makes repetitions differ.

    **Events.** Rates are solved again after every event time at which a transfer finished or started
    moving (stage start plus latency). Transfers whose remaining time is within ``tol`` of the earliest
    finish together, in one event. When transfers only left, the solve is warm-started: groups slower than
    the slowest leaver keep their rates (exact, see ``maxmin._water_fill``). The allocation depends only
    on which groups are moving, so one seen recently is reused without a solve (exact; repeated steps of
    concurrent jobs revisit the same sets). When every group that started or stopped shares no link with
    another moving group, only its own rate changes and no solve is run (exact: max-min decomposes over
    connected components; triggered chains on disjoint paths cost no solve per event). A run costs about
    events x (entries of the moving groups' columns + filling rounds x ~50 us); events grow with the number
    of groups that finish at distinct times, so thousands of independent transfers of unequal progress
    cost thousands of solves.

    **Sensitivity.** Runs are deterministic, but concurrent jobs that repeat steps on shared links form a
    coupled system in which rounding differences grow from event to event: in the ``rings`` benchmark
    (16 jobs, ~7k transfers) a 1e-14 relative change of the capacities moves individual transfer end times
    by up to 0.8 % (mean 0.2 %) and the makespan by 0.02 %. Compare such runs by makespan or by
    distributions, not transfer by transfer. Independent, non-repeating work does not show this (1e-14).

    **What the model leaves out.** This is a fluid model: rates change instantly, with no slow start,
    queueing, PFC spreading or congestion-control unfairness; it suits bandwidth-bound transfers
    (hundreds of kB and up), see the fabric-models reference note, section 2, and [1]_.

    References
    ----------
    .. [1] P. Velho, L. M. Schnorr, H. Casanova and A. Legrand, "On the validity of flow-level TCP network
       models for grid and cloud simulations", ACM Trans. Model. Comput. Simul. 23(4), 2013,
       https://hal.inria.fr/hal-00872476.
    .. [2] D. Bertsekas and R. Gallager, *Data Networks*, 2nd ed., Prentice Hall, 1992, sec. 6.5.2.
    """

    def __init__(
        self,
        bytes_per_transfer: np.ndarray,
        incidence: sparse.spmatrix | sparse.sparray | np.ndarray,
        capacity_bytes_per_s: np.ndarray,
        *,
        job: np.ndarray | None = None,
        stage: np.ndarray | None = None,
        group: np.ndarray | None = None,
        start_latency_s: float | np.ndarray = 0.0,
        stage_repeat: Mapping[StageKey, int] | None = None,
        stage_deps: Mapping[StageKey, Iterable[StageKey]] | None = None,
        dependency_delay_s: float = 0.0,
        tol: float = 1e-9,
    ) -> None:
        self.tol = _check_tol(tol)
        if not (np.isfinite(dependency_delay_s) and dependency_delay_s >= 0):
            raise ValueError(f"dependency_delay_s must be finite and >= 0, got {dependency_delay_s!r}")
        self.dependency_delay_s = float(dependency_delay_s)
        a_csr, a_csc = _as_incidence(incidence)
        n_links, n_transfers = a_csr.shape
        self.capacity = _as_vector(capacity_bytes_per_s, n_links, "capacity_bytes_per_s")
        size_t, latency_t = _transfer_vectors(bytes_per_transfer, start_latency_s, n_transfers)
        zeros = np.zeros(n_transfers, dtype=np.int64)
        job_t = _as_ids(job, n_transfers, "job", zeros)
        stage_t = _as_ids(stage, n_transfers, "stage", zeros)
        group_t = _as_ids(group, n_transfers, "group", np.arange(n_transfers, dtype=np.int64))
        _check_routes(a_csc, self.capacity, size_t)
        stage_of_t, latency_g = self._index_groups(a_csc, job_t, stage_t, group_t, size_t, latency_t)
        self.repeat = _stage_repeats(self.stage_keys, stage_repeat)
        waiting = self._index_dependencies(stage_deps)
        self._index_stage_groups(latency_g)
        self.link_bytes = np.asarray(a_csr @ (size_t * self.repeat[stage_of_t])).reshape(-1)
        self._reset_state(n_links, waiting)
        first = np.flatnonzero(self.deps_left == 0)
        if first.size:
            self.schedule(0.0, _STAGE_START, first)

    def _index_groups(
        self,
        a_csc: sparse.csc_matrix,
        job_t: np.ndarray,
        stage_t: np.ndarray,
        group_t: np.ndarray,
        size_t: np.ndarray,
        latency_t: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Name the stages (job, stage), sorted, and the groups, scoped to their stage; set each group's
        size (bytes of its largest member) and incidence. Returns each transfer's stage index and each
        group's start latency (s, its members' largest). Raises ValueError for a group whose every link has
        infinite capacity."""
        stage_keys, stage_of_t = _unique_pairs(job_t, stage_t)
        self.stage_keys: tuple[StageKey, ...] = tuple(map(tuple, stage_keys.tolist()))
        group_keys, group_of_t = _unique_pairs(stage_of_t, group_t)
        self.group_of_t = group_of_t
        self.stage_of_g = group_keys[:, 0]
        n_groups = group_keys.shape[0]
        self.size_g = np.zeros(n_groups)
        np.maximum.at(self.size_g, self.group_of_t, size_t)
        latency_g = np.zeros(n_groups)
        np.maximum.at(latency_g, self.group_of_t, latency_t)
        self.g_csc = _group_incidence(a_csc, size_t, self.group_of_t, self.size_g)
        _check_bounded(self.g_csc, self.capacity, self.size_g, self.group_of_t)
        return stage_of_t, latency_g

    def _index_dependencies(self, stage_deps: Mapping[StageKey, Iterable[StageKey]] | None) -> np.ndarray:
        """Index the stage dependencies (:func:`_stage_dependencies`, which raises ValueError for an
        unknown stage or a cycle); returns the waiting stage of each dependency edge."""
        n_stages = len(self.stage_keys)
        waiting, before = _stage_dependencies(self.stage_keys, stage_deps)
        self._dep_edges = (waiting, before)
        # dependents of stage d: _dep_idx[_dep_ptr[d] : _dep_ptr[d + 1]] (CSR, for vectorised stage ends)
        order = np.argsort(before, kind="stable")
        self._dep_idx = waiting[order]
        self._dep_ptr = np.zeros(n_stages + 1, dtype=np.int64)
        np.cumsum(np.bincount(before, minlength=n_stages), out=self._dep_ptr[1:])
        return waiting

    def _index_stage_groups(self, latency_g: np.ndarray) -> None:
        """Groups by stage, then by start latency (``latency_g``, s): stage s holds
        ``_stage_groups[_stage_ptr[s] : _stage_ptr[s+1]]`` (one array for all stages: no Python object per
        stage)."""
        n_stages = len(self.stage_keys)
        by_stage = np.lexsort((latency_g, self.stage_of_g))
        self._stage_groups = by_stage
        self._stage_ptr = np.zeros(n_stages + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.stage_of_g, minlength=n_stages), out=self._stage_ptr[1:])
        self._latency_sorted = latency_g[by_stage]

    def _reset_state(self, n_links: int, waiting: np.ndarray) -> None:
        """The dynamic state at time 0: nothing moving, no event, every stage waiting for its
        ``waiting`` dependencies (the waiting stage of each dependency edge)."""
        n_groups, n_stages = self.size_g.size, len(self.stage_keys)
        self.now = 0.0
        self._heap: list[tuple[float, int, str, Any]] = []  # payload: a stage index or group indices
        self._seq = itertools.count()
        self.remaining = np.zeros(n_groups)  # bytes the group's largest member has still to move
        self.rate = np.zeros(n_groups)  # bytes/s of the group's largest member
        self.moving = np.zeros(n_groups, dtype=bool)
        self.group_end_s = np.full(n_groups, np.nan)
        self.groups_left = np.zeros(n_stages, dtype=np.int64)
        self.reps_done = np.zeros(n_stages, dtype=np.int64)
        self.rep_start_s = np.full(n_stages, np.nan)
        self.stage_start_s = np.full(n_stages, np.nan)
        self.stage_end_s = np.full(n_stages, np.nan)
        self.deps_left = np.bincount(waiting, minlength=n_stages).astype(np.int64)
        self.active_stage = np.zeros(n_stages, dtype=bool)
        self._n_active = 0
        # A stage's repetition ran alone if no stage started while it ran and none was active when it
        # began: _overlaps counts starts that found another stage active; _rep_mark[s] is its value when
        # s's repetition started alone (-1 if it did not).
        self._overlaps = 0
        self._rep_mark = np.full(n_stages, -1, dtype=np.int64)
        self.stages_left = n_stages
        self.link_peak_utilisation = np.zeros(n_links)
        self._local_index = np.zeros(n_links, dtype=np.int64)  # scratch: global link -> index in a solve
        self.n_events = self.n_rate_solves = self.n_rate_reuses = self.n_fast_forwarded_repeats = 0
        self._rate_cache: OrderedDict[bytes, np.ndarray] = OrderedDict()  # moving groups -> their rates
        self._rate_cache_floats = 0
        self._row_users = np.zeros(n_links, dtype=np.int64)  # moving groups crossing each link
        self._joined: list[np.ndarray] = []  # groups that started moving since the last solve
        self._left: list[np.ndarray] = []  # groups that stopped moving since the last solve
        self.n_local_updates = 0
        self.units_done = 0  # group repetitions finished, for progress reports
        self.units_total = int(np.sum(self.repeat[self.stage_of_g]))
        self._rates_stale = False
        self._new_movers = False  # a group started moving since the last solve
        self._lowest_leaver_rate = np.inf  # lowest rate of a group that finished since the last solve
        self._repetition_ended: list[int] = []

    @property
    def deps(self) -> list[list[int]]:
        """Indices of the stages each stage waits for, by stage index (sorted)."""
        waiting, before = self._dep_edges
        out: list[list[int]] = [[] for _ in self.stage_keys]
        for w, b in sorted(zip(waiting.tolist(), before.tolist(), strict=True)):
            out[w].append(b)
        return out

    # -- the event loop --------------------------------------------------------------------------------------
    def schedule(self, time_s: float, kind: str, payload: int | np.ndarray) -> None:
        """Put an event on the heap; equal times pop in scheduling order (the ``seq`` counter)."""
        heapq.heappush(self._heap, (time_s, next(self._seq), kind, payload))

    def step(self) -> None:
        """Advance to the next event time, process everything that happens at it, re-solve the rates.

        Raises
        ------
        NoRoute, Infeasible
            If nothing can ever happen again while stages are unfinished.
        """
        moving = np.flatnonzero(self.moving)
        with np.errstate(divide="ignore"):
            eta = np.where(self.rate[moving] > 0, self.remaining[moving] / self.rate[moving], np.inf)
        eta_min = float(eta.min()) if eta.size else np.inf
        t_event = self._heap[0][0] if self._heap else np.inf
        if t_event <= self.now + eta_min:
            new_now, dt = t_event, t_event - self.now
        else:
            new_now, dt = self.now + eta_min, eta_min
        if not np.isfinite(new_now):
            self._raise_stuck()
        self.remaining[moving] = np.maximum(self.remaining[moving] - self.rate[moving] * dt, 0.0)
        self.now = new_now
        finished = moving[
            (eta <= dt * (1.0 + self.tol)) | (self.remaining[moving] <= self.tol * self.size_g[moving])
        ]
        if finished.size:
            self._finish_groups(finished)
        self._settle()
        if self._rates_stale:
            self._solve_rates()
        self.n_events += 1

    def run(self, progress: Progress | None = None) -> FlowSimResult:
        """Step until every stage is done and return the result.

        ``progress(done, total)``, if given, is called with the transfer repetitions finished so far and
        their total, at most every ``_PROGRESS_EVERY_S`` seconds of wall time and once at the end (for a
        progress bar on long runs).
        """
        last = time.monotonic()
        while self.stages_left:
            self.step()
            if progress is not None and time.monotonic() - last >= _PROGRESS_EVERY_S:
                progress(self.units_done, self.units_total)
                last = time.monotonic()
        if progress is not None:
            progress(self.units_total, self.units_total)
        return self.result()

    def _settle(self) -> None:
        """Process every event due now, including those that events due now schedule for now."""
        while True:
            while self._heap and self._heap[0][0] <= self.now:
                _, _, kind, payload = heapq.heappop(self._heap)
                # optimisation: the payloads of all events of this kind due next, in one call
                batches = [payload]
                while self._heap and self._heap[0][0] <= self.now and self._heap[0][2] == kind:
                    batches.append(heapq.heappop(self._heap)[3])
                items = batches[0] if len(batches) == 1 else np.concatenate(batches)
                if kind == _STAGE_START:
                    self._start_stages(items)
                elif kind == _READY:
                    self._groups_ready(items)
                else:
                    self._end_stages(items)
            if not self._repetition_ended:
                return
            self._next_repetitions()

    # -- handlers --------------------------------------------------------------------------------------------
    def _start_stages(self, stages: np.ndarray) -> None:
        self.stage_start_s[stages] = self.now
        self.active_stage[stages] = True
        self._n_active += stages.size
        self._start_repetitions(stages)

    def _groups_of_stage(self, s: int) -> np.ndarray:
        return self._stage_groups[self._stage_ptr[s] : self._stage_ptr[s + 1]]

    def _start_repetitions(self, stages: np.ndarray) -> None:
        """Start a repetition of each of ``stages`` (already active): reset their groups and schedule them
        to move after their start latency, one event per distinct latency."""
        if self._n_active > 1:
            self._overlaps += 1
            self._rep_mark[stages] = -1
        else:
            self._rep_mark[stages] = self._overlaps
        self.rep_start_s[stages] = self.now
        pos = _gather(self._stage_ptr, stages)
        groups = self._stage_groups[pos]
        self.remaining[groups] = self.size_g[groups]
        self.groups_left[stages] = self._stage_ptr[stages + 1] - self._stage_ptr[stages]
        latency = self._latency_sorted[pos]
        if latency.size and latency.min() == latency.max():
            self.schedule(self.now + float(latency[0]), _READY, groups)
            return
        values, which = np.unique(latency, return_inverse=True)
        order = np.argsort(which, kind="stable")
        cuts = np.cumsum(np.bincount(which, minlength=values.size))[:-1]
        for latency_s, batch in zip(values.tolist(), np.split(groups[order], cuts), strict=True):
            self.schedule(self.now + latency_s, _READY, batch)

    def _groups_ready(self, groups: np.ndarray) -> None:
        empty = self.size_g[groups] == 0
        movers = groups[~empty]
        self.moving[movers] = True
        self._new_movers |= bool(movers.size)
        if movers.size:
            np.add.at(self._row_users, self.g_csc.indices[_gather(self.g_csc.indptr, movers)], 1)
            self._joined.append(movers)
        self._rates_stale = True
        if empty.any():
            self._finish_groups(groups[empty])

    def _finish_groups(self, groups: np.ndarray) -> None:
        moved = self.rate[groups]
        if (moved > 0).any():
            self._lowest_leaver_rate = min(self._lowest_leaver_rate, float(moved[moved > 0].min()))
        was = groups[self.moving[groups]]
        if was.size:
            np.subtract.at(self._row_users, self.g_csc.indices[_gather(self.g_csc.indptr, was)], 1)
            self._left.append(was)
        self.moving[groups] = False
        self.rate[groups] = 0.0
        self.remaining[groups] = 0.0
        self.group_end_s[groups] = self.now
        self._rates_stale = True
        self.units_done += groups.size
        stages, counts = np.unique(self.stage_of_g[groups], return_counts=True)
        self.groups_left[stages] -= counts
        done = stages[self.groups_left[stages] == 0]
        self.reps_done[done] += 1
        last = self.reps_done[done] == self.repeat[done]
        if last.any():
            self._end_stages(done[last])
        self._repetition_ended += done[~last].tolist()

    def _end_stages(self, stages: np.ndarray) -> None:
        """End ``stages``; schedule the start of every stage whose last dependency they were."""
        self.stage_end_s[stages] = self.now
        self.active_stage[stages] = False
        self._n_active -= stages.size
        self.stages_left -= stages.size
        waiting = self._dep_idx[_gather(self._dep_ptr, stages)]
        if waiting.size:
            np.subtract.at(self.deps_left, waiting, 1)
            ready = np.unique(waiting[self.deps_left[waiting] == 0])
            if ready.size:
                self.schedule(self.now + self.dependency_delay_s, _STAGE_START, ready)

    def _next_repetitions(self) -> None:
        ended, self._repetition_ended = self._repetition_ended, []
        if len(ended) == 1 and self._rep_mark[ended[0]] == self._overlaps and self._n_active == 1:
            # Optimisation (exact): the stage ran alone and nothing else is active, so no event can occur
            # until it ends and every remaining repetition is a copy of this one.
            s = ended[0]
            left = int(self.repeat[s] - self.reps_done[s])
            duration_s = self.now - self.rep_start_s[s]
            self.group_end_s[self._groups_of_stage(s)] += left * duration_s
            self.reps_done[s] = self.repeat[s]
            self.n_fast_forwarded_repeats += left
            self.units_done += left * int(self._stage_ptr[s + 1] - self._stage_ptr[s])
            self.schedule(self.now + left * duration_s, _STAGE_END, np.array([s]))
            return
        self._start_repetitions(np.array(ended, dtype=np.int64))

    # -- rates -----------------------------------------------------------------------------------------------
    def _solve_rates(self) -> None:
        """Max-min rates of the moving groups; track each link's peak utilisation."""
        self._rates_stale = False
        if self._solve_isolated():
            self._new_movers, self._lowest_leaver_rate = False, np.inf
            self.n_local_updates += 1
            return
        moving = np.flatnonzero(self.moving)
        # Optimisation (exact): when groups only left, every group slower than the slowest leaver keeps
        # its rate and the filling restarts at that level (see maxmin._water_fill).
        start_level = 0.0 if self._new_movers else self._lowest_leaver_rate
        self._new_movers, self._lowest_leaver_rate = False, np.inf
        if not moving.size:
            return
        # Optimisation (exact): the max-min allocation depends only on the set of moving groups, and
        # periodic workloads (repeated steps of concurrent jobs) revisit the same sets over and over.
        key = moving.tobytes()
        cached = self._rate_cache.get(key)
        if cached is not None:
            self._rate_cache.move_to_end(key)
            self.rate[moving] = cached
            self.n_rate_reuses += 1
            return
        keep = None
        if np.isfinite(start_level):
            old = self.rate[moving]
            keep = np.where(old < start_level, old, np.nan)
        else:
            start_level = 0.0
        # Optimisation: slice the moving groups' columns and renumber the links they cross 0..k-1 with raw
        # numpy (no scipy objects per solve), so a solve costs O(moving entries), not O(all links).
        pos = _gather(self.g_csc.indptr, moving)
        rows, weights = self.g_csc.indices[pos], self.g_csc.data[pos]
        ptr = np.zeros(moving.size + 1, dtype=np.int64)
        np.cumsum(self.g_csc.indptr[moving + 1] - self.g_csc.indptr[moving], out=ptr[1:])
        used = np.zeros(self.capacity.size, dtype=bool)
        used[rows] = True
        links = np.flatnonzero(used)
        self._local_index[links] = np.arange(links.size)
        local = _Incidence.from_csc(links.size, ptr, self._local_index[rows], weights)
        capacity = self.capacity[links]
        no_cap = np.full(moving.size, np.inf)
        rates = _water_fill(local, capacity, no_cap, self.tol, keep=keep, start_level=start_level)
        self.rate[moving] = rates
        self.n_rate_solves += 1
        self._remember(key, rates)
        load = local.link_sums(rates)
        util = np.divide(
            load, capacity, out=np.zeros_like(load), where=np.isfinite(capacity) & (capacity > 0)
        )
        self.link_peak_utilisation[links] = np.maximum(self.link_peak_utilisation[links], util)

    def _solve_isolated(self) -> bool:
        """Optimisation (exact): update the rates incrementally when every group that started or stopped
        moving since the last solve shares no link with any other moving group; return False (nothing
        done) otherwise.

        Max-min fairness decomposes over the connected components of the moving groups' link graph: a
        group alone on all its links is a component of its own, whose rate is ``min_l c_l / w_l`` (the
        level at which its first link saturates), and one that leaves such links changes no other rate.
        Triggered chains of transfers on disjoint paths (a ring whose hosts chain their own steps) then
        cost no max-min solve per event.
        """
        if not self._joined and not self._left:
            return True  # nothing started or stopped moving: the rates stand
        joined = np.concatenate(self._joined) if self._joined else np.zeros(0, dtype=np.int64)
        left = np.concatenate(self._left) if self._left else np.zeros(0, dtype=np.int64)
        self._joined, self._left = [], []
        joined = joined[self.moving[joined]]
        indptr, indices, data = self.g_csc.indptr, self.g_csc.indices, self.g_csc.data
        pos = _gather(indptr, joined)
        rows = indices[pos]
        if (self._row_users[rows] != 1).any():
            return False
        # the links the leavers freed are now unused, or used by one joiner alone
        freed = indices[_gather(indptr, left)]
        users = self._row_users[freed]
        if (users > 1).any():
            return False
        if (users == 1).any() and not np.isin(freed[users == 1], rows).all():
            return False
        if joined.size:
            counts = indptr[joined + 1] - indptr[joined]
            level = self.capacity[rows] / data[pos]
            rates = np.minimum.reduceat(level, np.cumsum(counts) - counts)
            self.rate[joined] = rates
            cap = self.capacity[rows]
            util = np.divide(
                data[pos] * np.repeat(rates, counts),
                cap,
                out=np.zeros(rows.size),
                where=np.isfinite(cap) & (cap > 0),
            )
            np.maximum.at(self.link_peak_utilisation, rows, util)
        return True

    def _remember(self, key: bytes, rates: np.ndarray) -> None:
        """Keep an allocation for reuse; least recently used ones go beyond _RATE_CACHE_FLOATS in all."""
        self._rate_cache[key] = rates
        self._rate_cache_floats += rates.size
        while self._rate_cache_floats > _RATE_CACHE_FLOATS and len(self._rate_cache) > 1:
            _, old = self._rate_cache.popitem(last=False)
            self._rate_cache_floats -= old.size

    def _raise_stuck(self) -> None:
        moving = np.flatnonzero(self.moving)
        if moving.size:
            transfers = np.flatnonzero(np.isin(self.group_of_t, moving))
            raise NoRoute(
                f"transfers {_few(transfers)} have rate 0 at t = {self.now:.9g} s and nothing can change it"
            )
        waiting = [self.stage_keys[s] for s in np.flatnonzero(np.isnan(self.stage_end_s))]
        raise Infeasible(f"stages {waiting[:6]} (job, stage) can never finish at t = {self.now:.9g} s")

    # -- result ----------------------------------------------------------------------------------------------
    def result(self) -> FlowSimResult:
        """The result so far (complete once :meth:`run` has returned)."""
        job_of_stage = np.array([j for j, _ in self.stage_keys], dtype=np.int64)
        job_ids, job_index = np.unique(job_of_stage, return_inverse=True)
        job_end = np.full(job_ids.size, -np.inf)
        np.maximum.at(job_end, job_index, self.stage_end_s)
        return FlowSimResult(
            transfer_end_s=_read_only(self.group_end_s[self.group_of_t]),
            stage_keys=self.stage_keys,
            stage_start_s=_read_only(self.stage_start_s.copy()),
            stage_end_s=_read_only(self.stage_end_s.copy()),
            job_ids=tuple(int(j) for j in job_ids),
            job_end_s=_read_only(job_end),
            makespan_s=float(self.stage_end_s.max()) if self.stage_end_s.size else 0.0,
            link_bytes=_read_only(self.link_bytes.copy()),
            link_peak_utilisation=_read_only(self.link_peak_utilisation.copy()),
            n_events=self.n_events,
            n_rate_solves=self.n_rate_solves,
            n_rate_reuses=self.n_rate_reuses,
            n_fast_forwarded_repeats=self.n_fast_forwarded_repeats,
            n_local_updates=self.n_local_updates,
        )


def _check_routes(a_csc: sparse.csc_matrix, capacity: np.ndarray, size_t: np.ndarray) -> None:
    """Refuse transfers that could never move: no link, or a zero-capacity link on the path.

    Raises
    ------
    NoRoute
        Naming the transfers (and for zero capacity, the first such link).
    """
    has_bytes = size_t > 0
    no_link = np.flatnonzero(has_bytes & (np.diff(a_csc.indptr) == 0))
    if no_link.size:
        raise NoRoute(f"transfers {_few(no_link)} have bytes to move but cross no link")
    dead_links = (capacity == 0).astype(np.float64)
    dead = np.flatnonzero(has_bytes & (np.asarray(a_csc.T @ dead_links).reshape(-1) > 0))
    if dead.size:
        first = a_csc.indices[a_csc.indptr[dead[0]] : a_csc.indptr[dead[0] + 1]]
        raise NoRoute(
            f"transfers {_few(dead)} cross a link of zero capacity (transfer {dead[0]}: link "
            f"{int(first[capacity[first] == 0][0])}); their rate would be 0 forever"
        )


def _group_incidence(
    a_csc: sparse.csc_matrix, size_t: np.ndarray, group_of_t: np.ndarray, size_g: np.ndarray
) -> sparse.csc_matrix:
    """Incidence of each group as one flow: ``sum_m A[:, m] * s_m / s_max`` (see Simulation, Groups)."""
    n_transfers, n_groups = size_t.size, size_g.size
    group_size = size_g[group_of_t]
    share = np.divide(size_t, group_size, out=np.ones(n_transfers), where=group_size > 0)
    member = sparse.csr_matrix((share, (np.arange(n_transfers), group_of_t)), shape=(n_transfers, n_groups))
    g_csc = sparse.csc_matrix(a_csc @ member)
    g_csc.sum_duplicates()
    g_csc.eliminate_zeros()
    g_csc.sort_indices()
    return g_csc


def _check_bounded(
    g_csc: sparse.csc_matrix, capacity: np.ndarray, size_g: np.ndarray, group_of_t: np.ndarray
) -> None:
    """Refuse groups whose every link has infinite capacity.

    Raises
    ------
    ValueError
        Naming the transfers.
    """
    finite_links = np.asarray(g_csc.T @ np.isfinite(capacity).astype(np.float64)).reshape(-1)
    unbounded = np.flatnonzero((size_g > 0) & (finite_links == 0))
    if unbounded.size:
        transfers = np.flatnonzero(np.isin(group_of_t, unbounded))
        raise ValueError(
            f"transfers {_few(transfers)} cross only links of infinite capacity; their rate would be "
            "unbounded"
        )


def _transfer_vectors(
    bytes_per_transfer: np.ndarray, start_latency_s: float | np.ndarray, n_transfers: int
) -> tuple[np.ndarray, np.ndarray]:
    """Bytes and start latency (s) of each transfer, shape (n_transfers,) each; a scalar latency applies
    to every transfer. Raises ValueError for a wrong shape or a non-finite entry."""
    size_t = _as_vector(bytes_per_transfer, n_transfers, "bytes_per_transfer")
    if np.ndim(start_latency_s) == 0:
        start_latency_s = np.full(n_transfers, start_latency_s, dtype=np.float64)
    latency_t = _as_vector(start_latency_s, n_transfers, "start_latency_s")
    for name, vec in (("bytes_per_transfer", size_t), ("start_latency_s", latency_t)):
        if not np.isfinite(vec).all():
            raise ValueError(f"{name} must be finite; entry {int(np.argmin(np.isfinite(vec)))} is inf")
    return size_t, latency_t


def _stage_repeats(keys: tuple[StageKey, ...], stage_repeat: Mapping[StageKey, int] | None) -> np.ndarray:
    """Repeat count per stage index (default 1).

    Raises
    ------
    ValueError
        If a key is unknown or a count is not a positive integer.
    """
    repeat = np.ones(len(keys), dtype=np.int64)
    if not stage_repeat:
        return repeat
    index: dict[tuple[int, ...], int] = {key: i for i, key in enumerate(keys)}
    for key, count in (stage_repeat or {}).items():
        if tuple(key) not in index:
            raise ValueError(f"stage_repeat names stage {key!r} (job, stage), which has no transfers")
        if isinstance(count, bool) or int(count) != count or count < 1:
            raise ValueError(f"stage_repeat[{key!r}] must be a positive integer, got {count!r}")
        repeat[index[tuple(key)]] = int(count)
    return repeat


def simulate_transfers(
    bytes_per_transfer: np.ndarray,
    incidence: sparse.spmatrix | sparse.sparray | np.ndarray,
    capacity_bytes_per_s: np.ndarray,
    *,
    job: np.ndarray | None = None,
    stage: np.ndarray | None = None,
    group: np.ndarray | None = None,
    start_latency_s: float | np.ndarray = 0.0,
    stage_repeat: Mapping[StageKey, int] | None = None,
    stage_deps: Mapping[StageKey, Iterable[StageKey]] | None = None,
    dependency_delay_s: float = 0.0,
    tol: float = 1e-9,
) -> FlowSimResult:
    """Simulate staged transfers at max-min fair rates; times in seconds.

    Shorthand for ``Simulation(...).run()``; the parameters, the model (groups, stages, jobs, repeats)
    and the errors are documented on :class:`Simulation` (whose :meth:`~Simulation.run` also reports
    progress).

    Returns
    -------
    FlowSimResult
        Completion time per transfer, start/end per stage, end per job, makespan, per-link bytes and
        peak utilisation.

    Raises
    ------
    ValueError, NoRoute, Infeasible
        As for :class:`Simulation`.

    Examples
    --------
    Two jobs share one 1 GB/s link, moving 1 GB and 2 GB. Each gets 0.5 GB/s until the first finishes at
    2 s (1 GB / 0.5 GB/s); the second then has 1 GB left at the full 1 GB/s and ends at 3 s:

    >>> import numpy as np
    >>> res = simulate_transfers([1e9, 2e9], np.ones((1, 2)), [1e9], job=[0, 1])
    >>> res.transfer_end_s.tolist(), res.makespan_s
    ([2.0, 3.0], 3.0)
    """
    return Simulation(
        bytes_per_transfer,
        incidence,
        capacity_bytes_per_s,
        job=job,
        stage=stage,
        group=group,
        start_latency_s=start_latency_s,
        stage_repeat=stage_repeat,
        stage_deps=stage_deps,
        dependency_delay_s=dependency_delay_s,
        tol=tol,
    ).run()
