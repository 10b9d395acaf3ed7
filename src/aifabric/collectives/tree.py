"""NCCL's double binary tree all_reduce across domains, with a chain inside each domain."""

from __future__ import annotations

import math
from typing import NamedTuple

from aifabric.catalog.nccl import NcclRelease, tree_simple_latency_release
from aifabric.collectives.communicator import Communicator
from aifabric.collectives.cost import SCALE_OUT, SCALE_UP, Algorithm, Cost, make_cost
from aifabric.collectives.costs import double_binary_tree_all_reduce_time
from aifabric.collectives.nccl_trees import btree_depth
from aifabric.collectives.ops import Collective
from aifabric.collectives.tiers import (
    CallChannels,
    Protocol,
    TierModel,
    base_latency_s,
    call_channels,
    channel_share,
    channel_share_note,
    domain_nic_bytes_per_s,
    hw_latency_s,
    net_extra_latency_s,
    protocol_bandwidth,
    rendezvous_s,
    scaleup_bytes_per_s,
    tree_correction,
    tree_nic_traffic,
    tuner_tree_nic_traffic,
)

__all__ = ["chain_relief", "tree_cost"]


def tree_cost(
    op: Collective, proto: Protocol, message_bytes: float, comm: Communicator, tm: TierModel
) -> Cost | None:
    """Double binary tree all_reduce across N domains, a chain of g ranks inside each, seconds.

    Each of the two trees reduces then broadcasts half of the buffer; an inner node receives from two
    children and sends to its parent, so from four domains a domain moves 2 S per direction through its
    NICs and an inner GPU of the chain 2 S through scale-up; ``2 (g - 1) / g S`` on average when every
    GPU heads one channel's chain (``r_c`` = :func:`chain_relief`: ``g / (g - 1)``, else 1). On two
    domains there is no inner node: each domain is one tree's root and the other's leaf, and its NICs
    carry S / 2 up and S / 2 down per tree, S per direction (a ring: 2 (n - 1) / n S); on three, NCCL's
    trees are chains (its root has one child) and a domain carries at most 1.5 S. So the NICs count
    ``k = 2 / r(N)`` times, ``r(N)`` = :func:`~aifabric.collectives.tiers.tree_nic_traffic` (1, 1.5, 2).
    NCCL's tuner counts ``r = 2`` on three domains as on more
    (:func:`~aifabric.collectives.tiers.tuner_tree_nic_traffic`) and no ``r_c``: it picks on that time
    (``Cost.tuner_time_s``) and the tree runs for this one. The bandwidth is that of the slower of the
    two::

        B   = P_tree( min(r_c B_i, k B_node) x s_C )  (B_i infinite when g = 1: no chain)
        lat = base + 2 ((g - 1) a_i + log2(N) a_o) + 2 d(N) t_rdzv(S / nc)
        T   = lat + 2 S / (B c(S))               (algbw = B / 2, NCCL's tree model)

    ``base``, ``a_i`` and ``a_o`` are NCCL's ``baseLat`` and ``hwLat`` of the release, but for Simple on a
    release whose tree/Simple figures are its tuner's penalty (28 us a step to v2.22) those of the release
    that prices the step (:func:`~aifabric.catalog.nccl.tree_simple_latency_release`): the tuner picks on
    its own, the call runs on these.
    ``t_rdzv`` the provider's rendezvous on a network step of a channel's share (``nc`` channels) on each
    of the tree's ``d(N)`` levels up and down (:func:`~aifabric.collectives.nccl_trees.btree_depth`), 0
    but on ``slingshot-cxi`` (:func:`~aifabric.collectives.tiers.rendezvous_s`); NCCL's tuner does not see
    it.

    ``c(S)`` is NCCL's ``treeCorrectionFactor[proto][floor(log2(S / 64))]`` of ``tm.release`` (64 B to
    256 MiB; 1 beyond): the tree's measured bandwidth shortfall at small and mid sizes, by which NCCL's
    tuner times it (:func:`~aifabric.collectives.tiers.tree_correction`).

    ``B_node`` is what the NICs of the sparsest domain carry (``g_min B_o``; a shared NIC counted once,
    :func:`~aifabric.collectives.tiers.domain_nic_bytes_per_s`). ``P_tree`` is the tree's protocol
    efficiency under NCCL's cap, the tree graph's channels x ``perChMaxTreeBw``
    (:func:`~aifabric.collectives.tiers.protocol_bandwidth`,
    :func:`~aifabric.collectives.tiers.tree_graph_cap`); ``s_C = min(1, C / C0)``
    (:func:`~aifabric.collectives.tiers.channel_share`); the call runs on its own channels
    (:func:`~aifabric.collectives.tiers.call_bandwidth`).
    NCCL itself times a tree on <= 2 nodes from the intra-node bandwidth alone; here the NICs bound it on
    any number of domains, at S per direction on two (the maintainers: on 2 nodes the tree's busbw
    "can exceed the actual available peak BW", NVIDIA/nccl-tests #22; 4 x p4d at 1 GiB: busbw 57.17 on 2
    nodes, 31.77 on 3, NVIDIA/nccl #527; NCCL 2.30.3's ``tuning.cc`` doubles ``bwInter`` for the NVLS
    tree on <= 2 nodes, "Handle 2 node case of NVLSTree", the same two-domain tree).

    References
    ----------
    Sanders, Speck & Traeff 2009, doi:10.1016/j.parco.2009.09.001; NVIDIA/nccl 2.30.7 ``tuning.cc``.

    Examples
    --------
    Nodes of one H100 each (one 400G NIC, 49.15 GB/s): on two, algbw <= 2 x 49.15 / 2 x 0.92 (Simple) =
    45.2 GB/s (45.1 with the latency); on three (chains, 1.5 S), 49.15 / 1.5 x 0.92 = 30.1 GB/s:

    >>> from aifabric.cluster.presets import preset
    >>> from aifabric.collectives.tiers import tier_model
    >>> spec = preset("h100-ib-2node", nodes=3)
    >>> tm = tier_model(spec)
    >>> def algbw(gpus):
    ...     comm = Communicator.from_gpus(spec, gpus)
    ...     c = tree_cost(Collective.ALL_REDUCE, Protocol.SIMPLE, 2**30, comm, tm)
    ...     return round(2**30 / c.time_s / 1e9, 1), c.bottleneck
    >>> algbw([0, 8]), algbw([0, 8, 16])
    ((45.1, 'scale-out'), (30.1, 'scale-out'))
    """
    N = comm.n_domains  # noqa: N806  (N domains, as in NCCL)
    shape = tm.memo(("tree", op, proto, comm.shape), lambda: _tree_shape(op, proto, comm, tm))
    if shape is None:
        return None
    corr = tree_correction(tm, proto, message_bytes)
    t = double_binary_tree_all_reduce_time(message_bytes, N, shape.channels.bandwidth(message_bytes)) / corr
    unseen = 0.0  # what the tuner does not see: negative on 3 domains, where it counts 2 S for 1.5 S
    if shape.tuner_channels is not shape.channels:
        tuned = shape.tuner_channels.bandwidth(message_bytes)
        unseen = t - double_binary_tree_all_reduce_time(message_bytes, N, tuned) / corr
    raw = shape.raw
    # each network step moves a channel's whole share, up and down the tree's whole levels (trees.cc);
    # NCCL's tuner does not see the rendezvous (optimisation: the channel count and the depth are read
    # only where the transport has one)
    rdzv = (
        rendezvous_s(tm, proto, message_bytes / shape.channels.count(message_bytes), 2 * btree_depth(N))
        if tm.net_rendezvous_s
        else 0.0
    )

    def why() -> str:
        return (
            f"double binary tree across {N} domains, algbw = 0.5 x {raw / 1e9:.1f} GB/s x protocol efficiency"
            + channel_share_note(tm, N)
        )

    lat = shape.step_latency_s + rdzv
    unseen += rdzv + shape.step_latency_s - shape.latency_s
    return make_cost(tm, Algorithm.TREE, proto, lat, {shape.net: t}, shape.net, why, unseen)


