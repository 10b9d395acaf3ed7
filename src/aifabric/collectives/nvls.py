"""NVLink SHARP: the NVSwitch reduces (``nvls``, one domain), and NVLS in each domain with a tree across
domains (``nvls_tree``). Hopper and later NVSwitch systems only (``TierModel.nvls``)."""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Callable
from functools import cache
from typing import NamedTuple

from aifabric.catalog.nccl import Collective as NcclCollective
from aifabric.catalog.nccl import (
    nccl_release,
    nvls_channels,
    nvls_chunk_bytes,
    nvls_gather_tuner_algbw,
    nvls_heads,
    nvls_search,
    nvls_tree_kernel_bw,
    nvls_tree_net_steps,
    nvls_tree_start_chunk,
    nvls_tuner_algbw,
    tuning_arch,
)
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
    net_stage_cap,
    tree_nic_traffic,
    tuner_tree_nic_traffic,
)
from aifabric.errors import ConfigError

__all__ = [
    "nvls_algbw",
    "nvls_channel_load_bytes",
    "nvls_collective_cost",
    "nvls_cost",
    "nvls_fill_bytes",
    "nvls_gather_scatter_cost",
    "nvls_loop_bytes",
    "nvls_tree_cap",
    "nvls_tree_cost",
    "nvls_tree_kernel_cap",
]


def nvls_algbw(tm: TierModel, g: int) -> float:
    """algbw of NVLS inside a domain of g ranks, bytes/s: ``B_i e (h - 1)/h``.

    ``e`` is NCCL's nvlsEfficiency and ``h`` the domain's NVLS heads, ``min(g, NCCL_MAX_NVLS_ARITY)``
    (:func:`~aifabric.catalog.nccl.nvls_heads`): search.cc gives the one-node NVLS graph exactly that
    many channels, one head each, and tuning.cc (2.28.3 on) prices NVLS at ``bwIntra e (nChannels - 1) /
    nChannels``. ``h = g`` up to 32 GPUs (8 before 2.21.5); an NVL72 rack has 32 heads for 72 ranks, so
    ``(h - 1)/h`` is 31/32, not 71/72. ``e (h - 1)/h`` = 1 under ``efficiency="line_rate"``. What NCCL's
    tuner prices it at, from its own NVLS graph, is :func:`nvls_tuner_price`.

    8 x H100 (h = 8): 370.8 x 0.85 x 7/8 = 275.8 GB/s; 72 x GB200 (h = 32): 721.8 x 0.74 x 31/32 = 517.4.
    """
    if not tm.nccl:
        return tm.intra_bytes_per_s
    h = nvls_heads(tm.release, local_gpus=g)
    return tm.intra_bytes_per_s * tm.nvls_efficiency * (h - 1) / h


def nvls_fill_bytes(
    tm: TierModel,
    message_bytes: float,
    comm: Communicator,
    algorithm: Algorithm = Algorithm.NVLS,
    load_bytes: float | None = None,
) -> float:
    """Bytes' worth of time an NVLS pipeline spends filling and draining, bytes.

    NCCL runs NVLS on each domain as ``k`` concurrent warp groups per channel
    (``nvls_pipeline_stages``: scatter, NVLS reduce, gather; ``all_reduce.h``), each step moving one
    chunk per (channel, head). A pipeline of ``k`` stages over ``L`` steps takes ``L + k - 1`` step times,
    so on top of ``S / algbw`` it costs ``k - 1`` steps, each one loop of ``nc x h x chunk`` bytes (or the
    whole message when it is smaller)::

        fill = (k - 1) x min(S, nc x h x chunk)

    (``load_bytes``: ``S`` replaced by the busiest channel's load, :func:`nvls_channel_load_bytes`, the
    chunk still ``enqueue.cc``'s for ``S``.)

    ``algorithm``: ``NVLS`` (one domain) or ``NVLS_TREE``: in every domain of the tree the same on-node
    stages run (``all_reduce.h`` NVLS_TREE: scatter, NVLS reduce, gather), with the tree's network hops
    and the receive+multicast group between reduce and gather, whose transit NCCL's NVLS-tree latency
    (``2 log2(N) a_o``) prices. Case 03 (2 x 8 H100) bears the 2 loops out at both chunk sizes (64 KiB
    below 64 MiB, 128 KiB above), which no size-independent latency could. ``nc`` NVLS
    channels (:func:`~aifabric.catalog.nccl.nvls_channels`), ``h`` heads
    (:func:`~aifabric.catalog.nccl.nvls_heads`: at most one per NIC across domains), ``chunk`` from
    ``enqueue.cc`` (:func:`~aifabric.catalog.nccl.nvls_chunk_bytes`, NVLS-tree's from its own start and
    shrink rules). 0 under ``efficiency="line_rate"``.

    8 x H100, NVLS, 256 MiB: 64 KiB chunks, fill = 2 x 16 x 8 x 64 KiB = 16 MiB; 2 x 8 H100, NVLS-tree,
    256 MiB: 128 KiB chunks, fill = 2 x 16 x 8 x 128 KiB = 32 MiB.
    """
    if not tm.nccl:
        return 0.0
    loop, extra = _loop_bytes(tm, message_bytes, comm, algorithm)
    return extra * min(message_bytes if load_bytes is None else load_bytes, loop)


