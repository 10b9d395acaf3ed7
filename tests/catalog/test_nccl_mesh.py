"""NCCL's ring search on a switchless NVLink mesh (catalog/nccl_mesh.py, a port of search.cc ncclTopoCompute).

The figures are the search's own, derived by hand below from search.cc's rules: the speed ladder of the
release's ``search_speeds_intra`` row, ``followPath`` taking a channel's speed off each ordered pair it
crosses, ``ncclTopoDupChannels``. The invariants hold for any mesh: no pair carries more channels than its
bandwidth allows, and a ring's share of the GPU is at most the GPU's peers.
"""

from __future__ import annotations

import numpy as np
import pytest

from aifabric.catalog.nccl import nccl_release
from aifabric.catalog.nccl_mesh import MESH_SEARCH_MAX_GPUS, mesh_ring_search, mesh_search_applies
from aifabric.errors import ConfigError

R2307 = nccl_release("2.30.7")


def test_v100_quad_rings_cross_every_pair_twice() -> None:
    # 4 x V100, 2 NVLink 2 links a pair: 2 x SM70_NVLINK_BW 20 = 40 GB/s. At 40 and 30 the search finds 2
    # rings (one order each way); at 20 the 6 directed rings of 4 GPUs, each once: 6 x 20 = 120 GB/s, the
    # GPU's 3 x 40, optimal; 20 < 25 GB/s: no duplication
    rings = mesh_ring_search(R2307, "volta", 4, 40.0)
    assert (rings.channels, rings.channel_gbps) == (6, 20.0)
    loads = rings.pair_loads()
    assert (loads[~np.eye(4, dtype=bool)] == 2).all()
    assert rings.ring_share() == 3.0


def test_gb200_nvl4_rings_load_two_orders_more_than_the_diagonals() -> None:
    # 4 x GB200, 6 NVLink 5 links a pair: 6 x 40.1 = 240.6 GB/s. At 90: 6 rings (540); at 80 a pair takes 3
    # channels (240 <= 240.6) and the search keeps 8 rings (640): 0-1-2-3 and its reverse twice each (the
    # PCI order, then the replay of the last order), the 4 other directed cycles once, so the 8 pairs of
    # the 0-1-2-3 cycle carry 3 channels, the 4 diagonals 2, and any 9th ring needs a full pair. Pass 1 stops
    # above 40 (40 / 80 <= 0.49), 8 x 80 is doubled to 16 x 40, and pass 2 at 45 runs out of its 2^14 steps
    rings = mesh_ring_search(R2307, "blackwell", 4, 240.6)
    assert (rings.channels, rings.channel_gbps) == (16, 40.0)
    loads = rings.pair_loads()
    assert sorted(loads[~np.eye(4, dtype=bool)].tolist()) == [4] * 4 + [6] * 8
    assert rings.ring_share() == pytest.approx(16 / 6)


@pytest.mark.parametrize(
    ("arch", "gpus", "pair_gbps"),
    [
        ("volta", 4, 40.0),
        ("hopper", 4, 123.6),
        ("blackwell", 4, 240.6),
        ("blackwell", 3, 240.6),
        ("blackwell", 2, 240.6),
    ],
)
def test_no_pair_carries_more_than_its_bandwidth(arch: str, gpus: int, pair_gbps: float) -> None:
    # search.cc followPath refuses a channel on a pair with less than its speed left; ncclTopoDupChannels
    # halves the speed of the doubled channels, so the product is unchanged
    rings = mesh_ring_search(R2307, arch, gpus, pair_gbps)
    assert rings.pair_loads().max() * rings.channel_gbps <= pair_gbps + 1e-9
    assert 1.0 <= rings.ring_share() <= gpus - 1
    assert all(sorted(r) == list(range(gpus)) for r in rings.rings)


def test_two_gpus_ring_over_their_one_pair() -> None:
    # a ring of 2 crosses i -> j and j -> i once per channel: the pair's bandwidth, C / k_max = 1
    assert mesh_ring_search(R2307, "blackwell", 2, 240.6).ring_share() == 1.0


def test_refuses_a_mesh_it_does_not_search() -> None:
    with pytest.raises(ConfigError, match="mesh: a ring search over 2-8 GPUs"):
        mesh_ring_search(R2307, "hopper", 9, 20.6)


def test_a_pair_under_the_slowest_speed_falls_back_to_one_ring_in_gpu_order() -> None:
    # search.cc ncclTopoCompute: a search that finds no graph ("Could not find a path ... falling back to
    # simple order") leaves one channel, the GPUs in order, at bwIntra 0.1. 10 GB/s a pair is under the
    # Blackwell ladder's slowest 18 GB/s, so no ring fits: one ring crossing each of its pairs once
    rings = mesh_ring_search(R2307, "blackwell", 4, 10.0)
    assert (rings.rings, rings.channel_gbps) == (((0, 1, 2, 3),), 0.1)
    assert rings.ring_share() == 1.0


@pytest.mark.parametrize("pair_gbps", [0.0, -1.0, float("nan"), float("inf")])
def test_refuses_a_pair_bandwidth_that_is_not_positive_and_finite(pair_gbps: float) -> None:
    with pytest.raises(ConfigError, match="positive, finite pair bandwidth"):
        mesh_ring_search(R2307, "blackwell", 4, pair_gbps)


def test_the_search_applies_to_nccl_meshes_of_2_to_8_gpus():
    # one predicate for the formula engine's tiers, its ring graph and the links/flow plans: a full mesh
    # under NCCL of 2 to 8 GPUs (8 x MI300X, 7 xGMI links a GPU, the largest switchless mesh) and a link
    assert MESH_SEARCH_MAX_GPUS == 8
    assert mesh_search_applies("nccl", 3, 4, 240.6) and mesh_search_applies("nccl", 7, 8, 48.0)
    assert not mesh_search_applies("nccl", 7, 9, 48.0)  # beyond any switchless mesh
    assert not mesh_search_applies("rccl", 7, 8, 48.0)  # RCCL's xGMI rings follow its own models
    assert not mesh_search_applies("nccl", 0, 8, 48.0)  # a switch
    assert not mesh_search_applies("nccl", 3, 1, 240.6)  # one rank
    assert not mesh_search_applies("nccl", 3, 4, 0.0)
