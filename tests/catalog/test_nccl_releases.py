"""NCCL tuning tables per release, checked against NVIDIA/nccl at the release tags (file:line cited)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aifabric.catalog.nccl import (
    Algorithm,
    Protocol,
    algorithm_for,
    channels_for,
    comm_channels,
    nccl_release,
    nccl_release_versions,
    nvls_channels,
    nvls_chunk_bytes,
    nvls_support,
    nvls_tree_kernel_bw,
    protocol_costs,
    protocol_for,
    tuning_arch,
)
from aifabric.discovery.regressions import known_regressions, regression_for
from aifabric.errors import ConfigError


def test_releases_span_2_18_to_2_30_and_resolve_between():
    versions = nccl_release_versions()
    assert versions[0] == "2.18.1" and versions[-1] == "2.30.3"
    assert nccl_release(None).version == "2.30.3"
    assert nccl_release("2.30.7").version == "2.30.3"  # v2.30.7 tables identical to v2.30.3
    assert nccl_release("2.22.3").version == "2.21.5"  # between two releases -> the earlier
    assert nccl_release("v2.26.5-1").version == "2.25.1"
    assert nccl_release("2.28").version == "2.28.9"  # a minor: its newest recorded release


def test_unknown_versions_name_the_known_ones():
    with pytest.raises(ConfigError, match=r"older than.*known: 2\.18\.1, 2\.18\.3"):
        nccl_release("2.17.1")
    with pytest.raises(ConfigError, match="not a version"):
        nccl_release("latest")


def test_v2_30_tables_hopper_and_blackwell():
    r = nccl_release("2.30.3")
    # v2.30.3 src/graph/tuning.cc:197-198 perChMaxTreeBws Hopper {38.7, 41.4, 36.0},
    # Blackwell {70.0, 42.8, 24.0}
    assert r.per_channel_max_tree_bw["hopper"] == (38.7, 41.4, 36.0)
    assert r.per_channel_max_tree_bw["blackwell"] == (70.0, 42.8, 24.0)
    # tuning.cc:204-205 perChMaxNVLSTreeBws Hopper {0, 57.7, 45.5}, Blackwell {0, 96.0, 80.0}
    assert r.per_channel_max_nvls_tree_bw is not None
    assert r.per_channel_max_nvls_tree_bw["blackwell"] == (0.0, 96.0, 80.0)
    # tuning.cc:183-184 perChMaxRingLL128Bws Hopper 36.7, Blackwell 40.0
    assert r.per_channel_max_ring_ll128_bw["blackwell"] == (40.0, 40.0, 40.0)
    # tuning.cc:176-177 llMaxBws Hopper {141, 45, 35}, Blackwell 2x Hopper
    assert r.ll_max_bw["blackwell"] == (282.0, 90.0, 70.0)
    # tuning.cc:139 nvlsEfficiency Blackwell 0.74f; :168 NET NVLSTree Simple 20.9 us
    assert r.nvls_efficiency == {"volta": 0.0, "ampere": 0.0, "hopper": 0.85, "blackwell": 0.74}
    assert r.hw_latency_us["net"][Algorithm.NVLS_TREE] == (0.0, 0.0, 20.9)
    assert r.base_latency_us[Algorithm.PAT] == (8.0, 8.0, 8.0)
    assert r.max_channels == 64


def test_v2_21_tables_have_no_blackwell_row():
    r = nccl_release("2.21.5")
    assert r.architectures == ("volta", "ampere", "hopper")
    # v2.21.5 src/graph/tuning.cc:89 llMaxBws Hopper {141.0, 45.0, 35.0}; :105 perChMaxTreeBws Hopper
    assert r.ll_max_bw["hopper"] == (141.0, 45.0, 35.0)
    assert r.per_channel_max_tree_bw["hopper"] == (38.7, 41.4, 36.0)
    # tuning.cc:69 NVLINK NVLS 25 us; :77 NET NVLSTree 14 us; :180 ring LL busBw x .5
    assert r.hw_latency_us["nvlink"][Algorithm.NVLS] == (0.0, 0.0, 25.0)
    assert r.hw_latency_us["net"][Algorithm.NVLS_TREE] == (0.0, 0.0, 14.0)
    assert r.ring_ll_bw_factor == 0.5
    assert tuning_arch(r, "blackwell") == "hopper"  # compCap >= 90 -> Hopper row before 2.25
    assert tuning_arch(nccl_release("2.30.3"), "blackwell") == "blackwell"
    # v2.19.1 tuning.cc:180: ring LL busBw x 1/4 (multi-node or all_reduce)
    assert nccl_release("2.19.1").ring_ll_bw_factor == 0.25


def test_tuning_arch_refuses_non_nvidia():
    with pytest.raises(ConfigError, match="no tuning row for 'tpu'"):
        tuning_arch(nccl_release(), "tpu")


def test_comm_channels_connect_rules():
    # v2.30.3 src/graph/connect.cc:474: multi-node Hopper+ with ring bwIntra > 45 GB/s doubles below 16
    new, old = nccl_release("2.30.3"), nccl_release("2.21.5")
    assert comm_channels(new, "hopper", search_channels=4, nnodes=2, ring_bw_intra_gbps=46) == 16
    assert comm_channels(new, "hopper", search_channels=8, nnodes=2, ring_bw_intra_gbps=46) == 16
    assert comm_channels(new, "hopper", search_channels=4, nnodes=1, ring_bw_intra_gbps=46) == 8
    # v2.21.5 connect.cc:457: only compCap == 90 doubles, so Blackwell (Hopper row there) does too
    assert comm_channels(old, "blackwell", search_channels=4, nnodes=2, ring_bw_intra_gbps=46) == 16
    assert comm_channels(new, "blackwell", search_channels=32, nnodes=1, ring_bw_intra_gbps=46) == 64
    assert comm_channels(old, "blackwell", search_channels=32, nnodes=1, ring_bw_intra_gbps=46) == 32
    assert (
        comm_channels(new, "hopper", search_channels=16, nnodes=1, ring_bw_intra_gbps=46, max_nchannels=8)
        == 8
    )
    assert (
        comm_channels(new, "hopper", search_channels=2, nnodes=1, ring_bw_intra_gbps=20, min_nchannels=24)
        == 24
    )


def test_channels_by_size_enqueue_rule():
    r = nccl_release("2.30.3")
    # v2.30.3 src/enqueue.cc:2006: drop channels while nBytes < nc x nt x threshold; Simple: 512 threads x 64
    assert channels_for(r, "all_reduce", "ring", 1 << 20, 16, "hopper", comm_channels=32) == 32
    assert channels_for(r, "all_reduce", "ring", 512 << 10, 16, "hopper", comm_channels=32) == 16
    assert channels_for(r, "all_reduce", "ring", 1024, 16, "hopper", comm_channels=32) == 1
    # ring LL threshold x nranks: 8 x 16 ranks x 512 threads = 64 KiB per channel
    assert channels_for(r, "all_reduce", "ring", 1 << 20, 16, "hopper", comm_channels=32, protocol="LL") == 16
    # NVLS channels: nvls.cc:149-151 SM90 16, SM100 32 across nodes, 24 on one node / NVL domain
    assert channels_for(r, "all_reduce", "nvls", 1024, 8, "hopper", comm_channels=32) == 16
    assert channels_for(r, "all_reduce", "nvls", 1024, 8, "blackwell", comm_channels=32) == 24
    assert nvls_channels(nccl_release("2.25.1"), "blackwell", nnodes=1, local_gpus=8, nic_gbps=50) == 32
    # 2.30 ncclNvlsTreeSm100Tuning: 2 nodes with >= 48 GB/s NICs -> 32; more nodes, 8 GPUs, >= 96 -> 24
    assert nvls_channels(r, "blackwell", nnodes=2, local_gpus=8, nic_gbps=50) == 32
    assert nvls_channels(r, "blackwell", nnodes=4, local_gpus=8, nic_gbps=100) == 24
    assert nvls_channels(r, "blackwell", nnodes=4, local_gpus=72, nic_gbps=100) == 32


def test_channels_refuses_what_the_release_does_not_cost():
    with pytest.raises(ConfigError, match="no tree all_gather"):
        channels_for(nccl_release(), "all_gather", "tree", 1 << 20, 8, "hopper", comm_channels=16)
    with pytest.raises(ConfigError, match="no pat all_gather"):  # PAT arrived in 2.23
        channels_for(nccl_release("2.21.5"), "all_gather", "pat", 1 << 20, 8, "hopper", comm_channels=16)


@settings(derandomize=True, max_examples=60, deadline=None)
@given(
    nbytes=st.integers(min_value=0, max_value=1 << 34),
    extra=st.integers(min_value=1, max_value=1 << 30),
    nch=st.integers(min_value=1, max_value=64),
    proto=st.sampled_from(["LL", "LL128", "Simple"]),
)
def test_channels_grow_with_size_and_stay_in_range(nbytes, extra, nch, proto):
    r = nccl_release()
    a = channels_for(r, "all_reduce", "ring", nbytes, 16, "hopper", comm_channels=nch, protocol=proto)
    b = channels_for(r, "all_reduce", "ring", nbytes + extra, 16, "hopper", comm_channels=nch, protocol=proto)
    assert 1 <= a <= b <= nch


def test_protocol_by_size_and_costs():
    r = nccl_release("2.30.3")
    topo = dict(nranks=16, nnodes=2, arch="hopper", channels=32, bw_intra_gbps=46.0, bw_inter_gbps=12.5)
    # with the ring plateau (Simple latency x 1.4 across nodes) LL128 still wins at 256 MiB; Simple at 1 GiB
    picks = [protocol_for(r, "all_reduce", "ring", 1 << k, **topo) for k in (10, 20, 30)]
    assert picks == [Protocol.LL, Protocol.LL128, Protocol.SIMPLE]
    assert protocol_for(r, "all_reduce", "ring", 1 << 10, allowed=["Simple"], **topo) is Protocol.SIMPLE
    costs = protocol_costs(r, "all_reduce", "ring", **topo)
    # hand derivation, ring LL, 2 nodes, Intel:
    # busBw = min(llMaxBws[Intel][N2] = 39, 32 x 46 x 0.5) = 39 GB/s;
    # algbw = 39 x 16 / 30 = 20.8 GB/s; latency = 6.6 + (30 - 2) x max(0.6, 1.0) + 2 x 2.7 = 40.0 us
    assert costs[Protocol.LL].algbw_bytes_per_s == pytest.approx(39e9 * 16 / 30)
    assert costs[Protocol.LL].latency_s == pytest.approx(40.0e-6)
    # LL128 ~ min(32 x 46 x 0.92, 32 x 36.7) = 1174.4 GB/s busbw
    assert costs[Protocol.LL128].algbw_bytes_per_s == pytest.approx(32 * 36.7e9 * 16 / 30)


def test_nvls_enablement_rules():
    r = nccl_release("2.30.3")
    one = nvls_support(r, "hopper", nnodes=1, local_gpus=8)
    assert (one.nvls, one.nvls_tree) == (True, False)  # tuning.cc: NVLS Tree disabled on a single node
    multi = nvls_support(r, "blackwell", nnodes=4, local_gpus=4)
    assert (multi.nvls, multi.nvls_tree) == (False, True)  # flat NVLS across nodes needs CollNet
    assert nvls_support(r, "hopper", nnodes=4, local_gpus=8, collnet=True).nvls
    assert not nvls_support(r, "ampere", nnodes=1, local_gpus=8).nvls
    assert not nvls_support(r, "hopper", nnodes=2, local_gpus=8, env={"NCCL_NVLS_ENABLE": "0"}).nvls_tree
    # nvls.cc: 2 GPUs per node: refused up to 2.28.7 (gpuCount <= 2), allowed from 2.28.9 (gpuCount < 2)
    assert not nvls_support(nccl_release("2.21.5"), "hopper", nnodes=1, local_gpus=2).nvls
    assert nvls_support(r, "hopper", nnodes=1, local_gpus=2).nvls


def test_small_message_latency_matches_measured_h100_ib():
    # reference nccl-cost-model.md sec. 2.6 / NVIDIA/nccl-tests #309 (case 03): 8 B AllReduce on 2 x 8 H100
    # over IB measured 24.9-25.3 us, 4 nodes 34.5-35.7 us. Hand derivation, NCCL 2.30 tables:
    # tree LL = 6.8 + 2 x ((8 - 1) x 0.6 + log2(nodes) x 5.0) = 25.2 us (2 nodes), 35.2 us (4 nodes);
    # ring LL on 2 nodes = 6.6 + (30 - 2) x max(0.6, 1.0) + 2 x 2.7 = 40.0 us, so NCCL picks tree.
    r = nccl_release("2.30.3")
    two = dict(nranks=16, nnodes=2, arch="hopper", channels=32, bw_intra_gbps=46.0, bw_inter_gbps=12.5)
    four = dict(two, nranks=32, nnodes=4)
    assert protocol_costs(r, "all_reduce", "tree", **two)[Protocol.LL].latency_s == pytest.approx(25.2e-6)
    assert protocol_costs(r, "all_reduce", "tree", **four)[Protocol.LL].latency_s == pytest.approx(35.2e-6)
    assert protocol_costs(r, "all_reduce", "ring", **two)[Protocol.LL].latency_s == pytest.approx(40.0e-6)
    assert algorithm_for(r, "all_reduce", 8, **two) == (Algorithm.TREE, Protocol.LL)
    assert algorithm_for(r, "all_reduce", 8, algorithms=["ring"], **two) == (Algorithm.RING, Protocol.LL)
    assert algorithm_for(r, "all_gather", 8, **two)[0] is Algorithm.RING  # no tree all_gather


def test_size_corrections_of_the_cost_model():
    r = nccl_release("2.30.3")
    topo = dict(nranks=16, nnodes=2, arch="hopper", channels=32, bw_intra_gbps=46.0, bw_inter_gbps=12.5)
    tree = protocol_costs(r, "all_reduce", "tree", **topo)[Protocol.LL]
    # tuning.cc treeCorrectionFactor LL[log2(4096 / 64) = 6] = 0.7: bandwidth term / 0.7
    expect = tree.latency_s + 4096 / (tree.algbw_bytes_per_s * 0.7)
    assert tree.time_s(4096) == pytest.approx(expect)
    assert tree.time_s(1 << 30) == pytest.approx(tree.latency_s + (1 << 30) / tree.algbw_bytes_per_s)
    # ring Simple all_reduce across nodes: latency x 1.4 once nbytes >= 64 x channels x nranks = 32 KiB
    ring = protocol_costs(r, "all_reduce", "ring", **topo)[Protocol.SIMPLE]
    small, big = 16 * 1024, 32 * 1024
    assert ring.time_s(small) == pytest.approx(ring.latency_s + small / ring.algbw_bytes_per_s)
    assert ring.time_s(big) == pytest.approx(1.4 * ring.latency_s + big / ring.algbw_bytes_per_s)


def test_nvls_tree_kernel_ceiling_per_release():
    # v2.28.3 src/graph/tuning.cc perChMaxNVLSTreeBws first tabulates the NVLS-tree kernel's per-channel
    # ceiling ("NVLSTree Tuning Fixes. Update tuning data for H100"); the kernel (src/device/all_reduce.h
    # RunWorkColl NVLS_TREE warp groups, enqueue.cc chunk rules) is the same from v2.21.5, so 2.21.5-2.27
    # releases run under 2.28.3's table; from 2.28.3 each release has its own. Before 2.21.5 the chunk is
    # larger (512 KiB stepSize) but the warp groups are the same lines (bcast 4, reduce 5/7, scatter and
    # gather the rest; src/collectives/device/all_reduce.h to 2.18, src/device/ from 2.19): 2.28.3's table.
    for version in ("2.18.1", "2.19.3", "2.20.3", "2.21.5", "2.26.2", "2.27.7"):
        found = nvls_tree_kernel_bw(nccl_release(version))
        assert found is not None and found[0].version == "2.28.3"
        assert found[1]["hopper"] == (0.0, 57.7, 45.5)
        assert nccl_release(version).per_channel_max_nvls_tree_bw is None  # the tuner does not know it
    newest = nccl_release()
    assert nvls_tree_kernel_bw(newest) == (newest, newest.per_channel_max_nvls_tree_bw)
    for version in nccl_release_versions():  # every named source has the table
        named = nccl_release(version).nvls_tree_kernel_bw_from
        assert named is None or nccl_release(named).per_channel_max_nvls_tree_bw is not None


def test_v2_19_3_entry_read_from_its_tag():
    # git diff v2.19.1-1 v2.19.3-1: src/graph/tuning.cc and src/graph/connect.cc unchanged; search.cc:844
    # sm90SpeedArrayInter gains 22.0; enqueue.cc:1372 computeColl NVLS_TREE
    # 'if (nNodes >= 4) chunkSize = 65536'.
    # v2.19.4-1 changes none of these files' tables (p2p scheduling and proxy fixes only).
    old, new = nccl_release("2.19.1"), nccl_release("2.19.3")
    assert new.version == "2.19.3" and new.tag == "v2.19.3-1"
    assert nccl_release("2.19.4").version == "2.19.3"
    for field in ("base_latency_us", "hw_latency_us", "ll_max_bw", "per_channel_max_tree_bw", "algorithms"):
        assert getattr(new, field) == getattr(old, field)
    assert new.channel_doubling_below == old.channel_doubling_below == 17  # connect.cc:410 2*nCh <= 32
    assert new.search_speeds_inter["hopper"][:8] == (48, 45, 42, 40, 30, 24, 22, 20)
    assert 22 not in old.search_speeds_inter["hopper"]
    assert old.nvls_tree_chunk_bytes_from_4_nodes is None and new.nvls_tree_chunk_bytes_from_4_nodes == 65536


@pytest.mark.parametrize(("version", "nodes", "chunk"), [
    ("2.19.1", 4, 524288),  # stepSize 4 MiB / 8: no node rule before 2.19.3
    ("2.19.3", 3, 524288),  # the rule starts at 4 nodes
    ("2.19.3", 4, 65536),
    ("2.19.3", 8, 65536),
])  # fmt: skip
def test_v2_19_3_nvls_tree_chunk_from_four_nodes(version: str, nodes: int, chunk: int) -> None:
    # 8 GiB on 16 channels x 8 heads: above every shrink threshold (32 x 128 x 512 KiB = 2 GiB), so the chunk
    # is the start chunk: 512 KiB, or 64 KiB from 4 nodes on 2.19.3 (enqueue.cc:1372)
    r = nccl_release(version)
    assert nvls_chunk_bytes(r, "nvls_tree", 8 * 2**30, channels=16, heads=8, nnodes=nodes) == chunk


def test_the_2_19_chunk_regression_starts_where_the_release_rule_does():
    # nccl_regressions.yaml nvlstree-chunk-2.19 is the 64 KiB chunk of enqueue.cc (NVIDIA/nccl PR #1112):
    # every affected release has the chunk rule, the release before has none, and the regression needs
    # the rule's 4 nodes ('nNodes >= 4').
    (reg,) = [r for r in known_regressions() if r.key == "nvlstree-chunk-2.19"]
    assert reg.min_nodes == 4
    for version in (reg.first, reg.last):
        assert nccl_release(version).nvls_tree_chunk_bytes_from_4_nodes == 65536
    assert nccl_release("2.19.1").nvls_tree_chunk_bytes_from_4_nodes is None
    nvls = {"ring", "tree", "nvls_tree"}
    assert regression_for("2.19.3", "all_reduce", 3, nvls) is None
    assert regression_for("2.19.3", "all_reduce", 4, nvls) is not None


@pytest.mark.parametrize(("version", "nodes", "nvls_gbps", "chunk"), [
    ("2.19.1", 2, 100.0, 131072),  # v2.19.1-1 enqueue.cc:1360: maxChunkSize = 131072, no bandwidth rule
    ("2.19.3", 1, 100.0, 131072),  # v2.19.3-1 enqueue.cc:1361: only when nNodes > 1
    ("2.19.3", 2, 100.0, 32768),  # ... and bandwidths[AllReduce][NVLS][Simple] < 150: maxChunkSize = 32768
    ("2.19.3", 2, 150.0, 131072),  # not below 150
    ("2.19.3", 2, None, 131072),  # the tuner's figure unknown: no cap
    ("2.30.3", 4, 149.0, 32768),  # v2.30.3-1 enqueue.cc:2164, the same rule over nvlsChunkSize (128 KiB)
    ("2.30.3", 4, 400.0, 131072),
])  # fmt: skip
def test_multi_node_nvls_chunk_below_150_gbps(
    version: str, nodes: int, nvls_gbps: float | None, chunk: int
) -> None:
    # 8 GiB on 16 channels x 8 heads: above every NVLS shrink threshold (64 x 128 x 128 KiB = 1 GiB), so the
    # chunk is the start chunk
    r = nccl_release(version)
    got = nvls_chunk_bytes(r, "nvls", 8 * 2**30, channels=16, heads=8, nnodes=nodes, nvls_gbps=nvls_gbps)
    assert got == chunk


def test_multi_node_nvls_chunk_rule_from_2_19_3_on() -> None:
    # every catalogued release from v2.19.3-1 carries enqueue.cc's rule (32 KiB below 150 GB/s), none before
    for version in nccl_release_versions():
        r = nccl_release(version)
        rule = (r.nvls_multi_node_chunk_bytes, r.nvls_multi_node_chunk_below_gbps)
        assert rule == ((32768, 150) if r.version_tuple >= (2, 19, 3) else (None, None)), version
