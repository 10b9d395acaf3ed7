"""NVLink SHARP: the NVSwitch reduces (``nvls``, one domain), and NVLS in each domain with a tree across
domains (``nvls_tree``). Hopper and later NVSwitch systems only (``TierModel.nvls``)."""

from __future__ import annotations

import math

from aifabric.collectives.communicator import Communicator
from aifabric.collectives.cost import SCALE_OUT, SCALE_UP, Algorithm, Cost, make_cost
from aifabric.collectives.ops import Collective
from aifabric.collectives.tiers import Protocol, TierModel, hw_latency_s

__all__ = ["nvls_algbw", "nvls_cost", "nvls_tree_cost"]


def nvls_algbw(tm: TierModel, g: int) -> float:
    """algbw of NVLS inside a domain of g ranks, bytes/s: ``B_i e (g - 1)/g`` (e = NCCL's nvlsEfficiency;
    e (g-1)/g = 1 under ``efficiency="line_rate"``)."""
    return tm.intra_bytes_per_s * (tm.nvls_efficiency * (g - 1) / g if tm.nccl else 1.0)


def nvls_cost(
    op: Collective, proto: Protocol, message_bytes: float, comm: Communicator, tm: TierModel
) -> Cost | None:
    """NVLS all_reduce: each GPU sends its buffer to the NVSwitch and reads the sum, seconds.

    ::

        T = a_nvls + S / (B_i e (g - 1)/g)

    with ``a_nvls`` NCCL's NVLS latency (25 us on NVLink) and ``e`` its nvlsEfficiency. Across N > 1
    domains NCCL runs flat NVLS only with CollNet (``tm.collnet``): each GPU heads ``S / g`` and the SHARP
    switches reduce it, so a domain's NICs carry S each way (:mod:`aifabric.collectives.collnet`)::

        algbw = min( B_i e (g - 1)/g ,  g_min B_o ),   T = a_nvls + a_o + S / algbw

    (``a_o`` NCCL's NVLS NET latency; tuning.cc: ``latency = intraLat + interLat``).

    References
    ----------
    NVIDIA/nccl 2.30.7 ``src/graph/tuning.cc`` (nvlsEfficiency, NVLS latencies).

    Examples
    --------
    8 x H100, 4 GiB (case 01 measured 473.6 GB/s busbw):

    >>> from aifabric.cluster.presets import preset
    >>> from aifabric.collectives.tiers import tier_model
    >>> spec = preset("h100-ib-2node", nodes=1)
    >>> c = nvls_cost(Collective.ALL_REDUCE, Protocol.SIMPLE, 2**32, Communicator.contiguous(spec),
    ...               tier_model(spec))
    >>> round(2**32 / c.time_s * 14 / 8 / 1e9)
    482
    """
    g = comm.ranks_per_domain
    alg = nvls_algbw(tm, g)
    lat = hw_latency_s(tm, tm.intra_kind, "nvls", proto)
    net = SCALE_UP
    if comm.n_domains > 1:  # NVLS + CollNet: SHARP across domains
        lat += hw_latency_s(tm, "net", "nvls", proto) + tm.extra_inter_latency_s
        a_out = comm.min_ranks_per_domain * tm.nic_bytes_per_s
        alg, net = (a_out, SCALE_OUT) if a_out < alg else (alg, SCALE_UP)

    def why() -> str:
        return (
            f"NVLink SHARP: the NVSwitch reduces; algbw = {tm.intra_bytes_per_s / 1e9:.1f} GB/s x efficiency "
            f"{tm.nvls_efficiency} x (n-1)/n"
            + (
                f"; SHARP switches reduce across {comm.n_domains} domains, each domain's NICs carrying S "
                f"each way ({comm.min_ranks_per_domain * tm.nic_bytes_per_s / 1e9:.1f} GB/s)"
                if comm.n_domains > 1
                else ""
            )
        )

    return make_cost(tm, Algorithm.NVLS, proto, lat, {net: message_bytes / alg}, net, why)


def nvls_tree_cost(
    op: Collective, proto: Protocol, message_bytes: float, comm: Communicator, tm: TierModel
) -> Cost | None:
    """NVLS inside each domain, a tree of domains over the NICs, pipelined, seconds.

    Each domain's NICs carry S per direction on two domains and about 2 S beyond (the tree), so::

        algbw = min( B_i e (g - 1)/g ,  g_min B_o  (N = 2)  or  g_min B_o / 2  (N > 2) )
        T     = a_nvls + 2 log2(N) a_o + S / algbw

    Examples
    --------
    >>> from aifabric.cluster.presets import preset
    >>> from aifabric.collectives.tiers import tier_model
    >>> spec = preset("h100-ib-2node", nodes=4)
    >>> c = nvls_tree_cost(Collective.ALL_REDUCE, Protocol.SIMPLE, 2**32, Communicator.contiguous(spec),
    ...                    tier_model(spec))
    >>> round(2**32 / sum(c.bandwidth_s.values()) / 1e9, 1), c.bottleneck  # 8 x 49.15 / 2
    (196.6, 'scale-out')
    """
    g, N = comm.ranks_per_domain, comm.n_domains  # noqa: N806
    ilat = hw_latency_s(tm, tm.intra_kind, "nvls_tree", proto)
    olat = hw_latency_s(tm, "net", "nvls_tree", proto) + tm.extra_inter_latency_s
    lat = ilat + 2 * math.log2(N) * olat
    a_in = nvls_algbw(tm, g)
    a_out = comm.min_ranks_per_domain * tm.nic_bytes_per_s * (1.0 if N <= 2 else 0.5)
    alg = min(a_in, a_out)
    net = SCALE_UP if a_in <= a_out else SCALE_OUT

    def why() -> str:
        return (
            f"NVLS in each node ({a_in / 1e9:.0f} GB/s algbw), tree across {N} nodes "
            f"({a_out / 1e9:.0f} GB/s algbw)"
        )

    return make_cost(tm, Algorithm.NVLS_TREE, proto, lat, {net: message_bytes / alg}, net, why)
