"""Max-min fair rates of flows on capacitated links, by progressive filling (water-filling).

The solver works on a sparse link x flow incidence matrix ``A`` (shape ``(n_links, n_flows)``) whose entry
``A[l, f] >= 0`` is the fraction of flow ``f``'s rate that crosses link ``l``: 1.0 for an unsplit flow,
``1/k`` on each link of ``k`` equal paths for a flow sprayed over them, any mix for weighted multipath. Link
load is ``A @ r`` and must stay within the link capacity. The weights are *consumption* coefficients, not
fairness weights: every flow is raised at the same pace, so a sprayed flow that meets no bottleneck gets
the same rate as a pinned one.

Everything is vectorised with numpy / scipy.sparse. The only Python loop is over filling rounds, one per
distinct bottleneck level.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike
from scipy import sparse

__all__ = ["max_min_rates", "validate_max_min"]


def _frontier_size(n_links: int) -> int:
    """Optimisation: each round looks for the lowest saturation level among a "frontier" of this many
    lowest-level links (plus ties) instead of all links; O(sqrt(n_links)) balances the per-round scan
    against the O(n_links) rebuilds."""
    return max(1024, 4 * int(np.sqrt(n_links)))


def _few(indices: np.ndarray, limit: int = 8) -> str:
    """Format at most ``limit`` indices for an error message."""
    shown = ", ".join(str(int(i)) for i in indices[:limit])
    return shown + (f", ... ({indices.size} in all)" if indices.size > limit else "")


def _as_incidence(incidence: object) -> tuple[sparse.csr_matrix, sparse.csc_matrix]:
    """Check an incidence matrix and return canonical float CSR and CSC copies of it.

    Raises
    ------
    ValueError
        If it is not 2-D, or a weight is negative or not finite.
    """
    if sparse.issparse(incidence):
        a_csr = sparse.csr_matrix(incidence, dtype=np.float64, copy=True)
    else:
        dense = np.asarray(incidence, dtype=np.float64)
        if dense.ndim != 2:
            raise ValueError(f"incidence must be a 2-D (n_links, n_flows) matrix, got shape {dense.shape}")
        a_csr = sparse.csr_matrix(dense)
    a_csr.sum_duplicates()
    bad = ~(np.isfinite(a_csr.data) & (a_csr.data >= 0))
    if bad.any():
        pos = int(np.flatnonzero(bad)[0])
        link = int(np.searchsorted(a_csr.indptr, pos, side="right") - 1)
        raise ValueError(
            f"incidence weights must be finite and >= 0; link {link}, flow {int(a_csr.indices[pos])} "
            f"has {float(a_csr.data[pos])}"
        )
    a_csr.eliminate_zeros()
    return a_csr, a_csr.tocsc()


def _as_vector(values: ArrayLike, size: int, name: str) -> np.ndarray:
    """Return ``values`` as a float vector of ``size`` entries, each >= 0 (``inf`` allowed).

    Raises
    ------
    ValueError
        If the shape is wrong or an entry is negative or NaN.
    """
    vec = np.array(values, dtype=np.float64, copy=True).reshape(-1) if np.ndim(values) else None
    if vec is None or vec.size != size:
        raise ValueError(f"{name} must have {size} entries, got shape {np.shape(values)}")
    bad = np.flatnonzero(~(vec >= 0))
    if bad.size:
        raise ValueError(f"{name} must be >= 0 (inf allowed); entry {int(bad[0])} is {float(vec[bad[0]])}")
    return vec


def _check_tol(tol: float) -> float:
    tol = float(tol)
    if not (0.0 <= tol < 1e-2):
        raise ValueError(f"tol must be in [0, 1e-2), got {tol!r}")
    return tol


def _gather(indptr: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Positions in ``indices`` / ``data`` of the entries of compressed rows (or columns) ``rows``,
    concatenated."""
    if rows.size == 1:  # optimisation: the common round saturates one link
        return np.arange(indptr[rows[0]], indptr[rows[0] + 1])
    if rows.size == 0:
        return np.zeros(0, dtype=np.intp)
    starts = indptr[rows]
    lengths = indptr[rows + 1] - starts
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.intp)
    before = np.cumsum(lengths) - lengths
    return np.repeat(starts - before, lengths) + np.arange(total)


