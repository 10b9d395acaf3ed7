"""Ring-family algorithms: NCCL's multi-channel ``ring``, the pipelined ``chain`` and the ``flat_ring``.

Each cost function reads the cluster through a :class:`~aifabric.collectives.tiers.TierModel` (per-GPU,
per-direction bytes/s) and a :class:`~aifabric.collectives.communicator.Communicator` (``n`` ranks, at most
``g`` per domain, ``N`` domains). The bandwidth terms are the textbook costs of
:mod:`aifabric.collectives.costs`; the latency terms are NCCL's (``tuning.cc`` of the release in
``TierModel.release``).
"""

from __future__ import annotations

import math
from typing import NamedTuple

from aifabric.collectives.communicator import Communicator
from aifabric.collectives.cost import SCALE_OUT, SCALE_UP, Algorithm, Cost, make_cost, scaleup_bound
from aifabric.collectives.costs import pipelined_chain_time, ring_all_gather_time, ring_all_reduce_time
from aifabric.collectives.ops import Collective
from aifabric.collectives.tiers import (
    CallChannels,
    Protocol,
    TierModel,
    base_latency_s,
    call_channels,
    channel_share,
    domain_nic_bytes_per_s,
    hw_latency_s,
    net_extra_latency_s,
    net_latency_row,
    net_overhead_s,
    protocol_bandwidth,
    rendezvous_s,
    ring_exit_gpus,
    ring_graph_cap,
    ring_plateau_latency_factor,
    scaleup_bytes_per_s,
    shm_switch_share,
)

__all__ = ["chain_cost", "flat_ring_cost", "ring_cost"]


def _ring_bandwidth_s(op: Collective, size: float, n: int, bus: float) -> float:
    """Ring bandwidth seconds: 2 (n-1)/n S / B (all_reduce), (n-1)/n S / B (gather/scatter), S / B (chain)."""
    if op is Collective.ALL_REDUCE:
        return ring_all_reduce_time(size, n, bus)
    if op in (Collective.ALL_GATHER, Collective.REDUCE_SCATTER):
        return ring_all_gather_time(size, n, bus)
    return pipelined_chain_time(size, n, bus)


def _step_bytes(op: Collective, size: float, n: int) -> float:
    """What one ring step carries of a call of ``size`` bytes, before the channels split it: ``S / n`` where
    the ring cuts the buffer into the ranks' shares (all_reduce, all_gather, reduce_scatter); the whole
    ``S`` where each hop forwards the buffer on (broadcast, reduce: NCCL ``src/device/broadcast.h`` and
    ``reduce.h`` ``runRing`` send ``nelem = min(chunkSize, size - offset)`` of the channel's part on every
    hop, not a rank's share of it)."""
    return size if op in (Collective.BROADCAST, Collective.REDUCE) else size / n


class _RingShape(NamedTuple):
    """What a ring's cost reads that does not depend on the size (kept in :meth:`TierModel.memo`)."""

    latency_s: float
    plateau_latency_s: float  # x NCCL's plateau factor (Simple all_reduce across domains; else latency_s)
    up: float  # scale-up bound, bytes/s
    nic_agg: float  # the sparsest domain's NICs, bytes/s
    net: str
    channels: CallChannels
    tuner_channels: CallChannels  # as NCCL's tuner prices them (ring_graph_cap): the pick
    net_steps: int  # the steps across the network, s_o (each may go by rendezvous: rendezvous_s)


