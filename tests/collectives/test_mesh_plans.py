"""Ring plans on a full-mesh scale-up put each hop on its pair's own link, and every link carries as much.

On a switch any peer is as good as another; on a mesh (8 x MI300X, 7 xGMI links per GPU; 4 x GH200) the
peer a GPU sends to decides the link. One ring order for every channel would load the links ``i -> i + 1``
with every channel and leave the others idle (1/7 of the mesh on MI300X). The plans spread the hops so
that every directed link carries the same bytes: the formula engine's full mesh
(:func:`aifabric.collectives.tiers.scaleup_bytes_per_s`, ``g - 1`` links per GPU).
"""

import numpy as np
import pytest
from tests.clusters import mi300x_node, mi300x_nodes
from tests.engines.test_cases_public_node import one_node

from aifabric.cluster.presets import preset
from aifabric.collectives.algorithms import build_plan, plan_tiers
from aifabric.collectives.ops import Collective
from aifabric.collectives.plan import hierarchical_plan, ring_plan
from aifabric.collectives.tiers import mesh_ring_bytes_per_s, mesh_rings, tier_model
from aifabric.engines.api import collective_time


def _plan(plan, op, s, spec, gpus):
    """``plan`` on ``spec``'s GPUs ``gpus`` with the tiers the formula engine prices it with."""
    return plan(op, s, spec, gpus, plan_tiers(spec))


def _pair_bytes(stage, g: int) -> dict[tuple[int, int], float]:
    """Bytes per step on each directed in-domain pair (local ids), summed over every domain's copy."""
    out: dict[tuple[int, int], float] = {}
    same = stage.src // g == stage.dst // g
    for s, d, b in zip(stage.src[same], stage.dst[same], stage.bytes_[same], strict=True):
        key = (int(s) % g, int(d) % g)
        out[key] = out.get(key, 0.0) + float(b)
    return out


def test_one_mi300x_node_ring_loads_all_56_links_equally():
    # 8 ranks, 1 GiB all_reduce: a step moves S/8 per GPU, S/56 on each of its 7 links (7 link-disjoint
    # rings), so no link carries more than S/56
    s = 2.0**30
    (stage,) = _plan(ring_plan, Collective.ALL_REDUCE, s, mi300x_node(), np.arange(8))
    loads = _pair_bytes(stage, 8)
    assert len(loads) == 56
    assert max(loads.values()) == pytest.approx(s / 8 / 7)
    assert min(loads.values()) == pytest.approx(s / 8 / 7)
    assert stage.repeat == 2 * 7


@pytest.mark.parametrize("nodes", [2, 8])
def test_ring_channels_across_mi300x_nodes_cross_each_xgmi_link_once(nodes):
    # 8 channels per node, each a zigzag from its entry GPU to the GPU 4 further (Walecki): 8 x 7 hops =
    # the 56 directed links of each node once, and each channel's node-crossing hop stays on one rail
    spec = mi300x_nodes(nodes)
    (stage,) = _plan(ring_plan, Collective.ALL_GATHER, 2.0**30, spec, np.arange(8 * nodes))
    same = stage.src // 8 == stage.dst // 8
    pairs = stage.src[same] * 10_000 + stage.dst[same]
    assert np.unique(pairs).size == pairs.size == nodes * 56
    cross = ~same
    assert (stage.src[cross] % 8 == stage.dst[cross] % 8).all()  # one rail: no PXN hop (N even)
    assert np.bincount(stage.src[cross] % 8, minlength=8).tolist() == [nodes] * 8  # every NIC sends


def test_gh200_quad_ring_zigzags_over_its_three_bundles():
    spec = preset("gh200-quad", nodes=4)
    (stage,) = _plan(ring_plan, Collective.ALL_REDUCE, 2.0**30, spec, np.arange(16))
    loads = _pair_bytes(stage, 4)
    assert len(loads) == 12 and len(set(loads.values())) == 1  # every directed bundle, equally