class _Incidence(NamedTuple):
    """Both orientations of a canonical incidence matrix as raw arrays (no scipy overhead per use)."""

    n_links: int
    n_flows: int
    link_ptr: np.ndarray  # CSR: flows of link l are link_flows[link_ptr[l]:link_ptr[l + 1]]
    link_flows: np.ndarray
    flow_ptr: np.ndarray  # CSC: links of flow f are flow_links[flow_ptr[f]:flow_ptr[f + 1]]
    flow_links: np.ndarray
    flow_weights: np.ndarray
    entry_flow: np.ndarray  # flow of each CSC entry

    @classmethod
    def from_csc(cls, n_links: int, ptr: np.ndarray, links: np.ndarray, weights: np.ndarray) -> _Incidence:
        """From CSC arrays with positive weights and no duplicate (link, flow) entries."""
        n_flows = ptr.size - 1
        entry_flow = np.repeat(np.arange(n_flows), np.diff(ptr))
        by_link = np.argsort(links, kind="stable")
        link_ptr = np.zeros(n_links + 1, dtype=np.int64)
        np.cumsum(np.bincount(links, minlength=n_links), out=link_ptr[1:])
        return cls(n_links, n_flows, link_ptr, entry_flow[by_link], ptr, links, weights, entry_flow)

    @classmethod
    def from_scipy(cls, a_csr: sparse.csr_matrix, a_csc: sparse.csc_matrix) -> _Incidence:
        """From the canonical pair returned by :func:`_as_incidence`."""
        n_links, n_flows = a_csr.shape
        entry_flow = np.repeat(np.arange(n_flows), np.diff(a_csc.indptr))
        return cls(
            n_links, n_flows, a_csr.indptr, a_csr.indices, a_csc.indptr, a_csc.indices, a_csc.data, entry_flow
        )

    def link_sums(self, per_flow: np.ndarray) -> np.ndarray:
        """``A @ per_flow``: the sum over each link of weight x value of the flows crossing it."""
        return np.bincount(
            self.flow_links, weights=self.flow_weights * per_flow[self.entry_flow], minlength=self.n_links
        )