def _ring_shape(op: Collective, proto: Protocol, comm: Communicator, tm: TierModel) -> _RingShape | None:
    """None when NCCL has no latency for ``proto`` on this tier."""
    n, N, g = comm.n_ranks, comm.n_domains, comm.ranks_per_domain  # noqa: N806
    multi = N > 1
    ilat = hw_latency_s(tm, tm.intra_kind, "ring", proto)
    olat = hw_latency_s(tm, "net", net_latency_row(tm, "ring", g), proto) + net_extra_latency_s(tm, proto)
    if math.isnan(ilat):
        return None
    if multi:
        ilat = max(ilat, net_overhead_s(tm, proto))
    two = 2 if op is Collective.ALL_REDUCE else 1
    nsteps, ninter = two * (n - 1), two * (N - 1)
    lat = base_latency_s(tm, "ring", proto) + (nsteps - ninter) * ilat + ninter * olat
    on_plateau = multi and op is Collective.ALL_REDUCE and proto is Protocol.SIMPLE
    plateau = lat * ring_plateau_latency_factor(tm) if on_plateau else lat
    senders = g - 1 if op in (Collective.BROADCAST, Collective.REDUCE) else g
    up = scaleup_bound(tm, g, N, exit_gpus=ring_exit_gpus(tm, comm)) / shm_switch_share(tm, senders)
    nic_agg = domain_nic_bytes_per_s(tm, comm)
    raw = min(up, nic_agg) if multi else up
    net = SCALE_OUT if multi and nic_agg < up else SCALE_UP
    shared = raw * channel_share(tm, N)
    bus = _ring_protocol(tm, op, proto, comm, shared)
    chans = call_channels(tm, "ring", op.value, proto, n, N, bus)
    cap = ring_graph_cap(tm, proto, shared, N)
    tuner = chans if cap >= bus else call_channels(tm, "ring", op.value, proto, n, N, cap)
    return _RingShape(lat, plateau, up, nic_agg, net, chans, tuner, ninter if multi else 0)


def _ring_protocol(tm: TierModel, op: Collective, proto: Protocol, comm: Communicator, raw: float) -> float:
    """A ring's raw bus bandwidth ``raw`` after ``proto``
    (:func:`~aifabric.collectives.tiers.protocol_bandwidth`), bytes/s; monotone in ``raw``, so the
    protocol of the lower of two bounds is the lower of theirs."""
    all_reduce = op in (Collective.ALL_REDUCE, Collective.REDUCE)
    one_rank = comm.ranks_per_domain < 2
    return protocol_bandwidth(
        tm, proto, raw, comm.n_domains, tree=False, all_reduce=all_reduce, one_rank_per_domain=one_rank
    )


def _ring_like(
    algorithm: Algorithm, op: Collective, proto: Protocol, size: float, comm: Communicator, tm: TierModel
) -> Cost | None:
    n, N = comm.n_ranks, comm.n_domains  # noqa: N806
    shape = tm.memo(("ring", op, proto, comm.shape), lambda: _ring_shape(op, proto, comm, tm))
    if shape is None:
        return None
    multi = N > 1
    plateau = multi and op is Collective.ALL_REDUCE and proto is Protocol.SIMPLE and size / (16 * n) >= 64
    lat = shape.plateau_latency_s if plateau else shape.latency_s
    bus = shape.channels.bandwidth(size)
    t = _ring_bandwidth_s(op, size, n, bus)
    unseen = 0.0  # what the tuner does not see: the run's channels beyond its graph's LL128 cap
    if shape.tuner_channels is not shape.channels:
        unseen = t - _ring_bandwidth_s(op, size, n, shape.tuner_channels.bandwidth(size))
    up, net = shape.up, shape.net
    what = "chain" if algorithm is Algorithm.CHAIN else "ring"
    # NCCL's tuner does not see the rendezvous (optimisation: the channel count is read only where the
    # transport has one)
    rdzv = (
        rendezvous_s(tm, proto, _step_bytes(op, size, n) / shape.channels.count(size), shape.net_steps)
        if tm.net_rendezvous_s
        else 0.0
    )

    def why() -> str:
        if not multi:
            return f"{what} over {n} ranks on {tm.scale_up_words} at {up / 1e9:.1f} GB/s per GPU"
        return f"{what} over {n} ranks: {_busbw_words(tm, comm, op, proto, shape, bus)}"

    return make_cost(tm, algorithm, proto, lat + rdzv, {net: t}, net, why, unseen + rdzv)


def _busbw_words(
    tm: TierModel, comm: Communicator, op: Collective, proto: Protocol, shape: _RingShape, bus: float
) -> str:
    """The busbw a ring across domains runs at, ``bus`` (bytes/s), as the lower of its two bounds, each as
    the protocol and the call's channels run it; then the links' own figures where those differ (LL's
    ``min(llMaxBw, B x f_LL)``, LL128's ``B x 0.92``, a channel's cap: tuning.cc, enqueue.cc):
    ``busbw = min(scale-up 39.0, a domain's NICs 39.00) GB/s (LL ...: links min(scale-up 423.8 ...))``."""
    share = channel_share(tm, comm.n_domains)
    up_bus, nic_bus = (_ring_protocol(tm, op, proto, comm, x * share) for x in (shape.up, shape.nic_agg))
    up, nic = (up_bus, bus) if nic_bus <= up_bus else (bus, nic_bus)
    stated = f"busbw = min({tm.scale_up_words} {up / 1e9:.1f}, a domain's NICs {nic / 1e9:.2f}) GB/s"
    credit = _credit_words(tm, comm, shape.up)
    links = f"{tm.scale_up_words} {shape.up / 1e9:.1f}{credit}, a domain's NICs {shape.nic_agg / 1e9:.2f}"
    if math.isclose(min(up, nic), min(shape.up, shape.nic_agg), rel_tol=1e-3):
        return f"busbw = min({links}) GB/s"
    how = f"{proto.value} and the call's channels, NCCL's tuning.cc and enqueue.cc"
    return f"{stated} ({how}, on the links' min({links}) GB/s)"