def test_chain_on_a_mesh_sends_each_peer_its_share():
    # broadcast on 8 MI300X: 7 chains from the root, S/7 per link
    s = 2.0**30
    (stage,) = _plan(ring_plan, Collective.BROADCAST, s, mi300x_node(), np.arange(8))
    assert max(_pair_bytes(stage, 8).values()) == pytest.approx(s / 7)


def test_hierarchical_in_domain_steps_use_every_mesh_link():
    s = 2.0**30
    stages = _plan(hierarchical_plan, Collective.ALL_REDUCE, s, preset("gh200-quad", nodes=2), np.arange(8))
    rs, _, ag = stages
    for st in (rs, ag):
        loads = _pair_bytes(st, 4)
        assert len(loads) == 12
        assert max(loads.values()) == pytest.approx(2 * s / 4 / 3)  # 2 domains x S/4 over 3 links
        assert st.repeat == 3


def test_a_switch_keeps_one_ring_order_per_channel():
    # NVSwitch: the plan is unchanged (8 channels of S/(8 n) per hop)
    spec = preset("dgx-h100-superpod", nodes=1)
    (stage,) = build_plan("all_reduce", 2.0**30, spec, np.arange(8), algorithm="ring").stages
    assert stage.n_transfers == 64 and np.unique(stage.group).size == 8
    assert stage.bytes_[0] == pytest.approx(2.0**30 / 8 / 8)


def _mi300x_odd_nodes(gpus_per_node: int, nodes: int):
    # MI300X nodes of an odd number of GPUs on their xGMI mesh (an odd part of the 8-GPU platform)
    return mi300x_nodes(nodes).with_changes(**{"gpus_per_node": gpus_per_node})


def test_odd_mesh_ring_channels_put_two_channels_on_the_odd_offset_links():
    # 2 nodes x 7 MI300X: the zigzag's steps +1, -2, +3, -4, +5, -6 are 1, 5, 3, 3, 5, 1 mod 7, so each
    # link e -> e + 1, 3, 5 carries 2 of the 7 channels and e -> e + 2, 4, 6 none (Z_7 has no sequencing,
    # Gordon 1961). Before, every channel went round in increasing order: 6 channels on each e -> e + 1.
    s = 2.0**30
    (stage,) = _plan(ring_plan, Collective.ALL_GATHER, s, _mi300x_odd_nodes(7, 2), np.arange(14))
    loads = _pair_bytes(stage, 7)
    hop = s / 14 / 7  # one channel's share of a rank's S/n
    assert {(d - s_) % 7 for s_, d in loads} == {1, 3, 5}
    assert len(loads) == 21 and max(loads.values()) == pytest.approx(2 * 2 * hop)  # x 2 nodes


def test_odd_mesh_ring_time_in_the_links_engine():
    # 2 x 7 MI300X all_gather of 1 GB, ring: 13 steps, the busiest xGMI link carries 2 channels of
    # 1e9 / 14 / 7 bytes at 48 GB/s usable (catalogue infinity-fabric-mi300): 13 x 2 x 1e9 / 98 / 48e9 =
    # 5.527 ms plus latency (before: 6 channels, 16.58 ms plus latency). The formula engine credits all 6
    # links (2.83 ms): README, "Where the engines agree, and where they differ".
    spec = _mi300x_odd_nodes(7, 2)
    r = collective_time("all_gather", 1e9, spec, algorithm="ring", engine="links")
    assert r.time_s - r.latency_s == pytest.approx(13 * 2 * 1e9 / 98 / 48e9, rel=1e-3)


def _one_board(accelerator: str, link: str):
    """One 4-GPU board meshed over ``link`` (a catalogue full_mesh entry), no scale-out."""
    return one_node(accelerator, 4, {"kind": "nvswitch", "link": link})