def nvls_channel_load_bytes(tm: TierModel, message_bytes: float, comm: Communicator) -> float:
    """The message whose even spread loads every NVLS channel as much as S loads the busiest one, bytes.

    Before NCCL 2.20.3 the one-node NVLS kernel fills a partial loop channel by channel
    (``nvls_one_node_channel_first``; ``all_reduce.h``: loop offset ``gridOffset + bid x nHeads x chunk``),
    so channel 0 carries ``h x chunk`` of it while later channels idle, and the call lasts as long as a
    loop all channels carry::

        S_load = floor(S / loop) x loop + nc x min(S mod loop, h x chunk),   loop = nc x h x chunk

    From 2.20.3 (``work->oneNode``) each channel moves ``S / nc`` and ``S_load = S``; so too across domains
    and without NCCL. 8 x H100 on 2.18.5 (16 x 8 x 16 KiB loops below 8 MiB): 64 KiB -> 16 x 64 KiB = 1
    MiB, 128 KiB-2 MiB -> 2 MiB.
    """
    if not (tm.nccl and tm.release.nvls_one_node_channel_first) or comm.n_domains > 1:
        return message_bytes
    loop, _ = _loop_bytes(tm, message_bytes, comm, Algorithm.NVLS)
    g = comm.ranks_per_domain
    nc = nvls_channels(tm.release, tm.tuning_row, nnodes=1, local_gpus=g, nic_gbps=tm.nic_line_gbps)
    full, rest = divmod(message_bytes, loop)
    return full * loop + nc * min(rest, loop / nc)


def nvls_loop_bytes(tm: TierModel, message_bytes: float, comm: Communicator, algorithm: Algorithm) -> float:
    """One NVLS (or NVLS-tree) loop of ``message_bytes`` on ``comm``: channels x heads x the chunk
    ``enqueue.cc`` gives that size (:func:`~aifabric.catalog.nccl.nvls_chunk_bytes`), bytes."""
    return _loop_bytes(tm, message_bytes, comm, algorithm)[0]


def _loop_bytes(
    tm: TierModel, message_bytes: float, comm: Communicator, algorithm: Algorithm
) -> tuple[float, int]:
    """``(nc x h x chunk(S), k - 1)`` of :func:`nvls_fill_bytes`: one loop's bytes and the fill's steps."""
    tree = algorithm is Algorithm.NVLS_TREE
    g, nnodes = comm.ranks_per_domain, comm.n_domains if tree else 1
    nics = tm.nics_of(g) if tree else 0  # across domains: one head per NIC
    starts, loops, extra = _loop_steps(
        tm.release.version,
        tm.tuning_row,
        tree,
        g,
        tm.nic_line_gbps,
        nnodes,
        nics,
        tm.nic_near,
        tm.nvls_chunks,
    )
    return loops[bisect_right(starts, message_bytes) - 1], extra


@cache
def _loop_steps(
    version: str,
    row: str,
    tree: bool,
    g: int,
    nic_gbps: float,
    nnodes: int,
    nics_per_node: int,
    near_nic: bool = True,
    env: tuple[int | None, int | None] = (None, None),
) -> tuple[tuple[float, ...], tuple[float, ...], int]:
    """NVLS (``tree``: NVLS-tree) loop bytes ``nc x h x chunk(S)`` as a step function of the size, once per
    release and shape (keyed by plain values: hashing them is the per-call cost).

    Returns ``(starts, loops, k - 1)``: ``loops[i]`` applies from ``starts[i]`` bytes (``starts[0] = 0``)
    to the next start. ``enqueue.cc`` shrinks the chunk while ``S < m x nc x h x c`` for the listed
    ``(m, c)``, so the chunk only changes at sizes ``m x nc x h x c'`` with ``c'`` a start or shrunk chunk;
    :func:`~aifabric.catalog.nccl.nvls_chunk_bytes` is evaluated at each of those. ``env``: the
    ``NCCL_NVLS_CHUNKSIZE`` / ``NCCL_NVLSTREE_MAX_CHUNKSIZE`` NCCL reads (:attr:`TierModel.nvls_chunks`).
    """
    rel = nccl_release(version)
    nc = nvls_channels(rel, row, nnodes=nnodes, local_gpus=g, nic_gbps=nic_gbps)
    heads = nvls_heads(rel, local_gpus=g, nics_per_node=nics_per_node)
    ops = nc * heads
    algorithm = Algorithm.NVLS_TREE if tree else Algorithm.NVLS
    shrink = rel.nvls_tree_chunk_shrink if tree else rel.nvls_chunk_shrink
    start = (
        nvls_tree_start_chunk(
            rel, row, nnodes=nnodes, local_gpus=g, nic_gbps=nic_gbps, near_nic=near_nic, env=env
        )
        if tree
        else env[0]
    )
    chunks = {start or rel.nvls_chunk_bytes, *(c for _, c in shrink)}
    starts: list[float] = []
    loops: list[float] = []
    for size in sorted({0.0, *(float(m * ops * c) for m, _ in shrink for c in chunks)}):
        chunk = nvls_chunk_bytes(rel, algorithm.value, size, channels=nc, heads=heads, start=start)
        loop = float(ops * chunk)
        if not loops or loop != loops[-1]:
            starts.append(size)
            loops.append(loop)
    return tuple(starts), tuple(loops), rel.nvls_pipeline_stages - 1


