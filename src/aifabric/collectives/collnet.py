"""CollNet: collectives reduced or gathered inside the InfiniBand switches (SHARP), as NCCL's CollNet
algorithms run them.

The scale-out switches (Quantum QM8700 SHARPv2, Quantum-2 QM9700 SHARPv3, Quantum-X800 SHARPv4:
``in_network_reduction`` in ``catalog/data/switches.yaml``) sum the nodes' buffers as the packets pass, so
each node sends its partial sum S once and receives the total S once, where a ring or a tree moves
``2 (N - 1)/N S`` or about 2 S each way through the node's NICs: the network carries half the bytes.
NCCL runs it through a CollNet plugin (nccl-rdma-sharp-plugins) only with ``NCCL_COLLNET_ENABLE=1``
(default 0): all_reduce with CollNet Direct or Chain, and from NCCL 2.20.3 all_gather and reduce_scatter
with CollNet Direct (``src/device/all_gather.h`` / ``reduce_scatter.h`` gain their
``NCCL_ALGO_COLLNET_DIRECT`` kernels in v2.20.3; ``tuning.cc`` costs them, ``NcclRelease.algorithms``).
The model assumes the plugin implements the CollNet v8 ``iallgather`` / ``ireducescatter`` calls NCCL
needs for them (tuning.cc zeroes their bandwidth otherwise) and one NIC per GPU (NCCL: ``localRanks <=
nHeads``); an older release refuses them, naming itself and the first release that has them:

- **CollNet Direct** (NVSwitch nodes): inside the node a reduce-scatter to the g GPUs (each the head of
  ``S / g`` on its own NIC), the switch tree reduces and multicasts each head's share, and an all-gather
  inside the node returns the total;
- **CollNet Chain**: the node's GPUs form a chain ending at a NIC (one chain per channel, the channels
  spread over the NICs); the chain reduces up and broadcasts down (all_reduce only: NCCL has no other);
- **CollNet Direct all_gather / reduce_scatter**: each GPU sends (receives) its share through its own NIC
  and the switches gather (reduce-scatter) across nodes (:func:`collnet_gather_scatter_algbw`).

Latency and the protocol are NCCL's (``src/graph/tuning.cc``, ``tm.release``): Simple only; CollNet
Direct ``base + 2 (min(1, g - 1) a_i + 0.4 us (g - 1)) + a_o``, Chain ``base + 2 (g - 1) a_i + a_o``
(``a_o`` NCCL's NET latency of the algorithm, its Tree NET latency with one GPU per node) for every
collective, and CollNet Direct all_reduce's busbw x 0.85 on Hopper and later.

The links and flow engines have no CollNet plan (a transfer whose reduction happens inside a switch is
not one of their GPU-to-GPU transfers); ``--engine links --algo collnet_direct`` is refused.
"""

from __future__ import annotations

from aifabric.collectives.communicator import Communicator
from aifabric.collectives.cost import SCALE_OUT, SCALE_UP, Algorithm, Cost, make_cost
from aifabric.collectives.ops import Collective
from aifabric.collectives.tiers import (
    Protocol,
    TierModel,
    base_latency_s,
    domain_nic_bytes_per_s,
    hw_latency_s,
    net_extra_latency_s,
    net_latency_row,
)
from aifabric.errors import ConfigError

__all__ = ["collnet_chain_cost", "collnet_direct_cost", "collnet_gather_scatter_algbw"]

#: tuning.cc: "Add 0.4 us arity serialization latency" per local rank of CollNet Direct.
_ARITY_LATENCY_S = 0.4e-6
#: tuning.cc: CollNet Direct all_reduce busBw x .85 when minCompCap >= 90 (Hopper and later).
_DIRECT_SM90_FACTOR = 0.85
_SM90_ROWS = frozenset({"hopper", "blackwell"})


def _inter_latency_s(tm: TierModel, row: str, proto: Protocol, g: int) -> float:
    """NCCL's interLat: the NET latency of ``row`` (of Tree with one GPU per node, from 2.23.4:
    :func:`net_latency_row`) + the transport's extra."""
    return hw_latency_s(tm, "net", net_latency_row(tm, row, g), proto) + net_extra_latency_s(tm, proto)


def _cost(
    algorithm: Algorithm,
    lat: float,
    message_bytes: float,
    intra_bytes: float,
    comm: Communicator,
    tm: TierModel,
    proto: Protocol,
    factor: float,
) -> Cost:
    """Pipelined: the slower of the scale-up share ``intra_bytes / B_i`` and the network's S / B_node
    (``g B_o``; shared NICs counted once, :func:`~aifabric.collectives.tiers.domain_nic_bytes_per_s`)."""
    node = domain_nic_bytes_per_s(tm, comm)
    t_out = message_bytes / (node * factor)
    t_in = intra_bytes / (tm.intra_bytes_per_s * factor) if intra_bytes > 0 else 0.0
    net = SCALE_OUT if t_out >= t_in else SCALE_UP

    def why() -> str:
        return (
            f"SHARP in the switches: each node sends S once and receives S once over its NICs "
            f"({node / 1e9:.1f} GB/s), {algorithm.value} inside the node"
        )

    return make_cost(tm, algorithm, proto, lat, {net: max(t_out, t_in)}, net, why)


