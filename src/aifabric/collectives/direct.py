"""Point-to-point algorithms: the pairwise ``direct`` all_to_all and the single ``p2p`` send_recv."""

from __future__ import annotations

import math

from aifabric.catalog.nccl_p2p import P2pShape, net_peer_channels
from aifabric.collectives.communicator import Communicator
from aifabric.collectives.cost import SCALE_OUT, SCALE_UP, Algorithm, Cost, make_cost
from aifabric.collectives.costs import direct_all_to_all_time
from aifabric.collectives.ops import Collective
from aifabric.collectives.tiers import (
    Protocol,
    TierModel,
    domain_nic_bytes_per_s,
    net_extra_latency_s,
    p2p_latency_s,
    rendezvous_s,
    scaleup_bytes_per_s,
    shm_switch_share,
)

__all__ = ["direct_cost", "p2p_channel_bytes_per_s", "p2p_channel_floor_s", "p2p_cost", "p2p_peer_channels"]


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
    lat = (
        p2p_latency_s(tm, "net", proto) + net_extra_latency_s(tm, proto)
        if multi
        else p2p_latency_s(tm, tm.intra_kind, proto)
    )
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
    rdzv = _p2p_rendezvous_s(tm, proto, message_bytes / n, comm)  # S / n to each peer, all at once

    def why() -> str:
        return f"pairwise all-to-all: {g - 1} peers on {tm.scale_up_words}, {n - g} across NICs, both at once"

    return make_cost(tm, Algorithm.DIRECT, proto, lat + rdzv, {net: t_all}, net, why, rdzv)


def _p2p_rendezvous_s(tm: TierModel, proto: Protocol, peer_bytes: float, comm: Communicator) -> float:
    """The provider's rendezvous on a point-to-point send of ``peer_bytes`` to a network peer, seconds
    (:func:`~aifabric.collectives.tiers.rendezvous_s`; 0 inside one domain or without a rendezvous). The
    send runs on its ``c`` channels to the peer (:func:`p2p_peer_channels`; the communicator's channels,
    the most it can have, where the release does not record the rule), each a pipeline of network messages
    of its ``S / c`` (``P2P_NET_CHUNKSIZE`` slices, 128 KiB, NCCL init.cc): the first waits one round trip
    and the rest follow it in flight, so a send, and the sends to every peer at once, wait one."""
    if comm.n_domains < 2 or not tm.net_rendezvous_s:  # optimisation: no peer channels to count
        return 0.0
    peers = p2p_peer_channels(tm, comm) or max(1, tm.channels[1])
    return rendezvous_s(tm, proto, peer_bytes / peers, 1)


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
    """nccl-tests' sendrecv: every rank sends S to the next rank and receives S from the previous one, at
    once (``src/sendrecv.cu``: ``(rank + 1) % nranks``, ``(rank - 1 + nranks) % nranks``; busbw = algbw,
    factor 1); on two ranks one transfer each way. Seconds.

    With ranks placed in order, ``g`` to a domain, a rank sends to a domain peer over scale-up (one link of
    a full mesh; the whole ``B_i`` of a switch) unless it is the last rank of its domain, which sends over
    its NIC to the first rank of the next domain (from rail ``g - 1`` to rail 0). Only that rank of a
    domain sends over the network, so it has its NIC to itself (whole when GPUs share one:
    :func:`~aifabric.collectives.tiers.domain_nic_bytes_per_s` of one rank). Every link carries one
    message each way (full duplex), so the slowest hop sets the time::

        T = base + a + max( S / B_i(2)  if g > 1,   S / B_node  if several domains )
        (a, bottleneck) = (a_o, NIC) across domains, (a_i, scale-up) inside one

    busbw = S / T. A send to a network peer runs on NCCL's ``p2pnChannelsPerPeer`` channels
    (:func:`p2p_peer_channels`, ``c``); where the release states the network throughput one p2p channel is
    sized for (``P2P_PER_CHANNEL_NET_BW``, 14 GB/s from v2.29.2-1: paths.cc "at least 1 channel per NIC,
    and more if needed to meet the bw requirement"), the NIC hop runs at ``min(B_node, c x 14 GB/s)``
    (:func:`p2p_channel_bytes_per_s`). The rule halves ``c`` as the ranks grow (one channel to a peer at
    80 ranks on 16 channels), so many-rank sendrecv runs below the NIC: 10 x 8 H100, one 400G NIC per GPU,
    NCCL 2.29.2, 15.24 GB/s on one channel and 24.6-26.4 on two (xxrjun/nccl-tests-cluster logs, test
    ``test_cases_public_multi5``). Older releases record no per-channel figure: priced as the NIC.

    Examples
    --------
    >>> from aifabric.cluster.presets import preset
    >>> from aifabric.collectives.tiers import tier_model
    >>> spec = preset("h100-ib-2node")
    >>> c = p2p_cost(Collective.SEND_RECV, Protocol.SIMPLE, 1e9, Communicator.from_gpus(spec, [0, 8]),
    ...              tier_model(spec, efficiency="line_rate"))
    >>> round(c.time_s * 1e3, 2)  # ms: 1 GB over one 50 GB/s NIC
    20.0
    >>> c = p2p_cost(Collective.SEND_RECV, Protocol.SIMPLE, 1e9, Communicator.contiguous(spec),
    ...              tier_model(spec, efficiency="line_rate"))
    >>> round(c.time_s * 1e3, 2)  # 16 ranks: ranks 7 and 15 send 1 GB over their own NIC
    20.0
    """
    multi = comm.n_domains > 1
    kind = "net" if multi else tm.intra_kind
    lat = p2p_latency_s(tm, kind, proto)
    if multi:
        lat += net_extra_latency_s(tm, proto)
    intra = scaleup_bytes_per_s(tm, 2)  # its scale-up to one peer (one link of a full mesh)
    sender = comm if comm.n_ranks == 2 else _one_sender(tm)
    peers = p2p_peer_channels(tm, comm)
    b = intra  # a boundary rank's own NIC, at most what its channels to the peer carry
    if multi:
        b = min(domain_nic_bytes_per_s(tm, sender), p2p_channel_bytes_per_s(tm, peers))
    t_in = message_bytes / intra if comm.ranks_per_domain > 1 else 0.0
    t_out = message_bytes / b if multi else 0.0
    net = SCALE_OUT if multi and t_out >= t_in else SCALE_UP
    rdzv = _p2p_rendezvous_s(tm, proto, message_bytes, comm)

    def why() -> str:
        over = "a NIC" if multi else tm.scale_up_words
        each = f"; {peers} channel(s) per peer (NCCL {tm.release.version})" if peers else ""
        if comm.n_ranks == 2:
            return f"one point-to-point transfer over {over} at {b / 1e9:.1f} GB/s{each}"
        return (
            f"{comm.n_ranks} ranks each send to the next: the slowest hop over {over} at "
            f"{min(b, intra) / 1e9 if multi else intra / 1e9:.1f} GB/s{each}"
        )

    return make_cost(tm, Algorithm.P2P, proto, lat + rdzv, {net: max(t_in, t_out)}, net, why, rdzv)


