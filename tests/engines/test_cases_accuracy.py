"""The formula engine against every nccl-tests table of the shared cases (copied to data/nccl_tests).

Tolerances (issue 8): busbw within 10 % at every size >= 64 MiB, within 15 % at the mid sizes 8-64 MiB
(8-512 MiB: the 64-512 MiB points are held to 10 %), and small-message time (the latency floor) within 15 %.
Each row cites its case file and table; the points a sourced mechanism does not reach yet are left out of
the assertion and listed in ``MISSED`` with the measured and predicted figures and the missing mechanism.
The model runs NCCL's default (the newest recorded release's tables); a table run with ``NCCL_ALGO`` set is
predicted with that algorithm forced. Tables whose log names its NCCL release are also predicted with that
release's tuner ("as logged"), its kernel bounded by what later releases measured of it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from tests.clusters import mi300x_node, nvswitch_node

from aifabric.cluster.presets import preset
from aifabric.cluster.spec import ClusterSpec
from aifabric.discovery.nccl_tests import PerfTable, parse_nccl_tests
from aifabric.engines.formula import formula_collective

DATA = Path(__file__).parent / "data" / "nccl_tests"
KiB = 2**10
MiB = 2**20


@cache
def _tables(name: str) -> list[PerfTable]:
    return parse_nccl_tests((DATA / name).read_text(), source=name)


@dataclass(frozen=True)
class Point:
    """One measured size of a table given as busbw only (case 20): time (s) and busbw (B/s)."""

    time_s: float
    busbw_bytes_per_s: float


#: case 20's markdown rows: ``| 65K | 2.72 |`` (size label, in-place busbw GB/s).
_MD_ROW = re.compile(r"^\|\s*(\d+)([KMG])\s*\|\s*([\d.]+)\s*\|", re.MULTILINE)
_MD_UNIT = {"K": KiB, "M": MiB, "G": 2**30}


@cache
def _md_sweeps(name: str) -> list[list[tuple[int, float]]]:
    """The markdown tables of case 20, one list of (size in bytes, in-place busbw in B/s) per table. The
    labels are powers of two rounded ([S5]: 65K = 65536, 132K = 131072, 524K = 524288, 33M = 2^25), so a
    size is the power of two nearest the label (65 x 1024 -> 2^16)."""
    blocks = (DATA / name).read_text().split("=== RAW DATA")[1:]
    return [
        [(2 ** round(math.log2(int(m[1]) * _MD_UNIT[m[2]])), float(m[3]) * 1e9) for m in _MD_ROW.finditer(b)]
        for b in blocks
    ]


@dataclass(frozen=True)
class Table:
    """One table of a case, the cluster it ran on and the sizes asserted (bytes, inclusive ranges)."""

    case: str
    index: int
    spec: ClusterSpec
    latency_sizes: tuple[tuple[int, int], ...]  # small-message time within 15 %
    bandwidth_sizes: tuple[tuple[int, int], ...]  # busbw within 10 % (>= 64 MiB) / 15 % (8-64 MiB)
    options: tuple[tuple[str, Any], ...] = ()


H100 = {n: preset("h100-ib-2node", nodes=n) for n in (1, 2, 4, 8)}
C01 = "case_01_dgx_h100_allreduce_single_node.txt"
C03 = "case_03_h100_xe9680_ib_scaling_2_4_8_nodes.txt"
C13 = "case_13_v100_pcie_4gpu_no_nvlink.txt"
C20 = "case_20_azure_benchmarking_guide_single_node_busbw.txt"
C31 = "case_31_mi300x_single_node_rccl.txt"

TABLES = {
    # case_01 (NVIDIA/nccl-tests #290): 8 x H100 one node, NVLS; 128-512 MiB run 64 KiB chunks, whose
    # pipeline fill (2 loops of 16 x 8 x 64 KiB, nvls.nvls_fill_bytes) is the ramp to the plateau
    "01 1 node": Table(C01, 0, H100[1], (), ((128 * MiB, 2**32),)),
    # case_03 T1 (NVIDIA/nccl-tests #309, reporter A): 2 XE9680 nodes, 8 x CX-7 400G, defaults (tree/LL floor)
    # 8 B (68.5 us: first call) and 256 B (94.4 us: one-off) are outliers the maintainers discount.
    # 64 KiB-2 MiB: tree with NCCL's treeCorrectionFactor (512 KiB, 1, 4 MiB: see MISSED); 1-32 KiB: tree/LL
    # on the channels enqueue.cc gives the call (1 KiB-4 KiB: 1 of 16, 32 KiB: 8), each at llMaxBw / 16.
    # >= 16 MiB: NVLS-tree under NCCL's per-channel cap (8 heads x 57.7 GB/s x 16/30 = 246 GB/s algbw) plus
    # the on-node NVLS pipeline's fill, 2 loops of 16 channels x 8 heads x chunk (64 KiB chunks below 64 MiB,
    # 128 KiB from 64 MiB; nvls.nvls_fill_bytes): 128 MiB = 66.8 us + (128 + 32) MiB / 246.2 GB/s = 748.3 us
    # (measured 748.3 us); 8 MiB: see MISSED.
    "03 T1 2 nodes": Table(
        C03, 0, H100[2], ((16, 128), (KiB, 256 * KiB), (2 * MiB, 2 * MiB)), ((16 * MiB, 16 * 2**30),)
    ),
    # case_03 T2: reporter A, 4 nodes, defaults (1-32 KiB: channel reduction as T1); >= 16 MiB NVLS-tree with
    # 64 KiB chunks (NVLSTREE_MAX_CHUNKSIZE from 4 nodes): 32 MiB = 108.6 us + (32 + 16) MiB / 187.9 GB/s
    # = 376.5 us (measured 376.0 us); 16 MiB busbw 113.2 (125.2), once tree/LL128 is held under its graph's
    # 8 channels x 29.0 GB/s (tiers.tree_graph_cap)
    "03 T2 4 nodes": Table(C03, 1, H100[4], ((16, 128), (KiB, MiB)), ((16 * MiB, 16 * 2**30),)),
    # case_03 T4: reporter B, 2 of the 8 nodes, defaults: NVLS-tree under the cap with its fill, as T1
    # (8 MiB, one loop of 16 x 8 x 64 KiB: 66.8 + 3 x 34.1 us = 169.0 us, measured 151.6 us); 4 MiB:
    # NVLS-tree, 117.9 us (measured 110.9), once tree/LL128 is held under its graph's 8 channels x 36.7
    "03 T4 2 nodes": Table(C03, 3, H100[2], ((4 * MiB, 4 * MiB),), ((8 * MiB, 8 * 2**30),)),
    # case_03 T7: reporter B, 2 nodes, NCCL_ALGO=Ring NCCL_IB_QPS_PER_CONNECTION=2 (2 x 16 channels over 8
    # NICs: the NICs are full either way) (NCCL_MIN_CTAS=24, not modelled: all channels from 1 MiB).
    # 32/64 MiB ring/LL128 on the communicator's channels (+10.1/+2.6 %; held under NCCL's graph cap, 8 x
    # 36.7 = 293.6 GB/s, they would be -5.3/-13.9 %); from 128 MiB ring/Simple (-3.5 %), as NCCL's tuner
    # prices LL128 at 36.7 / 45 of its graph's rate (tiers.ring_graph_cap; +3.2 % as ring/LL128)
    "03 T7 2 nodes ring": Table(
        C03,
        6,
        H100[2],
        (),
        ((32 * MiB, 8 * 2**30),),
        (("env", {"NCCL_ALGO": "Ring", "NCCL_IB_QPS_PER_CONNECTION": "2"}),),
    ),
    # case_03 T6: reporter B, 8 nodes, NCCL_MIN_CTAS=24 NCCL_IB_QPS_PER_CONNECTION=2 (the maintainers' "best
    # case ~390"); from 1 GiB NVLS-tree then ring on 8 rails: 8 GiB predicted 386 GB/s busbw (measured 391.4).
    # NCCL_MIN_CTAS is not modelled (see MISSED '03 T7 ...'); 8-512 MiB: see MISSED
    "03 T6 8 nodes": Table(
        C03,
        5,
        H100[8],
        (),
        ((2**30, 8 * 2**30),),
        (("env", {"NCCL_IB_QPS_PER_CONNECTION": "2"}),),
    ),
    # case_03 T1 as logged (NCCL 2.26.2, the 2.25.1 tables): its tuner prices NVLS-tree at 25 + 2 x 14 us and
    # without a ceiling, so it picks NVLS-tree from 1 MiB; the kernel, 2.28.3's, runs under 2.28.3's
    # per-channel ceiling (246.2 GB/s algbw, nvls.nvls_tree_kernel_cap): 1 MiB = 53 us + (1 + 2 fill) MiB /
    # 246.2 GB/s = 65.8 us (measured 71.9), 8 MiB = 53 + 24 MiB / 246.2 GB/s = 155.2 us (132.6: -14.6 %
    # busbw), 16 GiB = 69973 us (68652 us)
    "03 T1 2 nodes, 2.26.2": Table(
        C03,
        0,
        H100[2],
        ((16, 128), (KiB, 256 * KiB), (MiB, 4 * MiB)),
        ((8 * MiB, 16 * 2**30),),
        (("nccl_version", "2.26.2"),),
    ),
    # case_03 T2 as logged: NVLS-tree from 8 MiB (2.26.2's tuner: 25 + 4 x 14 us, no ceiling), 64 KiB chunks
    # from 4 nodes: 8 MiB = 81 us + (8 + 16) MiB / 187.9 GB/s = 215.0 us (measured 217.3); 128-256 MiB: see
    # MISSED; from 1 GiB the model picks ring (+2..+7 %), as 2.26.2's own tuner does (see MISSED '03 T2 4
    # nodes as logged (2.26.2), >= 1 GiB'), while the measured 365 GB/s plateau is also NVLS-tree's ceiling.
    # 4 MiB: NVLS-tree once the tree is held under its graph's 8 channels x 29.0 GB/s, 148.0 us (151.1)
    "03 T2 4 nodes, 2.26.2": Table(
        C03,
        1,
        H100[4],
        ((16, 128), (KiB, MiB), (4 * MiB, 4 * MiB)),
        ((8 * MiB, 64 * MiB), (512 * MiB, 16 * 2**30)),
        (("nccl_version", "2.26.2"),),
    ),
    # case_13 RAW 1 (Sheffield Bessemer docs): 4 x V100 PCIe Gen3 through the CPU, NCCL 2.8.3
    # (8 B-128 KiB and 4 MiB: time within 15 %; 256 KiB-2 MiB: see MISSED)
    "13 V100 PCIe": Table(
        C13, 0, preset("v100-pcie-4gpu"), ((8, 128 * KiB), (4 * MiB, 4 * MiB)), ((8 * MiB, 128 * MiB),)
    ),
    # case_20 [S2] (Azure benchmarking guide): 8 x H100 SXM one VM, NCCL_ALGO=NVLS, NCCL 2.18.5, in-place
    # busbw only (time = S / algbw, algbw = busbw x 8/14). 2.18's NVLS latency is its baseLat, 23 us (hwLat
    # 0): 1 KiB = 23.0 us (measured 25.6 us, -10 %); 128 MiB = 23 + (128 + 16 fill) MiB / (370.8 GB/s x .85
    # x 7/8 = 275.8 GB/s) = 570.5 us (measured 586.3, busbw +2.8 %). Below one loop (16 x 8 x 16 KiB = 2
    # MiB) 2.18's kernel fills channel 0 first (nvls.nvls_channel_load_bytes): 16 KiB loads it as 256 KiB
    # spread would, 23 + 3 x 256 KiB / 275.8 GB/s = 25.9 us (measured 30.2, -14.2 %), 128 KiB-1 MiB load it
    # as the full loop, 45.8 us (measured 42.0-43.0, +7..+9 %). 64 KiB: see MISSED
    "20 H100 NVLS 2.18.5": Table(
        C20,
        1,
        nvswitch_node("h100-sxm", 8),
        ((KiB, 32 * KiB), (128 * KiB, 4 * MiB)),
        ((8 * MiB, 8 * 2**30),),
        (("nccl_version", "2.18.5"), ("env", {"NCCL_ALGO": "NVLS"})),
    ),
    # case_20 [S3]: 8 x H200 one VM, NCCL_ALGO=NVLS, NCCL 2.20.5 (NVLS latency 0 + 23 us hwLat from 2.19):
    # 1 MiB = 23 + 11.4 us = 34.4 us (measured 34.6); 8 GiB = 23 + (8 GiB + 16 MiB) / 275.8 GB/s
    # = 31292 us (measured 31319, busbw +0.1 %). 1-256 KiB: see MISSED
    "20 H200 NVLS 2.20.5": Table(
        C20,
        2,
        nvswitch_node("h200-sxm", 8),
        ((512 * KiB, 4 * MiB),),
        ((8 * MiB, 8 * 2**30),),
        (("nccl_version", "2.20.5"), ("env", {"NCCL_ALGO": "NVLS"})),
    ),
    # case_20 [S4]: a GB200 tray's 4 GPUs, NCCL_ALGO=Ring, NCCL 2.25.1: ring/Simple at NCCL's Blackwell
    # NVLink figure, 18 x 40.1 GB/s = 721.8 GB/s (topo.h SM100_NVLINK_BW, NVIDIA/nccl#1807), algbw 721.8 x
    # 4/6 = 481.2 GB/s: 8 GiB = (8.4 + 6 x 3.4) us + 8 GiB / 481.2 GB/s = 17880 us (measured 18959, busbw
    # +6.0 %). 8 MiB (ring/LL128, +11.9 %) and 64 MiB (+8.6 %) pass between missed sizes: see MISSED
    "20 GB200 tray ring 2.25.1": Table(
        C20,
        3,
        nvswitch_node("gb200", 4),
        (),
        ((8 * MiB, 8 * MiB), (64 * MiB, 64 * MiB), (2 * 2**30, 8 * 2**30)),
        (("nccl_version", "2.25.1"), ("env", {"NCCL_ALGO": "Ring"})),
    ),
    # case_20 [S1]: 8 x A100 SXM4 80GB one VM, NCCL 2.18.5, labelled NVLS (the script's default). A100 has
    # no NVLS, and 2.18.5 then has no algorithm (enqueue.cc getAlgoInfo: "no algorithm/protocol
    # available", which the model repeats: tests/collectives/test_nvls_latency.py), so what ran is not
    # NCCL_ALGO=NVLS on 2.18.5; ring is what every reading leaves (2.19-2.23's ring backup, or Ring
    # forced), and from 256 MiB ring runs Simple under any of them. Asserted there, as NCCL_ALGO=Ring:
    # ring/Simple at 12 x 20 GB/s = 240 GB/s, algbw 240 x 8/14 = 137.1 GB/s: 8 GiB = (8.4 + 14 x 3.4) us
    # + 8 GiB / 137.1 GB/s = 62691 us (measured 64912, busbw +3.5 %). Below 256 MiB: see MISSED
    "20 A100 as ring 2.18.5": Table(
        C20,
        0,
        nvswitch_node("a100-sxm-80gb", 8),
        (),
        ((256 * MiB, 8 * 2**30),),
        (("nccl_version", "2.18.5"), ("env", {"NCCL_ALGO": "Ring"})),
    ),
    # case_31 [S1] (hpc-ai-envs PR #30): 8 x MI300X, rccl-tests, one 8 MB row
    "31 MI300X": Table(C31, 0, mi300x_node(), (), ((8 * MiB, 8 * MiB),)),
}

#: Points no sourced mechanism reaches yet (measured, predicted, what is missing); not asserted.
MISSED = {
    "03 T1 2 nodes, 4 MiB": "newest tables: time 94.4 vs 117.9 us (+25 %), NVLS-tree/Simple (66.8 us latency "
    "+ 2 loops of fill), which NCCL 2.30's tuner prices at 83.8 us against tree/LL128's 84.2: tuning.cc "
    "(2.18.1 to 2.30) caps the tree at graphs[TREE]->nChannels x perChMaxTreeLL128Bw, the 8 ring-graph "
    "channels x 36.7 = 293.6 GB/s busBw (tiers.tree_graph_cap), not the 16 communicator channels the model "
    "counted before (tree/LL128 81.3 us then, -14 %). As logged (2.26.2: NVLS-tree at 25 + 2 x 14 us) the "
    "row is asserted in '03 T1 2 nodes, 2.26.2'",
    "03 T1 2 nodes, 8 MiB": "newest tables: busbw 118.6 vs 93.1 (time 132.6 vs 169.0 us, +27 %): NVLS-tree "
    "at 25 + 2 x 20.9 us plus the 2-loop fill (nvls.nvls_fill_bytes, 2 x S at one loop); reporter A's nodes "
    "fill ~1 loop at one loop, reporter B's (T4) 1.5 (its 8 MiB, 151.6 us, is asserted). As logged (2.26.2: "
    "25 + 2 x 14 us) 155.2 us, busbw -14.6 %: asserted in '03 T1 2 nodes, 2.26.2'",
    "03 T1/T2 2 and 4 nodes, 512 B": "time 32.4/56.4 us vs 25.6/36.0 us (-21/-36 %): out-of-place stalls "
    "right after the 256 B one (94.4/107.5 us); the in-place halves, 26.3/36.7 us, are within 3 % of the "
    "model",
    "03 T1 2 nodes, 512 KiB-1 MiB": "newest tables: time 77.7/71.9 us vs 54.5/60.4 us (-30/-16 %; in-place "
    "70.3/71.5), tree/LL128, as NCCL 2.30's tuner keeps it to 2 MiB; as logged (2.26.2) 1 MiB is NVLS-tree, "
    "65.8 us (-9 %, asserted), and 512 KiB stays tree/LL128 (NVLS-tree 53 + 1.9 us in the tuner's eyes vs "
    "tree/LL128 54.5 us): the measured step of ~23 us at 512 KiB, the shape of NVLS-tree's latency, "
    "is NVLS-tree picked one size earlier than either table set picks it. 2.26.2's tuning.cc gives no "
    "other reading: LL128 is on by default for sm90 with NVLink (NCCL_PROTO unset), tree LL128 is busBw x "
    "120/128 under nChannels x perChMaxTreeLL128Bw with treeCorrectionFactor .6 at 512 KiB (logSize 13), "
    "all in the model; its NVLS-tree term on 2 nodes (8 heads x min(bwIntra, bwInter <= 48 GB/s) x 5/6 "
    "<= 320 GB/s, see '03 T2 ... >= 1 GiB') prices 512 KiB at >= 53 + 1.6 us, still above tree/LL128. "
    "The out-of-place column cannot place this switch (as it does T2's at 2 MiB and T3/T6's at 8 MiB, "
    "see '03 T6 ...'): the 16 GiB warm-up already ran NVLS-tree, so its first call costs no connection "
    "(512 KiB out of place 77.7 vs 70.3 us in place, 1 MiB 71.9 vs 71.5)",
    "03 T2 4 nodes, 2-4 MiB": "time 191/151 us vs 95.6/110.7 us (-50/-27 %): tree/LL128 under its graph's "
    "8 channels x 29.0 GB/s (tiers.tree_graph_cap; 87/98 us on the 16 communicator channels), as "
    "2.26.2's tuner picks too (LL128 is on by default on sm90 with NVLink and NIC paths <= PXN, "
    "tuning.cc; tree LL128 busBw x 120/128 capped per channel, treeCorrectionFactor .6/.8 at 2/4 MiB). The "
    "measured 4 MiB (151.1 us; 2 MiB in place 132.2, out of place 191.3 > the 4 MiB time) is NVLS-tree's "
    "cost (148.0 us forced), i.e. NCCL switched to NVLS-tree by 4 MiB: its tuner would need > 242 GB/s "
    "algbw for NVLS-tree to beat tree/LL128 there, above the <= 160 GB/s its own NVLS-tree term gives on "
    "8 NICs (see '>= 1 GiB'); forcing NCCL_PROTO=^LL128 instead breaks the asserted 256 KiB-1 MiB "
    "latencies (NVLS-tree 85-98 us vs 68-82 measured). The 2 MiB out-of-place time places the switch at 2 "
    "MiB: nccl-tests warms up at 16 GiB and 8 B, and NCCL 2.26.2 connects an algorithm on its first call "
    "(see '03 T6 ...'), so 191.3 vs 132.2 us in place (~1.2 ms once over 20 iterations) is NVLS-tree's "
    "first call (2 MiB in place 132.2 vs NVLS-tree 114.5, ring/LL128 155.6, 2.26.2 tables), and the 16 "
    "GiB warm-up ran another algorithm (ring, as '>= 1 GiB' reads 2.26.2's tuner). NCCL's tree cap per "
    "search-graph channel (tuning.cc 2.18.1 to 2.30: busBw = min(busBw x .92, graphs[TREE]->nChannels x "
    "perChMaxTreeBw), LL128 min(x 120/128, nChannels x perChMaxTreeLL128Bw); 8 graph channels here, 8 x "
    "45 GB/s, ncclTopoDupChannels keeps 8 below 50 GB/s) is applied, to the tuner and the run alike "
    "(tiers.tree_graph_cap): tree/LL128 <= 8 x 29 = 232 GB/s bus beyond 2 nodes (8 x 36.7 = 293.6 on 2). "
    "Applied to the tuner alone it broke test_transport_env's invariant (a default mispick slower than "
    "NCCL_NET_GDR_LEVEL=LOC); applied to both, T2 newest 16 MiB comes within tolerance (asserted), and "
    "the newest tables pick NVLS-tree at T1's 4 MiB (see '03 T1 2 nodes, 4 MiB')",
    "03 T2 4 nodes, 8 MiB": "newest tables: busbw 74.8 vs 111.4 (tree/LL128, +49 %; 131.3 before the "
    "tree's graph cap, tiers.tree_graph_cap): NCCL 2.30's tuner keeps tree/LL128 (NVLS-tree at 25 + 4 x "
    "20.9 us and under its ceiling), and picks NVLS-tree from 16 MiB (asserted: 113.2 vs 125.2); as logged "
    "(2.26.2: 25 + 4 x 14 us, no ceiling in its tuner) NVLS-tree, 215.0/259.6 us vs 217.3/259.6 measured: "
    "asserted in '03 T2 4 nodes, 2.26.2'",
    "03 T2 4 nodes as logged (2.26.2), 128-256 MiB": "busbw 262.5/294.2 vs 293.9/325.2 (+12/+11 %; newest "
    "tables +9/+9 %, asserted): after 81 us at 187.9 GB/s the run spends beyond the model's 16 MiB fill "
    "(2 loops of 16 x 8 x 64 KiB) 0 us at 8-16 MiB, 27/52/106/169 us at 32-256 MiB, 81 us at 512 MiB and "
    "nothing from 1 GiB: a hump on these VMs (NCCL_TOPO_FILE) that no NCCL fact explains. Not a size ramp "
    "in 2.26.2's enqueue.cc: getAlgoInfo sets nc = comm->nvlsChannels for NVLS/NVLS-tree at every size "
    "(the ring/tree 'nc--' channel reduction skips them), and calcCollChunking's NVLS-tree chunk from 4 "
    "nodes is min(nvlsChunkSize, 64 KiB) (NVLSTREE_MAX_CHUNKSIZE default -2), shrunk only below 1 x 16 x 8 "
    "x 64 KiB = 8 MiB; nLoops = ceil(S / 8 MiB) only grows with S. 2.28.9 raised "
    "NVLS-tree's NET latency from 14 to 20.9 us in tuning.cc alone (no kernel change); with it 128-256 MiB "
    "would pass and T1 2-4 MiB fail (+21/+25 %), so each table set keeps its own release's figure",
    "03 T2 4 nodes as logged (2.26.2), >= 1 GiB": "asserted (ring, +2.1..+7.0 %; forced NVLS-tree would "
    "be -0.6..-1.3 %), not moved to NVLS-tree: 2.26.2's tuning.cc prices NVLS-tree, term by term, as "
    "algbw = nChannels x min(bwIntra, bwInter / 2 beyond 2 nodes) x 5/6 (its bus-to-alg ratio for "
    "NVLS/NVLS-tree; ring's is nRanks / nsteps = 32/62), latency 25 + 2 log2(4) x 14 us: with the NVLS "
    "graph's 8 heads at <= 48 GB/s (sm90SpeedArrayInter) that is <= 160 GB/s, against ring's 8 x 45 GB/s "
    "search graph x 32/62 = 186 GB/s, so 2.26.2 itself runs ring at these sizes unless the VMs' ring graph "
    "is below 310 GB/s bus. Applying the 5/6 term to the model's NVLS-tree tuner figure picks tree/LL128 at "
    "8-16 MiB (+76/+43 %, measured there matches NVLS-tree to 1 %) and ring from 128 MiB (+15/+12 %): it "
    "breaks asserted points and fixes none, so the tuner stays as it is. The 365 plateau is also what a "
    "ring on the default 16 channels would give if it lost 7 % to T7's 24 CTAs x 2 QPs (392.7, the "
    "maintainer: NCCL_MIN_CTAS=24 'may push above 380'); no case measures default-channel ring at 4 nodes",
    "20 H100 NVLS 2.18.5, 64 KiB": "time 42.2 us vs 34.4 us (-18.5 %; busbw +22.5 %). 2.18.5's kernel "
    "(src/collectives/device/all_reduce.h NVLS Simple: offset = gridOffset + bid x nHeads x chunkSize) fills "
    "a partial loop channel by channel, 16 KiB per head below 8 MiB (enqueue.cc computeColl: maxChunkSize "
    "131072, shrunk to 16 KiB while nBytes < 2 x 16 x 8 x 32 KiB), so 16 KiB-2 MiB load channel 0 with "
    "16-128 KiB, priced as that load spread over all 16 channels (nvls.nvls_channel_load_bytes; 16-32 KiB "
    "and 128 KiB-1 MiB pass, asserted). Measured, the busiest channel's time is not its bytes alone: 64 KiB "
    "(4 heads x 16 KiB on channel 0) takes 42.2 us, as long as 128 KiB (8 heads) at 42.5, while 2.20.5 on "
    "H200, which spreads the same 1 MiB as 64 KiB per channel and 8 KiB per head (all_reduce.h "
    "work->oneNode, lastChunkCount = rest / nHeads, new in 2.20.3), takes 34.6 us, the model's 34.4: the "
    "step with 16 KiB chunks on 4 heads is no per-byte term. 2.18.5 runs all 16 CTAs at every size "
    "(getAlgoInfo: nc = comm->nvlsChannels = NCCL_NVLS_NCHANNELS 16, nvls.cc), empty slices still wait "
    "and post (prims_simple.h genericOp), so the idle channels add no size dependence",
    "20 H200 NVLS 2.20.5, 1-256 KiB": "time 29.9-31.2 us vs 23.0-25.9 us (-17..-23 %; busbw +20..+35 %): "
    "2.20.5's tuner prices NVLS at hwLat[NVLINK][NVLS][Simple] = 23 us (baseLat 0; tuning.cc, "
    "latencies = intraLat on one node); the measured floor is ~30 us flat to 512 KiB (asserted from 512 "
    "KiB, where the bandwidth term joins). No 2.20.5 fact adds the ~7 us. Checked: 2.20.5 enqueue.cc "
    "spreads S over countPerChannels = S / 16 rounded up to NCCL_SIMPLE_ALIGNMENT (enqueue.h, 32 x 8 x 16 "
    "= 4 KiB) and launches only the channels that get work (nChannels = DIVUP(count, countPerChannels)): "
    "1 channel at 1-4 KiB, all 16 from 64 KiB, while the measured floor stays flat (29.9-31.2 us) across "
    "that range, so the extra time is no per-channel cost; its last loop's chunk is rest / nHeads "
    "(computeCollLastChunkInfo). 2.18.5 on H100 (channel-first kernel, all 16 CTAs, see '20 H100 ... 64 "
    "KiB') measures 25.6 us at 1 KiB against the same 23 us tuner figure. The runs are one process driving "
    "all 8 GPUs ([S5]: all_reduce_perf ... -g <num_gpus>), so the host's launch floor (engines/"
    "host_launch.py, max(t_device, 8 x t_launch)) applies; it gives the flat 29.9-31.2 us at 3.74-3.90 us "
    "per GPU, but no source gives this VM's (or 2.20.5's) launch cost: the sibling H100 VM's 2.18.5 run "
    "allows at most 25.6 / 8 = 3.2 us, and nccl-tests #123's DGX A100 figure (4.21 us: 33.7 us, +8..+13 "
    "% here) would put the asserted H100 1-32 KiB rows 12-32 % high. Nor can one figure per host CPU give "
    "both VMs: both are Xeon Platinum 8480C, and 2.18.5 and 2.20.5 make the same CUDA calls per GPU "
    "(group.cc doLaunches: cudaSetDevice before ncclLaunchPrepare, the launch and ncclLaunchFinish; "
    "enqueue.cc: one cudaLaunchKernelExC with the same cluster and mem-sync-domain attributes, and "
    "strongstream.cc ncclStrongStreamWaitStream's cudaEventRecord + cudaStreamWaitEvent into and out of "
    "the device stream), so a per-CPU cost of 3.74 us would raise the H100 1-8 KiB rows to 29.9 us "
    "(+11..+17 % over 25.6-27.0). What differs between the VMs (driver, CUDA runtime, the host-side plan "
    "building 2.19 rewrote in enqueue.cc) has no published cost",
    "20 GB200 tray ring 2.25.1, 1 KiB-4 MiB": "time 15.4-17.8 us (1-512 KiB), 19.5/28.5/43.0 us "
    "(1-4 MiB) vs ring/LL 10.4-13.0 and 15.8/21.4/32.5 us (busbw +24..+53 %): 2.25.1's tuner prices "
    "ring/LL at 6.6 + 6 x 0.6 = 10.2 us (tuning.cc baseLat/hwLat, the same Ring LL figures as Hopper) and "
    "LL at min(llMaxBw, busBw / 4); the tray measures ~5 us more per call and an LL slope of ~134 GB/s "
    "algbw (1-4 MiB) against the model's 188: LL at 2.25.1's Blackwell llMaxBw, 2 x Hopper's 141 = 282 GB/s "
    "busbw on one node (tuning.cc llMaxBws, the same row through 2.30.7), over the tray's 32 ring channels "
    "(8.8 GB/s each); no release tabulates a measured Blackwell LL figure to bound the kernel with. The "
    "run is one process on 4 GPUs (-g 4): the host launch floor (engines/host_launch.py) at 3.9-4.5 us "
    "per GPU would give the 1-512 KiB floor, but the Grace host's figure is not published. Checked: the "
    "one public Grace launch figure found, meta-pytorch/tritonbench PR #1017 (GB200: cuLaunchKernel "
    "called through ctypes 3.0/3.3 us with 0/19 arguments, ~1.3 us quoted for the bare call), times the "
    "driver call alone, while 2.25.1's per-GPU host path adds three cudaSetDevice, up to two "
    "cudaEventRecord + cudaStreamWaitEvent pairs and the work upload (group.cc doLaunches, enqueue.cc "
    "ncclLaunchPrepare / ncclLaunchFinish, strongstream.cc), none timed on Grace; so 4 x 1.3-3.3 = "
    "5.2-13.2 us bounds the floor from below only (measured 15.4-17.8 us) and is not taken",
    "20 GB200 tray ring 2.25.1, 16 MiB-1 GiB": "busbw 331/423/551/574/594/619/647 vs 398/511/598/654/"
    "686/704/713 (+20/+21/+9/+14/+16/+14/+10 %; 64 MiB passes, asserted): ring/LL128 then ring/Simple at "
    "NCCL's 18 x 40.1 = 721.8 GB/s (topo.h SM100_NVLINK_BW, the bound the case names); the measured ramp "
    "reaches 680 only at 8 GiB (-6 % of the model, asserted), a slower approach than ring/Simple's 28.8 "
    "us latency gives: the measured busbw of each size step rises with size, 600 (64->128 MiB), 614, 646, "
    "678, 688 (1->2 GiB), 680, 686 (4->8 GiB), which no size-independent latency gives. No 2.25.1 chunking "
    "or channel fact found for it (getAlgoInfo's ring channel reduction stops at nc x nt x "
    "threadThreshold, far below 16 MiB; calcCollChunking leaves ring/Simple's chunk alone); the later "
    "releases' measured Blackwell ring LL128 per-channel caps (34.5 GB/s on 2.29.2, 40 on 2.30.3, 73.4 "
    "before) do not bind the tray's 32 channels at 8-16 MiB (32 x 34.5 = 1104 > 0.92 x 721.8). Also "
    "checked in 2.25.1: P2P read is Ampere-only (paths.cc ncclTopoCheckP2p: read = 1 only when both "
    "GPUs' cudaCompCap == 80; p2p.cc NCCL_P2P_READ_ENABLE default -2 keeps it), so the tray's rings write; "
    "ring/Simple's chunk is stepSize x chunkSteps = 4 MiB / 8 x 4 = 2 MiB (calcCollChunking leaves it), a "
    "loop 32 x 4 x 2 MiB = 256 MiB, and runRing (all_reduce.h) shrinks a partial loop's chunk to rest / "
    "nranks on every channel. A per-loop cost (nLoops x 2(n-1) steps) would keep the marginal rate "
    "constant beyond 256 MiB, yet the measured per-doubling busbw keeps rising past it (646 for 256->512 "
    "MiB, 678, 688 for 1->2 GiB); at 16 MiB a 2-slice step (SlicePerChunk = 4/2) moves 64 KiB slices, "
    "2.9 us each at 721.8/32 GB/s per channel, so a handshake up to a slice's time hides behind the other "
    "slice (per step max(2 t, t + L)): no pipelining term slows the 16-256 MiB single loops either. "
    "Rechecked against v2.25.1-v2.29.7 (enqueue.cc scheduleCollTasksToPlan: the cell split gives each of "
    "the 32 channels 2S/32 of traffic in 8 KiB cells, calcCollChunking per channel shrinks no ring chunk; "
    "search.cc sm100SpeedArrayIntra starts at 90 GB/s: 8 x 90 doubled to 16 x 45 graph channels, 32 "
    "communicator channels, as the model has them). In time the miss is what Hopper's 4-rank rings show "
    "inside the bar: t_measured - t_model = 14.5/42.9/91.8/157/230 us at 64 MiB-1 GiB here, 25.6/46.0/66.7/"
    "111/139 us on 4 x H100 (test_cases_public_node2.py 'wh H100 x4', asserted at +5..+9 %), the same "
    "microseconds over half the bandwidth term (721.8 against 370.5 GB/s); up to 256 MiB it follows one "
    "chunk of each channel (C / (B / nc), C = S / (nc x n) up to 2 MiB: 23.3/46.6/93.1 us), which would "
    "put 64-512 MiB at -4.6/-1.0/-0.2/+5.2 % and center the Hopper and MI300X mid sizes too, but runRing's "
    "2(n-1) sends overlap across ranks with no such fill in the source, and it takes Aliyun MI355X 64/128 "
    "MiB (test_cases_public_node5.py) to -12.0/-10.1 %: not taken",
    "20 A100 labelled NVLS 2.18.5, 1 KiB-128 MiB": "not the run the file labels: 2.18.5 has no algorithm "
    "for NCCL_ALGO=NVLS on A100 (enqueue.cc: 'no algorithm/protocol available'; refused by the model), "
    "and 2.19-2.23's ring backup would run ring/LL at small sizes (15.5 us at 1 KiB). Measured: a 42-45 "
    "us floor from 1 to 256 KiB (busbw 0.04-10.1), Simple's shape, yet below ring/Simple's 8.4 + 14 x 3.4 "
    "= 56.0 us; 4-128 MiB busbw 71-174 vs ring's 99-227 (+29..+55 %). What ran (release, protocol) is "
    "not printed [S1]; from 256 MiB every reading is ring/Simple (asserted). 2.18.5's tuner prices 4-128 "
    "MiB as the model does (tests/collectives/test_ring_ll128_tuner.py): the ramp below it is the A100's, "
    "the same in dkh's and thanos's logs (MISSED in test_cases_public_node10.py)",
    "03 T3/T5 reporter B, 4-8 nodes": "busbw ~320-325 at >= 2 GiB vs 379-390 (+17..+20 %): the maintainers "
    "attribute it to that fabric (adaptive routing, QPs); no fabric fact in the case to model it. The "
    "model's tree/Simple (double binary tree, 2 S per direction through an inner node's NICs) forced gives "
    "the plateaus within +0.7..+1.6 % (T5 >= 1 GiB) and +4.0..+4.4 % (T3 >= 2 GiB), but is not adopted: "
    "no recorded release's tuner picks tree there (NVLS-tree or ring at >= 1 GiB on 4 and 8 nodes, 2.18.1 "
    "to 2.30.3), T4 (same reporter, 2 nodes) is NVLS-tree to 2 % from 16 MiB, and T6 picks as T3 does "
    "(see '03 T6 ...') yet reaches 385-391 at >= 2 GiB, at tree's own NIC bound (8 x 49.15 / 2 GB/s algbw "
    "= 387 busbw), where ring is at 98-99 % of its 393 (T7: 392.7)",
    "03 T4 2 nodes, 1-2 MiB": "time 93.3/94.2 us vs 60.4/72.3 us (-35/-23 %), tree/LL128 "
    "as NCCL 2.30's tuner keeps it to 2 MiB; NVLS-tree forced gives 79.6/92.4 us (-15/-2 %): "
    "reporter B's NCCL, like reporter A's (see '03 T1 2 nodes, 512 KiB-1 MiB'), runs NVLS-tree from 1 MiB, "
    "which the newest tables' tuner does not pick there; T4's log names no release to predict it as logged. "
    "tuning.cc's per-graph-channel tree cap (see '03 T2 4 nodes, 2-4 MiB') picks NVLS-tree at 4 MiB "
    "(117.9 us, +6 %, asserted) but not at 1-2 MiB",
    "03 T6 8 nodes, 8-512 MiB": "busbw 18.6/64.7/106.3/148.2/189.4/240.3/273.2 (8 MiB-512 MiB) vs "
    "117/166/209/219/273/312/336 predicted (tree/LL128 to 32 MiB, then NVLS-tree; +23..+531 %), then 374.8 "
    "at 1 GiB (model 349, asserted); 8 MiB out of place is the one-off dip the case names (889 us vs 391 in "
    "place). No algorithm pick reaches it: each forced (newest tables, 8 MiB in place) over-predicts at "
    "every size, NVLS-tree +37/+54/+47/+48/+44/+30/+23 %, ring +19/+37/+33/+38/+38/+26/+21 %, tree "
    "+178/+156/+97/+62/+51/+25/+17 %. The measured 16-512 MiB is 449 us + S / 155.6 GB/s (least squares, "
    "residuals <= 84 us; T3, defaults: 315 us + S / 166.5 GB/s, <= 38 us), model NVLS-tree 241 us + S / "
    "185 GB/s: a bandwidth shortfall (excess 179..724 us growing with S), not a fixed or partial-loop term "
    "(a partial loop costs at most one loop, 16 x 8 x 64 KiB / 185 GB/s = 45 us, already in the model's "
    "2-loop fill; a ring's 8-512 MiB is one partial loop, all_reduce.h runRing shrinks chunkCount to "
    "S / (nChannels x 64) under its 2 MiB Simple chunk = 4 MiB / NCCL_STEPS x ALLREDUCE_CHUNKSTEPS, loop "
    "16 x 64 x 2 MiB = 2 GiB (3 GiB on T6's 24 channels), so its 126 steps are the ones tuning.cc already "
    "charges: 8.4 + 112 x 3.4 + 14 x 14 = 585 us Simple on Intel hosts, 14 + 112 x 1.9 + 14 x 4 = 282.8 us "
    "LL128). Where NCCL switches (2.26.2 source; T3/T6's log names no release): "
    "nccl-tests (src/common.cu TimeTest) warms up at -e (8 GiB) then -b (1 MiB) and runs each size "
    "out of place first, and NCCL connects an algorithm's channels on its first call (init.cc "
    "NCCL_RUNTIME_CONNECT default 1; enqueue.cc ncclPrepareTasks, initAlgoChannels[algorithm]), so the "
    "8 MiB dip (T3 1272.4 vs 321.4 us, T6 889.1 vs 391.0: ~19 / ~10 ms once over 20 iterations) is the "
    "first call of an algorithm neither warm-up ran (tuning.cc's per-graph-channel tree cap, see '03 T2 4 "
    "nodes, 2-4 MiB', puts 2.26.2's switch to NVLS-tree there, the newest tables' at 16 MiB; the times "
    "stay as forced above), and the 1 GiB step (no dip) returns to the 8 GiB "
    "warm-up's algorithm. T3 and T6 pick alike: tuning.cc prices each algorithm from graphs[a]->nChannels "
    "x bw, and NCCL_MIN_CTAS / NCCL_IB_QPS_PER_CONNECTION reach only comm->nChannels (connect.cc, "
    "max(NCCL_MIN_NCHANNELS, minCTAs)), comm->nvlsChannels and the transport, used after the pick "
    "(enqueue.cc topoGetAlgoInfo nc) and in ring/Simple's plateau test (tuning.cc ncclTopoGetAlgoTime, "
    "met at every size >= 1 MiB); yet "
    "T6/T3 time is 1.35/1.22/1.24/1.20/1.12/1.10 at 16-512 MiB and 0.77-0.83 from 1 GiB. NCCL_MIN_CTAS=24 "
    "raises nvlsChannels to max(minCTAs, min(maxCTAs, 16)) = 24 (transport/nvls.cc): the fill grows to "
    "2 x 24 x 8 x 64 KiB = 24 MiB, +45 us, leaving NVLS-tree +35/+33/+37/+38/+27/+21 % at 16-512 MiB; "
    "out of place and in place agree within 7 % at 16-512 MiB. Missing: what 24 CTAs x 2 QPs cost the "
    "mid sizes on this fabric (no release fact prices it)",
    "03 T7 2 nodes ring, 1-16 MiB": "157 us at 1 MiB vs 81 us (ring/LL128): reporter B's per-call floor. "
    "NCCL_MIN_CTAS=24 only raises the communicator's channels to >= 24 (connect.cc: max(NCCL_MIN_NCHANNELS, "
    "minCTAs)); expressed as NCCL_MIN_NCHANNELS=24 it leaves every 1-16 MiB prediction unchanged",
    "13 V100, 256 KiB-2 MiB": "time 65-299 us vs 82-357 us (+19..+43 %): the tuner's choice is already "
    "the least time (Simple 81.9 us vs LL 91.2 us at 256 KiB); the measured Simple latency (~10 us at "
    "512 KiB-2 MiB, busbw 9.3-10.5 GB/s above the 9.4 plateau) is far below NCCL's 8.4 + 6 x 5.7 us PCI "
    "model, and channel reduction does not touch a PCIe-bound ring. NCCL 2.8.3's own tables (the log's "
    "release, not recorded) have the same ring Simple PCI figures (v2.8.3 tuning.cc baseLat/hwLat) and a "
    "ring LL base of 3.6 us for 6.6: 3.6 + 6 x 1.0 = 9.6 us at 8 B against 13.4 measured (-28 %), so they "
    "close nothing here and break the asserted latency floor",
}


def _measured(t: Table) -> tuple[str, list[tuple[int, Any]]]:
    """(collective, [(size, measured point)]) of a table: nccl-tests rows (out of place), or case 20's
    busbw-only all_reduce sweeps (in place), their time S / algbw with algbw = busbw x n / (2 (n - 1))."""
    if t.case != C20:
        table = _tables(t.case)[t.index]
        return table.collective, [(row.size_bytes, row.out_of_place) for row in table.rows]
    n = t.spec.n_gpus
    sweep = _md_sweeps(t.case)[t.index]
    return "all_reduce", [(s, Point(s / (bw * n / (2 * (n - 1))), bw)) for s, bw in sweep]


def _rows() -> list[Any]:
    out = []
    for key, t in TABLES.items():
        collective, points = _measured(t)
        for size, m in points:
            assert m is not None
            lat = any(lo <= size <= hi for lo, hi in t.latency_sizes)
            bw = any(lo <= size <= hi for lo, hi in t.bandwidth_sizes)
            if lat or bw:
                out.append(pytest.param(key, collective, size, m, lat, id=f"{key} {size} B"))
    return out


@pytest.mark.parametrize("key,collective,size,measured,latency", _rows())
def test_case_point(key: str, collective: str, size: int, measured: Any, latency: bool) -> None:
    t = TABLES[key]
    r = formula_collective(collective, size, t.spec, **dict(t.options))
    if latency:
        assert r.time_s == pytest.approx(measured.time_s, rel=0.15)
    else:
        tol = 0.10 if size >= 64 * MiB else 0.15
        assert r.busbw_bytes_per_s == pytest.approx(measured.busbw_bytes_per_s, rel=tol)


def test_every_table_is_read() -> None:
    # The copied files hold the tables the rows cite (a parser change must not drop one silently).
    assert [len(_tables(c)) for c in (C01, C03, C13, C31)] == [1, 7, 3, 1]
    # case 20: four markdown sweeps of 24 sizes each, 1 KiB-8 GiB, every label a distinct power of two
    assert [[s for s, _ in sweep] for sweep in _md_sweeps(C20)] == [[2**k for k in range(10, 34)]] * 4
    assert len(_rows()) >= 189