#: Node counts at which NCCL's NVLS-tree channels or chunk change (nvls.cc ncclNvlsTuning and
#: ncclNvlsTreeSm100Tuning: ``nNodes == 2`` rules, ``treeMaxChunkSize`` 64 KiB from ``nNodes >= 4``).
_NVLS_TREE_RULE_NODES = (2, 3)


class _FillRules(NamedTuple):
    """The size-independent part of a ``why``'s fill words for one communicator shape: this node count's
    channels and heads, and per smaller node count of NCCL's NVLS-tree rules its channels and loop steps."""

    channels: int
    heads: int
    fewer: tuple[tuple[int, int, tuple[float, ...], tuple[float, ...]], ...]  # (m, nc, starts, loops)


def _fill_rules(tm: TierModel, comm: Communicator) -> _FillRules:
    """:class:`_FillRules` of ``comm`` on ``tm``, kept in the tier model's memo (none depends on the size).

    Optimisation: built once per shape, so a ``why`` costs bisects and formatting per call."""

    def build() -> _FillRules:
        g, n_nodes = comm.ranks_per_domain, comm.n_domains
        rel, row, nics = tm.release, tm.tuning_row, tm.nics_of(g)

        def channels(nodes: int) -> int:
            return nvls_channels(rel, row, nnodes=nodes, local_gpus=g, nic_gbps=tm.nic_line_gbps)

        fewer = []
        for m in (m for m in _NVLS_TREE_RULE_NODES if m < n_nodes):
            starts, loops, _ = _loop_steps(
                rel.version, row, True, g, tm.nic_line_gbps, m, nics, tm.nic_near, tm.nvls_chunks
            )
            fewer.append((m, channels(m), starts, loops))
        heads = nvls_heads(rel, local_gpus=g, nics_per_node=nics)
        return _FillRules(channels(n_nodes), heads, tuple(fewer))

    return tm.memo(("nvls_tree_fill_rules", comm.shape), build)


def _shrunk_fill_words(tm: TierModel, message_bytes: float, comm: Communicator, loop: float) -> str:
    """Where NCCL's NVLS-tree configuration gives this node count a smaller loop (so a smaller fill) than a
    smaller node count, for a ``why``: the channels and chunk each has, and that this call can therefore
    beat the same message on fewer nodes (the exception to "more ranks are never faster per byte");
    empty otherwise. Fewer channels or a smaller chunk per node count are NCCL's own rules
    (``src/transport/nvls.cc`` ncclNvlsTuning / ncclNvlsTreeSm100Tuning, ``enqueue.cc``)."""
    rules = _fill_rules(tm, comm)
    if not rules.fewer:
        return ""
    at = [(loops[bisect_right(starts, message_bytes) - 1], m, nc) for m, nc, starts, loops in rules.fewer]
    bigger, m, nc_m = max(reversed(at), key=lambda a: a[0])  # the nearest of the largest loops
    if bigger <= loop:
        return ""
    n_nodes, heads, extra = comm.n_domains, rules.heads, tm.release.nvls_pipeline_stages - 1

    def shape(nc: int, loop_bytes: float) -> str:
        return f"{nc} channels x {loop_bytes / (nc * heads) / 1024:.0f} KiB"

    smaller = extra * (bigger - loop) / 2**20
    here = shape(rules.channels, loop)
    return (
        f"; NCCL {tm.release.version}'s NVLS-tree rules (nvls.cc, enqueue.cc) run {here} "
        f"chunks on {n_nodes} nodes but {shape(nc_m, bigger)} on {m}: a fill {smaller:.3g} MiB smaller, the "
        "one term by which more nodes can be faster than fewer nodes"
    )


def nvls_tree_cap(tm: TierModel, comm: Communicator) -> float:
    """NCCL's per-channel NVLS-tree ceiling as its tuner sees it, as an algbw, bytes/s (inf where the
    release's tables have none).

    ``tuning.cc`` (2.28.3 on) bounds each NVLS-tree channel's bus bandwidth by ``perChMaxNVLSTreeBw``
    (column 2 nodes or >= 3 nodes), over the NVLS graph's ``h`` channels (one per head), and converts
    bus to algorithm bandwidth with ``nRanks / nsteps`` (``nsteps = 2 (n - 1)``)::

        algbw <= h x perChMaxNVLSTreeBw x n / (2 (n - 1))

    2 x 8 H100 (h = 8, 57.7 GB/s): 8 x 57.7 x 16/30 = 246.2 GB/s (case 03 T1 measured 250.2).
    """
    table = tm.release.per_channel_max_nvls_tree_bw
    return _cap_algbw(tm, comm, None if table is None else table[tm.tuning_row])


