"""The formula engine against the shared cases that publish figures without nccl-tests tables (24, 28, 08).

Cases 24 and 28 state busbw figures in words ("~430", "~N/(N-1) x 48 GB/s"); each becomes a point here, with
the case's words as its source, asserted within 10 % (issue 8: >= 64 MiB; the figures are approximate).
Case 08's table is run through the gIB plugin, which the catalogue prices as what it is, NCCL's IB verbs
transport on RoCEv2 with the gIB image's environment (``transports.yaml`` gcp-gib); the case's plateau,
0.65 of its ports, is its own run's and is in ``MISSED`` (the discovery tests keep it as
``unexplained_shortfall``); what the case adds is the split-worker layout. dstack's A4 all_reduce on the
same machine and plugin is asserted at 8 GiB.
Points no sourced mechanism reaches are listed in ``MISSED`` (measured, predicted, what is missing).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from aifabric.cluster.presets import preset
from aifabric.cluster.spec import ClusterSpec
from aifabric.engines.formula import formula_collective

GiB = 2**30

#: An H100 cluster of case 24: the case 03 nodes (8 x H100 SXM, 8 x ConnectX-7 400G, one per GPU, PIX) on
#: RoCE: ``scale_out.fabric: ethernet`` with an Ethernet leaf, whose native transport is ``roce-v2`` (NCCL's
#: NET/IB on an Ethernet port, ``NCCL_IB_GID_INDEX=3`` picking the RoCEv2 GID; transports.yaml).
ROCE = {"scale_out.fabric": "ethernet", "scale_out.switch": "spectrum-4-sn5600-400g"}


def h100_roce(nodes: int) -> ClusterSpec:
    """``nodes`` x 8 H100 with 8 x 400G RoCE (case 24 [S1])."""
    return preset("h100-ib-2node", nodes=nodes, **ROCE)


def gcp_a4(nodes: int, gpus_per_node: int = 8) -> ClusterSpec:
    """GCP a4-highgpu-8g as NCCL sees it (case 08): B200 on NVSwitch, one CX-7 400G RoCE NIC per GPU (PIX in
    the topo matrix), through the gIB plugin; ``gpus_per_node`` 4 is one of two pods a node is split into,
    with its 4 GPUs' NICs (NCCL counts each pod as a node: it tells nodes apart by host hash)."""
    return ClusterSpec.model_validate(
        {
            "name": "gcp-a4",
            "accelerator": "b200",
            "gpus_per_node": gpus_per_node,
            "nodes": nodes,
            "scale_up": {"kind": "nvswitch"},
            "scale_out": {
                "nic": "connectx-7",
                "fabric": "ethernet",
                "switch": "spectrum-4-sn5600-400g",
                "transport": "gcp-gib",
            },
        }
    )


@dataclass(frozen=True)
class Point:
    """One published busbw figure: the cluster, the call and the figure (bytes/s), the case's words."""

    source: str
    spec: ClusterSpec
    collective: str
    size: int
    busbw: float
    options: tuple[tuple[str, Any], ...] = ()


C24 = "case_24_h100_roce_2_vs_4_nodes_nvls.txt"
C28 = "case_28_alltoall_busbw_expectations.txt"
V2193 = (("nccl_version", "2.19.3"),)

