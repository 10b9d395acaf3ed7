"""Collectives on a TPU-style torus (ICI): bidirectional rings on every axis at once."""

from __future__ import annotations

from aifabric.collectives.communicator import Communicator
from aifabric.collectives.cost import SCALE_UP, Algorithm, Cost, make_cost
from aifabric.collectives.ops import Collective, busbw_factor
from aifabric.collectives.tiers import Protocol, TierModel

__all__ = ["torus_cost"]


def torus_cost(
    op: Collective, proto: Protocol, message_bytes: float, comm: Communicator, tm: TierModel
) -> Cost | None:
    """All_reduce / all_gather / reduce_scatter on one torus domain, seconds.

    Each chip splits its buffer over the torus axes and runs a bidirectional ring reduce-scatter (and
    all-gather) along each axis in turn, so all of its ICI links carry data at once and the bandwidth term
    is that of one ring at the chip's total per-direction ICI bandwidth B::

        T = 2 (n-1)/n S / B  (all-reduce),   (n-1)/n S / B  (all-gather, reduce-scatter)

    plus one hop latency per step of the longest bidirectional axis ring, floor(n_d / 2) steps per axis
    (twice for all-reduce). (JAX scaling book, "How to Scale Your Model", ch. 3: collectives over several
    torus axes use the links of all of them.) ICI is a mesh of direct links: no protocol variants, no NCCL
    constants.

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
    t_bw = message_bytes * busbw_factor(op, n) / tm.intra_bytes_per_s
    dims = tm.torus_dims or (n,)
    steps = sum(d // 2 for d in dims) * (2 if op is Collective.ALL_REDUCE else 1)
    lat = steps * tm.hop_latency_s * tm.latency_scale

    def why() -> str:
        return (
            f"bidirectional rings on the {'x'.join(map(str, dims))} torus axes at once: busbw = the chip's "
            f"{tm.intra_bytes_per_s / 1e9:.0f} GB/s per direction of ICI; {steps} hop steps of latency"
        )

    return make_cost(tm, Algorithm.TORUS, proto, lat, {SCALE_UP: t_bw}, SCALE_UP, why)