def nvls_tree_kernel_cap(tm: TierModel, comm: Communicator) -> float:
    """The same ceiling for the kernel the release runs, bytes/s: what bounds its time.

    :func:`nvls_tree_cap`'s formula on the table of the release that describes the kernel
    (:func:`~aifabric.catalog.nccl.nvls_tree_kernel_bw`: 2.28.3's for 2.18-2.27, whose tuners have no
    ceiling), in its row for the GPU. Case 03 ran NCCL 2.26.2: its 2-node plateau, 250.2 GB/s algbw
    (469 busbw), is 2.28.3's 246.2 GB/s, not the 276 GB/s (515 busbw) NVLS in the node would allow. inf
    where none is known.
    """
    found = nvls_tree_kernel_bw(tm.release)
    if found is None:
        return math.inf
    source, table = found
    try:
        row = tuning_arch(source, tm.arch)
    except ConfigError:  # not an NVIDIA GPU: the row the model tunes it with
        row = tm.tuning_row
    return _cap_algbw(tm, comm, table.get(row))


def _cap_algbw(tm: TierModel, comm: Communicator, row: tuple[float, float, float] | None) -> float:
    """``h x row[column] x n / (2 (n - 1))`` bytes/s (:func:`nvls_tree_cap`), the channel's ceiling staged
    like its NICs' bytes when GPUDirect RDMA is off (:func:`~aifabric.collectives.tiers.net_stage_cap`);
    inf for no row, a 0 entry or ``efficiency="line_rate"``."""
    cap = 0.0 if row is None or not tm.nccl else row[min(comm.n_domains, 3) - 1]
    if cap <= 0:
        return math.inf
    g = comm.ranks_per_domain
    heads = nvls_heads(tm.release, local_gpus=g, nics_per_node=tm.nics_of(g))
    n = comm.n_ranks
    return heads * net_stage_cap(tm, cap * 1e9, comm.n_domains) * n / (2 * (n - 1))


def _heads_nic_bytes_per_s(tm: TierModel, comm: Communicator) -> float:
    """What a domain's NVLS heads' NICs carry per direction together across domains, bytes/s.

    Only NVLS head ranks talk to other domains: ``connect.cc`` (``connectNvls``) gives a rank tree
    up/down peers only where it is a head (``heads[node] == rank``), and NVLS+CollNet sends only from
    head ranks (``nvls.out``); each head is the first GPU of one NVLS graph channel, one per NIC
    (``nvls_heads``). So::

        B_heads = min(B_node, h x gpus_per_nic x B_o)

    ``B_node`` the sparsest domain's NICs (:func:`~aifabric.collectives.tiers.domain_nic_bytes_per_s`),
    ``h`` the heads (:func:`~aifabric.catalog.nccl.nvls_heads`). 8 x H100, 8 NICs: h = 8, B_node.
    32-GPU domain with 32 x 200 Gb/s NICs on NCCL 2.20 (h = 8): 8 x 24.6 = 196.6 GB/s.
    """
    g = comm.ranks_per_domain
    heads = nvls_heads(tm.release, local_gpus=g, nics_per_node=tm.nics_of(g))
    return min(domain_nic_bytes_per_s(tm, comm), heads * tm.nic_bytes_per_s * tm.gpus_per_nic)