POINTS = {
    # case 24 [S1] (NVIDIA/nccl #1221): 2 x 8 H100, 8 x 400G RoCE, NCCL 2.19.3, all_reduce_perf -b 4G -e 8G:
    # "upgraded from 330GB to 430GB" with NVLS. NVLS-tree in each node (276 GB/s algbw) and across the 2
    # nodes' 8 NICs (393 GB/s), under the NVLS-tree kernel's per-channel ceiling (2.28.3's table: the same
    # warp groups since 2.18, nvls.nvls_tree_kernel_cap): 8 x 57.7 x 16/30 = 246.2 GB/s algbw, plus 2.19's
    # fill of 2 loops of 16 x 8 x 512 KiB: 4 GiB = 51 us + (4 GiB + 128 MiB) / 246.2 GB/s, busbw 446.3
    # (+3.8 %); 8 GiB 453.8 (+5.5 %)
    "24 S1 2 nodes NVLS 4 GiB": Point(f"{C24} [S1]", h100_roce(2), "all_reduce", 4 * GiB, 430e9, V2193),
    "24 S1 2 nodes NVLS 8 GiB": Point(f"{C24} [S1]", h100_roce(2), "all_reduce", 8 * GiB, 430e9, V2193),
    # case 28 [S1]/[S2] (NVIDIA/nccl-tests #130, #267): alltoall across N nodes, one 400G NIC per GPU,
    # "~N/(N-1) x 48 GB/s": 2 nodes ~96, 6 ~58, 16 ~51. nccl-tests' busbw is algbw (n-1)/n over n = 8N ranks,
    # and each rank's NIC carries S (n-8)/n: busbw = 49.15 x (n-1)/(n-8) = 92.2 / 57.7 / 52.0 GB/s
    "28 S1 2 nodes": Point(f"{C28} [S1]", preset("h100-ib-2node", nodes=2), "all_to_all", GiB, 96e9),
    "28 S1 6 nodes": Point(f"{C28} [S1]", preset("h100-ib-2node", nodes=6), "all_to_all", GiB, 58e9),
    "28 S1 16 nodes": Point(f"{C28} [S1]", preset("h100-ib-2node", nodes=16), "all_to_all", GiB, 51e9),
    # case 28 [S1]: "If you have one GPU per node the BusBw should be the NIC BW"; [S2]: CX-7 at NDR rate
    # "should achieve up to 48-49GB/s per NIC" (48.5): one H100 per node, 2 nodes, 49.05 GB/s
    "28 S1 one GPU per node": Point(
        f"{C28} [S1][S2]", preset("h100-ib-2node", nodes=2, gpus_per_node=1), "all_to_all", GiB, 48.5e9
    ),
    # dstackai/dstack mkdocs/docs/examples/clusters/gcp.md (commit 5f5f9a63), 2 x A4 (8 x B200, 8 x 400G
    # RoCE through the gIB image), all_reduce, release not printed (newest tables): 683.52 GB/s busbw at
    # 8 GiB.
    # NVLS-tree: the two-node tree carries S per direction through the node's eight ports at RoCEv2's
    # framing (49.02 GB/s each, 4 QPs a connection: transports.yaml gcp-gib) and the image's 512 KiB NVLS
    # chunk: 730.2 (+6.8 %)
    "dstack A4 all_reduce 8 GiB": Point("dstackai/dstack gcp.md", gcp_a4(2), "all_reduce", 8 * GiB, 683.52e9),
}

