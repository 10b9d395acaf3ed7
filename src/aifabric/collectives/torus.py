"""Collectives on a TPU slice (ICI): rings on its torus axes, lines on its mesh axes, every axis at once.

A slice (:mod:`aifabric.cluster.tpu_slice`) has per axis ``d_a`` chips joined by direct ICI links of
``b`` bytes/s per direction; an axis with wraparound is a ring (torus axis), one without a line (mesh
axis). A collective over the whole slice is a sequence of per-axis collectives (a multi-dimensional
ring), the data split over every order of the axes so that all axes' links carry data at once.
"""

from __future__ import annotations

import math
from functools import cache
from itertools import permutations

from aifabric.cluster.tpu_slice import TpuSlice, chip_axes, resolve_slice, twist_slice
from aifabric.cluster.twisted import twisted_distances
from aifabric.collectives.communicator import Communicator
from aifabric.collectives.cost import SCALE_UP, Algorithm, Cost, make_cost
from aifabric.collectives.ops import Collective
from aifabric.collectives.tiers import Protocol, TierModel
from aifabric.errors import ConfigError

__all__ = [
    "axis_all_gather_s",
    "slice_all_gather_s",
    "slice_all_to_all_s",
    "slice_diameter",
    "torus_cost",
    "torus_slice",
]


def _ways(wraps: bool) -> int:
    """Directed links of one chip that carry an axis's ring (2: both ways round) or line (1, the busiest)."""
    return 2 if wraps else 1


def axis_all_gather_s(bytes_: float, chips: int, wraps: bool, link_bytes_per_s: float) -> float:
    """Bandwidth time of an all-gather (or reduce-scatter) of ``V`` = ``bytes_`` along one axis, seconds.

    ``d`` = ``chips`` on the axis, ``b`` = ``link_bytes_per_s`` one ICI link in one direction::

        ring (torus axis, wraparound):    T = (d-1)/d V / (2 b)
        line (mesh axis, no wraparound):  T = (d-1)/d V / b

    A bidirectional ring sends half of every shard each way round, so each directed link carries
    ``(d-1)/d V/2``. A line has no link to close the ring: the shard of an end chip must cross every link
    one way, and the last link carries the ``d-1`` shards of ``V/d`` of all the chips before it: twice the
    ring's load. Source: JAX scaling book ("How to Scale Your Model", sharding chapter: a v5e axis of 4
    chips without wraparound, "3 hops ... 3 x 8.4e6 / 4.5e10 = 560 us", against ``V / W_bidir`` = 377 us
    with it; TPU chapter: no wraparound "typically doubles the time of most communication").

    The book's v5e example, 34 MB over 4 chips at 45 GB/s per link (it drops the ``(d-1)/d``: 377 us with
    wraparound; 560 us without, where 8.4e6 rounds 34e6 / 4):

    >>> [round(axis_all_gather_s(34e6, 4, w, 45e9) * 1e6) for w in (True, False)]
    [283, 567]
    """
    return (chips - 1) / chips * bytes_ / (_ways(wraps) * link_bytes_per_s)


@cache
def _all_gather_factor(axes: tuple[tuple[int, bool], ...]) -> float:
    """``min_x max_a sum_o x_o l_(o,a)`` of :func:`slice_all_gather_s`: seconds x ``b`` per byte."""
    n = math.prod(d for d, _ in axes)
    if len(axes) == 1:
        d, w = axes[0]
        return (d - 1) / d / _ways(w)
    orders = list(permutations(range(len(axes))))
    load = [[0.0] * len(orders) for _ in axes]  # load[a][o]: axis a's link time per byte under order o
    for o, order in enumerate(orders):
        grown = 1
        for a in order:
            d, w = axes[a]
            grown *= d
            load[a][o] = (d - 1) / d * grown / n / _ways(w)
    from scipy.optimize import linprog  # lazy: scipy.optimize costs start-up time; cached per shape

    k = len(orders)
    res = linprog(
        c=[0.0] * k + [1.0],
        A_ub=[row + [-1.0] for row in load],
        b_ub=[0.0] * len(axes),
        A_eq=[[1.0] * k + [0.0]],
        b_eq=[1.0],
        bounds=[(0, None)] * (k + 1),
    )
    return float(res.x[-1])


