"""A full-mesh scale-up is not a switch (issue 8, fix8a item 1).

AMD MI300X platform: 8 GPUs, each with 7 xGMI links, one to each peer (catalogue ``infinity-fabric-mi300``,
``topology: full_mesh``), 48 GB/s usable per link per direction. A subset of k GPUs has k - 1 links per GPU
to the others: a ring runs k - 1 link-disjoint directed rings, a transfer between two GPUs one link.
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.clusters import mi300x_node

from aifabric.catalog.loader import scaleup
from aifabric.cluster.presets import preset
from aifabric.collectives.communicator import Communicator
from aifabric.collectives.tiers import scaleup_bytes_per_s, tier_model
from aifabric.engines.formula import formula_collective

GIB = 2**30
LINK = 48e9  # usable per xGMI link per direction (catalog/data/scaleup.yaml, AMD ROCm xGMI blog)


def _run(collective: str, ranks: int, size: float = 4 * GIB):
    spec = mi300x_node()
    return formula_collective(collective, size, spec, Communicator.from_gpus(spec, list(range(ranks))))


def test_catalogue_says_which_scaleup_is_a_mesh():
    assert scaleup("infinity-fabric-mi300").topology == "full_mesh"
    assert scaleup("infinity-fabric-mi355").topology == "full_mesh"
    assert scaleup("nvlink4").topology == "switch"


def test_two_gpus_of_the_mesh_share_one_link():
    # send_recv of 4 GiB between 2 MI300X: one xGMI link, 48 GB/s (was 335.7 GB/s: all 7 links).
    p2p = _run("send_recv", 2)
    assert p2p.busbw_bytes_per_s <= LINK
    assert p2p.busbw_bytes_per_s == pytest.approx(LINK, rel=0.01)
    # all_reduce over 2: one ring over the one link, busbw <= 1 x 48 GB/s
    ar = _run("all_reduce", 2)
    assert ar.busbw_bytes_per_s == pytest.approx(LINK, rel=0.01)


@pytest.mark.parametrize("ranks", [2, 3, 4, 8])
def test_ring_over_k_gpus_runs_on_k_minus_1_links(ranks):
    # k GPUs of the mesh: k - 1 directed rings, one link per hop each: busbw = (k - 1) x 48 GB/s,
    # 2: 48, 3: 96, 4: 144, 8: 336 GB/s (8 ranks as before: case 31 asserts it against rccl-tests),
    # less the latency at 4 GiB (< 1 %).
    r = _run("all_reduce", ranks)
    assert r.busbw_bytes_per_s <= (ranks - 1) * LINK
    assert r.busbw_bytes_per_s == pytest.approx((ranks - 1) * LINK, rel=0.01)


def test_all_to_all_over_the_mesh_uses_one_link_per_peer():
    # 4 GPUs: each sends 3/4 S to 3 peers, S/4 per link at 48 GB/s: T = 1 GiB / 48 GB/s = 22.4 ms.
    r = _run("all_to_all", 4)
    assert r.time_s == pytest.approx(GIB / LINK, rel=0.01)


def test_a_switch_gives_two_gpus_its_whole_bandwidth():
    # 2 x H100 on NVSwitch: send_recv at the GPU's NCCL NVLink bandwidth, 18 x 20.6 = 370.8 GB/s.
    spec = preset("h100-ib-2node", nodes=1)
    r = formula_collective("send_recv", 4 * GIB, spec, Communicator.from_gpus(spec, [0, 1]))
    assert r.busbw_bytes_per_s == pytest.approx(370.8e9, rel=0.01)


@settings(derandomize=True, max_examples=30, deadline=None)
@given(st.integers(2, 8), st.sampled_from(["all_reduce", "all_gather", "reduce_scatter", "broadcast"]))
def test_mesh_bounds_and_more_ranks_more_links(ranks, collective):
    # busbw over k ranks of the mesh never exceeds their k - 1 links, and a larger subset never has less
    # scale-up per GPU.
    tm = tier_model(mi300x_node())
    assert scaleup_bytes_per_s(tm, ranks) == pytest.approx((ranks - 1) * LINK)
    assert scaleup_bytes_per_s(tm, ranks) >= scaleup_bytes_per_s(tm, ranks - 1)
    r = _run(collective, ranks, GIB)
    assert r.busbw_bytes_per_s <= (ranks - 1) * LINK * (1 + 1e-9)