def test_gb200_nvl4_ring_plan_follows_nccls_rings():
    # one GB200 NVL4 board under NCCL: the 16 channels of its ring search (catalog/nccl_mesh.py), 1/16 of
    # each step each; 0-1-2-3 and its reverse twice per 8, the other 4 directed cycles once: the 8 pairs of
    # the 0-1-2-3 cycle carry 6/16 of a step, the diagonals 4/16
    s = 2.0**30
    (stage,) = _plan(
        ring_plan, Collective.ALL_REDUCE, s, _one_board("gb200", "nvlink5-gb200-nvl4"), np.arange(4)
    )
    loads = _pair_bytes(stage, 4)
    step = s / 4
    assert sorted(round(b / step * 16) for b in loads.values()) == [4] * 4 + [6] * 8
    assert loads[(0, 2)] == pytest.approx(step * 4 / 16)


@pytest.mark.parametrize(
    ("version", "cycle", "diagonal", "busbw"), [("2.24.3", 8, 0, 481.2e9), ("2.25.1", 6, 4, 641.6e9)]
)
def test_gb200_nvl4_ring_plan_searches_with_the_formulas_release(version, cycle, diagonal, busbw):
    # the plan reads the rings of the release the formula engine prices with, so the two cannot diverge
    # where releases' tables differ. NCCL 2.24.3 has no Blackwell row (first in v2.25.1, nccl_releases.yaml)
    # and searches the GB200 NVL4 on Hopper's speeds: 16 x 30 GB/s, 0-1-2-3 and its reverse 8 times each,
    # so each pair of that cycle carries 8/16 of a step and the diagonals none (240.6 x 16/8 = 481.2 GB/s);
    # 2.25.1 on: 16 x 40, 6/16 and 4/16 (240.6 x 16/6 = 641.6 GB/s)
    spec, s = _one_board("gb200", "nvlink5-gb200-nvl4"), 2.0**30
    tm = tier_model(spec, nccl_version=version)
    (stage,) = ring_plan(Collective.ALL_REDUCE, s, spec, np.arange(4), tm)
    sixteenths = {pair: round(b / (s / 4) * 16) for pair, b in _pair_bytes(stage, 4).items()}
    assert sixteenths[(0, 1)] == sixteenths[(1, 0)] == cycle
    assert sixteenths.get((0, 2), 0) == sixteenths.get((1, 3), 0) == diagonal
    assert mesh_ring_bytes_per_s(tm, 4) == pytest.approx(busbw, rel=1e-4)


@pytest.mark.parametrize(
    ("accelerator", "link", "busbw"),
    [("gb200", "nvlink5-gb200-nvl4", 634.3e9), ("v100-sxm2-32gb", "nvlink2-quad-mesh", 119.7e9)],
)
def test_engines_agree_on_a_board_meshed_without_a_switch(accelerator, link, busbw):
    # 1 GiB ring all_reduce over the 4 GPUs: the formula's busiest-pair rate (GB200 NVL4 240.6 x 16/6 =
    # 641.6 GB/s; V100 every pair evenly, 120) and the links and flow engines on NCCL's own rings agree;
    # busbw after the latency and protocol terms (test_cases_public_node7.py)
    spec = _one_board(accelerator, link)
    for engine in ("formula", "links", "flow"):
        r = collective_time("all_reduce", 2**30, spec, engine=engine, algorithm="ring")
        assert r.busbw_bytes_per_s == pytest.approx(busbw, rel=0.01), engine


def test_an_amd_mesh_builds_rccl_rings_whichever_release_prices_it():
    # 8 x MI300X (xGMI full mesh): RCCL builds its own rings (its topology models, not NCCL's search.cc), so
    # the ring graph must not run NCCL's mesh search when no RCCL release is named and NCCL's newest tables
    # price the call. RCCL 2.26.6's graph, 14 channels on one node (test_rccl_releases), holds for both.
    spec = mi300x_node()
    default, named = tier_model(spec), tier_model(spec, nccl_version="2.26.6")
    assert default.release.library == "nccl" and named.release.library == "rccl"
    assert mesh_rings(default, 8) is None and mesh_rings(named, 8) is None
    assert default.graph_channels[0] == named.graph_channels[0] == 14