#: Figures no sourced mechanism reaches yet (measured, predicted, what is missing); not asserted.
MISSED = {
    "24 S1 2 nodes, NCCL_NVLS_ENABLE=0": "~330 GB/s busbw vs 388.7/390.4 at 4/8 GiB (ring/Simple over the "
    "8 NICs, +18 %), near InfiniBand's (case 03: ring 392.7 at 2 nodes); NCCL uses the same NET/IB transport "
    "on RoCE, whose framing (82 B per 4096 B packet: 0.9804, transports.yaml roce-v2) costs 0.3 % against "
    "ConnectX-7's 0.983 on InfiniBand, and the case's own estimate, ~40 GB/s per rail, "
    "names no mechanism: the RoCE MTU (1024 B on a 1500 B Ethernet MTU, 4096 B on jumbo frames: 0.93 vs "
    "0.98 payload) is not in the case, and nothing else in it lowers a rail",
    "24 S1 4 nodes, NVLS on or off": "~320 GB/s busbw vs 385.0/388.5 at 4/8 GiB (+21 %): NCCL 2.19.3 runs "
    "ring either way, as the model does (asserted): its tuner prices NVLS-tree beyond 2 nodes at bwInter / 2 "
    "(tuning.cc), 361.3 GB/s forced here (2.19.3's 64 KiB chunk from 4 nodes, enqueue.cc, "
    "nccl_releases.yaml 2.19.3: a shorter fill than 2.19.1's 512 KiB, 351.8), below ring; the "
    "ring's level is case 03's InfiniBand one (365 at "
    "4 nodes, 2.26.2); the ~15 % RoCE loss is the same missing mechanism as at 2 nodes without NVLS",
    "24 S2 8 x 2 x 200G RoCE, 2 and 4 nodes": "310 / 180 GB/s busbw vs 446.3 / 385.0 (NVLS-tree / ring on "
    "16 x 200G ports, the same node bandwidth): a shortfall whose cause the thread does not establish "
    "(the reporter's NVLSTree runs hang at >= 4 nodes; the maintainer only warns that 2-node NVLS-tree "
    "figures are not comparable with > 2 nodes)",
    "28 S4 16 x 8 H20": "'20+' GB/s busbw vs ~51 expected (the maintainer: 'not the expected behavior'); "
    "root cause not in the thread (the catalogue's h20 entry has the NVLink and NIC figures; what "
    "the cluster's fabric lost is not stated)",
    "08 small messages 1-64 KiB": "all_gather 246-320 us (out of place) vs 23.7-44.9 us (ring/LL, LL128): "
    "gIB is NCCL's NET/IB (transports.yaml gcp-gib, NCCL's 5 us NET latency), and the other gIB logs of "
    "these sizes run 28-41 us (A3 Ultra, A4: test_cases_public_multi7/8 MISSED); 128 KiB-1 GiB stay "
    "0.9-1.8 ms (16 MiB: 1479 us vs 88.2 us), so every row below 2 GiB is off by the same per-call time, "
    "which only this run shows",
    "08 split workers, average busbw": "4 workers x 4 GPUs 22.2 vs 2 x 8 59.4 (2.67x); the model, told the "
    "layout, gives 81.2 vs 148.8 (1.83x) over the same 1 KiB-8 GiB sizes: its plateau halves exactly "
    "(asserted), but its 2 x 8 small and mid sizes are 5-15x faster than measured (above), which lowers "
    "the average ratio; the misaligned placement (11.2) needs the pods' GPU-NIC paths, which are not "
    "published",
    "08 2 x 8 plateau": "260 GB/s busbw (2-8 GiB) vs ring/Simple 386.9/389.5/390.8 at 2/4/8 GiB (+49/+49/"
    "+50 %): gcp-gib is priced as NCCL's IB verbs transport on RoCEv2, 8 x 49.02 GB/s (transports.yaml), "
    "where Google's own A4 guide on the same machine type, image and ports reaches 374.57 (0.94 of line, "
    "test_cases_public_multi8, asserted) and dstack's A4 all_reduce 0.91 through the NICs (asserted "
    "above). The 0.65 is this run's, with its 0.25-1.5 ms per call below 2 GiB (above); the authors do "
    "not explain it (discovery: unexplained_shortfall)",
    "dstack gcp.md, 2 x A4 (8 x B200, 8 x 400G RoCE, gIB) all_reduce 64 MiB / 1 GiB": "busbw "
    "340.67/623.33 vs NVLS-tree 389.0/696.5 (+14.2/+11.7 %; 8 GiB asserted above at +6.8 %): the ramp "
    "below the plateau, at sizes whose algorithm, protocol and channels the gIB image hands to Google's "
    "tuner (NCCL_TUNER_CONFIG_PATH=/usr/local/gib/configs/tuner_config_a4.txtpb), whose table is not "
    "public",
}


@pytest.mark.parametrize("key", list(POINTS))
def test_published_point(key: str) -> None:
    p = POINTS[key]
    r = formula_collective(p.collective, p.size, p.spec, **dict(p.options))
    assert r.busbw_bytes_per_s == pytest.approx(p.busbw, rel=0.10)