def slice_all_gather_s(bytes_: float, sl: TpuSlice, link_bytes_per_s: float) -> float:
    """Bandwidth time of an all-gather (or reduce-scatter) of ``S`` = ``bytes_`` over a whole slice, seconds.

    The data is split into parts ``x_o`` (summing to 1), one per order ``o`` of the slice's axes; a part
    runs :func:`axis_all_gather_s` along its axes in its order, the data it holds growing ``d_a``-fold per
    axis. With ``P_(o,a)`` the product of the axis sizes up to and including ``a`` in order ``o`` and
    ``n`` the slice's chips, axis ``a``'s links are busy ``S x_o l_(o,a) / b`` for part ``o``::

        l_(o,a) = (d_a - 1)/d_a x P_(o,a)/n / w_a      (w_a = 2 on a ring, 1 on a line)
        T = S / b x min_x max_a sum_o x_o l_(o,a)      (a linear programme, scipy's linprog)

    the busiest axis bounding the time, the parts pipelined. On a torus the loads telescope to
    ``(n-1)/n S / (2 k b)`` for every balanced split (k axes): the JAX scaling book's "bytes / (W_bidir
    x num_axes)" for a collective over several axes (sharding chapter). The split is our derivation.

    TPU v5p 4x4x4 cube, b = 100 GB/s: ``63/64 x 1 GB / 600 GB/s``:

    >>> round(slice_all_gather_s(1e9, TpuSlice((4, 4, 4), (True,) * 3), 100e9) * 1e6, 1)
    1640.6
    """
    if not sl.axes:
        return 0.0
    return bytes_ * _all_gather_factor(sl.axes) / link_bytes_per_s