def _credit_words(tm: TierModel, comm: Communicator, up: float) -> str:
    """How the scale-up bound across domains exceeds the GPU's scale-up (:func:`~aifabric.collectives.cost.
    scaleup_bound`), for a ``why``: `` (= 370.8 x 8/7: ...)``; why it does not where NICs are shared; else
    empty."""
    g = comm.ranks_per_domain
    intra = scaleup_bytes_per_s(tm, g)
    exits = ring_exit_gpus(tm, comm)
    if comm.n_domains > 1 and 1 < exits < g and tm.intra_kind != "pci":
        return f" (rings leave from {exits} of {g} GPUs, one per shared NIC: the others carry every channel)"
    if math.isinf(up) or up <= intra:
        return ""
    return (
        f" (= {intra / 1e9:.1f} x {g}/{g - 1}: one hop in {g} leaves through a NIC, so a GPU's scale-up "
        f"carries {g - 1}/{g} of its bytes)"
    )


def ring_cost(
    op: Collective, proto: Protocol, message_bytes: float, comm: Communicator, tm: TierModel
) -> Cost | None:
    """NCCL's multi-channel ring (all_reduce, all_gather, reduce_scatter), seconds.

    One ring per channel visits every domain; inside a domain its hops use scale-up, between domains one
    hop per channel crosses a NIC, so a domain's channels use the NICs of all its ranks::

        B   = P( min(B_i g/(g-1), B_node) x s_C )     across N > 1 domains (B_i on one domain)
        lat = base + (s - s_o) max(a_i, ovh) + s_o (a_o + t_rdzv(S / (n nc)))   (x 1.4 for a Simple
                                                         all_reduce on its plateau, t_rdzv aside)
        T   = lat + f S / B

    with ``s = 2(n-1)`` steps (all_reduce) or ``n-1``, ``s_o = 2(N-1)`` or ``N-1`` of them across the
    network, ``f`` the nccl-tests factor (2(n-1)/n or (n-1)/n), ``B_node`` the NICs of the sparsest domain
    (``g_min B_o``, or its shared NICs: :func:`~aifabric.collectives.tiers.domain_nic_bytes_per_s`),
    ``P`` the protocol's bandwidth (:func:`~aifabric.collectives.tiers.protocol_bandwidth`), ``a_i, a_o``
    NCCL's per-hop latencies and ``ovh`` its per-step network overhead, ``t_rdzv`` the provider's
    rendezvous on a network step of ``S / (n nc)`` over ``nc`` channels
    (:func:`~aifabric.collectives.tiers.rendezvous_s`: 0 but on ``slingshot-cxi``), which NCCL's tuner
    does not see. ``s_C = min(1, C / C0)``
    (:func:`~aifabric.collectives.tiers.channel_share`) and the call's own channels
    (:func:`~aifabric.collectives.tiers.call_bandwidth`) apply as NCCL has them. ``B_i g/(g-1)`` is
    infinite for g = 1 (no byte crosses scale-up). Returns None when NCCL has no latency for the protocol
    on this tier.

    References
    ----------
    NVIDIA/nccl 2.30.7 ``src/graph/tuning.cc`` (``ncclTopoTuneModel``); Patarasuk & Yuan 2009,
    doi:10.1016/j.jpdc.2008.09.002.

    Examples
    --------
    Two H100 nodes (8 x 400G ConnectX-7 at 49.15 GB/s payload; NVLink 370.8 GB/s): 8 NICs bound busbw at
    393.2 GB/s, less the latency (case 03 measured 392.7 GB/s at 8 GiB):

    >>> from aifabric.cluster.presets import preset
    >>> from aifabric.collectives.tiers import tier_model
    >>> spec = preset("h100-ib-2node")
    >>> c = ring_cost(Collective.ALL_REDUCE, Protocol.SIMPLE, 2**33, Communicator.contiguous(spec),
    ...               tier_model(spec))
    >>> round(2**33 * 2 * 15 / 16 / c.time_s / 1e9, 1), c.bottleneck
    (391.4, 'scale-out')
    """
    return _ring_like(Algorithm.RING, op, proto, message_bytes, comm, tm)


