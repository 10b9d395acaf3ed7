"""The lesson's hierarchical all_reduce: reduce-scatter in the domain, all-reduce of the shards across
domains on every rail at once, all-gather in the domain (not an NCCL algorithm: chosen only when asked)."""

from __future__ import annotations

from aifabric.collectives.communicator import Communicator
from aifabric.collectives.cost import SCALE_OUT, SCALE_UP, Algorithm, Cost, make_cost
from aifabric.collectives.costs import hierarchical_all_reduce_time
from aifabric.collectives.ops import Collective
from aifabric.collectives.tiers import (
    Protocol,
    TierModel,
    base_latency_s,
    hw_latency_s,
    net_extra_latency_s,
    rendezvous_s,
    scaleup_bytes_per_s,
)

__all__ = ["hierarchical_cost"]


def hierarchical_cost(
    op: Collective, proto: Protocol, message_bytes: float, comm: Communicator, tm: TierModel
) -> Cost | None:
    """Hierarchical all_reduce on N domains of g ranks (uniform), seconds.

    ::

        T = base + 2 (g - 1) a_i + 2 (N - 1) a_o
            + 2 (g - 1)/g S / B_i  +  2 (N - 1)/N (S / g) / B_o

    (:func:`~aifabric.collectives.costs.hierarchical_all_reduce_time` for the two bandwidth terms), and
    through a provider with a rendezvous its ``2 (N - 1)`` network steps of ``S / (g N)`` wait their round
    trips (:func:`~aifabric.collectives.tiers.rendezvous_s`).

    Examples
    --------
    The seed lesson: 140 GB on 128 nodes of 8, line rates (450 GB/s NVLink per direction, 100 GB/s NIC):

    >>> from aifabric.cluster.presets import preset
    >>> from aifabric.collectives.tiers import tier_model
    >>> spec = preset("lesson")
    >>> c = hierarchical_cost(Collective.ALL_REDUCE, Protocol.SIMPLE, 140e9, Communicator.contiguous(spec),
    ...                       tier_model(spec, efficiency="line_rate"))
    >>> round(c.time_s, 2)
    0.89
    """
    g, N = comm.ranks_per_domain, comm.n_domains  # noqa: N806
    t_in, t_out = hierarchical_all_reduce_time(
        message_bytes, g, N, scaleup_bytes_per_s(tm, g), tm.nic_bytes_per_s
    )
    lat = tm.memo(("hierarchical", proto, g, N), lambda: _latency_s(proto, g, N, tm))
    net = SCALE_OUT if t_out > t_in else SCALE_UP
    # the rails' ring steps across domains each carry S / (g N) of a shard
    rdzv = rendezvous_s(tm, proto, message_bytes / (g * N), 2 * (N - 1))

    def why() -> str:
        return (
            f"reduce-scatter in each domain of {g}, all-reduce of 1/{g} shards across {N} domains on {g} "
            "rails at once, all-gather in the domain"
        )

    bw = {SCALE_UP: t_in, SCALE_OUT: t_out}
    return make_cost(tm, Algorithm.HIERARCHICAL, proto, lat + rdzv, bw, net, why, rdzv)


def _latency_s(proto: Protocol, g: int, N: int, tm: TierModel) -> float:  # noqa: N803
    """``base + 2 (g - 1) a_i + 2 (N - 1) a_o`` of :func:`hierarchical_cost`, seconds."""
    ilat = hw_latency_s(tm, tm.intra_kind, "ring", proto)
    olat = hw_latency_s(tm, "net", "ring", proto) + net_extra_latency_s(tm, proto)
    return base_latency_s(tm, "ring", proto) + 2 * (g - 1) * ilat + 2 * (N - 1) * olat
