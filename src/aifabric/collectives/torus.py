"""Collectives on a TPU-style torus (ICI): rings on every axis at once, bisection-bound all-to-all."""

from __future__ import annotations

from aifabric.collectives.communicator import Communicator
from aifabric.collectives.cost import SCALE_UP, Algorithm, Cost, make_cost
from aifabric.collectives.ops import Collective, busbw_factor
from aifabric.collectives.tiers import Protocol, TierModel
from aifabric.errors import ConfigError

__all__ = ["torus_all_to_all_s", "torus_cost"]


def _mean_ring_distance(d: int) -> float:
    """Mean shortest distance, in hops, from a chip to every chip (itself included) of a ring of ``d``.

    ``(1/d) sum_{k=0}^{d-1} min(k, d-k)``: ``d/4`` for even ``d``, ``(d^2-1)/(4d)`` for odd ``d``.
    """
    return (d * d - d % 2) / (4 * d)


def torus_all_to_all_s(bytes_per_rank: float, dims: tuple[int, ...], chip_bytes_per_s: float) -> float:
    """Bandwidth time of a uniform all-to-all on a bidirectional torus, seconds.

    Every chip of the ``n = prod(dims)`` chips sends ``S/n`` bytes to every chip (``S`` =
    ``bytes_per_rank``, the nccl-tests size), routed dimension by dimension the short way round each
    ring. Along axis ``a`` of size ``d_a`` the bytes x hops are ``n S m(d_a)``, with ``m`` the mean ring
    distance (``d/4`` for even ``d``), shared by the axis's ``2n`` directed links. Axes use separate
    links, so the most loaded one sets the time; with the chip's per-direction bandwidth ``B`` split over
    ``2k`` links (``k`` axes)::

        T = S max_a m(d_a) / (2 b),   b = B / (2k)   ->   T = k S max_a m(d_a) / B

    Source: the link-load argument of "How to Scale Your Model" (JAX scaling book, ch. 3: an all-to-all
    on a bidirectional ring costs a quarter of an all-gather, ``V/(4 W)``), extended per axis; our
    derivation. A 1-D ring of ``n`` (``k = 1``, ``B = 2b``) gives ``S n / (8 b)`` = the book's
    ``V/(4 W_bidir)`` with ``V = n S`` and ``W_bidir = 2b``.
    """
    axes = [d for d in dims if d > 1]
    if not axes:
        return 0.0
    return len(axes) * bytes_per_rank * max(_mean_ring_distance(d) for d in axes) / chip_bytes_per_s


def torus_cost(
    op: Collective, proto: Protocol, message_bytes: float, comm: Communicator, tm: TierModel
) -> Cost | None:
    """Any collective on one torus domain (direct ICI links, no NCCL protocols), seconds.

    With ``B`` the chip's total per-direction ICI bandwidth, ``k`` torus axes, ``n`` ranks, ``S`` the
    nccl-tests size, ``D = sum_a floor(d_a / 2)`` the torus diameter in hops and ``h`` the hop latency:

    - all-reduce, all-gather, reduce-scatter: bidirectional rings on every axis at once, so all of a
      chip's links carry data and the bandwidth term is one ring's at ``B``::

          T = 2 (n-1)/n S / B + 2 D h  (all-reduce),   (n-1)/n S / B + D h  (all-gather, reduce-scatter)

      (JAX scaling book, "How to Scale Your Model", ch. 3: collectives over several torus axes use the
      links of all of them.)
    - all-to-all: bisection-bound, ``T = k S max_a m(d_a) / B + D h`` (:func:`torus_all_to_all_s`).
    - broadcast, reduce: every byte leaves (enters) the root once, so ``S / B`` bounds the bandwidth term;
      pipelining over the root's ``2k`` links (a ``k``-dimensional torus holds ``k`` edge-disjoint
      Hamiltonian cycles: Bae & Bose, IEEE Trans. Computers 52(10), 2003) reaches it: ``T = S / B + D h``,
      a lower bound (latency: one diameter).
    - send/recv between two neighbouring chips: one direct link, ``b = B / (2k)``: ``T = S / b + h``.

    Raises
    ------
    ConfigError
        send_recv on other than 2 ranks.

    Examples
    --------
    TPU v5p pod 16x20x28, 600 GB/s per direction, 1 us per hop: 2 x (8 + 10 + 14) = 64 hop steps:

    >>> from aifabric.cluster.presets import preset
    >>> from aifabric.collectives.tiers import tier_model
    >>> spec = preset("tpu-v5p-pod")
    >>> c = torus_cost(Collective.ALL_REDUCE, Protocol.SIMPLE, 1e9, Communicator.contiguous(spec),
    ...                tier_model(spec))
    >>> round(c.time_s * 1e6, 1)
    3397.0
    """
    n = comm.n_ranks
    B = tm.intra_bytes_per_s  # noqa: N806  (B as in the docstring)
    dims = tm.torus_dims or (n,)
    k = max(1, sum(1 for d in dims if d > 1))
    diameter = sum(d // 2 for d in dims)
    shape = "x".join(map(str, dims))
    if op in (Collective.ALL_REDUCE, Collective.ALL_GATHER, Collective.REDUCE_SCATTER):
        t_bw = message_bytes * busbw_factor(op, n) / B
        steps = diameter * (2 if op is Collective.ALL_REDUCE else 1)
        what = f"bidirectional rings on the {shape} torus axes at once: busbw = the chip's {B / 1e9:.0f} GB/s"
    elif op is Collective.ALL_TO_ALL:
        t_bw = torus_all_to_all_s(message_bytes, dims, B)
        steps = diameter
        what = f"all-to-all routed axis by axis on the {shape} torus: the busiest axis's links bound it"
    elif op in (Collective.BROADCAST, Collective.REDUCE):
        t_bw = message_bytes / B
        steps = diameter
        what = f"pipelined over the root's {2 * k} ICI links of the {shape} torus at {B / 1e9:.0f} GB/s"
    else:
        if n != 2:
            raise ConfigError(f"ranks: send_recv needs exactly 2 ranks (--ranks 2), got {n}")
        t_bw = message_bytes / (B / (2 * k))
        steps = 1
        what = f"one ICI link of the {shape} torus at {B / (2 * k) / 1e9:.0f} GB/s"
    lat = steps * tm.hop_latency_s * tm.latency_scale

    def why() -> str:
        return f"{what}; {steps} hop steps of latency"

    return make_cost(tm, Algorithm.TORUS, proto, lat, {SCALE_UP: t_bw}, SCALE_UP, why)