class _TreeShape(NamedTuple):
    """What a tree's cost reads that does not depend on the size (kept in :meth:`TierModel.memo`)."""

    latency_s: float  # as NCCL's tuner times it: the pick
    step_latency_s: float  # what the steps take (tree_simple_latency_release): the run
    raw: float  # min(B_i, B_node), bytes/s
    net: str
    channels: CallChannels
    tuner_channels: CallChannels  # as NCCL's tuner sees them (tuner_tree_nic_traffic): the pick


def _tree_shape(op: Collective, proto: Protocol, comm: Communicator, tm: TierModel) -> _TreeShape | None:
    """None when NCCL has no latency for ``proto`` on this tier."""
    n, N, g = comm.n_ranks, comm.n_domains, comm.ranks_per_domain  # noqa: N806
    lat = _tree_latency_s(tm, proto, g, N, tm.release)
    if math.isnan(lat):
        return None
    priced = tm.release if proto is not Protocol.SIMPLE else tree_simple_latency_release(tm.release)
    step_lat = lat if priced is tm.release else _tree_latency_s(tm, proto, g, N, priced)
    up = scaleup_bytes_per_s(tm, g) if g > 1 else math.inf
    node = domain_nic_bytes_per_s(tm, comm) * 2  # algbw = B / 2 below
    nic_agg, tuner_agg = node / tree_nic_traffic(N), node / tuner_tree_nic_traffic(N)
    chain = up * chain_relief(tm, g, proto)
    raw = min(chain, nic_agg)
    net = SCALE_OUT if nic_agg < chain else SCALE_UP

    def channels(raw_bw: float) -> CallChannels:
        bus = protocol_bandwidth(tm, proto, raw_bw * channel_share(tm, N), N, tree=True)
        return call_channels(tm, "tree", op.value, proto, n, N, bus)

    chans = channels(raw)
    tuned = min(up, tuner_agg)  # NCCL's tuner: nChannels x bwIntra, the chain's ends unseen
    tuner = chans if tuned == raw else channels(tuned)
    return _TreeShape(lat, step_lat, raw, net, chans, tuner)