def nvls_cost(
    op: Collective, proto: Protocol, message_bytes: float, comm: Communicator, tm: TierModel
) -> Cost | None:
    """NVLS all_reduce: each GPU sends its buffer to the NVSwitch and reads the sum, seconds.

    ::

        T = a_nvls + (S + fill) / (B_i e (h - 1)/h)

    with ``B_i e (h - 1)/h`` the domain's NVLS algbw (:func:`nvls_algbw`; there ``h`` is the domain's NVLS
    heads without the one-per-NIC limit); NCCL's tuner picks on ``a_nvls + S / A_tuner`` instead, its
    price on its own NVLS graph (:func:`nvls_tuner_price`: 272 GB/s on 8 x H100, 204 on 4),
    ``a_nvls`` NCCL's NVLS latency, baseLat + NVLink hwLat (0 + 25 us on 2.30, 23 + 0 us on 2.18:
    tuning.cc), ``e`` its nvlsEfficiency and ``fill`` the
    pipeline's fill and drain on one domain (:func:`nvls_fill_bytes`: 2 loops of 16 x 8 x 64 KiB below
    1 GiB on 8 x H100). Across N > 1 domains NCCL runs flat NVLS only with CollNet (``tm.collnet``): each
    NVLS head sends and receives its share of S through its NIC and the SHARP switches reduce it, so a
    domain's heads' NICs carry S each way (:mod:`aifabric.collectives.collnet`); no fill is added there::

        algbw = min( B_i e (h - 1)/h ,  min(B_node, h B_nic) ),   T = a_nvls + a_o + S / algbw

    ``h`` the NVLS heads per domain (:func:`~aifabric.catalog.nccl.nvls_heads`: at most
    ``NCCL_MAX_NVLS_ARITY``, 8 before NCCL 2.21.5 and 32 from it, and one per NIC), each on one NIC of
    ``B_nic = gpus_per_nic B_o``. An NVL72 rack is one node to NCCL (its ring graphs span the NVLink
    clique), so across racks only its ``h`` heads' NICs carry SHARP traffic: 32 of 72 on 2.30 (NVLS bounds
    it), 8 on 2.20 (the NICs do: 8 x 49.15 = 393.2 GB/s).

    (``a_o`` NCCL's NVLS NET latency; tuning.cc: ``latency = intraLat + interLat``; ``B_node`` the
    domain's NICs, :func:`~aifabric.collectives.tiers.domain_nic_bytes_per_s`).

    References
    ----------
    NVIDIA/nccl 2.30.7 ``src/graph/tuning.cc`` (nvlsEfficiency, NVLS latencies), ``src/enqueue.cc``
    (chunk size), ``src/device/all_reduce.h`` (pipeline stages).

    Examples
    --------
    8 x H100, 4 GiB (case 01 measured 473.6 GB/s busbw):

    >>> from aifabric.cluster.presets import preset
    >>> from aifabric.collectives.tiers import tier_model
    >>> spec = preset("h100-ib-2node", nodes=1)
    >>> c = nvls_cost(Collective.ALL_REDUCE, Protocol.SIMPLE, 2**32, Communicator.contiguous(spec),
    ...               tier_model(spec))
    >>> round(2**32 / c.time_s * 14 / 8 / 1e9)
    478
    """
    g = comm.ranks_per_domain
    alg = nvls_algbw(tm, g)
    lat = base_latency_s(tm, "nvls", proto) + hw_latency_s(tm, tm.intra_kind, "nvls", proto)
    net = SCALE_UP
    heads, a_out = 0, math.inf
    if comm.n_domains > 1:  # NVLS + CollNet: SHARP across domains, through the NVLS heads' NICs
        lat += hw_latency_s(tm, "net", "nvls", proto) + net_extra_latency_s(tm, proto)
        heads = nvls_heads(tm.release, local_gpus=g, nics_per_node=tm.nics_of(g))
        a_out = _heads_nic_bytes_per_s(tm, comm)
        alg, net = (a_out, SCALE_OUT) if a_out < alg else (alg, SCALE_UP)

    def why() -> str:
        return (
            f"NVLink SHARP: the NVSwitch reduces; algbw = {tm.intra_bytes_per_s / 1e9:.1f} GB/s x efficiency "
            f"{tm.nvls_efficiency} x (h-1)/h, h = {nvls_heads(tm.release, local_gpus=g)} NVLS heads"
            + (
                f"; SHARP switches reduce across {comm.n_domains} domains, each domain's NICs (at most "
                f"{heads} NVLS heads') carrying S each way ({a_out / 1e9:.1f} GB/s)"
                if comm.n_domains > 1
                else ""
            )
            + _channel_first_words(tm, message_bytes, load)
            + (_tuner_price_words(tm, g, alg) if comm.n_domains == 1 else "")
        )

    load = nvls_channel_load_bytes(tm, message_bytes, comm)
    fill = nvls_fill_bytes(tm, message_bytes, comm, load_bytes=load) / alg if comm.n_domains == 1 else 0.0
    # NCCL's tuner prices S alone, on one domain at its own NVLS price: the fill, the idle channels of a
    # partial loop and the gap between its price and the NVLS rate go unseen
    price = nvls_tuner_price(tm, g) if comm.n_domains == 1 else 0.0
    unseen = load / alg + fill - message_bytes / (price if price > 0 else alg)
    bw = {net: load / alg + fill}
    return make_cost(tm, Algorithm.NVLS, proto, lat, bw, net, why, unseen_by_tuner_s=unseen)


def _channel_first_words(tm: TierModel, message_bytes: float, load: float) -> str:
    """The ``why`` clause of :func:`nvls_channel_load_bytes` where the busiest channel's load is not S's."""
    if load == message_bytes:
        return ""
    return (
        f"; NCCL {tm.nccl_version or tm.release.version}'s kernel fills a partial loop channel by channel "
        f"(all_reduce.h): its busiest carries what {load / 2**20:.3g} MiB spread over all would"
    )


def _tuner_price_words(tm: TierModel, g: int, alg: float) -> str:
    """The ``why`` clause of :func:`nvls_cost` where NCCL's tuner prices one-domain NVLS below the rate it
    runs at (:func:`nvls_tuner_price`), else empty: it prices the NVLS graph its search finds, ``h``
    channels (one per head) of at most the architecture's top intra-node speed (``search.cc``
    ``sm100SpeedArrayIntra`` on Blackwell and later: 90 GB/s), whatever the NVLink rate, while the ring
    graph's channels grow with it.

    8 x Rubin (nvlink6, 1202.4 GB/s): 8 x 90 x 0.74 x 7/8 x 8/7 = 532.8 GB/s, below the 778.5 NVLS runs
    at and the ring graph's 30 x 40 x 8/14 = 685.7: NCCL's tuner runs the ring at every size.
    """
    price = nvls_tuner_price(tm, g)
    if not 0 < price < alg * (1 - 1e-3):
        return ""
    heads, speed = nvls_search(tm.release, tm.arch, gpu_gbps=tm.intra_bytes_per_s / 1e9, local_gpus=g)
    top = tm.release.search_speeds_intra[tuning_arch(tm.release, tm.arch)][0]
    capped = ", the top of search.cc's intra-node speeds for the architecture," if speed >= top else ""
    return (
        f"; NCCL {tm.nccl_version or tm.release.version}'s tuner prices it on its own NVLS graph, {heads} "
        f"channels (one per head) of {speed:g} GB/s{capped} at {price / 1e9:.1f} GB/s algbw (tuning.cc, "
        f"nvlsEfficiency {tm.nvls_efficiency}), below the {alg / 1e9:.1f} it runs at"
    )


