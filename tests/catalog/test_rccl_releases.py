"""RCCL's release tables (catalogue rccl_releases.yaml), read from ROCm/rccl at each tag.

Figures: ``git show rocm-6.2.0:src/graph/tuning.cc`` (the same at rocm-6.1.0): ``baseLat`` lines 57-60
(Tree and Ring ``{12.0, 12.0, 17.0}``), ``tuning_model_5`` (the 8 x gfx942 xGMI platform models of
rome_models.cc, ``tuning=5``) ``hwLat`` lines 224-231 (NVLINK/xGMI Ring ``{0.8, 0.0, 3.6}``, NET Tree
``{12.5, 0.0, 22.4}``), LL128 on by default only for gfx90a (lines 512-517); makefiles/version: RCCL
rocm-6.1.0 is NCCL 2.18.6, rocm-6.2.0 NCCL 2.20.5.
"""

from __future__ import annotations

import pytest
from tests.clusters import mi300x_node, mi300x_nodes

from aifabric.catalog.nccl import Algorithm, nccl_release, search_channels
from aifabric.catalog.rccl import rccl_release, rccl_release_versions
from aifabric.collectives.tiers import Protocol, p2p_latency_s, tier_model
from aifabric.engines.formula import formula_collective
from aifabric.errors import ConfigError


def test_rccl_release_has_rccls_own_latencies() -> None:
    rel = rccl_release("2.20.5")
    assert (rel.library, rel.tag) == ("rccl", "rocm-6.2.0")
    assert rel.base_latency_us[Algorithm.RING] == (12.0, 12.0, 17.0)
    assert rel.base_latency_us[Algorithm.TREE] == (12.0, 12.0, 17.0)
    assert rel.hw_latency_us["nvlink"][Algorithm.RING] == (0.8, 0.0, 3.6)
    assert rel.hw_latency_us["net"][Algorithm.TREE] == (12.5, 0.0, 22.4)
    assert rel.ll128_archs == ("cdna2",)


def test_rccl_keeps_the_nccl_tables_it_does_not_replace() -> None:
    # RCCL 2.20.5 is built on NCCL 2.20.5: channels and bandwidth caps are NCCL's (search speeds are not:
    # test_rccl_searches_rings_with_its_own_speeds)
    rel, base = rccl_release("2.20.5"), nccl_release("2.20.5")
    assert rel.per_channel_max_tree_bw == base.per_channel_max_tree_bw
    assert rel.max_channels == base.max_channels
    assert base.library == "nccl"
    assert base.ll128_archs is None


def test_rccl_versions_map_like_nccls() -> None:
    assert rccl_release_versions() == ["2.18.6", "2.20.5", "2.21.5", "2.26.6"]
    assert rccl_release("2.19.3").tag == "rocm-6.1.0"
    assert rccl_release().version == "2.26.6"
    # RCCL 2.22.3 (ROCm 6.4) is not read: the release below it runs, as 2.19.3 runs 2.18.6's
    assert rccl_release("2.22.3").version == "2.21.5"
    with pytest.raises(ConfigError, match="rccl version: '2.27.7' is newer"):
        rccl_release("2.27.7")
    with pytest.raises(ConfigError, match="rccl version: '2.17.1' is older"):
        rccl_release("2.17.1")


@pytest.mark.parametrize(
    ("version", "library"),
    [("2.20.5", "rccl"), ("2.18.6", "rccl"), ("2.26.6", "rccl"), (None, "nccl"), ("2.28.3", "nccl")],
)
def test_a_stated_rccl_version_selects_rccls_tables(version: str | None, library: str) -> None:
    # a stated RCCL version of a recorded series (2.18-2.26) runs RCCL's tables; none stated, or a series
    # not read yet (RCCL 2.28.3, rccl-tests "RCCL version : 2.28.3"), NCCL's tables of that version
    assert tier_model(mi300x_node(), nccl_version=version).release.library == library


