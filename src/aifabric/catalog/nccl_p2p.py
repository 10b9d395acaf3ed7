"""NCCL's point-to-point channels per peer, per release (``src/graph/paths.cc``).

A send or receive to one peer runs on ``p2pnChannelsPerPeer`` of the communicator's ``p2pnChannels`` p2p
channels. ``ncclTopoComputeP2pChannels`` makes ``p2pnChannels`` the communicator's channel count rounded up
to a power of two and ``p2pnChannelsPerPeer`` the fewest channels ``ncclTopoGetNchannels`` gives any peer,
rounded up to a power of two. Across nodes the fewest are a network peer's (an NVLink peer gets ``2 x``
its NVLinks' bandwidth in NVLink units, at least 2), and NCCL's rule for those changed over releases; each
release's rule is data in ``data/nccl_releases.yaml`` (``net_peer_channels``, read at each tag):

==============  ================================================================================
rule            channels to a network peer (``NCCL_NCHANNELS_PER_NET_PEER`` unset)
==============  ================================================================================
fixed           ``start`` (v2.18.1-1 .. v2.19.4-1: ``NCCL_PARAM(NChannelsPerNetPeer, ..., 2)``)
halve_by_ranks  ``c = start``, halved while ``c x nRanks > ops_per_channel x p2pnChannels`` and
                ``c > 1``; then at least the GPU's local NICs (v2.20.3-1 .. v2.28.9-1, default -1:
                "Avoid overloading channels with 8+ operations as we loose the sync warp")
per_nic_bw      ``max(local NICs, ceil(NIC GB/s / per_channel_net_gbps))`` (``P2P_PER_CHANNEL_NET_BW``,
                14), rounded up to a power of two, then halved while
                ``c x ceil(nRanks / peers_per_batch) > p2pnChannels`` (``NCCL_MAX_DEV_WORK_P2P_PER_BATCH``
                8) on more than one node (v2.29.2-1 on)
==============  ================================================================================

A stated ``NCCL_NCHANNELS_PER_NET_PEER`` replaces the rule by its value.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["NetPeerChannels", "P2pShape", "net_peer_channels", "p2p_channels", "pow2_up"]


class NetPeerChannels(BaseModel):
    """One release's rule for the p2p channels to a network peer (see the module's table)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rule: Literal["fixed", "halve_by_ranks", "per_nic_bw"]
    start: int = Field(ge=1)
    ops_per_channel: int | None = Field(default=None, ge=1)
    per_channel_net_gbps: float | None = Field(default=None, gt=0)
    peers_per_batch: int | None = Field(default=None, ge=1)


class P2pShape(BaseModel):
    """What the rules read of a communicator: ranks, nodes, the communicator's channels (``nChannels``),
    the GPU's local NICs at the fastest speed and their GB/s together (``getLocalNetCountByBw``)."""

    model_config = ConfigDict(frozen=True)

    n_ranks: int = Field(ge=1)
    n_nodes: int = Field(ge=1)
    comm_channels: int = Field(ge=1)
    local_nics: int = Field(default=1, ge=0)
    local_nic_gbps: float = Field(default=0.0, ge=0)


def pow2_up(v: int) -> int:
    """The smallest power of two >= ``v`` (paths.cc ``nextPow2`` / ``pow2Up``; 1 for ``v <= 1``)."""
    return 1 << max(0, math.ceil(math.log2(max(1, v))))


def p2p_channels(shape: P2pShape, max_channels: int) -> int:
    """``p2pnChannels``: ``min(nChannels, NCCL_MAX_P2P_NCHANNELS = MAXCHANNELS)`` rounded up to a power of
    two (``ncclTopoComputeP2pChannels``, every release recorded)."""
    return pow2_up(min(shape.comm_channels, max_channels))


def _fixed(rule: NetPeerChannels, shape: P2pShape, p2p: int) -> int:
    return rule.start


def _halve_by_ranks(rule: NetPeerChannels, shape: P2pShape, p2p: int) -> int:
    c = rule.start
    ops = rule.ops_per_channel or 1
    while c * shape.n_ranks > p2p * ops and c > 1:
        c //= 2
    return pow2_up(max(shape.local_nics, c))


def _per_nic_bw(rule: NetPeerChannels, shape: P2pShape, p2p: int) -> int:
    c = rule.start
    if shape.local_nics > 0 and rule.per_channel_net_gbps:
        c = max(shape.local_nics, math.ceil(int(shape.local_nic_gbps) / int(rule.per_channel_net_gbps)))
    c = pow2_up(c)
    batches = math.ceil(shape.n_ranks / (rule.peers_per_batch or shape.n_ranks))
    while shape.n_nodes > 1 and c * batches > p2p and c > 1:
        c //= 2
    return c


_RULES: dict[str, Callable[[NetPeerChannels, P2pShape, int], int]] = {
    "fixed": _fixed,
    "halve_by_ranks": _halve_by_ranks,
    "per_nic_bw": _per_nic_bw,
}


def net_peer_channels(
    rule: NetPeerChannels, shape: P2pShape, max_channels: int, stated: int | None = None
) -> int:
    """``p2pnChannelsPerPeer`` of a communicator spanning nodes: the channels a send to a network peer
    runs on (a stated ``NCCL_NCHANNELS_PER_NET_PEER``, else the release's rule), rounded up to a power
    of two and at most ``p2pnChannels``.

    Examples
    --------
    NVIDIA/nccl #1272 (8 nodes x 4 GH200, one 200 Gb/s NIC each; 8 communicator channels assumed here):
    2.19's fixed 2; 2.20's rule halves to 1 at 32 ranks (2 x 32 > 4 x 8) but not at 16 (2 x 16 = 4 x 8),
    as the thread sees (no drop up to 4 nodes). With 16 channels it would not halve at 32 ranks either.

    >>> two = NetPeerChannels(rule="fixed", start=2)
    >>> halve = NetPeerChannels(rule="halve_by_ranks", start=2, ops_per_channel=4)
    >>> shape = P2pShape(n_ranks=32, n_nodes=8, comm_channels=8, local_nics=1, local_nic_gbps=25)
    >>> [net_peer_channels(r, shape, 32) for r in (two, halve)]
    [2, 1]
    >>> net_peer_channels(halve, shape.model_copy(update={"n_ranks": 16, "n_nodes": 4}), 32)
    2
    """
    p2p = p2p_channels(shape, max_channels)
    c = stated if stated is not None else _RULES[rule.rule](rule, shape, p2p)
    return min(p2p, pow2_up(c))