def nvls_tuner_price(tm: TierModel, g: int) -> float:
    """The algbw NCCL's tuner prices one-domain NVLS all_reduce of ``g`` GPUs at, bytes/s (0 under
    ``efficiency="line_rate"``): :func:`~aifabric.catalog.nccl.nvls_tuner_algbw` on the NVLS graph
    NCCL's search finds for this GPU's scale-up (``tm.intra_bytes_per_s``). A release with no NVLS figure
    has no NVLS (:func:`~aifabric.catalog.nccl.nvls_support`), and pricing it raises ConfigError.

    NCCL picks on this price and runs at :func:`nvls_algbw`: on 4 of 8 H100 (2.29.2) it prices NVLS at
    204 GB/s (4 x 60 x 0.85) below the ring's 247 (370.8 x 4/6) and runs ring, as its TUNING log prints,
    though NVLS runs at 236 (376 busbw measured with NCCL_ALGO=NVLS, nccl-collectives-bench).
    """
    if not tm.nccl:
        return 0.0
    gbps = tm.intra_bytes_per_s / 1e9
    return nvls_tuner_algbw(tm.release, tm.tuning_row, gpu_gbps=gbps, local_gpus=g) * 1e9


def nvls_gather_tuner_price(tm: TierModel, g: int) -> float:
    """The algbw NCCL's tuner prices one-domain NVLS all_gather / reduce_scatter of ``g`` GPUs at, bytes/s
    (0: the release costs none, or ``efficiency="line_rate"``): :func:`~aifabric.catalog.nccl.
    nvls_gather_tuner_algbw` on the NVLS graph NCCL's search finds for this GPU's scale-up."""
    if not tm.nccl:
        return 0.0
    gbps = tm.intra_bytes_per_s / 1e9
    return nvls_gather_tuner_algbw(tm.release, tm.tuning_row, gpu_gbps=gbps, local_gpus=g) * 1e9


def _nvls_gather_runs(op: Collective, comm: Communicator, tm: TierModel) -> bool:
    """NCCL runs NVLS ``op`` (all_gather / reduce_scatter) here: its release costs it (tuning.cc, the
    catalogue's ``algorithms``), on one domain (tuning.cc zeroes it across nodes unless CollNet has
    iallgather / ireducescatter, which aifabric does not model) of at most NCCL_MAX_NVLS_ARITY ranks
    (enqueue.cc updateCollCostTable: no NVLS for a non-all_reduce above it)."""
    costed = tm.release.algorithms.get(NcclCollective(op.value), ())
    small = comm.ranks_per_domain <= tm.release.nvls_max_arity
    return comm.n_domains == 1 and small and any(a.value == Algorithm.NVLS.value for a in costed)


def nvls_gather_scatter_cost(
    op: Collective, proto: Protocol, message_bytes: float, comm: Communicator, tm: TierModel
) -> Cost | None:
    """NVLS all_gather / reduce_scatter on one NVSwitch domain, seconds (None where NCCL runs none).

    all_gather: each GPU stores its S/n once into the multicast buffer and the NVSwitch delivers every
    GPU's share to every GPU, S in; reduce_scatter: each GPU reads its S/n reduced from every GPU, S out
    (the NCCL maintainers, nccl #1083 / #1506: "NVLS: Send S/N, Receive S" for all_gather, "Send S,
    Receive S/N" for reduce_scatter, against the ring's (n-1)/n S each way). The busy direction carries S
    at NCCL's NVLS rate::

        T = a_nvls + S / (B_i e),   busbw = B_i e (n - 1)/n

    ``a_nvls`` NCCL's NVLS latency (as :func:`nvls_cost`), ``e`` its nvlsEfficiency. So NVLS carries
    n/(n-1) times the ring's bytes on the busy direction and is slower wherever the ring reaches B_i.
    NCCL's tuner picks on ``a_nvls + S / A_tuner`` with ``A_tuner`` its own price
    (:func:`nvls_gather_tuner_price`: 208 GB/s on 8 x H100 under 2.29.2, under the ring's 423.8), so it
    runs NVLS for these only when ``NCCL_ALGO`` asks for it. reduce_scatter needs an op and type the
    switch reduces (ncclNvlsSupported: sum on float; nccl-tests' default).

    References
    ----------
    NVIDIA/nccl 2.29.2 ``src/graph/tuning.cc``, ``src/enqueue.cc`` (updateCollCostTable),
    ``src/device/all_gather.h`` (NVLS: bcast warps store the input into the multicast buffer, gather
    warps copy the n received shares out).

    Examples
    --------
    8 x H100, 1 GiB all_gather (nccl #1506 measured busbw 300 GB/s with NCCL_ALGO=NVLS):

    >>> from aifabric.cluster.presets import preset
    >>> from aifabric.collectives.tiers import tier_model
    >>> spec = preset("h100-ib-2node", nodes=1)
    >>> c = nvls_gather_scatter_cost(Collective.ALL_GATHER, Protocol.SIMPLE, 2**30,
    ...                              Communicator.contiguous(spec), tier_model(spec))
    >>> round(2**30 / c.time_s * 7 / 8 / 1e9, 1)  # 25 us of NVLS latency, then S / (370.8 x 0.85)
    273.8
    """
    if not _nvls_gather_runs(op, comm, tm):
        return None
    g = comm.ranks_per_domain
    alg = tm.intra_bytes_per_s * (tm.nvls_efficiency if tm.nccl else 1.0)
    lat = base_latency_s(tm, "nvls", proto) + hw_latency_s(tm, tm.intra_kind, "nvls", proto)
    price = nvls_gather_tuner_price(tm, g)
    unseen = message_bytes / alg - message_bytes / (price if price > 0 else alg)
    into = "into" if op is Collective.ALL_GATHER else "out of"

    def why() -> str:
        return (
            f"NVLink SHARP {op.value}: S crosses each GPU's NVLink {into} it once at "
            f"{tm.intra_bytes_per_s / 1e9:.1f} GB/s x efficiency {tm.nvls_efficiency} (the ring: (n-1)/n S)"
        )

    return make_cost(tm, Algorithm.NVLS, proto, lat, {SCALE_UP: message_bytes / alg}, SCALE_UP, why, unseen)


