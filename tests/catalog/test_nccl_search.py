"""The ring graph NCCL's topology search finds, and the communicator's channels that follow.

Speeds and duplication rules: NVIDIA/nccl ``src/graph/search.cc`` at each release tag (speedArray*,
ncclTopoDupChannels), recorded in ``nccl_releases.yaml``; the counts are checked against NCCL INFO lines.
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aifabric import catalog
from aifabric.catalog.nccl import (
    comm_channels,
    nccl_release,
    nccl_release_versions,
    nvls_search,
    nvls_tuner_algbw,
    search_channels,
    socket_ring_search,
)
from aifabric.errors import ConfigError


@pytest.mark.parametrize("version", ["2.18.3", "2.21.5", "2.30.3"])
def test_one_node_h100_and_a100_have_24_channels(version):
    # 8 x H100 (18 x 20.6 = 370.8 GB/s NVLink): 60 GB/s x 6 channels (360 < 370.8, no faster fit), doubled to
    # 12 x 30, connect.cc x 2 = 24. NCCL INFO on p5.48xlarge: "24 coll channels, 16 nvls channels".
    # 8 x A100 (12 x 20 = 240 GB/s): 40 x 6 = 240 is optimal, doubled to 12 x 20, x 2 = 24 ("24 coll channels"
    # on an A100 SXM4 node).
    r = nccl_release(version)
    for arch, gbps in (("hopper", 370.8), ("ampere", 240.0)):
        n, s = search_channels(r, arch, gpu_gbps=gbps)
        assert (n, s) == (12, pytest.approx(gbps / 12 if arch == "ampere" else 30.0))
        assert comm_channels(r, arch, search_channels=n, nnodes=1, ring_bw_intra_gbps=s) == 24


def test_pcie_gpu_searches_one_channel():
    # V100 PCIe Gen3 through the CPU (10 GB/s): the first speed at or below 10 is 10 -> one channel, not
    # doubled (10 < 25), 2 communicator channels.
    r = nccl_release("2.21")
    assert search_channels(r, "volta", gpu_gbps=10.0) == (1, 10.0)


def test_two_h100_nodes_are_bounded_by_their_nics():
    # 8 x 400G NICs (50 GB/s each) per node: 48 GB/s fits 7 channels on 370.8 GB/s of NVLink (336), 45 fits
    # 8 (360, the best; 42, 40, 30 and 24 do no better, 22 / 45 < 0.49 stops): 8 x 45, kept (45 < 50 with
    # more than 4 channels), connect.cc x 2 = 16, not doubled again (45 is not > 45).
    r = nccl_release("2.30")
    n, s = search_channels(r, "hopper", gpu_gbps=370.8, nnodes=2, nics_per_node=8, nic_gbps=50.0)
    assert (n, s) == (8, 45.0)
    assert comm_channels(r, "hopper", search_channels=n, nnodes=2, ring_bw_intra_gbps=s) == 16


def test_2_18_1_duplicates_hopper_only_from_50_gbps():
    # A Hopper GPU with 160 GB/s: 60 x 2 = 120, (2.30: 50 x 3 = 150), 40 x 4 = 160 optimal. 2.18.1
    # ncclTopoDupChannels doubles Hopper only at bw >= 50: 4 x 40 stays. 2.30 doubles at bw >= 25 unless
    # (bw < 50 and more than 4 channels): 4 channels -> 8 x 20.
    assert search_channels(nccl_release("2.18.1"), "hopper", gpu_gbps=160.0) == (4, 40.0)
    assert search_channels(nccl_release("2.30"), "hopper", gpu_gbps=160.0) == (8, 20.0)


def test_search_refuses_bad_input():
    with pytest.raises(ConfigError, match="gpu_gbps"):
        search_channels(nccl_release(), "hopper", gpu_gbps=0.0)
    with pytest.raises(ConfigError, match="nics"):
        search_channels(nccl_release(), "hopper", gpu_gbps=370.8, nnodes=2)


@settings(derandomize=True, max_examples=80, deadline=None)
@given(
    version=st.sampled_from(nccl_release_versions()),
    arch=st.sampled_from(["volta", "ampere", "hopper", "blackwell"]),
    gbps=st.floats(min_value=1.0, max_value=2000.0),
)
def test_search_channels_fit_the_links(version, arch, gbps):
    # Invariants: at least one channel, at most MAXCHANNELS / 2, and the searched channels never carry
    # more than the GPU's links (n x s <= bandwidth) unless one channel at the slowest speed is all there is.
    r = nccl_release(version)
    n, s = search_channels(r, arch, gpu_gbps=gbps)
    assert 1 <= n <= r.max_channels // 2
    assert n * s <= gbps + 1e-9 or n == 1


@pytest.mark.parametrize(("gpus", "graph"), [(8, (8, 40.0)), (6, (6, 50.0)), (4, (4, 60.0)), (2, (2, 60.0))])
def test_one_node_nvls_graph_books_two_speeds_on_the_head(gpus, graph):
    # search.cc ncclTopoSearchTryNvls (2.29.2): per channel 2 x speed on the head's NVSwitch link, 1 x on
    # every other GPU's; one channel per head (minChannels = maxChannels = nGPUs on one node), so a head's
    # 370.8 GB/s link carries (h + 1) x speed: 9 x 40 = 360 (50 would need 450), 7 x 50 = 350, 5 x 60 = 300
    # (60 is sm90SpeedArrayIntra's first speed).
    assert nvls_search(nccl_release("2.29.2"), "hopper", gpu_gbps=370.8, local_gpus=gpus) == graph


def test_nvls_tuner_price_follows_each_release_formula():
    # tuning.cc 2.28.3 on: nChannels x bwIntra x nvlsEfficiency x (nChannels - 1)/nChannels x 2 (AllReduce)
    # x nRanks / nsteps; 8 x H100: 8 x 40 x 0.85 x 7/8 x 2 x 8/14 = 272.0, 4 of them 4 x 60 x 0.85 x 3/4 x 2
    # x 4/6 = 204.0. 2.19-2.27: ratio 5/6 on nChannels x bwIntra (8 x 40 x 5/6 = 266.7); 2.18.1: .75 (240.0).
    def price(version: str, gpus: int) -> float:
        return nvls_tuner_algbw(nccl_release(version), "hopper", gpu_gbps=370.8, local_gpus=gpus)

    assert price("2.29.2", 8) == pytest.approx(272.0)
    assert price("2.29.2", 4) == pytest.approx(204.0)
    assert price("2.27.3", 8) == pytest.approx(8 * 40 * 5 / 6)
    assert price("2.18.1", 8) == pytest.approx(240.0)


@pytest.mark.parametrize(
    ("arch", "cpu", "found"),
    [
        # AMD_BW 16 (topo.h) below Blackwell's slowest speed 18 (sm100SpeedArrayIntra): no ring fits, NCCL
        # falls back to one channel in GPU order
        ("blackwell", "amd-epyc", None),
        # sm90SpeedArrayIntra ... 20, 15, 12, 11, 6: 15 fits once; 12 and 11 fit once (1 x 12 < 15); 6 / 15
        # = 0.4 ends the walk (search.cc: next speed / best > .49)
        ("hopper", "amd-epyc", (1, 15.0)),
        # SRP_QPI_BW 22: 1 x 20, then 2 x 11 = 22 beats it (11 / 20 = 0.55 > .49)
        ("hopper", "intel-sapphire-rapids", (2, 11.0)),
        ("blackwell", "intel-sapphire-rapids", (1, 20.0)),
        # SKL_QPI_BW 10 on speedArrayIntra (... 12, 10, 9 ...): 1 x 10 fills the link
        ("ampere", "intel-skylake", (1, 10.0)),
        # ERP_QPI_BW 40: 1 x 40 fills it, then ncclTopoDupChannels doubles it (40 >= 25): 2 x 20
        ("blackwell", "intel-emerald-rapids", (2, 20.0)),
    ],
)
def test_ring_across_two_sockets_is_bounded_by_nccl_inter_cpu_link(arch, cpu, found):
    # search.cc followPath books every channel's speed on the one LINK_SYS each way between the two CPU
    # nodes (topo.cc ncclTopoConnectCpus at ncclTopoGetInterCpuBw's figure); the GPUs' PCIe Gen5 48 GB/s
    # is not what binds
    sys_gbps = catalog.cpu(cpu).inter_socket_nccl_bytes_per_s / 1e9
    assert socket_ring_search(nccl_release("2.29.7"), arch, sys_gbps=sys_gbps, gpu_gbps=48.0) == found


def test_socket_search_refuses_a_non_positive_link():
    with pytest.raises(ConfigError, match="sys_gbps"):
        socket_ring_search(nccl_release(), "hopper", sys_gbps=0.0, gpu_gbps=48.0)
