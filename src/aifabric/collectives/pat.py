"""NCCL's PAT ("parallel aggregated trees", NCCL 2.23+): all_gather and reduce_scatter with one rank per
node, in log2(N) steps of aggregated sends instead of a ring's N - 1."""

from __future__ import annotations

import math

from aifabric.collectives.communicator import Communicator
from aifabric.collectives.cost import SCALE_OUT, Algorithm, Cost, make_cost
from aifabric.collectives.costs import ring_all_gather_time
from aifabric.collectives.ops import Collective
from aifabric.collectives.tiers import (
    Protocol,
    TierModel,
    base_latency_s,
    call_channels,
    domain_nic_bytes_per_s,
    hw_latency_s,
    net_extra_latency_s,
    net_latency_row,
    rendezvous_s,
)

__all__ = ["pat_cost"]


def pat_cost(
    op: Collective, proto: Protocol, message_bytes: float, comm: Communicator, tm: TierModel
) -> Cost | None:
    """PAT all_gather / reduce_scatter over n ranks, one per domain, seconds.

    NCCL's tuner times it with its own latency formula and the ring's bandwidth with a penalty ``p_PAT``
    (0.85 in NCCL 2.23, 0.75 from 2.24; ``pat_bw_factor`` of ``tm.release``)::

        lat = base_pat + floor(log2 N) a_o / 3.5 + 2.8 us x n
        T   = lat + (n - 1)/n S / (p_PAT B_node)

    with ``B_node`` the NICs a rank's domain reaches (its NIC; a shared NIC whole when one rank uses it,
    :func:`~aifabric.collectives.tiers.domain_nic_bytes_per_s`), ``base_pat`` = 8 us and ``a_o`` NCCL's
    PAT network latency (14 us, Simple). Simple protocol only;
    None for a release without PAT.

    References
    ----------
    NVIDIA/nccl 2.30.7 ``src/graph/tuning.cc`` (``NCCL_ALGO_PAT``: latency, ``busBw *= .75``); restated in
    ``reference/nccl-cost-model.md`` sec. 2.2-2.3.

    Examples
    --------
    16 nodes of one H100 and one 400G NIC (49.15 GB/s), 1 MiB all_gather: 8 + 4 x 14/3.5 + 16 x 2.8 =
    68.8 us of latency, 15/16 MiB at 36.9 GB/s:

    >>> from aifabric.cluster.presets import preset
    >>> from aifabric.collectives.tiers import tier_model
    >>> spec = preset("h100-ib-2node", nodes=16)
    >>> comm = Communicator.from_gpus(spec, list(range(0, 128, 8)))
    >>> c = pat_cost(Collective.ALL_GATHER, Protocol.SIMPLE, 2**20, comm, tier_model(spec))
    >>> round(c.latency_s * 1e6, 1), round(c.time_s * 1e6, 1)
    (68.8, 95.5)
    """
    n, N = comm.n_ranks, comm.n_domains  # noqa: N806  (N domains, as in NCCL)
    rel = tm.release
    olat = hw_latency_s(tm, "net", net_latency_row(tm, "pat", comm.ranks_per_domain), proto)
    olat += net_extra_latency_s(tm, proto)
    if math.isnan(olat) or rel.pat_bw_factor is None or rel.pat_latency_per_rank_us is None:
        return None  # no PAT in this NCCL release (before 2.23)
    per_rank = rel.pat_latency_per_rank_us * 1e-6 * tm.latency_scale
    lat = base_latency_s(tm, "pat", proto) + math.floor(math.log2(N)) * olat / 3.5 + n * per_rank
    bus = domain_nic_bytes_per_s(tm, comm) * rel.pat_bw_factor
    t = ring_all_gather_time(message_bytes, n, bus)
    rdzv = _pat_rendezvous_s(op, proto, message_bytes, comm, tm, bus)

    def why() -> str:
        return f"PAT over {n} nodes of one rank: log2 steps, busbw = 0.75 x one NIC ({bus / 1e9:.1f} GB/s)"

    return make_cost(tm, Algorithm.PAT, proto, lat + rdzv, {SCALE_OUT: t}, SCALE_OUT, why, rdzv)


def _pat_rendezvous_s(
    op: Collective, proto: Protocol, message_bytes: float, comm: Communicator, tm: TierModel, bus: float
) -> float:
    """The provider's rendezvous on PAT's network steps, seconds (:func:`~aifabric.collectives.tiers.
    rendezvous_s`; NCCL's tuner does not see it). A share travels the ``log2Up(n)`` dimensions of PAT's
    power-of-two span one after another (``src/include/collectives.h`` ``PatAGAlgorithm``: ``nrPow2 =
    1 << log2Up(nranks)``), each send carrying at least one rank's share of a channel, ``S / (n C)``, on
    the channels enqueue.cc gives a ring or PAT call of ``S`` (its "Ring/Tree channel tuning")."""
    if not tm.net_rendezvous_s:  # optimisation: no channel count to read without a rendezvous
        return 0.0
    n = comm.n_ranks
    chans = call_channels(tm, "pat", op.value, proto, n, comm.n_domains, bus).count(message_bytes)
    return rendezvous_s(tm, proto, message_bytes / (n * chans), math.ceil(math.log2(n)))