def test_rccl_ring_latency_is_its_base_plus_xgmi_steps() -> None:
    # tuning.cc: latency = baseLat[Ring][LL] + 2 (n - 1) hwLat[xGMI][Ring][LL] = 12 + 14 x 0.8 = 23.2 us on
    # 8 x MI300X; 8 B adds under 0.1 us of transfer
    r = formula_collective("all_reduce", 8, mi300x_node(), nccl_version="2.20.5")
    assert (r.algorithm, r.protocol) == ("ring", "LL")
    assert r.time_s == pytest.approx(23.2e-6, rel=0.01)


def test_rccl_runs_no_ll128_on_gfx942_unless_stated() -> None:
    spec = mi300x_node()
    assert not tier_model(spec, nccl_version="2.20.5").ll128_default
    assert tier_model(spec).ll128_default  # NCCL's tables: LL128 on NVLink-class paths
    for size in (64 * 2**10, 2**20, 8 * 2**20, 64 * 2**20):
        assert formula_collective("all_reduce", size, spec, nccl_version="2.20.5").protocol != "LL128"
    stated = formula_collective(
        "all_reduce", 8 * 2**20, spec, nccl_version="2.20.5", env={"NCCL_PROTO": "LL128"}
    )
    assert stated.protocol == "LL128"


#: ROCm/rccl rocm-6.2.0 src/graph/search.cc:889-891 (rocm-6.1.0: 843-845), the HIP branch:
#: ``speedArrayIntra[] = speedArrayInter[] = { 48.0, 24.0, 20.0, ..., 0.12 }``, used whatever the compute
#: capability (ncclTopoCompute, 6.2.0 lines 997-1004: no sm90SpeedArray on HIP).
_RCCL_SPEEDS = (48.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.4, 1.2, 0.24, 0.12)


@pytest.mark.parametrize("version", ["2.18.6", "2.20.5"])
def test_rccl_searches_rings_with_its_own_speeds(version: str) -> None:
    rel, base = rccl_release(version), nccl_release(version)
    for row in ("volta", "ampere", "hopper"):
        assert rel.search_speeds_intra[row] == rel.search_speeds_inter[row] == _RCCL_SPEEDS
    assert base.search_speeds_intra["hopper"][0] == 60.0  # NCCL's sm90SpeedArrayIntra starts at 60 GB/s


def test_mi300x_ring_graph_is_rccls_search_not_nccls() -> None:
    # 8 x MI300X, 7 xGMI links x 48 GB/s = 336 GB/s per GPU (tests.clusters.mi300x_node): RCCL's first speed,
    # 48 GB/s, fills it with 7 channels (7 x 48 = 336: optimal, search ends); ncclTopoDupChannels keeps 7
    # (ccMin 94 > 80, bwIntra 48 < 50, 7 > 4 channels: search.cc:877-878); connect.cc doubles them: 14.
    # NCCL 2.20's own Hopper speeds would give 14 x 24 GB/s (28 communicator channels).
    rccl = tier_model(mi300x_node(), nccl_version="2.20.5")
    assert rccl.graph_channels[0] == 7 and rccl.channels[0] == 14
    assert search_channels(nccl_release("2.20.5"), "hopper", gpu_gbps=336.0) == (14, 24.0)
    assert search_channels(rccl_release("2.20.5"), "hopper", gpu_gbps=336.0) == (7, 48.0)


