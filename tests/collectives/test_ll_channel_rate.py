"""One channel's LL rate inside a node is its CTA's (tiers.ll_channel_rate), with the threads enqueue.cc
gives it (CallChannels.thread_share); across nodes it stays llMaxBw shared over the GPU's channels."""

from __future__ import annotations

import pytest

from aifabric.cluster.presets import preset
from aifabric.collectives.tiers import Protocol, call_channels, ll_channel_rate, tier_model
from aifabric.engines.formula import formula_collective

KiB = 2**10
ONE_NODE = preset("h100-ib-2node", nodes=1)


def test_ll_channel_rate_is_the_ll128_cta_rate_scaled_by_stores_and_threads() -> None:
    # perChMaxRingLL128Bw Hopper 36.7 GB/s x (8 data bytes a 16-byte LL store x 512 threads) / (15 x 640)
    tm = tier_model(ONE_NODE)
    assert ll_channel_rate(tm, 1) == pytest.approx(36.7e9 * 8 * 512 / (15 * 640))
    # two nodes: Intel's llMaxBw row (39 GB/s, tuning.cc index1 = cpuVendor) over the 16 channels
    assert ll_channel_rate(tm, 2) == pytest.approx(39e9 / 16)


@pytest.mark.parametrize(
    ("size", "threads"),
    # enqueue.cc, 8 ranks, ring LL: nc = 1 below 32 KiB, then nt halved while S < nt x 8 x 8 and nt % 128
    # == 0, and at least 3 warps: 16 KiB -> 256, 8 KiB -> 128, 4 KiB -> 64 -> 96, 8 B -> 96
    [(32 * KiB, 512), (16 * KiB, 256), (8 * KiB, 128), (4 * KiB, 96), (8, 96)],
)
def test_thread_share_follows_enqueue(size: int, threads: int) -> None:
    tm = tier_model(ONE_NODE)
    plan = call_channels(tm, "ring", "all_reduce", Protocol.LL, 8, 1, 100e9)
    assert plan.thread_share(size, 1) == threads / 512


def test_ring_ll_is_flat_while_channels_grow_with_the_size() -> None:
    # Each kept channel carries 32 KiB at one CTA's rate from 8 KiB to 256 KiB (NVIDIA/dgxc-benchmarking,
    # 8 x H100: 17.40-20.43 us): the call's time does not grow until llMaxBw binds (512 KiB)
    times = [formula_collective("all_reduce", s, ONE_NODE).time_s for s in (8 * KiB, 64 * KiB, 256 * KiB)]
    assert times == pytest.approx([times[0]] * 3)
    assert formula_collective("all_reduce", 512 * KiB, ONE_NODE).time_s > times[0]


def test_tree_ll_across_nodes_keeps_no_thread_share() -> None:
    tm = tier_model(preset("h100-ib-2node"))
    plan = call_channels(tm, "tree", "all_reduce", Protocol.LL, 16, 2, 100e9)
    assert plan.thread_share(1 * KiB, 1) == 1.0