def _tree_latency_s(tm: TierModel, proto: Protocol, g: int, N: int, release: NcclRelease) -> float:  # noqa: N803
    """NCCL's tree latency under ``release``'s tables: ``base + 2 ((g - 1) a_i + log2(N) a_o)``, seconds;
    NaN when the release has none for ``proto`` on this tier."""
    ilat = hw_latency_s(tm, tm.intra_kind, "tree", proto, release)
    olat = hw_latency_s(tm, "net", "tree", proto, release) + net_extra_latency_s(tm, proto)
    return base_latency_s(tm, "tree", proto, release) + 2 * ((g - 1) * ilat + math.log2(N) * olat)


def chain_relief(tm: TierModel, g: int, proto: Protocol = Protocol.SIMPLE) -> float:
    """How much more than ``B_i / 2`` the tree's intra-domain chains give a GPU under ``proto``: ``g / (g -
    1)`` for Simple when every GPU heads one chain, else 1.

    Per channel the chain of ``g`` GPUs carries the reduction up and the broadcast down: an inner GPU
    sends ``2 S_c`` over NVLink, the head (whose parent is the NIC) and the tail (whose children are the
    NIC's, or none) ``S_c``. On an NVSwitch domain where every GPU has a NIC of its own, NCCL heads each
    tree channel with a distinct GPU, the one local to its NIC (search.cc ``ncclTopoSearchRecNet``: "check
    whether there is duplicate head when one GPU connects with multiple NICs"), and follows the chain from
    the head down to its previous GPU first (``ncclTopoSearchNextGpuSort``: on NVSwitches, split and
    balanced trees try ``prevGpu`` first), so the tail of the chain headed by GPU ``h`` is ``h + 1``: every
    GPU is one channel's head and another's tail. A GPU then sends ``2 (g - 1) / g S`` over NVLink rather
    than ``2 S``: the tree's algbw bound is ``B_i g / (2 (g - 1))`` (v2.18.1-1 to v2.30.7-1). With shared
    NICs or a mesh the heads do not cover every GPU and an inner GPU still sends ``2 S``. The average
    over channels helps only a bound the channels share, the GPU's NVLink under Simple's bulk copies; LL
    and LL128 forward line by line, polling a flag per line, each channel at its thread block's rate
    (tuning.cc's per-channel caps), so a channel's inner GPUs, which forward ``2 S_c``, set its pace.

    8 x A100 (NCCL's 12 x 20 = 240 GB/s) with two 100 Gb/s NICs each: algbw <= 240 x 8 / 14 = 137.1 GB/s
    (126.2 at the tree's 0.92), where 2 S gave 120; measured 126.90 at 8 GiB on 2 x OCI BM.GPU.B4.8
    (oracle-quickstart/oci-hpc-oke README), above the 2 S bound.

    >>> from aifabric.cluster.presets import preset
    >>> from aifabric.collectives.tiers import tier_model
    >>> round(chain_relief(tier_model(preset("h100-ib-2node")), 8), 4)
    1.1429
    """
    whole = tm.intra_kind == "nvlink" and tm.mesh_links < 1 and tm.gpus_per_nic <= 1
    return g / (g - 1) if whole and g > 1 and proto is Protocol.SIMPLE else 1.0