def collnet_direct_cost(
    op: Collective, proto: Protocol, message_bytes: float, comm: Communicator, tm: TierModel
) -> Cost | None:
    """CollNet Direct all_reduce across N nodes of g GPUs, one NIC per GPU, SHARP switches, seconds.

    Each GPU heads ``S / g`` of the buffer: a reduce-scatter and an all-gather inside the node move
    ``2 (g - 1)/g S`` per direction per GPU over scale-up; each head sends ``S / g`` to the switches and
    receives ``S / g`` back, so a node's NICs carry S each way (a ring carries ``2 (N - 1)/N S``)::

        algbw = f x min( g B_o ,  B_i g / (2 (g - 1)) )      (f = 0.85 on Hopper and later, else 1)
        T     = base + 2 (min(1, g - 1) a_i + 0.4 us (g - 1)) + a_o  +  S / algbw

    Simple protocol only (None otherwise). ``a_i`` = NCCL's CollNet Direct latency on NVLink, ``a_o`` its
    NET latency (Tree's with g = 1); ``B_o`` per GPU NIC bandwidth, ``B_i`` per GPU scale-up bandwidth.
    all_gather and reduce_scatter (NCCL >= 2.20.3) take the same latency and
    :func:`collnet_gather_scatter_algbw`: ``T = lat + S / algbw``.

    References
    ----------
    NVIDIA/nccl ``src/graph/tuning.cc`` (CollNet Direct latency, busBw x .85 for sm90+); Graham et al.,
    "Scalable Hierarchical Aggregation Protocol (SHArP)", COM-HPC 2016, doi:10.1109/COM-HPC.2016.6.

    Examples
    --------
    On 2 x 8 H100 (8 x 400G, 49.15 GB/s; Quantum-2) NVLink bounds it: algbw = 0.85 x 370.8 x 8 / 14 =
    180.1 GB/s. With one GPU on each of 16 nodes the network does, and it carries S each way where a ring
    carries 2 x 15/16 S: algbw = 0.85 x 49.15 = 41.8 GB/s against the ring's 49.15 x 16/30 = 26.2 GB/s.

    >>> from aifabric.cluster.presets import preset
    >>> from dataclasses import replace
    >>> from aifabric.collectives.tiers import tier_model
    >>> spec = preset("h100-ib-2node")
    >>> tm = replace(tier_model(spec), collnet=True)
    >>> comm = Communicator.contiguous(spec)
    >>> c = collnet_direct_cost(Collective.ALL_REDUCE, Protocol.SIMPLE, 2**33, comm, tm)
    >>> round(2**33 / sum(c.bandwidth_s.values()) / 1e9, 1), c.bottleneck
    (180.1, 'scale-up')
    >>> big = preset("h100-ib-2node", nodes=16)
    >>> one = Communicator.from_gpus(big, list(range(0, 128, 8)))
    >>> c = collnet_direct_cost(Collective.ALL_REDUCE, Protocol.SIMPLE, 2**33, one, tm)
    >>> round(2**33 / sum(c.bandwidth_s.values()) / 1e9, 1), c.bottleneck
    (41.8, 'scale-out')
    """
    if proto is not Protocol.SIMPLE:
        return None
    g = comm.ranks_per_domain
    lat = _direct_latency_s(tm, proto, g)
    if op is not Collective.ALL_REDUCE:
        if tm.gpus_per_nic > 1:  # tuning.cc: "AllGather/ReduceScatter requires 1:1 GPU:NIC" (busBw = 0)
            return None
        return _direct_gather_scatter_cost(lat, message_bytes, comm, tm, proto)
    factor = _DIRECT_SM90_FACTOR if tm.nccl and tm.tuning_row in _SM90_ROWS else 1.0
    intra = 2 * (g - 1) / g * message_bytes
    return _cost(Algorithm.COLLNET_DIRECT, lat, message_bytes, intra, comm, tm, proto, factor)


def _direct_latency_s(tm: TierModel, proto: Protocol, g: int) -> float:
    """CollNet Direct's latency, seconds (tuning.cc, every collective)::

    base + 2 (min(1, g - 1) a_i + 0.4 us (g - 1)) + a_o
    """
    a_i = hw_latency_s(tm, tm.intra_kind, "collnet_direct", proto)
    return (
        base_latency_s(tm, "collnet_direct", proto)
        + 2 * (min(1, g - 1) * a_i + _ARITY_LATENCY_S * tm.latency_scale * (g - 1))
        + _inter_latency_s(tm, "collnet_direct", proto, g)
    )


