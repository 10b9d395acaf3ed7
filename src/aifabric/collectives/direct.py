"""Point-to-point algorithms: the pairwise ``direct`` all_to_all and the single ``p2p`` send_recv."""

from __future__ import annotations

import math

from aifabric.collectives.communicator import Communicator
from aifabric.collectives.cost import SCALE_OUT, SCALE_UP, Algorithm, Cost, make_cost
from aifabric.collectives.costs import direct_all_to_all_time
from aifabric.collectives.ops import Collective
from aifabric.collectives.tiers import (
    Protocol,
    TierModel,
    base_latency_s,
    domain_nic_bytes_per_s,
    hw_latency_s,
    scaleup_bytes_per_s,
    shm_switch_share,
)
from aifabric.errors import ConfigError

__all__ = ["direct_cost", "p2p_cost"]


def direct_cost(
    op: Collective, proto: Protocol, message_bytes: float, comm: Communicator, tm: TierModel
) -> Cost | None:
    """Pairwise all_to_all, every peer at once, seconds.

    A rank sends S (g-1)/n to its domain peers over scale-up and S (n-g)/n over its NIC; a rank of the
    least-populated domain (``g_min`` ranks) has the most to send over its NIC. The part leaving a scalable
    unit (``n - n_su`` peers) or a pod (``n - n_pod``) also crosses the oversubscribed leaf (ratio ``r_1``)
    or spine (``r_1 r_2``) uplinks::

        T = lat + max( S (g-1)/n / B_i,  S (n-g_min)/n / B_o,  S (n-n_su)/n / (B_o / r_1),
                       S (n-n_pod)/n / (B_o / (r_1 r_2)),  T_pcie )
        lat = base + a_o (several domains) or a_i (one)

    On a PCIe-only node a rank reaches its peers and its NIC over its one x16 link (``B_pcie``,
    ``tm.nic_hop_bytes_per_s``), which carries both shares in turn: ``T_pcie = S (h-1)/n / B_i +
    S (n-h)/n / B_pcie``, the larger for ``h = g`` and ``h = g_min`` (elsewhere the NIC hop leaves over a
    link of its own: no such term).

    (:func:`~aifabric.collectives.costs.direct_all_to_all_time` for the first two terms.) ``B_o`` is a
    rank's share of its domain's NICs, ``B_node / g_min``
    (:func:`~aifabric.collectives.tiers.domain_nic_bytes_per_s`: a rank alone on a shared NIC has all of it).

    Examples
    --------
    Two H100 nodes: busbw = B_o (n-1)/(n-g) = 49.15 x 15/8 GB/s (NVIDIA/nccl-tests #130, #267):

    >>> from aifabric.cluster.presets import preset
    >>> from aifabric.collectives.tiers import tier_model
    >>> spec = preset("h100-ib-2node")
    >>> c = direct_cost(Collective.ALL_TO_ALL, Protocol.SIMPLE, 2**32, Communicator.contiguous(spec),
    ...                 tier_model(spec))
    >>> round(2**32 / sum(c.bandwidth_s.values()) * 15 / 16 / 1e9, 1)
    92.2
    """
    n, g = comm.n_ranks, comm.ranks_per_domain
    multi = comm.n_domains > 1
    intra = scaleup_bytes_per_s(tm, g) / shm_switch_share(tm, g)  # a mesh: one link to each of g - 1 peers
    nic = domain_nic_bytes_per_s(tm, comm) / comm.min_ranks_per_domain  # a rank's share of its NICs
    ilat = hw_latency_s(tm, tm.intra_kind, "ring", proto)
    olat = hw_latency_s(tm, "net", "ring", proto) + tm.extra_inter_latency_s
    lat = base_latency_s(tm, "ring", proto) + (olat if multi else ilat)
    t_in = message_bytes * (g - 1) / n / intra if g > 1 else 0.0
    t_all, t_out = t_in, 0.0
    if multi:
        t_all = direct_all_to_all_time(message_bytes, n, g, intra, nic)  # max of the first two terms
        t_out = message_bytes * (n - comm.min_ranks_per_domain) / n / nic
        if tm.leaf_oversubscription > 1 and comm.ranks_per_su < n:
            t_out = max(t_out, message_bytes * (n - comm.ranks_per_su) / n / (nic / tm.leaf_oversubscription))
        if tm.spine_oversubscription > 1 and comm.ranks_per_pod < n:
            r = tm.leaf_oversubscription * tm.spine_oversubscription
            t_out = max(t_out, message_bytes * (n - comm.ranks_per_pod) / n / (nic / r))
        t_all = max(t_all, t_out, _pcie_link_s(message_bytes, comm, intra, tm.nic_hop_bytes_per_s))
    net = SCALE_OUT if multi and t_out >= t_in else SCALE_UP

    def why() -> str:
        return f"pairwise all-to-all: {g - 1} peers on {tm.scale_up_words}, {n - g} across NICs, both at once"

    return make_cost(tm, Algorithm.DIRECT, proto, lat, {net: t_all}, net, why)


