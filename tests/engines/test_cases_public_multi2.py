"""The formula engine against more public multi-node nccl-tests/rccl-tests results (blind, second set).

Machines no other test covers: MI300X over AMD Pollara 400 (AINIC) RoCE at 2 nodes, GCP A3 Mega over
GPUDirect-TCPXO, 16 DGX-2s over EDR InfiniBand, 12 A800 nodes on one HDR NIC each, A100 with one GPU per
node over HDR, GB300 trays over ConnectX-8 RoCE, DGX A100 on 8 x 100 Gb/s NICs, A100 on 4 x 200 Gb/s IB,
H100 VMs across two racks, AWS p6-b300 over EFA. Each point is one row (or one stated figure) of a public
thread whose hardware is stated; the comment gives the thread, the quoted row (size, time us, busbw GB/s)
and the model's figure. Tolerance: the blind check's bar, 15 % on busbw at >= 64 MiB and on time at small
sizes. The model runs the run's NCCL release when the thread states it and the catalogue has it, else the
newest recorded tables (said per thread). None of these threads is a calibration source of the catalogue
(the gcp-tcpxo latency comes from dstack's A3 Mega page; the A3 Mega rows here are an independent run that
checks it).
Points the model misses are in ``MISSED`` (measured, predicted, what is missing); not asserted.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.engines.test_cases_public import Point  # one public row, as the other blind checks have it

from aifabric.cluster.spec import ClusterSpec
from aifabric.collectives.communicator import Communicator
from aifabric.collectives.tiers import Protocol, tier_model, tree_graph_cap
from aifabric.engines.formula import formula_collective

MiB = 2**20
GiB = 2**30
ROCE = {"fabric": "ethernet", "switch": "spectrum-4-sn5600-400g"}


def _nodes(accelerator: str, nodes: int, scale_out: dict[str, Any], **scale_up: str) -> ClusterSpec:
    """``nodes`` x 8 ``accelerator`` on one scale-up domain each (NVSwitch, or the ``link`` given), with the
    given scale-out."""
    spec = {"accelerator": accelerator, "gpus_per_node": 8, "nodes": nodes, "name": accelerator}
    spec |= {"scale_up": {"kind": "nvswitch", **scale_up}, "scale_out": scale_out}
    return ClusterSpec.model_validate(spec)


def mi300x_ainic(nodes: int) -> ClusterSpec:
    """8 x MI300X on the xGMI mesh (catalogue link infinity-fabric-mi300) with one AMD Pensando Pollara 400
    per GPU on RoCE (ROCm/rccl #2078: "Add support for AMD AINIC", ``RCCL_AINIC_ROCE=1``, 16 ranks on
    ``-H NODE-49:8,NODE-51:8``)."""
    return _nodes("mi300x", nodes, {"nic": "amd-pollara-400", **ROCE}, link="infinity-fabric-mi300")


def gb300_trays(nodes: int) -> ClusterSpec:
    """GB300 compute trays of 4 GPUs, one 800 Gb/s ConnectX-8 per GPU on RoCE (NVIDIA/aicr #1413: "ConnectX-8
    RoCE, 8 GPUs = 4/node x 2 nodes", "NCCL IB over all 8 rocep* RoCE devices"), on 800 GbE switch ports:
    the 387 GB/s busbw measured is above what four 400 Gb/s links carry (200 GB/s), so the NICs ran at 800."""
    spec = {"accelerator": "gb300", "gpus_per_node": 4, "nodes": nodes, "name": "gb300"}
    so = {"nic": "connectx-8", **ROCE, "switch": "spectrum-4-sn5600-800g"}
    spec |= {"scale_up": {"kind": "nvswitch"}, "scale_out": so}
    return ClusterSpec.model_validate(spec)


def a100_hdr(nodes: int) -> ClusterSpec:
    """8 x A100-SXM4-80GB per node on HDR 200 Gb/s InfiniBand (NVIDIA/nccl-tests #150: "8 A100 80GB gpus",
    "an infiniband HDR network")."""
    return _nodes("a100-sxm-80gb", nodes, {"nic": "connectx-6", "switch": "quantum-qm8700"})


def a100_four_hdr(nodes: int) -> ClusterSpec:
    """8 x A100 per node with 4 x 200 Gb/s InfiniBand, one per GPU pair (NVIDIA/nccl #1048: "A100 * 8, IB
    200Gb * 4"; the reporter's "theoretical value (96 GB/s)" is 4 x 24 GB/s, NCCL's ring graph on 4
    HDR ports)."""
    return _nodes(
        "a100-sxm-80gb", nodes, {"nic": "connectx-6", "gpus_per_nic": 2, "switch": "quantum-qm8700"}
    )


def a3_mega(nodes: int) -> ClusterSpec:
    """GCP a3-megagpu-8g: 8 x H100 on NVSwitch, 8 x 200 Gb/s GPU NICs through GPUDirect-TCPXO (Google Cloud
    GPU machine types; the run's repository is named for A3 Mega: lessizzmore/create-a3mega-ztan-fork).
    ``connectx-6`` stands for a 200 Gb/s port; latency and efficiency are the ``gcp-tcpxo`` transport's."""
    return _nodes("h100-sxm", nodes, {"nic": "connectx-6", "transport": "gcp-tcpxo", **ROCE})


def dgx2(nodes: int) -> ClusterSpec:
    """NVIDIA DGX-2: 16 x V100 32 GB on NVSwitch (6 NVLink 2 links each, as the catalogue's v100-sxm2-32gb),
    8 x 100 Gb/s EDR InfiniBand, one per GPU pair (DGX-2 datasheet; NVIDIA/nccl-tests #78: "We have 16
    DGX-2s", NET/IB/GDRDMA)."""
    spec = {"accelerator": "v100-sxm2-32gb", "gpus_per_node": 16, "nodes": nodes, "name": "dgx-2"}
    scale_out = {"nic": "connectx-5", "gpus_per_nic": 2, "switch": "quantum-qm8700"}
    spec |= {"scale_up": {"kind": "nvswitch"}, "scale_out": scale_out}
    return ClusterSpec.model_validate(spec)


def a800_one_hdr(nodes: int) -> ClusterSpec:
    """8 x A800 on NVLink with one HDR 200 Gb/s InfiniBand card per node on one HDR switch (NVIDIA/nccl #412:
    "8 NVLink a800 GPU, 1 HDR 200G IB card, 1 HDR switch to connect all 12 compute nodes"). The catalogue
    has no A800 (an A100 with NVLink cut to 400 GB/s): ``a100-sxm-80gb`` stands; the check is bound by the
    one NIC, not by NVLink."""
    hdr = {"nic": "connectx-6", "gpus_per_nic": 8, "switch": "quantum-qm8700"}
    return _nodes("a100-sxm-80gb", nodes, hdr)


R2078 = "https://github.com/ROCm/rccl/pull/2078"
AICR = "https://github.com/NVIDIA/aicr/issues/1413"
NT150 = "https://github.com/NVIDIA/nccl-tests/issues/150"
A3M = "https://github.com/lessizzmore/create-a3mega-ztan-fork/blob/02dd8f455c43ced1cf442ef29334bda97149264b/ztan-NCCL-test-result"
NT78 = "https://github.com/NVIDIA/nccl-tests/issues/78"
N412 = "https://github.com/NVIDIA/nccl/issues/412"
N1048 = "https://github.com/NVIDIA/nccl/issues/1048"
MI2, A100_2, A3M_2 = mi300x_ainic(2), a100_hdr(2), a3_mega(2)
V229 = (("nccl_version", "2.29"),)
ONE_PER_NODE = Communicator.from_gpus(A100_2, [0, 8])  # one GPU per node (srun ... -g 1, 2 tasks)


def _one_per_node(size: int, time_us: float) -> Point:
    return Point(NT150, A100_2, "all_reduce", size, time_us * 1e-6, 0.0, True, (("comm", ONE_PER_NODE),))


def _a3_mega(size: int, time_us: float, busbw: float) -> Point:
    latency = size < 64 * MiB
    return Point(A3M, A3M_2, "all_reduce", size, time_us * 1e-6, busbw * 1e9, latency)


def _ainic(size: int, time_us: float, busbw: float) -> Point:
    return Point(R2078, MI2, "all_reduce", size, time_us * 1e-6, busbw * 1e9, False)


POINTS = {
    # ROCm/rccl #2078: 2 x 8 MI300X, one Pollara 400 per GPU, RCCL default algorithm, release not printed
    # (newest tables); ring/Simple over 8 x 400G per node: busbw = 8 x 50 x 0.96 (roce-v2) x NCCL's factors.
    # "2147483648 ... 11186 191.99 359.98": 377.4 (+4.8 %)
    "2078 MI300X AINIC 2 GiB": _ainic(2 * GiB, 11186, 359.98),
    # "4294967296 ... 22410 191.65 359.35": 380.7 (+5.9 %)
    "2078 MI300X AINIC 4 GiB": _ainic(4 * GiB, 22410, 359.35),
    # "8589934592 ... 44734 192.02 360.04": 382.3 (+6.2 %)
    "2078 MI300X AINIC 8 GiB": _ainic(8 * GiB, 44734, 360.04),
    # "17179869184 ... 89235 192.52 360.98": 383.2 (+6.1 %)
    "2078 MI300X AINIC 16 GiB": _ainic(16 * GiB, 89235, 360.98),
    # NVIDIA/nccl-tests #150: 2 nodes x 1 A100 over HDR (-g 1, one task per node), release not printed
    # (newest tables): ring/LL = baseLat 6.6 + 2 inter-node steps x hwLat[NET][Tree][LL] 5.0 us (one rank
    # per node, tuning.cc from 2.23.4); with the ring's own 2.7 us (before the one-rank-per-node rule) 12.0
    # us, -37 %. "32 8 float sum -1 19.16": 16.6 us (-13.3 %)
    "150 A100 one per node 32 B": _one_per_node(32, 19.16),
    # "64 16 ... 19.36": 16.6 us (-14.2 %)
    "150 A100 one per node 64 B": _one_per_node(64, 19.36),
    # lessizzmore/create-a3mega-ztan-fork: 2 x a3-megagpu-8g (16 ranks, -npernode 8), release not printed
    # (newest tables). Small sizes: tree/LL over the TCPXO hop (53.9 us, taken from dstack's A3 Mega 8 B row:
    # this run checks it). "16 4 float sum -1 123.2": 123.0 us (-0.2 %)
    "A3 Mega 16 B": _a3_mega(16, 123.2, 0.0),
    # "128 32 ... 123.0": 123.1 us (+0.1 %)
    "A3 Mega 128 B": _a3_mega(128, 123.0, 0.0),
    # "8192 2048 ... 131.6": 127.8 us (-2.9 %)
    "A3 Mega 8 KiB": _a3_mega(8192, 131.6, 0.0),
    # large sizes: NVLS-tree over 8 x 25 GB/s x 0.94 (gcp-tcpxo). "1073741824 ... 6759.0 158.86 297.86":
    # 332.5 (+11.6 %)
    "A3 Mega 1 GiB": _a3_mega(GiB, 6759.0, 297.86),
    # "2147483648 ... 12646 169.81 318.40": 342.2 (+7.5 %)
    "A3 Mega 2 GiB": _a3_mega(2 * GiB, 12646, 318.40),
    # "4294967296 ... 24361 176.31 330.58": 347.3 (+5.1 %)
    "A3 Mega 4 GiB": _a3_mega(4 * GiB, 24361, 330.58),
    # "8589934592 ... 47535 180.71 338.82": 349.9 (+3.3 %)
    "A3 Mega 8 GiB": _a3_mega(8 * GiB, 47535, 338.82),
    # NVIDIA/nccl-tests #78: 16 x DGX-2 (256 ranks, -npernode 16), NCCL 2.8.4 (older than the catalogue's
    # releases: newest tables). "2147483648 ... 54309 39.54 78.7": ring/Simple over 8 x 100G per node 88.3
    # (+12.1 %)
    "78 DGX-2 16 nodes 2 GiB": Point(NT78, dgx2(16), "all_reduce", 2 * GiB, 54309e-6, 78.7e9, False),
    # NVIDIA/nccl #412: 12 nodes x 8 A800, one HDR NIC each; the maintainer's figure for this hardware at
    # 8 GiB: "you should get ~160GB/s intra-node and 24GB/s inter-node": ring/Simple over 96 ranks bound by
    # the one 200G NIC (24.0 x NCCL's factors) 23.96 (-0.2 %)
    "412 A800 12 nodes one HDR 8 GiB": Point(N412, a800_one_hdr(12), "all_reduce", 8 * GiB, 0.0, 24e9, False),
    # NVIDIA/aicr #1413: 2 x 4 GB300 trays, 4 x ConnectX-8 RoCE each, NCCL 2.29: "Peak busbw ~ 387 GB/s (8 GB
    # messages)". NCCL's tuner runs the ring: its tree is capped at the ring graph's 8 channels x
    # perChMaxTreeBw[Blackwell][2 nodes] 42.8 = 342.4 GB/s busBw, algbw 171.2, under the ring's 8 x 48 x
    # 8/14 = 219.4 (tiers.tree_graph_cap). Ring/Simple over 4 x 800G: 391.1 (+1.0 %; tree was 579.7)
    "1413 GB300 trays 8 GiB": Point(AICR, gb300_trays(2), "all_reduce", 8 * GiB, 0.0, 387e9, False, V229),
    # NVIDIA/nccl #1048: 2 x 8 A100, 4 x HDR per node, "nccl all-reduce between two nodes only 86GB/s"
    # (release not printed: newest tables; every release from 2.18.1 caps the tree alike). NCCL's tuner
    # runs the ring: tree 4 graph channels x 23.6 = 94.4 GB/s busBw, algbw 47.2, under the ring's 4 x 24
    # x 16/30 = 51.2. Ring/Simple at 4 GiB (the reporter's -e 4G): 95.8 (+11.4 %; tree was 165.3)
    "1048 A100 four HDR 4 GiB": Point(N1048, a100_four_hdr(2), "all_reduce", 4 * GiB, 0.0, 86e9, False),
}


@pytest.mark.parametrize("key", list(POINTS))
def test_public_multi_node_point(key: str) -> None:
    assert abs(POINTS[key].relative_error()) <= 0.15


#: Public rows the model misses (measured, predicted, what is missing); not asserted.
MISSED = {
    "lessizzmore/create-a3mega-ztan-fork, 2 x A3 Mega all_reduce 1-512 MiB": (
        "time 203.2/571.9/977.6/1059.9/1261.6/1652.2/2360.9/3817.5 us at 1/8/16/32/64/128/256/512 MiB vs "
        "157.2/204.6/343.1/432.3/700.0/1057.0/1770.9/3198.8 (busbw 99.74 vs 179.7 at 64 MiB, +80 %; 263.69 "
        "vs 314.7 at 512 MiB, +19 %): the same mid-size shortfall as A3 High's TCPX rows "
        "(test_cases_public_multi MISSED) - the plugin's per-call and per-chunk costs (receive-side flow "
        "steering) have no public figure to take them from"
    ),
    "NVIDIA/nccl-tests #78, 16 x DGX-2 all_reduce 32 MiB-1 GiB (NCCL 2.8.4)": (
        "busbw 45.65/50.28/62.71/67.29/66.31/71.55 at 32/64/128/256/512 MiB/1 GiB vs 65.5/69.6/79.5/81.0/86.3"
        "/87.1 (tree, +22 to +44 %): 2.8.4 predates the catalogue's tables (2.18.1 first), whose tree and "
        "LL128 figures the model runs; the thread's own sentence is that alltoall on this system is 'fairly"
        " unstable and slow', and no log gives the tree/ring switch of that release"
    ),
    "NVIDIA/nccl #1453, 3 x 8 H100 VMs across two racks, 8 x ConnectX-7 at 200 Gb/s, NCCL 2.22.3": (
        "time 2180.1 us at 32 MiB (busbw 29.50) and 24410 us at 64 MiB (5.27) vs 446.2/839.4 (NVLS-tree, "
        "busbw 144.1/153.2): the reporter's two-node runs are 'OK' and the three-node run across racks "
        "collapses by 5x at 64 MiB - a fabric fault between the racks (ToR/spine), not a mechanism of NCCL"
    ),
    "NVIDIA/nccl #412 (same system), the reporter's sweep": (
        "'average bus bandwidth ... 15.3 GB/s on these 12 nodes' vs not modelled: an average over the "
        "sweep, on a NIC that also carries storage traffic; the maintainer: 'If the NIC is attached to the "
        "CPU getting 16 GB/s is normal' (no GPU Direct RDMA path), which the thread does not settle"
    ),
    "NVIDIA/aicr #1413 (same run), average over the 1 KiB-8 GiB sweep": (
        "'avg 134 GB/s across the 1K->8G sweep' vs not modelled: an average over a sweep, not one row"
    ),
    "NVIDIA/nccl-tests #150, 2 nodes x 1 A100 over HDR, all_reduce 8 and 16 B": (
        "time 19.90/20.67 us vs 16.6 (ring/LL, -16.6 %/-19.7 %; the 32 and 64 B rows of the same sweep are"
        " asserted): the one-rank-per-node NET latency (Tree row) is charged; ~3 us a call remain that "
        "no tuning.cc term gives (graph latencyInter is 0 on InfiniBand) and the release is not printed"
    ),
    "NVIDIA/nccl #812, 2 x DGX A100 on 8 x 100 Gb/s ('standard DGX A100 platform, each node has 8 x "
    "100Gbps NICs'), NCCL_ALGO=Ring all_reduce 8-128 B (NCCL 2.16.5)": (
        "time 93.12/93.30/92.96/93.05/93.62 us vs 40.0 (ring/LL, -57 %); with the DGX A100's AMD EPYC "
        "7742 hosts (datasheet; tuning.cc getNetOverhead 2 us per intra-node step of an inter-node ring, "
        "cpu_vendor: amd) 68.0 (-27 %). 2.16.5 predates the catalogue's releases (newest tables). A "
        "maintainer asks whether GPUDirect RDMA is on and whether the fabric is RoCE: a host-staged path "
        "(no GDR) adds a copy per step that the run's settings do not state"
    ),
    "NVIDIA/nccl #812 (same run), NCCL_ALGO=Ring plateau": (
        "busbw 60 ('you're only getting 60GB/s from Ring - that seems a little low for 8x100Gbit/s "
        "NICs') vs 95.9 (+60 %): the maintainer calls the figure low for the hardware; GDR and fabric "
        "unstated"
    ),
    "awslabs/awsome-distributed-ai #1255, 2 x p6-b300.48xlarge (8 x B300, 16 EFA per node: 4 x efa-v3 "
    "per GPU for 800 Gb/s) all_reduce 8 MiB (NCCL 2.31.2)": (
        "time 174.3 us (8 MiB / 48.13 GB/s algbw; busbw 90.24) vs 103.8 (tree/LL128, -40 %): the efa-srd "
        "transport's efficiency 0.59 and efa-v3's latency 17.7 us come from p4dn (bandwidth) and p6-b200 "
        "(8 B rows); no public figure gives SRD's per-message cost at mid sizes on EFAv4"
    ),
}


def test_a_ring_figure_on_gb300_trays_is_the_nics() -> None:
    # NVIDIA/aicr #1413: 387 GB/s busbw at 8 GiB is what 4 GPUs x 800 Gb/s reach by ring (forced ring:
    # 4 x 100 GB/s x 0.983 framing, under the NICs' 400 GB/s per tray).
    r = formula_collective("all_reduce", 8 * GiB, gb300_trays(2), env={"NCCL_ALGO": "Ring"})
    assert r.algorithm == "ring"
    assert abs(r.busbw_bytes_per_s / 387e9 - 1) <= 0.15
    assert r.busbw_bytes_per_s <= 4 * 800e9 / 8  # a tray's four NICs at line rate


@pytest.mark.parametrize("release", ["2.18.1", "2.21.5", "2.25.1", "2.29.7", "2.30.3"])
def test_a100_on_four_hdr_nics_runs_the_ring_on_two_nodes(release: str) -> None:
    # NVIDIA/nccl #1048 by hand. search.cc: NICs of 25 GB/s (HDR) start the inter-node speeds at 24; one
    # channel per NIC, 4 x 24 GB/s, not duplicated (ncclTopoDupChannels: bwIntra 24 < 25). tuning.cc
    # (v2.18.1-1 to v2.29.7-1 and master): on <= 2 nodes bw = graph bwIntra; ring busBw 4 x 24 = 96 GB/s
    # (the reporter's "theoretical value (96 GB/s)"), algbw x nRanks / nsteps = 16/30: 51.2 GB/s. The tree
    # graph has the ring's channels (init.cc minChannels = maxChannels = ringGraph->nChannels), bwIntra
    # raised to at most 2 x bwInter = 48: busBw min(4 x 48 x .92, 4 x perChMaxTreeBw[Ampere][2 nodes] 23.6)
    # = 94.4, algbw x .5 = 47.2 < 51.2: the ring at large sizes.
    spec = a100_four_hdr(2)
    tm = tier_model(spec, nccl_version=release)
    assert tm.graph_channels[1] == 4
    assert tree_graph_cap(tm, Protocol.SIMPLE, 2) == pytest.approx(4 * 23.6e9)
    assert tree_graph_cap(tm, Protocol.SIMPLE, 2) / 2 < 4 * 24e9 * 16 / 30
    r = formula_collective("all_reduce", 4 * GiB, spec, nccl_version=release)
    assert (r.algorithm, r.protocol) == ("ring", "Simple")


@pytest.mark.parametrize(
    ("release", "per_channel_gbps", "algorithm"),
    [("2.25.1", 82.8, None), ("2.28.3", 42.8, "ring"), ("2.29.7", 42.8, "ring"), ("2.30.3", 42.8, "ring")],
)
def test_gb300_trays_run_the_ring_on_two_nodes_from_2_28(
    release: str, per_channel_gbps: float, algorithm: str | None
) -> None:
    # NVIDIA/aicr #1413 by hand. 4 GB300 (NVLink 721.8 GB/s each) and 4 x 800G ConnectX-8 (100 GB/s) a
    # tray: search.cc's Blackwell inter-node speeds start at 96, one channel per NIC (4 x 96), duplicated
    # to 8 x 48 (ncclTopoDupChannels). Ring busBw 8 x 48 = 384 GB/s, algbw x 8/14 = 219.4. Tree: min(8 x
    # 96 x .92, 8 x perChMaxTreeBw[Blackwell][2 nodes]) x .5: 2 x 41.4 a channel through 2.27 (662.4, algbw
    # 331.2: the tree, or NVLS-tree), 42.8 from v2.28.3-1 (342.4, algbw 171.2 < 219.4: the ring).
    spec = gb300_trays(2)
    tm = tier_model(spec, nccl_version=release)
    assert tm.graph_channels[1] == 8
    cap = tree_graph_cap(tm, Protocol.SIMPLE, 2)
    assert cap == pytest.approx(8 * per_channel_gbps * 1e9)
    assert (cap / 2 < 8 * 48e9 * 8 / 14) == (algorithm == "ring")
    r = formula_collective("all_reduce", 8 * GiB, spec, nccl_version=release)
    assert (r.algorithm == "ring") == (algorithm == "ring")


@pytest.mark.parametrize(("release", "net_lat_us"), [("2.21.5", 2.7), ("2.23.4", 5.0), ("2.30.3", 5.0)])
def test_one_rank_per_node_pays_the_tree_network_latency_from_2_23(release: str, net_lat_us: float) -> None:
    # tuning.cc from v2.23.4-1: "With ppn=1 latencies are fully exposed, use the Tree network latency":
    # interLat = hwLat[NET][Tree][LL] = 5.0 us instead of the ring's 2.7. A 2-rank ring all_reduce across
    # two nodes has 2 inter-node steps: baseLat[Ring][LL] 6.6 + 2 x interLat (nccl-tests #150's shape).
    ring_ll = {"algorithm": "ring", "protocol": "LL", "nccl_version": release}
    r = formula_collective("all_reduce", 8, A100_2, ONE_PER_NODE, **ring_ll)
    assert r.latency_s == pytest.approx((6.6 + 2 * net_lat_us) * 1e-6, rel=1e-6)


def test_two_ranks_per_node_keep_the_ring_network_latency() -> None:
    # the rule is NCCL's ppn == 1 only: GPU0 and GPU1 of each node (ppn 2) keep hwLat[NET][Ring][LL] 2.7 us
    # on their 2 inter-node steps, with 4 - 2 = 2 intra-node steps at max(NVLink 0.6, netOverhead 1.0).
    comm = Communicator.from_gpus(A100_2, [0, 1, 8, 9])
    ring_ll = {"algorithm": "ring", "protocol": "LL", "nccl_version": "2.30.3"}
    r = formula_collective("all_reduce", 8, A100_2, comm, **ring_ll)
    assert r.latency_s == pytest.approx((6.6 + 2 * 2.7 + 4 * 1.0) * 1e-6, rel=1e-6)


def test_every_missed_point_names_measured_and_predicted() -> None:
    assert all(" vs " in why for why in MISSED.values())