def collnet_gather_scatter_algbw(tm: TierModel, g: int) -> float:
    """CollNet Direct all_gather / reduce_scatter bandwidth on nodes of ``g`` GPUs, one NIC each, bytes/s.

    NCCL's tuner (``tuning.cc``) takes ``ppn x`` one channel's bandwidth as the algorithm bandwidth (no
    bus-to-algorithm conversion for these collectives); a channel runs GPU -> NIC, so here its bandwidth is
    ``min(B_i, B_o)`` per GPU, scaled as the release does::

        2.27.3 on:        algbw = g min(B_i, e B_o)                         (e = 0.9: bwInter x 0.9f)
        2.20.3 .. 2.26:   algbw = g min(B_i, B_o) (w c_8 + (1 - w) c_1),   w = (g - 1) / 7
                                                                 (c_1 = 0.95 at 1 ppn, c_8 = 0.85 at 8 ppn)

    (``NcclRelease.collnet_gather_scatter_inter_factor`` / ``..._ppn_correction``); ``g min(B_i, B_o)``
    under ``efficiency="line_rate"``. Every node receives (all_gather) or sends (reduce_scatter)
    ``(N - 1)/N S`` through its g NICs, so the algbw never exceeds ``g B_o N / (N - 1)``.
    """
    per_gpu = min(tm.intra_bytes_per_s, tm.nic_bytes_per_s)
    rel = tm.release
    if not tm.nccl:
        return g * per_gpu
    if rel.collnet_gather_scatter_inter_factor is not None:
        return g * min(tm.intra_bytes_per_s, rel.collnet_gather_scatter_inter_factor * tm.nic_bytes_per_s)
    if rel.collnet_gather_scatter_ppn_correction is None:
        raise ConfigError(f"algorithm: NCCL {rel.version} has no CollNet all_gather/reduce_scatter")
    c1, c8 = rel.collnet_gather_scatter_ppn_correction
    w = (g - 1) / 7
    return g * per_gpu * (w * c8 + (1 - w) * c1)


def _direct_gather_scatter_cost(
    lat: float, message_bytes: float, comm: Communicator, tm: TierModel, proto: Protocol
) -> Cost:
    """:func:`collnet_direct_cost` for all_gather and reduce_scatter: ``T = lat + S / algbw``
    (:func:`collnet_gather_scatter_algbw`; S the whole gathered output / scattered input, as NCCL's
    ``ncclFuncMaxSendRecvCount`` and nccl-tests count it)."""
    g = comm.min_ranks_per_domain
    alg = collnet_gather_scatter_algbw(tm, g)
    net = SCALE_OUT if tm.nic_bytes_per_s <= tm.intra_bytes_per_s else SCALE_UP

    def why() -> str:
        return (
            f"SHARP in the switches gathers/scatters across {comm.n_domains} nodes: {g} GPUs each on its own "
            f"NIC, algbw {alg / 1e9:.1f} GB/s (NCCL {tm.release.version}'s CollNet Direct model)"
        )

    return make_cost(tm, Algorithm.COLLNET_DIRECT, proto, lat, {net: message_bytes / alg}, net, why)


def collnet_chain_cost(
    op: Collective, proto: Protocol, message_bytes: float, comm: Communicator, tm: TierModel
) -> Cost | None:
    """CollNet Chain all_reduce across N nodes of g GPUs, SHARP switches, seconds.

    Inside a node the g GPUs form a chain to a NIC: each GPU sends S up (reduce) and S down (broadcast),
    2 S out of each GPU over scale-up (NCCL: algbw = 0.5 x nChannels x bwIntra); the node's NICs (one chain
    per channel, channels spread over the NICs) send S to the switches and receive S back::

        algbw = min( g B_o ,  B_i / 2 )
        T     = base + 2 (g - 1) a_i + a_o  +  S / algbw

    Simple protocol only (None otherwise); ``a_i`` NCCL's CollNet Chain latency of the intra-node link,
    ``a_o`` its NET latency (Tree's with g = 1).

    References
    ----------
    NVIDIA/nccl ``src/graph/tuning.cc`` (CollNet Chain latency; busBw = nChannels x bwIntra, algbw x 0.5).

    Examples
    --------
    2 x 8 H100, 8 x 400G on Quantum-2: algbw = min(8 x 49.15, 370.8 / 2) = 185.4 GB/s (NVLink bound):

    >>> from aifabric.cluster.presets import preset
    >>> from dataclasses import replace
    >>> from aifabric.collectives.tiers import tier_model
    >>> spec = preset("h100-ib-2node")
    >>> tm = replace(tier_model(spec), collnet=True)
    >>> comm = Communicator.contiguous(spec)
    >>> c = collnet_chain_cost(Collective.ALL_REDUCE, Protocol.SIMPLE, 2**33, comm, tm)
    >>> round(2**33 / sum(c.bandwidth_s.values()) / 1e9, 1), c.bottleneck
    (185.4, 'scale-up')
    """
    if proto is not Protocol.SIMPLE:
        return None
    g = comm.ranks_per_domain
    a_i = hw_latency_s(tm, tm.intra_kind, "collnet_chain", proto)
    lat = (
        base_latency_s(tm, "collnet_chain", proto)
        + 2 * (g - 1) * a_i
        + _inter_latency_s(tm, "collnet_chain", proto, g)
    )
    intra = 2 * message_bytes if g > 1 else 0.0
    return _cost(Algorithm.COLLNET_CHAIN, lat, message_bytes, intra, comm, tm, proto, 1.0)