def _pcie_link_s(message_bytes: float, comm: Communicator, intra: float, link: float) -> float:
    """``T_pcie`` of :func:`direct_cost`: a rank's scale-up and NIC shares in turn over its x16 link, the
    larger for the fullest and the sparsest domain; 0 where the NIC hop has a link of its own (``link``
    infinite)."""
    if link == math.inf:
        return 0.0
    n = comm.n_ranks
    return max(message_bytes * ((h - 1) / intra + (n - h) / link) / n
               for h in (comm.ranks_per_domain, comm.min_ranks_per_domain))  # fmt: skip


def p2p_cost(
    op: Collective, proto: Protocol, message_bytes: float, comm: Communicator, tm: TierModel
) -> Cost | None:
    """One transfer of S bytes between two ranks, over a NIC if they sit in different domains, seconds.

    ::

        T = base + a + S / B,   (a, B) = (a_o, B_node) across domains, (a_i, B_i) inside one

    (``B_node``: the sender's NIC, whole when GPUs share it: only this rank sends,
    :func:`~aifabric.collectives.tiers.domain_nic_bytes_per_s`.)

    Raises
    ------
    ConfigError
        If the communicator does not have exactly two ranks.

    Examples
    --------
    >>> from aifabric.cluster.presets import preset
    >>> from aifabric.collectives.tiers import tier_model
    >>> spec = preset("h100-ib-2node")
    >>> c = p2p_cost(Collective.SEND_RECV, Protocol.SIMPLE, 1e9, Communicator.from_gpus(spec, [0, 8]),
    ...              tier_model(spec, efficiency="line_rate"))
    >>> round(c.time_s * 1e3, 2)  # ms: 1 GB over one 50 GB/s NIC
    20.0
    """
    if comm.n_ranks != 2:
        raise ConfigError(f"send_recv: needs exactly 2 ranks (--ranks 2), got {comm.n_ranks}")
    multi = comm.n_domains > 1
    kind = "net" if multi else tm.intra_kind
    lat = base_latency_s(tm, "ring", proto) + hw_latency_s(tm, kind, "ring", proto)
    if multi:
        lat += tm.extra_inter_latency_s
    # a rank's NIC, all of it; or its scale-up to one peer (one link of a full mesh)
    b = domain_nic_bytes_per_s(tm, comm) if multi else scaleup_bytes_per_s(tm, 2)
    net = SCALE_OUT if multi else SCALE_UP

    def why() -> str:
        over = "a NIC" if multi else tm.scale_up_words
        return f"one point-to-point transfer over {over} at {b / 1e9:.1f} GB/s"

    return make_cost(tm, Algorithm.P2P, proto, lat, {net: message_bytes / b}, net, why)
