"""The formula engine against public nccl-tests results that are not among the shared cases (blind check).

Each point is one row (or one stated figure) of a public thread whose hardware is stated: GPU, GPUs per node,
nodes, NICs; the comment gives the thread and the quoted row (size, time us, busbw GB/s). Tolerance: the
blind check's bar, 15 % on busbw at >= 64 MiB and on time at small sizes. The model runs the log's NCCL
release when the catalogue has it, else the newest recorded tables (said per point).
Two of these threads are also calibration sources of the catalogue and are marked so: the efa-srd
transport's efficiency 0.59 is nccl #527's 4-node row, its latency 17.7 us (that of efa-v3, the NIC the
p6-b200 spec names) dstack #3961's 8 B row; those two rows reproduce by construction and are kept as such,
the other rows of the threads are checks.
Points the model misses are in ``MISSED`` (measured, predicted, what is missing); not asserted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from tests.clusters import nvswitch_node

from aifabric.cluster.presets import preset
from aifabric.cluster.spec import ClusterSpec
from aifabric.engines.formula import formula_collective

MiB = 2**20
GiB = 2**30


def _node(accelerator: str, nodes: int, scale_out: dict[str, Any]) -> ClusterSpec:
    """``nodes`` x 8 ``accelerator`` on one NVSwitch each, with the given scale-out."""
    spec = {"accelerator": accelerator, "gpus_per_node": 8, "nodes": nodes, "scale_up": {"kind": "nvswitch"}}
    return ClusterSpec.model_validate({"name": accelerator, **spec, "scale_out": scale_out})


def a100_4xhdr(nodes: int) -> ClusterSpec:
    """A100-SXM4-40GB with 4 x HDR 200 Gb/s InfiniBand (ConnectX-6) per node, two GPUs per NIC
    (NVIDIA/nccl-tests #119: "8x NVIDIA A100 SXM4 40G GPU, and 4x Mellanox HDR Infiniband cards")."""
    return _node("a100-sxm-40gb", nodes, {"nic": "connectx-6", "gpus_per_nic": 2, "switch": "quantum-qm8700"})


def h20_ndr(nodes: int) -> ClusterSpec:
    """H20 (NVLink 4, NVSwitch) with one ConnectX-7 NDR 400G per GPU (NVIDIA/nccl #1244: "2 nodes, 16 H20
    GPUs, 16 cx7 NICs (IB NDR)")."""
    return _node("h20", nodes, {"nic": "connectx-7"})


def p6_b200(nodes: int) -> ClusterSpec:
    """AWS p6-b200.48xlarge: 8 x B200 on NVSwitch, 3,200 Gb/s EFA (cloud_instances.yaml p6-b200, AWS EC2 P6
    page), NCCL over SRD (aws-ofi-nccl). The catalogue has no 400 Gb/s EFA interface: 2 x 200 Gb/s efa-v3
    per GPU give the same 400 Gb/s per GPU; the asserted rows are latency-bound (8-256 B)."""
    efa = {"nic": "efa-v3", "nics_per_gpu": 2, "planes": 2, "fabric": "ethernet", "transport": "efa-srd"}
    return _node("b200", nodes, {**efa, "switch": "spectrum-4-sn5600-400g"})


@dataclass(frozen=True)
class Point:
    """One public row: the cluster, the call, the measured time (s) and busbw (bytes/s)."""

    url: str
    spec: ClusterSpec
    collective: str
    size: int
    time_s: float
    busbw: float
    latency: bool  # True: time asserted (small size); False: busbw asserted
    options: tuple[tuple[str, Any], ...] = ()

    def relative_error(self) -> float:
        """(predicted - measured) / measured: of the time for a latency point, else of the busbw."""
        r = formula_collective(self.collective, self.size, self.spec, **dict(self.options))
        predicted, measured = (r.time_s, self.time_s) if self.latency else (r.busbw_bytes_per_s, self.busbw)
        return predicted / measured - 1

    def single_node_bar(self) -> float:
        """The one-node blind check's tolerance: 10 % on busbw at >= 64 MiB, else 15 % (busbw at mid sizes,
        time at small ones)."""
        return 0.10 if not self.latency and self.size >= 64 * 2**20 else 0.15


NT119 = "https://github.com/NVIDIA/nccl-tests/issues/119"
N527 = "https://github.com/NVIDIA/nccl/issues/527"
N1244 = "https://github.com/NVIDIA/nccl/issues/1244"
DS3961 = "https://github.com/dstackai/dstack/pull/3961"
N1455 = "https://github.com/NVIDIA/nccl/issues/1455"
N2140 = "https://github.com/NVIDIA/nccl/issues/2140"
N1807 = "https://github.com/NVIDIA/nccl/issues/1807"
NVLS_FORCED = (("env", {"NCCL_ALGO": "NVLS"}),)
RING_FORCED = (("env", {"NCCL_ALGO": "Ring"}),)
V2304 = (("nccl_version", "2.30.4"),)
H100_8 = nvswitch_node("h100-sxm", 8)
V2304_NVLS_OFF = (*V2304, ("env", {"NCCL_NVLS_ENABLE": "0"}))
NVLS_TREE_2215 = (("nccl_version", "2.21.5"), ("env", {"NCCL_ALGO": "NVLSTree"}))
A100_3, H20_2 = a100_4xhdr(3), h20_ndr(2)

POINTS = {
    # nccl-tests #119: 3 x 8 A100-SXM4-40GB, 4 x HDR per node, NCCL release not printed (newest tables);
    # "131072008 32768002 float sum -1 2604.6 50.32 96.45" (the maintainer: "24GB/s is the peak performance
    # per 200G NIC ... 96GB/s is the target"). Ring/Simple on 4 NICs: 86.4 (-10.4 %; plateau 95.8 at 8 GiB)
    "119 A100 3 nodes 125 MiB": Point(NT119, A100_3, "all_reduce", 131072008, 2604.6e-6, 96.45e9, False),
    # "133169160 ... 2666.0 49.95 95.74": 86.6 (-9.6 %)
    "119 A100 3 nodes 127 MiB": Point(NT119, A100_3, "all_reduce", 133169160, 2666.0e-6, 95.74e9, False),
    # nccl #527: p4d.24xlarge ("p4dn"), NCCL 2.9.9 (older than the catalogue: newest tables), 1 GiB rows
    # "1 1073741824 ... 8142.6 131.87 230.77": one node, ring on NVSwitch: 238.3 (+3.3 %)
    "527 p4d 1 node": Point(N527, preset("aws-p4d", nodes=1), "all_reduce", GiB, 8142.6e-6, 230.77e9, False),
    # "2 1073741824 ... 35215 30.49 57.17": the double binary tree on 2 nodes, each node one tree's root and
    # the other's leaf, carries S per direction through its NICs (ring: 2 (n-1)/n S): 50.7 (-11.3 %); was
    # 29.4 (ring; tree 25.4) while the tree was bounded at 2 S on 2 nodes too
    "527 p4d 2 nodes": Point(N527, preset("aws-p4d", nodes=2), "all_reduce", GiB, 35215e-6, 57.17e9, False),
    # "3 1073741824 ... 64782 16.57 31.77": ring 29.35 (-7.6 %)
    "527 p4d 3 nodes": Point(N527, preset("aws-p4d", nodes=3), "all_reduce", GiB, 64782e-6, 31.77e9, False),
    # "4 1073741824 ... 70253 15.28 29.61": 29.29 (-1.1 %): CALIBRATION, efa-srd's 0.59 is this row
    "527 p4d 4 nodes (calibration)": Point(
        N527, preset("aws-p4d", nodes=4), "all_reduce", GiB, 70253e-6, 29.61e9, False
    ),
    # nccl #1244: 2 x 8 H20, 8 x CX-7 NDR per node, NCCL 2.21.5, NCCL_ALGO=NVLSTree: "4 1 float sum -1 47.54",
    # "64 16 ... 46.30", "512 128 ... 46.58": NVLS-tree latency 53.0 us (+11.5/+14.5/+13.8 %)
    "1244 H20 NVLSTree 4 B": Point(N1244, H20_2, "all_reduce", 4, 47.54e-6, 0.0, True, NVLS_TREE_2215),
    "1244 H20 NVLSTree 64 B": Point(N1244, H20_2, "all_reduce", 64, 46.30e-6, 0.0, True, NVLS_TREE_2215),
    "1244 H20 NVLSTree 512 B": Point(N1244, H20_2, "all_reduce", 512, 46.58e-6, 0.0, True, NVLS_TREE_2215),
    # dstack #3961: 2 x p6-b200, release not printed (newest tables): "8 2 float sum -1 50.58": CALIBRATION
    # (efa-srd's 17.7 us latency is this row); "128 32 ... 56.27" and "256 64 ... 57.14": tree/LL 50.8/51.0
    # us (-9.7/-10.7 %)
    "3961 p6-b200 8 B (calibration)": Point(DS3961, p6_b200(2), "all_reduce", 8, 50.58e-6, 0.0, True),
    "3961 p6-b200 128 B": Point(DS3961, p6_b200(2), "all_reduce", 128, 56.27e-6, 0.0, True),
    "3961 p6-b200 256 B": Point(DS3961, p6_b200(2), "all_reduce", 256, 57.14e-6, 0.0, True),
    # nccl #1455: one 8 x H100 SXM node, "NCCL_ALGO=[ALGO] ./all_reduce_perf -b 2G -e 4G -f 2 -g [gpus]",
    # release not printed (newest tables): NVLS busbw "increase from 370 to 420, 440, 460, and 480 GBps when
    # gpus increase from 4 to 5, 6, 7, and 8" (algbw 258/265/270/273). NVLS algbw 370.8 x 0.85 x (h-1)/h
    # (h = g heads): 235.1/250.6/260.7/267.9/273.2, busbw 352.7/400.9/434.5/459.3/478.1 (-4.7/-4.6/-1.2/
    # -0.2/-0.4 %) at 4 GiB. 2-3 GPUs: see MISSED
    **{
        f"1455 H100 NVLS {g} GPUs": Point(
            N1455, nvswitch_node("h100-sxm", g), "all_reduce", 4 * GiB, 4 * GiB / a, b, False, NVLS_FORCED
        )
        for g, a, b in ((4, 246.7e9, 370e9), (5, 258e9, 420e9), (6, 265e9, 440e9), (7, 270e9, 460e9))
    },
    "1455 H100 NVLS 8 GPUs": Point(
        N1455, nvswitch_node("h100-sxm", 8), "all_reduce", 4 * GiB, 4 * GiB / 273e9, 480e9, False, NVLS_FORCED
    ),
    # the same thread, NCCL_ALGO=RING: "busbw is about 365-370 GBps when gpus from 2 to 8": ring/Simple at
    # 18 x 20.6 = 370.8 GB/s: 369.8 (+0.6 % of 367.5)
    "1455 H100 ring 8 GPUs": Point(
        N1455, H100_8, "all_reduce", 4 * GiB, 4 * GiB / 210e9, 367.5e9, False, RING_FORCED
    ),
    # nccl #2140: NCCL 2.30.4, one node, the reporter's peak all_reduce figures (size not stated; taken at
    # 8 GiB, on the plateau): 8 x B300 "busbw: 695 -> 845 GB/s" (NVLS off -> on), 8 x H100 "370 -> 480".
    # NVLS: 721.8 x 0.74 x 7/8 = 467.4 algbw (fill 2 x 24 x 8 x 128 KiB) -> 812.0 (-3.9 %); H100 480.4
    # (+0.1 %). NVLS off (NCCL_NVLS_ENABLE=0): ring/Simple 719.9 (+3.6 %) and 370.3 (+0.1 %)
    "2140 B300 NVLS": Point(
        N2140, nvswitch_node("b300", 8), "all_reduce", 8 * GiB, 8 * GiB / 483e9, 845e9, False, V2304
    ),
    "2140 B300 NVLS off": Point(
        N2140, nvswitch_node("b300", 8), "all_reduce", 8 * GiB, 8 * GiB / 397e9, 695e9, False, V2304_NVLS_OFF
    ),
    "2140 H100 NVLS": Point(
        N2140, nvswitch_node("h100-sxm", 8), "all_reduce", 8 * GiB, 8 * GiB / 275e9, 480e9, False, V2304
    ),
    "2140 H100 NVLS off": Point(
        N2140, H100_8, "all_reduce", 8 * GiB, 8 * GiB / 211e9, 370e9, False, V2304_NVLS_OFF
    ),
    # nccl #1807: 8 x B200 one node, NCCL 2.27.1, all_reduce_perf "Ours is 830+" (busbw, size not stated;
    # taken at 8 GiB): NVLS 721.8 x 0.74 x 7/8 -> busbw 810.5 (-2.4 %)
    "1807 B200 8 GPUs": Point(
        N1807,
        nvswitch_node("b200", 8),
        "all_reduce",
        8 * GiB,
        8 * GiB / (830e9 * 8 / 14),
        830e9,
        False,
        (("nccl_version", "2.27.1"),),
    ),
}


@pytest.mark.parametrize("key", list(POINTS))
def test_public_point(key: str) -> None:
    assert abs(POINTS[key].relative_error()) <= 0.15


#: Public rows the model misses (measured, predicted, what is missing); not asserted.
MISSED = {
    "coreweave/nccl-tests PR #43, GB200 NVL72 rack (72 ranks), all_reduce 512 MiB-8 GiB": "busbw 586.06/"
    "681.17/757.78/839.16/834.57 vs 801/898/955/987/988 as logged (NCCL 2.26.2: the repository README, "
    "'The following runs used NCCL 2.26.2'; NVLS, +37..+18 %; ring forced 707 at 8 GiB, below the measured "
    "835, so NVLS ran): measured NVLS algbw 423-425 GB/s at 4-8 GiB vs 501 (721.8 x 0.74 x 31/32, the rack's "
    "32 NVLS heads: NCCL_MAX_NVLS_ARITY). The same NVLink 5 NVLS on 8 GPUs is within 4 % (nccl #1807, "
    "#2140, asserted): algbw falls from ~475 on 8 GPUs to ~424 on 72, which no NCCL table or sourced "
    "NVSwitch figure gives (2.28.3-2.30.7 tuning.cc price it at 2 x 640 x 0.74 x 31/32 = 918 busbw, "
    "+10 %). 2.26.2's source gives the rack the same 32 heads (search.cc: the NVLS search over the fused "
    "clique stops at min(32, 72) channels, 20 GB/s each: (32 + 1) x 20 <= 18 x 40) and 32 compute channels "
    "(nvls.cc NVLS_NCHANNELS_SM100); its tuner prices NVLS at 32 x 20 x 5/6 = 533 algbw. As T = a + S/B "
    "the row is a = 0.58 ms (the model's 2-loop fill, 256 MiB / 517 + 25 us = 0.54 ms, agrees) and B = 438 "
    "GB/s vs 517: the shortfall is bandwidth, not fill (https://github.com/coreweave/nccl-tests/pull/43)",
    "coreweave/nccl-tests README, 2 GB200 NVL72 racks (144 ranks), 512 MiB-16 GiB": "busbw 493.94/596.10/"
    "680.30/743.09/793.06/810.41 vs 663/806/903/961/993/1010 as logged (2.26.2, NVLS-tree; +34..+25 %): "
    "the one-rack NVLS shortfall above, carried into each rack (NVLS-tree's in-rack algbw is the same "
    "517 GB/s); NICs not binding (32 heads x 49.15 GB/s). As T = a + S/B the rows are a = 1.04 ms, B = 418 "
    "GB/s (one rack: 0.58 ms, 438; the model's 2-loop fill 256 MiB / 517 = 0.52 ms) "
    "(https://github.com/coreweave/nccl-tests#gb200)",
    "coreweave/nccl-tests README, 20 GB200 NVL72 racks (1440 ranks), 512 MiB-16 GiB": "busbw 150.95/218.85/"
    "286.52/346.38/381.48/405.74 vs 748/868/944/987/1010/1022 as logged (2.26.2, NVLS-tree; +396..+152 %): "
    "as T = a + S/B the rows are a = 4.83 ms, B = 215 GB/s (fit within 3 %), against the model's a = 0.40 "
    "ms (2 loops of 32 channels x 32 heads x 64 KiB = 128 MiB at 517 GB/s, + 8 NET latencies) and B = 517. "
    "B is half the 2-rack 418, as if each rack moved ~430 GB/s of tree traffic (S on two racks, 2 S "
    "beyond); but 2.26.2's source runs 32 heads on 32 NICs (search.cc ncclTopoCompute: maxChannels = "
    "min(NCCL_MAX_NVLS_ARITY 32, 72 GPUs); ncclTopoSearchRecNet: one NIC and its local GPU per channel, "
    "nets in GPU order, so the heads are clique ranks 0-31, trays 0-7; the speed ladder reaches 32 channels "
    "at 20 GB/s; connect.cc connectNvls / search.cc getNvlsNetDev: each head's tree peers through its own "
    "NIC), whose 1573 GB/s (786 algbw beyond two racks) and 2.28.3's NVLS-tree kernel cap (690 algbw) do "
    "not bind: not ~8 NICs. What caps the 8 head trays' tree traffic at ~430 GB/s (~54 GB/s a tray, 13 "
    "GB/s a head NIC) and the 12x larger a (the tree's depth in the pipeline: 2.26.2's all_reduce.h "
    "NVLS_TREE passes each chunk up and down floor(log2 20) = 4 levels, where case 03's 2 x 8 H100 bears "
    "out 2 loops on 2 nodes) is not in the README or a sourced figure. The a is a ring's order: ring/LL128 "
    "forced predicts 150/245/360/469/553/607 (latency 5.56 ms over 2 x 1439 steps; 2.26.2's ring graph is "
    "15 channels x 48 GB/s, search.cc stopping at nChannels x bwInter = 720 = totalBw), the 512 MiB row "
    "to 1 %, but its 607 at 16 GiB is over the measured 406 and 2.26.2's tuner prices NVLS-tree (32 x 20 "
    "x 5/6 = 533 algbw) above the ring (720 x 1440/2878 = 360), so which algorithm ran is not settled "
    "(https://github.com/coreweave/nccl-tests#gb200)",
    "nccl #1455 H100 NVLS 2-3 GPUs": "busbw 'about 365-370 GBps when gpus from 2 to 4' with NCCL_ALGO=NVLS "
    "vs 157.1/279.0 (NVLS 370.8 x 0.85 x (h-1)/h; -57/-24 %), ring's figure (369.8); what the release (not "
    "printed) runs for NCCL_ALGO=NVLS on 2-3 GPUs is not stated; 4-8 GPUs asserted "
    "(https://github.com/NVIDIA/nccl/issues/1455)",
    "nccl #1244 H20 2 nodes default, 1 MiB and 128-512 MiB": "time 121.8 us at 1 MiB vs 65.8 (NVLS-tree, "
    "-46 %); busbw 227.14/244.88/312.75 at 128/256/512 MiB vs 342.6/-/424.7 (+51/+36 %); 8 MiB (107.38 vs "
    "101.3) and 64 MiB (268.90 vs 272.4) agree. The reporter's release for these rows is not stated "
    "(the 2.21.5 run is NVLSTree forced); the 128 MiB dip below 64 MiB names no mechanism in the thread",
    "nccl #2409 H100 2 x 8, 8 x CX-7 400G RoCE, NCCL 2.31.2": "busbw 216.5 (1 GiB) / 231 (8 GiB) vs "
    "441.1/458.9 (NVLS-tree): the reporter measures one GPU pair at 13.1 GB/s (sendrecv_perf) while "
    "perftest reaches line rate on the same rail; a host or driver limit outside NCCL's model, not a "
    "fabric figure (https://github.com/NVIDIA/nccl/issues/2409)",
    "nccl #837, 2 x 8 A100 80GB, 2 x 200G IB per node, NCCL 2.9.9 / 2.10.3, 1 GiB": "busbw 53.95 / 57.06 "
    "vs 82.5 (tree/Simple, S per direction through the 2 NICs: 2 x 24.0 x 0.92 algbw; before the 2-node "
    "tree change 47.8, ring, -16 %): the tree exceeds the network as the maintainer says ('the Tree "
    "algorithm would be able to put more traffic on NVLink'), but reaches algbw 30.4 GB/s, 0.63 of the "
    "2 NICs, where 2 x p4d (#527) reaches its NICs' full effective 30 GB/s; the thread gives no topology "
    "(GPU-NIC paths, tree channels) to tell why, and 2.11+ runs there collapse to 7 GB/s",
    "dgx-spark-playbooks PR #103, 2 x GB10, one 200G QSFP": "all_reduce 8-64 KiB 35.15/31.67/39.56/67.93 "
    "us vs 12.8-17.3 us (ring/LL over NET/IB): the transport of these rows (RoCE vs sockets, MTU) is "
    "what the PR is about and not stated per table (https://github.com/NVIDIA/dgx-spark-playbooks/pull/103)",
}


def test_527_two_nodes_run_the_tree_and_three_the_ring() -> None:
    # nccl #527: busbw 57.17 on 2 nodes, 31.77 on 3 at 1 GiB: the tree's 2-node advantage (S per direction
    # through a node's NICs instead of the ring's 2 (n-1)/n S) is gone from 3 nodes, where an inner node of
    # a tree carries 2 S (Sanders, Speck & Traeff 2009).
    two = formula_collective("all_reduce", GiB, preset("aws-p4d", nodes=2))
    three = formula_collective("all_reduce", GiB, preset("aws-p4d", nodes=3))
    assert (two.algorithm, three.algorithm) == ("tree", "ring")
    assert two.busbw_bytes_per_s > 1.5 * three.busbw_bytes_per_s


def test_every_missed_point_names_measured_and_predicted() -> None:
    assert all(" vs " in why for why in MISSED.values())


#: coreweave/nccl-tests README (GB200 NVL72 racks, NCCL 2.26.2): measured algbw at 16 GiB, GB/s
#: (busbw 810.41 on 144 ranks, 405.74 on 1440: algbw = busbw x n / (2 (n - 1))).
NVL72_RACKS_MEASURED_ALGBW = {2: 810.41 * 144 / 286, 20: 405.74 * 1440 / 2878}


@pytest.mark.parametrize("racks", [2, 20])
def test_nvl72_racks_nvls_tree_bound_by_hand(racks: int) -> None:
    # NCCL 2.26.2 on N GB200 NVL72 racks (MNNVL: a rack's 72 GPUs are one node, its topology the fusion of
    # its 18 trays', topo.cc ncclTopoGetSystem; 72 ConnectX-7 400G NICs, 49.15 GB/s payload each).
    # search.cc ncclTopoCompute caps the NVLS graph at min(NCCL_MAX_NVLS_ARITY = 32, 72 GPUs) channels and
    # ncclTopoSearchRecNet pairs each channel with one NIC and its local GPU (no GPU twice): h = 32 heads,
    # 32 NICs (the speed ladder 48 ... 20 GB/s reaches 32 channels at 20: (32 + 1) x 20 <= 18 x 40 NVLink).
    # connect.cc connectNvls gives tree peers to heads only, each through its own NIC (getNvlsNetDev):
    #   NVLS in the rack         721.8 x 0.74 x 31/32                         = 517.4 GB/s
    #   heads' NICs              32 x 49.15 / r(N), r = 1 on 2 racks, 2 beyond = 1572.8 / 786.4
    #   NVLS-tree kernel (2.28.3 perChMaxNVLSTreeBws Blackwell 96.0 / 43.1)
    #                            32 x 96.0 x 144/286 = 1546.7,  32 x 43.1 x 1440/2878 = 690.1
    # bound = 517.4 on both; the pipeline adds 2 loops of 32 channels x 32 heads x chunk (enqueue.cc: 128 KiB
    # on 2 racks, 64 KiB from 4: 256 / 128 MiB): T = latency + (S + fill) / 517.4 GB/s. The measured 408 / 203
    # GB/s lie under it (MISSED says what is missing).
    bounds = {2: (517.44, 1572.8, 1546.7), 20: (517.44, 786.4, 690.08)}[racks]
    fill = 2 * 32 * 32 * (128 if racks == 2 else 64) * 1024
    spec = preset("gb200-nvl72", gpus=72 * racks)
    # the jobs' environment (coreweave/nccl-tests mpi-operator and slurm GB200 files): NCCL_NET_GDR_C2C=1,
    # GPUDirect RDMA on the CX-7s behind Grace, which 2.26 leaves off by default (paths.cc)
    gdr_c2c = {"NCCL_NET_GDR_C2C": "1"}
    r = formula_collective("all_reduce", 16 * GiB, spec, nccl_version="2.26.2", env=gdr_c2c)
    assert r.algorithm == "nvls_tree"
    bound = min(bounds) * 1e9
    assert 0 < r.time_s - (16 * GiB + fill) / bound < 2e-4  # + latency: 2 log2(N) NET steps, < 0.2 ms
    assert NVL72_RACKS_MEASURED_ALGBW[racks] * 1e9 < r.algbw_bytes_per_s <= bound