class _Filler:
    """State of one water-filling run: the level, the active flows and each link's saturation level.

    All active flows share the current rate ``level``. Link ``l`` would saturate at level
    ``(capacity[l] - frozen_load[l]) / active_weight[l]``; that level only grows as flows freeze elsewhere,
    which is what makes the frontier optimisation below exact.
    """

    def __init__(
        self,
        a: _Incidence,
        capacity: np.ndarray,
        demand_cap: np.ndarray,
        tol: float,
        keep: np.ndarray | None,
        start_level: float,
    ) -> None:
        """Set up a run; see :func:`_water_fill`, its only caller, for ``keep`` and ``start_level``."""
        n_links, n_flows = a.n_links, a.n_flows
        self.a, self.capacity, self.tol = a, capacity, tol
        self.rate = np.zeros(n_flows)
        self.active = np.ones(n_flows, dtype=bool)
        if keep is not None:  # warm start: these flows are already frozen at the given rates
            fixed = np.isfinite(keep)
            self.rate[fixed] = keep[fixed]
            self.active[fixed] = False

        hops = np.diff(a.flow_ptr)
        idle = np.flatnonzero(hops == 0)
        unbounded = idle[~np.isfinite(demand_cap[idle])]
        if unbounded.size:
            raise ValueError(
                f"flows {_few(unbounded)} cross no link and have no finite demand cap; "
                "their max-min rate would be unbounded"
            )
        self.rate[idle] = demand_cap[idle]
        self.active[idle] = False
        self.n_active = int(np.count_nonzero(self.active))

        self.active_weight = a.link_sums(self.active.astype(np.float64))
        # Counted as integers so that "no active flow left on a link" never depends on float rounding.
        entry_active = self.active[a.entry_flow]
        self.active_count = np.bincount(a.flow_links[entry_active], minlength=n_links).astype(np.int64)
        self.frozen_load = a.link_sums(np.where(self.active, 0.0, self.rate))
        self.link_level = np.full(n_links, np.inf)
        live = self.active_count > 0
        self.link_level[live] = np.maximum(
            (capacity[live] - self.frozen_load[live]) / self.active_weight[live], start_level
        )

        capped = np.flatnonzero(self.active & np.isfinite(demand_cap))
        self.cap_order = capped[np.argsort(demand_cap[capped], kind="stable")]
        self.cap_sorted = demand_cap[self.cap_order]
        self.cap_next = 0

        self.frontier_size = _frontier_size(n_links)
        self._rebuild_frontier()

    # -- optimisation: frontier of the lowest link levels -------------------------------------------------
    def _rebuild_frontier(self) -> None:
        """Keep the ``frontier_size`` lowest-level live links (and ties); every other link is above
        ``boundary`` and, since levels only grow, stays above it."""
        live = np.flatnonzero(self.active_count > 0)
        levels = self.link_level[live]
        # At most n_active rounds are left: with few, plain scans of every live link beat a partition.
        if live.size > self.frontier_size and self.n_active > 16:
            self.boundary = float(np.partition(levels, self.frontier_size - 1)[self.frontier_size - 1])
            live = live[levels <= self.boundary]
        else:
            self.boundary = np.inf
        self.frontier = live

    def _lowest_link_level(self) -> float:
        levels = self.link_level[self.frontier]
        lowest = float(levels.min()) if levels.size else np.inf
        if lowest > self.boundary:  # the frontier is used up: links outside it may now be lowest
            self._rebuild_frontier()
            levels = self.link_level[self.frontier]
            lowest = float(levels.min()) if levels.size else np.inf
        self.frontier_levels = levels
        return lowest

    # -- demand caps, in increasing order -------------------------------------------------------------------
    def _lowest_cap(self) -> float:
        """Demand cap of the first still-active flow in cap order (galloping over frozen ones)."""
        n, step = self.cap_order.size, 64
        while self.cap_next < n:
            chunk = self.active[self.cap_order[self.cap_next : self.cap_next + step]]
            if chunk.any():
                self.cap_next += int(np.argmax(chunk))
                return float(self.cap_sorted[self.cap_next])
            self.cap_next += chunk.size
            step *= 2
        return np.inf

    # -- one round ------------------------------------------------------------------------------------------
    def fill_round(self) -> None:
        link_level = self._lowest_link_level()
        cap_level = self._lowest_cap()
        level = min(link_level, cap_level)
        if not np.isfinite(level):
            stuck = np.flatnonzero(self.active)
            raise ValueError(
                f"flows {_few(stuck)} cross only links of infinite capacity and have no finite demand cap; "
                "their max-min rate would be unbounded"
            )
        limit = level * (1.0 + self.tol)  # levels within tol of the lowest are ties, frozen together
        parts = []
        if link_level <= limit:
            saturated = self.frontier[self.frontier_levels <= limit]
            parts.append(self.a.link_flows[_gather(self.a.link_ptr, saturated)])
        if cap_level <= limit:
            stop = int(np.searchsorted(self.cap_sorted, limit, side="right"))
            parts.append(self.cap_order[self.cap_next : stop])
            self.cap_next = stop
        # A canonical CSR row lists each flow once, so one part from one link needs no np.unique.
        single = len(parts) == 1 and link_level <= limit and saturated.size == 1
        flows = parts[0] if single else np.unique(np.concatenate(parts))
        self._freeze(flows[self.active[flows]], level)

    def _freeze(self, flows: np.ndarray, level: float) -> None:
        """Fix ``flows`` at ``level`` and update the saturation level of every link they cross."""
        self.active[flows] = False
        self.rate[flows] = level
        self.n_active -= flows.size
        pos = _gather(self.a.flow_ptr, flows)
        links, weights = self.a.flow_links[pos], self.a.flow_weights[pos]
        np.subtract.at(self.active_weight, links, weights)
        np.add.at(self.frozen_load, links, weights * level)
        np.subtract.at(self.active_count, links, 1)
        with np.errstate(divide="ignore", invalid="ignore"):  # links left without active flows: fixed below
            new_level = (self.capacity[links] - self.frozen_load[links]) / self.active_weight[links]
        # max(., level): rounding must never put a link's level below the current one.
        new_level = np.maximum(new_level, level)
        new_level[self.active_count[links] == 0] = np.inf
        self.link_level[links] = new_level

    def run(self) -> np.ndarray:
        while self.n_active:
            self.fill_round()
        return self.rate