def _cut_share(d: int) -> float:
    """``m(d) = floor(d/2) ceil(d/2) / d``: per byte a chip sends, the bytes crossing the middle of an axis
    of ``d`` chips one way (the mean ring distance, ``d/4`` for even ``d``)."""
    return (d // 2) * (d - d // 2) / d


def slice_all_to_all_s(bytes_per_rank: float, sl: TpuSlice, link_bytes_per_s: float) -> float:
    """Bandwidth time of a uniform all-to-all over a slice, routed dimension by dimension, seconds.

    Every chip sends ``S/n`` to every chip (``S`` = ``bytes_per_rank``). Along axis ``a`` each chip
    moves ``S/d_a`` to each position of its line or ring; the middle cut carries
    ``floor(d/2) ceil(d/2) S / d`` each way, over 2 directed links round a ring (and the ring's two cuts),
    one across a line::

        T = max_a S m(d_a) / (w_a b),   m(d) = floor(d/2) ceil(d/2) / d,  w = 2 ring, 1 line

    a ring of even ``d``: ``S d / (8 b)``, the JAX scaling book's AllToAll ``V / (4 W_bidir)`` with
    ``V = n S``, ``W_bidir = 2 b`` for a ring of ``n = d`` (sharding chapter); a line twice that. Axes
    use separate links, so the busiest sets the time (our derivation).

    A twisted torus (:mod:`aifabric.cluster.twisted`) is edge-symmetric: uniform traffic loads its ``6 n``
    directed links alike. The ``n S`` bytes travel ``h`` hops on average (``h`` its mean distance), so::

        T = S h / (6 b)     (twisted)

    ``4x4x8`` (``h`` = 55/16): ``55/96 S / b`` against the plain torus's ``S / b`` (its long axis: m(8)/2),
    1.75x faster; ``4x8x8`` (``h`` = 69/16): ``69/96 S / b`` against ``S / b``, 1.39x.

    >>> plain, twisted = (TpuSlice((4, 4, 8), (True,) * 3, t) for t in (False, True))
    >>> [round(slice_all_to_all_s(1e9, s, 90e9) * 1e6, 1) for s in (plain, twisted)]
    [11111.1, 6365.7]
    """
    if not sl.axes:
        return 0.0
    if sl.twisted:
        return bytes_per_rank * twisted_distances(sl.dims)[1] / (2 * len(sl.axes) * link_bytes_per_s)
    return max(bytes_per_rank * _cut_share(d) / (_ways(w) * link_bytes_per_s) for d, w in sl.axes)


def slice_diameter(sl: TpuSlice) -> int:
    """ICI hops between the farthest two chips of a slice: ``sum_a (floor(d_a/2) on a ring, d_a - 1 on a
    line)``; a twisted torus's by breadth-first search (``4x4x8``: 6 against 8, ``4x8x8``: 6 against 10).

    >>> [slice_diameter(TpuSlice((4, 8, 8), (True,) * 3, t)) for t in (False, True)]
    [10, 6]
    """
    if sl.twisted:
        return twisted_distances(sl.dims)[0]
    return sum(d // 2 if w else d - 1 for d, w in sl.axes)


def torus_slice(tm: TierModel, n_ranks: int) -> TpuSlice:
    """The slice ``n_ranks`` ranks run on (:func:`aifabric.cluster.tpu_slice.resolve_slice`), memoised."""
    return tm.memo(
        ("torus_slice", n_ranks),
        lambda: _slice_of(tm, n_ranks),
    )


def _slice_of(tm: TierModel, n_ranks: int) -> TpuSlice:
    """:func:`~aifabric.cluster.tpu_slice.resolve_slice`, twisted when the cluster says so."""
    sl = resolve_slice(tm.slice_rules, n_ranks, tm.torus_dims, tm.torus_slice, what="TPU")
    return twist_slice(tm.slice_rules, sl, what="TPU") if tm.torus_twisted else sl


def torus_cost(
    op: Collective, proto: Protocol, message_bytes: float, comm: Communicator, tm: TierModel
) -> Cost | None:
    """Any collective on one TPU slice (direct ICI links, no NCCL protocols), seconds.

    With ``b = B / (2 K)`` one link's bandwidth per direction (``B`` the chip's per-direction ICI
    bandwidth, ``K`` the axes it is spread over, :func:`~aifabric.cluster.tpu_slice.chip_axes`: the
    generation's for a catalogue TPU, whatever the domain's shape (unwired links idle); the domain's own
    for a declared ``scale_up.bandwidth``), ``S`` the nccl-tests size,
    ``h`` the hop latency and
    ``D`` the slice's diameter in hops (:func:`slice_diameter`; a twisted torus's is shorter):

    - all-gather, reduce-scatter: :func:`slice_all_gather_s` ``+ D h``; all-reduce (reduce-scatter then
      all-gather) twice both terms. On a torus slice ``(n-1)/n S / B`` per phase (all links busy), twisted
      or not (a twisted torus's rings, ``2k`` long through the twist, still fill every link); the twist
      shortens ``D``.
    - all-to-all: :func:`slice_all_to_all_s` ``+ D h``.
    - broadcast, reduce: every byte leaves (enters) the root once over its ``sum_a w_a`` slice links
      (2 per ring axis, 1 per line axis at a corner root), ``T = S / (b sum_a w_a) + D h``, a lower bound
      reached by pipelining over edge-disjoint spanning trees (a k-dimensional torus holds k edge-disjoint
      Hamiltonian cycles: Bae & Bose, IEEE Trans. Computers 52(10), 2003).
    - send/recv between two neighbouring chips: one link, ``T = S / b + h``.

    Raises
    ------
    ConfigError
        send_recv on other than 2 ranks; a rank count no slice holds (:func:`torus_slice`).

    Examples
    --------
    TPU v5p, its largest slice 16x16x24 (6,144 chips), 540 GB/s per direction, 1 us per hop:
    ``2 x 6143/6144 x 1e9 / 540e9`` + 2 x (8 + 8 + 12) = 56 hop steps:

    >>> from aifabric.cluster.presets import preset
    >>> from aifabric.collectives.tiers import tier_model
    >>> spec = preset("tpu-v5p-pod")
    >>> c = torus_cost(Collective.ALL_REDUCE, Protocol.SIMPLE, 1e9, Communicator.contiguous(spec, 6144),
    ...                tier_model(spec))
    >>> round(c.time_s * 1e6, 1)
    3759.1
    """
    n = comm.n_ranks
    b = tm.intra_bytes_per_s / (2 * chip_axes(tm.slice_rules, tm.torus_dims, declared=tm.torus_declared))
    if op is Collective.SEND_RECV:
        if n != 2:
            raise ConfigError(f"ranks: send_recv needs exactly 2 ranks (--ranks 2), got {n}")
        return _cost(tm, proto, message_bytes / b, 1, f"one ICI link at {b / 1e9:.0f} GB/s")
    sl = torus_slice(tm, n)
    hops = slice_diameter(sl)
    where = f"the {sl.describe()} slice"
    if op in (Collective.ALL_REDUCE, Collective.ALL_GATHER, Collective.REDUCE_SCATTER):
        phases = 2 if op is Collective.ALL_REDUCE else 1
        t_bw = phases * slice_all_gather_s(message_bytes, sl, b)
        return _cost(tm, proto, t_bw, phases * hops, f"rings and lines on every axis of {where} at once")
    if op is Collective.ALL_TO_ALL:
        t_bw = slice_all_to_all_s(message_bytes, sl, b)
        how = "every link alike (edge-symmetric)" if sl.twisted else "routed axis by axis: the busiest axis"
        return _cost(tm, proto, t_bw, hops, f"all-to-all on {where}, {how}")
    ways = sum(_ways(w) for _, w in sl.axes) or 1
    t_bw = message_bytes / (ways * b)
    return _cost(tm, proto, t_bw, hops, f"pipelined over the root's {ways} ICI links of {where}")


def _cost(tm: TierModel, proto: Protocol, t_bw: float, steps: int, what: str) -> Cost:
    """The torus cost of a bandwidth term and ``steps`` hops of latency, with its explanation."""
    lat = steps * tm.hop_latency_s * tm.latency_scale

    def why() -> str:
        return f"{what}; {steps} hop steps of latency"

    return make_cost(tm, Algorithm.TORUS, proto, lat, {SCALE_UP: t_bw}, SCALE_UP, why)