#: NVLS's cost per collective (the registry's one NVLS entry serves all three).
_NVLS_COSTS: dict[
    Collective, Callable[[Collective, Protocol, float, Communicator, TierModel], Cost | None]
] = {
    Collective.ALL_REDUCE: nvls_cost,
    Collective.ALL_GATHER: nvls_gather_scatter_cost,
    Collective.REDUCE_SCATTER: nvls_gather_scatter_cost,
}


def nvls_collective_cost(
    op: Collective, proto: Protocol, message_bytes: float, comm: Communicator, tm: TierModel
) -> Cost | None:
    """NVLS's cost for ``op``, seconds: :func:`nvls_cost` for all_reduce, :func:`nvls_gather_scatter_cost`
    for all_gather and reduce_scatter::

        T = a_nvls + (S + fill) / (B_i e (h - 1)/h)   all_reduce (one domain)
        T = a_nvls + S / (B_i e)                      all_gather, reduce_scatter (one domain)

    Examples
    --------
    8 x H100, 4 GiB: the switch's reduction gives all_reduce 1.7 times the bus bandwidth it gives
    all_gather (case 01: 473.6 GB/s all_reduce busbw; nccl #1506: all_gather 300 at 1 GiB):

    >>> from aifabric.cluster.presets import preset
    >>> from aifabric.collectives.tiers import tier_model
    >>> spec = preset("h100-ib-2node", nodes=1)
    >>> comm, tm = Communicator.contiguous(spec), tier_model(spec)
    >>> ar, ag = (nvls_collective_cost(op, Protocol.SIMPLE, 2**32, comm, tm).time_s
    ...           for op in (Collective.ALL_REDUCE, Collective.ALL_GATHER))
    >>> round(2**32 / ar * 14 / 8 / 1e9), round(2**32 / ag * 7 / 8 / 1e9)
    (478, 275)
    """
    return _NVLS_COSTS[op](op, proto, message_bytes, comm, tm)