def test_rccl_2_21_5_tables_of_rocm_6_3() -> None:
    # ROCm/rccl release-staging/rocm-rel-6.3 (99b8561, CHANGELOG "RCCL 2.21.5 for ROCm 6.3.0"):
    # tuning.cc:224-231 tuning_model_5 hwLat xGMI Tree {0.9, 0.0, 2.3}, Ring {0.8, 0.0, 2.1}; NET Tree
    # {10.5, 0.0, 25.0}, Ring {9.5, 0.0, 320.0}; baseLat unchanged; LL128 still gfx90a only (lines 511-517)
    rel = rccl_release("2.21.5")
    assert rel.tag == "release-staging/rocm-rel-6.3"
    assert rel.base_latency_us[Algorithm.RING] == (12.0, 12.0, 17.0)
    assert rel.hw_latency_us["nvlink"][Algorithm.TREE] == (0.9, 0.0, 2.3)
    assert rel.hw_latency_us["nvlink"][Algorithm.RING] == (0.8, 0.0, 2.1)
    assert rel.hw_latency_us["net"][Algorithm.TREE] == (10.5, 0.0, 25.0)
    assert rel.hw_latency_us["net"][Algorithm.RING] == (9.5, 0.0, 320.0)
    assert rel.ll128_archs == ("cdna2",)
    assert rel.per_channel_max_tree_bw == nccl_release("2.21.5").per_channel_max_tree_bw


def test_rccl_2_21_5_ring_latency_on_xgmi() -> None:
    # 8 x MI300X, 8 B, one process per GPU, MSCCL's smallest kernel needs count % 256 == 0 (8 B: 2
    # floats), so the ring runs: baseLat 12 + 2 (n - 1) x 0.8 = 23.2 us, as in 2.20.5 (LL's xGMI hop
    # is unchanged; Simple's fell 3.6 -> 2.1)
    r = formula_collective("all_reduce", 8, mi300x_node(), nccl_version="2.21.5")
    assert (r.algorithm, r.protocol) == ("ring", "LL")
    assert r.time_s == pytest.approx(23.2e-6, rel=0.01)


def test_rccl_2_26_6_tables_of_rocm_7_0() -> None:
    # ROCm/rccl 9e22c79 tuning.cc tuning_model_5 (= tuning_model_6, gfx950) hwLat: xGMI Tree {0.9, 0.9, 2.3},
    # Ring {0.8, 0.8, 2.1}; NET Tree {10.5, 10.5, 25.0}, Ring {9.5, 9.5, 320.0}; LL128 needs the model's
    # ll128Enabled, which only the gfx90a model sets (rome_models.cc cb829d6); search.cc 72bc13c: the gfx9
    # GPUs (compute capability >= 90) search NCCL's sm90 speeds
    rel = rccl_release("2.26.6")
    assert rel.hw_latency_us["nvlink"][Algorithm.RING] == (0.8, 0.8, 2.1)
    assert rel.hw_latency_us["net"][Algorithm.TREE] == (10.5, 10.5, 25.0)
    assert rel.hw_latency_us["net"][Algorithm.RING] == (9.5, 9.5, 320.0)
    assert rel.ll128_archs == ("cdna2",)
    assert rel.search_speeds_intra["hopper"][0] == 60
    assert not tier_model(mi300x_node(), nccl_version="2.26.6").ll128_default


def test_point_to_point_keeps_nccls_ring_figures_under_rccl_tables() -> None:
    # RCCL's tuning models feed only ncclTopoGetAlgoTime; send/recv and all-to-all are p2p tasks the tuner
    # does not time. Under RCCL 2.26.6 (built on NCCL 2.26, priced with the recorded 2.25.1) a p2p launch
    # across nodes costs NCCL's baseLat[Ring][Simple] + hwLat[NET][Ring][Simple], not RCCL's
    # tuning_model_5 320 us, which only steers its tuner off ring/Simple across nodes
    spec = mi300x_nodes(2)
    tm = tier_model(spec, nccl_version="2.26.6")
    base = nccl_release("2.26.6")
    nccl_us = base.base_latency_us[Algorithm.RING][2] + base.hw_latency_us["net"][Algorithm.RING][2]
    assert tm.release.library == "rccl" and base.version == "2.25.1"
    assert p2p_latency_s(tm, "net", Protocol.SIMPLE) == pytest.approx(nccl_us * 1e-6 * tm.latency_scale)
    assert formula_collective("alltoall", 4096, spec, nccl_version="2.26.6").time_s < 100e-6