@pytest.mark.parametrize("size", [4 * GiB, 8 * GiB])
def test_24_nvls_helps_on_two_nodes_and_not_on_four(size: int) -> None:
    # case 24 [S1]: NCCL_NVLS_ENABLE=0 -> 1 raises 2 nodes from ~330 to ~430 (NVLS-tree) and leaves 4 nodes at
    # "same busbw 320GB". NCCL 2.19.3 allows NVLS-tree at 4 nodes (no node limit in tuning.cc or enqueue.cc;
    # [S2]'s hang is a fault), but its tuner halves NVLS-tree's network bandwidth beyond 2 nodes
    # (bwInter / 2), so ring wins there and NVLS changes nothing.
    off = {"NCCL_NVLS_ENABLE": "0"}
    two_on = formula_collective("all_reduce", size, h100_roce(2), nccl_version="2.19.3")
    two_off = formula_collective("all_reduce", size, h100_roce(2), nccl_version="2.19.3", env=off)
    assert (two_on.algorithm, two_off.algorithm) == ("nvls_tree", "ring")
    assert two_on.busbw_bytes_per_s > 1.1 * two_off.busbw_bytes_per_s
    four_on = formula_collective("all_reduce", size, h100_roce(4), nccl_version="2.19.3")
    four_off = formula_collective("all_reduce", size, h100_roce(4), nccl_version="2.19.3", env=off)
    assert four_on.algorithm == four_off.algorithm == "ring"
    assert four_on.time_s == four_off.time_s
    forced = formula_collective(
        "all_reduce", size, h100_roce(4), nccl_version="2.19.3", algorithm="nvls_tree"
    )
    assert forced.time_s > four_on.time_s


def test_24_roce_is_named_by_the_fabric() -> None:
    # An Ethernet scale-out runs NCCL's NET/IB as RoCEv2 (transports.yaml roce-v2): the same NIC, framed by
    # Ethernet/IPv4/UDP: per 4096 B packet 8 preamble+SFD + 14 MAC + 20 IPv4 + 8 UDP + 12 BTH + 4 ICRC + 4 FCS
    # + 12 gap = 82 B, 4096 / 4178 = 0.9804 of 50 GB/s = 49.02 GB/s, below ConnectX-7's 0.983 (49.15) on
    # InfiniBand (26 B per packet: 0.9937 leaves the NIC's figure). The ~15 % RoCE loss stays in MISSED.
    roce, ib = h100_roce(2), preset("h100-ib-2node", nodes=2)
    assert roce.scale_out is not None and roce.scale_out.transport_key == "roce-v2"
    assert roce.nic_effective_bytes_per_s == pytest.approx(50e9 * 4096 / 4178, rel=1e-9)
    assert ib.nic_effective_bytes_per_s == pytest.approx(50e9 * 0.983, rel=1e-9)


@pytest.mark.parametrize("nodes", [2, 3, 4, 6, 8, 16, 32])
def test_28_alltoall_busbw_is_the_nic_over_the_remote_share(nodes: int) -> None:
    # case 28 [S1]: the network part sets the time; a rank sends S (n - 8)/n through its NIC, so
    # busbw = algbw (n-1)/n = B_nic (n-1)/(n-8) with n = 8 N: ~2x the NIC at 2 nodes, falling towards 1x.
    spec = preset("h100-ib-2node", nodes=nodes)
    n = 8 * nodes
    r = formula_collective("all_to_all", 4 * GiB, spec)
    expected = spec.nic_effective_bytes_per_s * (n - 1) / (n - 8)
    assert r.busbw_bytes_per_s == pytest.approx(expected, rel=0.01)  # the ring-latency term: < 0.1 %


def test_08_split_workers_halve_the_plateau() -> None:
    # case 08: 4 workers x 4 GPUs on the same 2 nodes: NCCL sees 4 nodes of 4 ranks, each with its 4 GPUs'
    # NICs, so every ring crosses 4 NICs per "node" instead of 8: the large-message busbw halves (the authors:
    # "giving up NVLink-local aggregation"; average busbw 22.2 vs 59.4, see MISSED for the average).
    whole = formula_collective("all_gather", 8 * GiB, gcp_a4(2), nccl_version="2.26.6")
    split = formula_collective("all_gather", 8 * GiB, gcp_a4(4, gpus_per_node=4), nccl_version="2.26.6")
    assert whole.algorithm == split.algorithm == "ring"
    assert whole.busbw_bytes_per_s / split.busbw_bytes_per_s == pytest.approx(2.0, rel=0.01)


def test_every_missed_point_names_measured_and_predicted() -> None:
    assert all(" vs " in why for why in MISSED.values())