def p2p_channel_bytes_per_s(tm: TierModel, peers: int | None) -> float:
    """What ``peers`` p2p channels carry to one network peer, bytes/s: ``peers x P2P_PER_CHANNEL_NET_BW``
    (``net_peer_channels.per_channel_net_gbps`` of the release); unbounded where the channels are unknown
    or the release records no such figure.

    ``P2P_PER_CHANNEL_NET_BW`` (14 GB/s) is NCCL's design figure for how many channels to open, not a
    measured rate: NCCL v2.29.2-1 src/graph/paths.cc ``NCCL_PARAM(P2pPerChannelNetBw, ..., /*GB/s*/14)``,
    read only by ``ncclTopoGetNchannels`` ("at least 1 channel per NIC, and more if needed to meet the bw
    requirement": ``max(NICs, ceil(NIC GB/s / 14))``). The model uses it as each channel's rate. The one
    measured point exceeds it: 10 x 8 H100 sendrecv on one channel to the peer, 15.24 GB/s against 14.0
    (-8.1 %; tests/engines/test_cases_public_multi5.py), so a channel carries somewhat more than NCCL
    designs it for.

    >>> from aifabric.cluster.presets import preset
    >>> from aifabric.collectives.tiers import tier_model
    >>> tm = tier_model(preset("h100-ib-2node"), nccl_version="2.29.2")
    >>> p2p_channel_bytes_per_s(tm, 2) / 1e9, p2p_channel_bytes_per_s(tm, None)
    (28.0, inf)
    """
    rule = tm.release.net_peer_channels
    if peers is None or rule is None or rule.per_channel_net_gbps is None:
        return math.inf
    return peers * rule.per_channel_net_gbps * 1e9


def p2p_channel_floor_s(op: Collective, message_bytes: float, comm: Communicator, tm: TierModel) -> float:
    """The least time a send to a network peer takes on its channels, ``S / (c x 14 GB/s)``
    (:func:`p2p_channel_bytes_per_s`), seconds: the floor the links and flow engines put under the fabric's
    time for the p2p plan, as :func:`p2p_cost` does; 0 inside one domain, under ``line_rate`` or where the
    release records no per-channel figure."""
    if comm.n_domains < 2 or tm.efficiency != "nccl":
        return 0.0
    return message_bytes / p2p_channel_bytes_per_s(tm, p2p_peer_channels(tm, comm))


def _one_sender(tm: TierModel) -> Communicator:
    """Two ranks in two domains, each alone on its NIC (all ``gpus_per_nic`` shares of it): what the one
    network sender of a domain reaches, as a pair across domains does."""
    return Communicator(2, 1, 2, 1, 1, 1, min_ranks_per_domain=1, min_nic_gpus_per_domain=tm.gpus_per_nic)


def p2p_peer_channels(tm: TierModel, comm: Communicator) -> int | None:
    """NCCL's ``p2pnChannelsPerPeer`` for a communicator across domains (:func:`~aifabric.catalog.
    nccl_p2p.net_peer_channels`, the release's rule on the communicator's channels ``tm.channels[1]`` and
    the GPU's NICs); None inside one domain, under ``line_rate``, or where the release does not record it."""
    rule = tm.release.net_peer_channels
    if comm.n_domains < 2 or rule is None or not tm.nccl:
        return None
    nics = tm.nics_per_gpu
    shape = P2pShape(
        n_ranks=comm.n_ranks,
        n_nodes=comm.n_domains,
        comm_channels=max(1, tm.channels[1]),
        local_nics=nics,
        local_nic_gbps=nics * tm.nic_line_gbps,
    )
    return net_peer_channels(rule, shape, tm.release.max_channels)