def _water_fill(
    a: _Incidence,
    capacity: np.ndarray,
    demand_cap: np.ndarray,
    tol: float,
    *,
    keep: np.ndarray | None = None,
    start_level: float = 0.0,
) -> np.ndarray:
    """Progressive filling on already checked, canonical inputs (no copies, no checks).

    Warm start (used by the fluid simulator after flows leave): ``keep`` holds a rate for each flow known
    to be frozen below ``start_level`` and NaN for the others, which restart at ``start_level``. If the
    flows that left all had rates ``>= start_level`` in the previous max-min allocation, every flow below
    that level keeps its rate (the filling rounds below it are unchanged: the leaving flows' links only get
    higher saturation levels), so the result equals a cold solve.
    """
    return _Filler(a, capacity, demand_cap, tol, keep, start_level).run()


def max_min_rates(
    incidence: sparse.spmatrix | sparse.sparray | np.ndarray,
    capacity_bytes_per_s: np.ndarray,
    *,
    demand_cap_bytes_per_s: np.ndarray | None = None,
    tol: float = 1e-9,
) -> np.ndarray:
    """Max-min fair rate of every flow, in bytes/s, by progressive filling.

    All flows start at rate 0 and rise together. Link ``l`` with capacity ``c_l``, load ``F_l`` from flows
    already frozen and summed weight ``W_l`` of the still-rising flows saturates when the common level
    reaches ``t_l = (c_l - F_l) / W_l``. Each round takes the lowest ``t_l`` (or the lowest demand cap of a
    rising flow), raises every rising flow to it and freezes the flows that cross a saturated link or
    reached their cap. Link load is ``A @ r``.

    Parameters
    ----------
    incidence : scipy.sparse matrix or array (CSR or CSC preferred), or 2-D ndarray
        ``A``, shape ``(n_links, n_flows)``; ``A[l, f] >= 0`` is the fraction of flow ``f``'s rate that
        crosses link ``l`` (1.0 unsplit, ``1/k`` per path when sprayed over ``k`` paths). Dimensionless.
        Explicit zeros and duplicate entries are allowed (duplicates add up).
    capacity_bytes_per_s : array_like, shape (n_links,)
        ``c``, capacity of each link in one direction, bytes/s; ``>= 0``, ``inf`` allowed.
    demand_cap_bytes_per_s : array_like, shape (n_flows,), optional
        Highest rate each flow may use (e.g. NIC line rate or application demand), bytes/s; ``>= 0``,
        ``inf`` (the default) for none. A cap is the same as a private link of that capacity.
    tol : float, default 1e-9
        Relative float tolerance: saturation levels within a factor ``1 + tol`` of the round's lowest are
        ties and frozen together *at* the lowest. Hence no link is ever loaded above its capacity (except
        by float rounding, ~1e-15 relative), every link that is a bottleneck carries at least
        ``(1 - tol) * capacity``, and a flow frozen by its cap gets at least ``cap / (1 + tol)``.

    Returns
    -------
    numpy.ndarray, shape (n_flows,)
        Rates, bytes/s. A flow crossing a zero-capacity link gets 0; a flow crossing no link gets its
        demand cap.

    Raises
    ------
    ValueError
        If shapes disagree, a weight, capacity or cap is negative or NaN, ``tol`` is outside ``[0, 1e-2)``,
        or a flow's rate would be unbounded (it crosses no link, or only links of infinite capacity, and
        has no finite cap).

    See Also
    --------
    validate_max_min : check the max-min invariants of any allocation.

    Notes
    -----
    The result is the unique max-min fair allocation of the polytope ``{r >= 0, A r <= c, r <= cap}``,
    which has the free-disposal property, so water-filling is exact [1]_, [2]_. Rounds equal the number of
    distinct bottleneck levels; each costs O(frontier + entries of the flows frozen in it), so the whole run
    is O(nnz(A)) plus O(rounds * sqrt(n_links)) plus occasional O(n_links) frontier rebuilds. Symmetric
    fabrics have a handful of levels; random instances with heterogeneous loads have up to ~n_links.

    Max-min is a model of *steady-state* sharing under a well-behaved congestion control; it ignores
    queueing, RTT bias and short-message latency (see the fabric-models reference note, section 2).

    References
    ----------
    .. [1] D. Bertsekas and R. Gallager, *Data Networks*, 2nd ed., Prentice Hall, 1992, sec. 6.5.2
       ("Max-min fairness"), ISBN 0-13-200916-1.
    .. [2] B. Radunovic and J.-Y. Le Boudec, "A unified framework for max-min and min-max fairness with
       applications", IEEE/ACM Trans. Networking 15(5):1073-1083, 2007.

    Examples
    --------
    Two links of capacity 1 and 2; flows cross {0}, {0, 1}, {1}, {1}. Link 0 saturates first at 1/2; the
    two flows left on link 1 share the remaining 2 - 1/2:

    >>> import numpy as np
    >>> a = np.array([[1, 1, 0, 0], [0, 1, 1, 1]])
    >>> max_min_rates(a, np.array([1.0, 2.0])).tolist()
    [0.5, 0.5, 0.75, 0.75]
    """
    tol = _check_tol(tol)
    a_csr, a_csc = _as_incidence(incidence)
    n_links, n_flows = a_csr.shape
    capacity = _as_vector(capacity_bytes_per_s, n_links, "capacity_bytes_per_s")
    if demand_cap_bytes_per_s is None:
        demand_cap = np.full(n_flows, np.inf)
    else:
        demand_cap = _as_vector(demand_cap_bytes_per_s, n_flows, "demand_cap_bytes_per_s")
    a = _Incidence.from_scipy(a_csr, a_csc)
    return _water_fill(a, capacity, demand_cap, tol)