def nvls_tree_cost(
    op: Collective, proto: Protocol, message_bytes: float, comm: Communicator, tm: TierModel
) -> Cost | None:
    """NVLS inside each domain, a tree of domains over the NICs, pipelined, seconds.

    Each domain's NVLS heads' NICs carry S per direction on two domains, 1.5 S on three and 2 S from four
    (NCCL's double binary tree, :func:`~aifabric.collectives.tiers.tree_nic_traffic`; ``connect.cc`` gives
    tree peers to head ranks only, one head per NIC; NCCL's tuner counts 2 S on three too,
    :func:`~aifabric.collectives.tiers.tuner_tree_nic_traffic`), and the NVLS-tree
    kernel tops out per channel (:func:`nvls_tree_kernel_cap`, ``A_cap``), so::

        B_heads = min(B_node, h gpus_per_nic B_o)      (:func:`_heads_nic_bytes_per_s`)
        algbw = min( B_i e (h - 1)/h ,  B_heads / r(N)  (r = 1, 1.5, 2 on 2, 3, >= 4 domains) ,  A_cap )
        T     = a_nvls + k(N) a_o + (S + fill) / algbw

    (``a_nvls`` = NCCL's baseLat + NVLink hwLat of NVLS-tree: 23 + 0 us on 2.18, 0 + 23/25 us from 2.19;
    ``k(N)`` its NET latency steps, :func:`nvls_tree_net_steps`: 2 floor(log2 N) from 2.19, 2 (N - 1)
    on 2.18.)

    (``B_node`` the NICs of the sparsest domain, :func:`~aifabric.collectives.tiers.domain_nic_bytes_per_s`.)
    ``fill`` is the on-domain NVLS pipeline's fill and drain (:func:`nvls_fill_bytes` with NVLS-tree's
    chunks: 2 loops of 16 x 8 x 128 KiB from 64 MiB on 2 x 8 H100, of 64 KiB chunks from 4 nodes);
    NCCL's tuner does not see it (``Cost.tuner_time_s``), as for one-domain NVLS. A release whose tuner
    has no ceiling (2.18-2.27: :func:`nvls_tree_cap` is inf) picks on ``algbw`` without ``A_cap``, so its
    tuner does not see ``S / algbw - S / algbw_tuner`` either.

    Examples
    --------
    >>> from aifabric.cluster.presets import preset
    >>> from aifabric.collectives.tiers import tier_model
    >>> spec = preset("h100-ib-2node", nodes=4)
    >>> c = nvls_tree_cost(Collective.ALL_REDUCE, Protocol.SIMPLE, 2**32, Communicator.contiguous(spec),
    ...                    tier_model(spec))
    >>> round(nvls_tree_cap(tier_model(spec), Communicator.contiguous(spec)) / 1e9, 1)  # 8 x 45.5 x 32/62
    187.9
    """
    lat, alg, tuner_alg, net, why = tm.memo(
        ("nvls_tree", proto, comm.shape), lambda: _nvls_tree_shape(proto, comm, tm)
    )
    fill_bytes = nvls_fill_bytes(tm, message_bytes, comm, Algorithm.NVLS_TREE)
    fill = fill_bytes / alg
    bw = {net: message_bytes / alg + fill}
    unseen = fill + (message_bytes / alg - message_bytes / tuner_alg if tuner_alg != alg else 0.0)

    def words() -> str:
        if fill_bytes <= 0:
            return why()
        rules = _fill_rules(tm, comm)
        nc, heads = rules.channels, rules.heads
        loop, loops = _loop_bytes(tm, message_bytes, comm, Algorithm.NVLS_TREE)
        shape = f"{nc} channels x {heads} heads x {loop / (nc * heads) / 1024:.0f} KiB chunks"
        what = (
            f"{loops} loops of the whole message (one loop of {shape} = {loop / 2**20:.3g} MiB holds it all)"
            if loop >= message_bytes
            else f"{loops} loops of {shape}"
        )
        fill_words = f"pipeline fill and drain {fill_bytes / 2**20:.3g} MiB ({fill * 1e6:.0f} us): {what}"
        return f"{why()}; {fill_words}{_shrunk_fill_words(tm, message_bytes, comm, loop)}"

    def why_fill() -> str:  # kept per shape and size: planners and sweeps ask again (optimisation)
        return tm.memo(("nvls_tree_why", proto, comm.shape, float(message_bytes)), words)

    return make_cost(tm, Algorithm.NVLS_TREE, proto, lat, bw, net, why_fill, unseen_by_tuner_s=unseen)


def _nvls_tree_shape(
    proto: Protocol, comm: Communicator, tm: TierModel
) -> tuple[float, float, float, str, Callable[[], str]]:
    """(latency, algbw, the algbw NCCL's tuner sees, bottleneck network, why) of :func:`nvls_tree_cost`:
    none depends on the size."""
    g, N = comm.ranks_per_domain, comm.n_domains  # noqa: N806
    ilat = base_latency_s(tm, "nvls_tree", proto) + hw_latency_s(tm, tm.intra_kind, "nvls_tree", proto)
    olat = hw_latency_s(tm, "net", "nvls_tree", proto) + net_extra_latency_s(tm, proto)
    lat = ilat + nvls_tree_net_steps(tm.release, N) * olat
    a_in = nvls_algbw(tm, g)
    heads_bw = _heads_nic_bytes_per_s(tm, comm)
    a_out = heads_bw / tree_nic_traffic(N)
    heads = nvls_heads(tm.release, local_gpus=g, nics_per_node=tm.nics_of(g))
    a_cap, tuner_cap = nvls_tree_kernel_cap(tm, comm), nvls_tree_cap(tm, comm)
    alg = min(a_in, a_out, a_cap)
    tuner_alg = min(a_in, heads_bw / tuner_tree_nic_traffic(N), tuner_cap)
    net = SCALE_UP if a_in <= min(a_out, a_cap) else SCALE_OUT

    def why() -> str:
        cap = "" if math.isinf(a_cap) else f", NCCL's per-channel cap {a_cap / 1e9:.0f} GB/s algbw"
        if tuner_cap != a_cap:  # the kernel's cap, from a later release's table
            cap += f", which NCCL {tm.nccl_version or tm.release.version}'s tuner does not know"
        return (
            f"NVLS in each node ({a_in / 1e9:.0f} GB/s algbw), tree across {N} nodes through its "
            f"{heads} NVLS heads' NICs ({a_out / 1e9:.0f} GB/s algbw{cap})"
        )

    return lat, alg, tuner_alg, net, why