def chain_cost(
    op: Collective, proto: Protocol, message_bytes: float, comm: Communicator, tm: TierModel
) -> Cost | None:
    """Pipelined chain broadcast/reduce along the ring: every link carries S once, seconds.

    As :func:`ring_cost` with ``s = n - 1`` steps, ``s_o = N - 1`` of them across the network and
    ``f = 1``::

        T = base + (n - N) max(a_i, ovh) + (N - 1) a_o + S / B

    Examples
    --------
    >>> from aifabric.cluster.presets import preset
    >>> from aifabric.collectives.tiers import tier_model
    >>> spec = preset("h100-ib-2node")
    >>> c = chain_cost(Collective.BROADCAST, Protocol.SIMPLE, 2**30, Communicator.contiguous(spec),
    ...                tier_model(spec))
    >>> round(c.time_s * 1e3, 3)  # ms: 1 GiB at 393.2 GB/s, plus 8.4 + 14 x 3.4 + 1 x 14 us
    2.801
    """
    return _ring_like(Algorithm.CHAIN, op, proto, message_bytes, comm, tm)


def flat_ring_cost(
    op: Collective, proto: Protocol, message_bytes: float, comm: Communicator, tm: TierModel
) -> Cost | None:
    """A single ring in rank order in which every hop crosses a NIC (the lesson's naive ring), seconds.

    ::

        T = base + s a_o + f S / (k B_o),   s = 2 (n - 1) (all_reduce) or n - 1

    In rank order each NIC carries one hop's flow (the domain's last rank, or the domain's only one), so
    a NIC that ``k = gpus_per_nic`` GPUs share gives that hop its whole rate ``k B_o``; on a PCIe-only
    node the hop first crosses the GPU's own x16 link (``B_pcie``, ``tm.nic_hop_bytes_per_s``), so the hop
    runs at ``min(k B_o, B_pcie)``. Through a provider with a rendezvous each of the ``s`` steps, one
    ring on one channel, waits its round trip (:func:`~aifabric.collectives.tiers.rendezvous_s`).

    Examples
    --------
    >>> from aifabric.cluster.presets import preset
    >>> from aifabric.collectives.tiers import tier_model
    >>> spec = preset("h100-ib-2node")
    >>> c = flat_ring_cost(Collective.ALL_REDUCE, Protocol.SIMPLE, 1e9, Communicator.contiguous(spec),
    ...                    tier_model(spec, efficiency="line_rate"))
    >>> round(c.time_s * 1e3, 2)  # ms: 2 x 15/16 x 1 GB / 50 GB/s
    37.5
    """
    n = comm.n_ranks
    steps = 2 * (n - 1) if op is Collective.ALL_REDUCE else n - 1
    lat = tm.memo(("flat_ring", proto, steps), lambda: _flat_ring_latency_s(proto, steps, tm))
    # one hop per NIC crosses the network: its whole NIC, after the GPU's x16 link on a PCIe-only node
    nic = min(tm.nic_bytes_per_s * tm.gpus_per_nic, tm.nic_hop_bytes_per_s)
    t = _ring_bandwidth_s(op, message_bytes, n, nic)
    rdzv = rendezvous_s(tm, proto, _step_bytes(op, message_bytes, n), steps)  # one ring: one channel

    def why() -> str:
        return f"flat ring: every one of the {n} hops crosses a NIC at {nic / 1e9:.2f} GB/s"

    return make_cost(tm, Algorithm.FLAT_RING, proto, lat + rdzv, {SCALE_OUT: t}, SCALE_OUT, why, rdzv)


def _flat_ring_latency_s(proto: Protocol, steps: int, tm: TierModel) -> float:
    """``base + s a_o`` of :func:`flat_ring_cost`, seconds."""
    olat = hw_latency_s(tm, "net", "ring", proto) + net_extra_latency_s(tm, proto)
    return base_latency_s(tm, "ring", proto) + steps * olat