def validate_max_min(
    incidence: sparse.spmatrix | sparse.sparray | np.ndarray,
    capacity_bytes_per_s: np.ndarray,
    rates_bytes_per_s: np.ndarray,
    tol: float = 1e-6,
    *,
    demand_cap_bytes_per_s: np.ndarray | None = None,
) -> list[str]:
    """Check that ``rates_bytes_per_s`` is a max-min fair allocation; return the violations found.

    The checks, in the spirit of networkx's ``validate_flows``:

    1. every rate is finite and ``>= 0`` and at most its demand cap;
    2. no link is loaded above capacity: ``(A r)_l <= c_l (1 + tol) + atol``;
    3. every flow is at its demand cap, or has a *bottleneck*: a link it crosses that is saturated
       (``(A r)_l >= c_l (1 - tol) - atol``) and on which its rate is the largest among the flows crossing
       it (``r_f >= max_g r_g (1 - tol) - atol``).

    Condition 3 for every flow is equivalent to max-min fairness for this feasible set [1]_.

    Parameters
    ----------
    incidence : scipy.sparse matrix or array, or 2-D ndarray
        ``A``, shape ``(n_links, n_flows)``, as for :func:`max_min_rates`.
    capacity_bytes_per_s : array_like, shape (n_links,)
        Link capacities, bytes/s.
    rates_bytes_per_s : array_like, shape (n_flows,)
        The allocation to check, bytes/s.
    tol : float, default 1e-6
        Relative tolerance. ``atol = tol * scale`` where ``scale`` is the largest finite positive capacity,
        cap or rate (1.0 if none), so zero-capacity links and zero rates are judged sensibly. Use a value
        at least a few times the ``tol`` the allocation was computed with.
    demand_cap_bytes_per_s : array_like, shape (n_flows,), optional
        Demand caps, bytes/s; ``inf`` (default) for none.

    Returns
    -------
    list of str
        One line per violation, naming the link or flow and the numbers; empty if the allocation is
        max-min fair.

    Raises
    ------
    ValueError
        If shapes disagree, or capacities, caps or ``tol`` are invalid.

    References
    ----------
    .. [1] D. Bertsekas and R. Gallager, *Data Networks*, 2nd ed., Prentice Hall, 1992, sec. 6.5.2
       (a feasible rate vector is max-min fair iff each session has a bottleneck link).

    Examples
    --------
    >>> import numpy as np
    >>> a = np.array([[1, 1, 0, 0], [0, 1, 1, 1]])
    >>> validate_max_min(a, [1.0, 2.0], [0.5, 0.5, 0.75, 0.75])
    []

    Feasible and saturating, but unfair to flow 2 (link 1 is full and flow 3 gets more on it):

    >>> validate_max_min(a, [1.0, 2.0], [0.5, 0.5, 0.5, 1.0])
    ['flow 2: rate 0.5 B/s has no bottleneck (no saturated link where it is the largest) and no cap']
    """
    if not (0.0 <= float(tol) < 1.0):
        raise ValueError(f"tol must be in [0, 1), got {tol!r}")
    a_csr, a_csc = _as_incidence(incidence)
    n_links, n_flows = a_csr.shape
    capacity = _as_vector(capacity_bytes_per_s, n_links, "capacity_bytes_per_s")
    demand = (
        np.full(n_flows, np.inf)
        if demand_cap_bytes_per_s is None
        else _as_vector(demand_cap_bytes_per_s, n_flows, "demand_cap_bytes_per_s")
    )
    rates = np.asarray(rates_bytes_per_s, dtype=np.float64).reshape(-1)
    if rates.size != n_flows:
        raise ValueError(
            f"rates_bytes_per_s must have {n_flows} entries, got shape {np.shape(rates_bytes_per_s)}"
        )

    scale_pool = np.concatenate([capacity, demand, rates])
    scale_pool = scale_pool[np.isfinite(scale_pool) & (scale_pool > 0)]
    atol = float(tol) * (float(scale_pool.max()) if scale_pool.size else 1.0)
    violations: list[str] = []

    bad_rate = np.flatnonzero(~(np.isfinite(rates) & (rates >= -atol)))
    violations += [f"flow {f}: rate {float(rates[f])} B/s is not finite and >= 0" for f in bad_rate]
    over_cap = np.flatnonzero(rates > demand * (1 + tol) + atol)
    violations += [
        f"flow {f}: rate {rates[f]:.9g} B/s exceeds its demand cap {demand[f]:.9g} B/s" for f in over_cap
    ]
    if bad_rate.size:
        return violations  # loads and bottlenecks mean nothing with NaN or infinite rates

    load = np.asarray(a_csr @ rates).reshape(-1)
    over = np.flatnonzero(load > capacity * (1 + tol) + atol)
    violations += [f"link {i}: load {load[i]:.9g} B/s exceeds capacity {capacity[i]:.9g} B/s" for i in over]

    saturated = load >= capacity * (1 - tol) - atol
    link_max = np.zeros(n_links)
    nonempty = np.flatnonzero(np.diff(a_csr.indptr) > 0)
    if nonempty.size:
        link_max[nonempty] = np.maximum.reduceat(rates[a_csr.indices], a_csr.indptr[nonempty])
    entry_flow = np.repeat(np.arange(n_flows), np.diff(a_csc.indptr))
    entry_link = a_csc.indices
    is_bottleneck = saturated[entry_link] & (rates[entry_flow] >= link_max[entry_link] * (1 - tol) - atol)
    has_bottleneck = np.bincount(entry_flow[is_bottleneck], minlength=n_flows) > 0
    at_cap = rates >= demand * (1 - tol) - atol
    for f in np.flatnonzero(~(has_bottleneck | at_cap)):
        cap_text = f"cap {demand[f]:.9g} B/s" if np.isfinite(demand[f]) else "no cap"
        violations.append(
            f"flow {f}: rate {rates[f]:.9g} B/s has no bottleneck "
            f"(no saturated link where it is the largest) and {cap_text}"
        )
    return violations
