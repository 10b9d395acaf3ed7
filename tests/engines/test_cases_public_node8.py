"""The formula engine against an eighth set of public single-node results, none among the shared cases nor
the sets before it (test_cases_public_node.py .. ..._node7.py, test_cases_public_alltoall.py): two runs of
a 4 x B300 board and one of all 8 B300 on NCCL 2.29.3/2.29.7, every collective of a PyTorch stress run on
the same board, and every collective of an 8 x B200 HGX node on NCCL 2.29.3; an 8 x RTX PRO 6000 Blackwell
PCIe host on two AMD Turin sockets is recorded as misses.

Each point is one row of a public log about ONE node whose hardware is stated; the comment gives the source
and the quoted figures. Tolerance, the blind check's bar: 10 % on busbw at >= 64 MiB, 15 % at mid sizes (8-512
MiB) and 15 % on time at small sizes. No constant was set from these sources. Where a log prints a release
the catalogue lacks (2.29.3), the model runs the newest recorded tables, the project's default. "16 GB" rows
are nccl-tests' ``-e 16G``, 16 GiB. Points the model misses are in ``MISSED`` (measured, predicted, what is
missing); not asserted.
"""

from __future__ import annotations

import pytest
from tests.engines.test_cases_public_node import hgx, one_node
from tests.engines.test_cases_public_node3 import _rows  # one table's rows as Points
from tests.engines.test_cases_public_node4 import LAUNCH_S_PER_GPU
from tests.engines.test_cases_public_node7 import B300_X4, N2297

from aifabric.cluster.spec import ClusterSpec
from aifabric.engines.formula import formula_collective

MiB = 2**20
GiB = 2**30

B300_REPORT_2297 = (
    "GitHub file, search-index id 52808585476: 'NVIDIA B300 SXM6 - Full Benchmark & Evaluation Report' "
    "(2026-03-16, host b301, 8 x NVIDIA B300 SXM6 AC), section 4: mpirun -np 4 ./build/all_reduce_perf "
    "-b 1M -e 1G -f 2 -g 1 on GPUs 4-7, 'nccl-tests version 2.18.2 nccl-headers=22907 nccl-library=22907'"
)
B300_REPORT_2293 = (
    "GitHub file, search-index id 52614082329: a later revision of the same report (runs of 2026-03-17, NCCL "
    "2.29.3 of the pt-nightly-cu130 env): section 4 (4 ranks on GPUs 4-7, 'nccl-library=22903', 1 MB-4 GB, "
    "20 iters + 5 warmup), section 4c.1 (all_reduce_perf -b 1M -e 8G -f 2 -g 8 -n 20 -w 5 on GPUs 0-7) and "
    "section 4b (PyTorch benchmarks/nvlink_stress_b300.py, BF16, 4 ranks, NCCL_ALGO=Ring, "
    "NCCL_MAX_NCHANNELS=32, NCCL_BUFFSIZE=16 MiB)"
)
AICR = "https://github.com/mghpcc/aicr-benchmarks/blob/main/Benchmark_WG/nccl-tests/"
AICR_B200 = (
    AICR
    + "results_b200.md, Table 1 (AICR B200 cluster, MGHPCC): node b0027, 8 x B200 on NVLink 5 / NVSwitch, "
    "out-1node/nvhpc-26.3-b0027-9175, converged at 16 GB (the largest size, best of out-of-place / "
    "in-place); nccl-tests 2.18.3 and NCCL 2.29.3 ('AICR reports nccl-library=22903', inter-node-nccl.md "
    "of the same folder)"
)
AICR_RTX6K = (
    AICR
    + "results_a0007_postfw.md: 8 x RTX PRO 6000 Blackwell Server Edition, no NVLink, PCIe Gen5 x16 each, "
    "2 x AMD EPYC Turin NPS=4, GPUs 0-3 on socket 0 and 4-7 on socket 1, every pair SYS in nvidia-smi topo; "
    "NCCL 2.29.3, nccl-tests 2.18.3, NCCL_NVLS_ENABLE=0; converged 16 GB rows, Tables 1-3 with "
    "NCCL_P2P_LEVEL=SYS and the 'NCCL defaults' column; results_rtx6000.md of the same folder (node a0001, 2 "
    "GPUs; node a0008, 4 GPUs, defaults)"
)

#: all 8 B300 of the HGX B300 board (catalogue b300: 18 NVLink 5 links, NVSwitch with NVLS)
B300_X8 = hgx("b300")
#: 8 x B200 of an HGX board on NVSwitch
B200_X8 = hgx("b200")
#: one host thread driving 8 GPUs (-g 8), at nccl-tests #123's per-GPU launch cost
ONE_THREAD_8 = (("gpus_per_thread", 8), ("launch_s_per_gpu", LAUNCH_S_PER_GPU))
#: the PyTorch stress run's settings the model takes (NCCL_BUFFSIZE is not a modelled variable; 16 MiB
#: buffers change the Simple chunk, not a plateau set by the links)
TORCH_RING = (("env", {"NCCL_ALGO": "Ring", "NCCL_MAX_NCHANNELS": "32"}),)


def rtx6k_turin(gpus: int, cpu_nodes: int = 1) -> ClusterSpec:
    """``gpus`` x RTX PRO 6000 Blackwell (PCIe Gen5 x16) whose peer traffic crosses the AMD CPU (every pair
    SYS), the a0007 host of ``AICR_RTX6K`` (its rows are in ``MISSED``); NCCL's default P2P level allows that
    path on AMD hosts of at most two GPUs (paths.cc ncclTopoCheckP2p, from 2.23), NCCL_P2P_LEVEL=SYS on
    any. ``cpu_nodes``: the CPU nodes NCCL sees under them (``cpu_sockets``; a NUMA node each at NPS=4)."""
    pcie = {"kind": "pcie", "link": "pcie-gen5", "p2p_through_cpu": True}
    spec = one_node("rtx-pro-6000-blackwell", gpus, pcie, cpu_vendor="amd")
    return spec.with_changes(cpu_sockets=cpu_nodes, cpu="amd-epyc-turin")  # a Turin host (cpus.yaml)


POINTS = {
    # B300 report, section 4 (NCCL 2.29.7, 4 ranks), out-of-place busbw: "8 MB | 271.1", "64 MB | 554.0",
    # "1024 MB | 653.5" (-b 1M: MB = MiB): ring LL128/Simple/Simple 283.7/598.3/712.6 (+4.7/+8.0/+9.0 %)
    **_rows(
        "b300 x4 2.29.7",
        B300_REPORT_2297,
        B300_X4,
        "all_reduce",
        ((8 * MiB, 0, 271.1), (64 * MiB, 0, 554.0), (GiB, 0, 653.5)),
        N2297,
    ),
    # the revised report's section 4 (NCCL 2.29.3, 4 ranks): "64 MB | 363.14 | 544.7", "1 GB | 433.78 |
    # 650.7", "2 GB | 445.59 | 668.4", "4 GB | 452.09 | 678.1": ring/Simple 598.3/712.6/717.2/719.5
    # (+9.8/+9.5/+7.3/ +6.1 %)
    **_rows(
        "b300 x4 2.29.3",
        B300_REPORT_2293,
        B300_X4,
        "all_reduce",
        ((64 * MiB, 0, 544.7), (GiB, 0, 650.7), (2 * GiB, 0, 668.4), (4 * GiB, 0, 678.1)),
    ),
    # section 4c.1, all 8 B300 (-g 8, NCCL 2.29.3): "256 MB | 375.31 | 656.8", "1 GB | 419.38 | 733.9", "2 GB
    # | 467.61 | 818.3", "4 GB | 472.98 | 827.7", "8 GB | 477.20 | 835.1": NVLS 719.2/790.8/794.9/806.2/812.0
    # (+9.5/+7.7/-2.9/-2.6/-2.8 %)
    **_rows(
        "b300 x8 2.29.3",
        B300_REPORT_2293,
        B300_X8,
        "all_reduce",
        (
            (256 * MiB, 0, 656.8),
            (GiB, 0, 733.9),
            (2 * GiB, 0, 818.3),
            (4 * GiB, 0, 827.7),
            (8 * GiB, 0, 835.1),
        ),
        ONE_THREAD_8,
    ),
    # section 4b full sweep (PyTorch, 4 ranks, Ring), Broadcast "1024 | 649.0", "2048 | 654.2", "4096 |
    # 659.6" (bytes / t): chain/Simple 712.9/717.3/719.6 (+9.8/+9.6/+9.1 %); All-Reduce "4096 | 654.6":
    # ring/Simple 719.5 (+9.9 %)
    **_rows(
        "b300 x4 torch",
        B300_REPORT_2293,
        B300_X4,
        "broadcast",
        ((GiB, 0, 649.0), (2 * GiB, 0, 654.2), (4 * GiB, 0, 659.6)),
        TORCH_RING,
    ),
    **_rows("b300 x4 torch", B300_REPORT_2293, B300_X4, "all_reduce", ((4 * GiB, 0, 654.6),), TORCH_RING),
    # P2P BiDir (each rank sends to rank+1 and receives from rank-1, batch_isend_irecv, as sendrecv_perf),
    # "1024 | 1305.9", "2048 | 1335.6", "4096 | 1345.8", the script's bytes x 2 / t: nccl-tests' sendrecv
    # busbw (bytes / t) 652.95/667.8/672.9; p2p/Simple 716.1/718.9/720.4 (+9.7/+7.7/+7.1 %)
    **_rows(
        "b300 x4 torch",
        B300_REPORT_2293,
        B300_X4,
        "sendrecv",
        ((GiB, 0, 652.95), (2 * GiB, 0, 667.8), (4 * GiB, 0, 672.9)),
        TORCH_RING,
    ),
    # AICR B200 Table 1, busbw at 16 GB: sendrecv 666, reduce 701, broadcast 691, reduce_scatter 695,
    # all_gather 684, all_reduce 841, alltoall 675: p2p 721.4, chain 720.8/720.8, ring 720.7/720.7, NVLS
    # 814.9, direct 721.4 (+8.3/+2.8/+4.3/+3.7/+5.4/-3.1/+6.9 %)
    **{
        key: point
        for coll, bw in (
            ("sendrecv", 666.0),
            ("reduce", 701.0),
            ("broadcast", 691.0),
            ("reduce_scatter", 695.0),
            ("all_gather", 684.0),
            ("all_reduce", 841.0),
            ("alltoall", 675.0),
        )
        for key, point in _rows("aicr b200 x8", AICR_B200, B200_X8, coll, ((16 * GiB, 0, bw),)).items()
    },
}


@pytest.mark.parametrize("key", list(POINTS))
def test_public_node_point(key: str) -> None:
    assert abs(POINTS[key].relative_error()) <= POINTS[key].single_node_bar()


#: Public single-node rows the model misses (measured, predicted, what is missing); not asserted.
MISSED = {
    "4 x B300 (NCCL 2.29.7, 4 ranks), all_reduce busbw 1-4 MiB, 16-32 MiB and 128-512 MiB (B300 report s4)": (
        "1M 71.6 vs 99.7 (+39 %), 2M 115.4 vs 147.3 (+28 %), 4M 147.2 vs 193.5 (+31 %; ring LL), 16M 255.6 "
        "vs 395.3 (+55 %), 32M 412.7 vs 510.8 (+24 %), 128M 592.2 vs 654.2 (+10.5 %), 256M 615.0 vs 686.4 "
        "(+11.6 %), 512M 638.8 vs 703.6 (+10.1 %; ring Simple). 16M sits below 8M (271.1, asserted), as "
        "test_cases_public_node7.py's B300 board has 16M barely above 8M; from 128M the measured curve "
        "still climbs (678 at 4 GiB in the 2.29.3 run) where the model's is within 1 % of its plateau, and "
        "the gap closes to 9.0 % at 1 GiB (asserted). The report prints no channel count nor NCCL_DEBUG "
        "output. In time, t_measured - t_model is 13.4/32.2/68.1/116 us at 64-512 MiB, the microseconds 4 x "
        "H100 rings lose inside the bar (25.6/46.0/66.7/111 us, test_cases_public_node2.py 'wh H100 x4') "
        "over half the bandwidth term; NCCL's v2.29.7 chunking, channels and LL128 caps give no term for it "
        "(test_cases_accuracy.py '20 GB200 tray ring 2.25.1, 16 MiB-1 GiB', where a one-chunk fill is "
        "weighed and not taken)"
    ),
    "4 x B300 (NCCL 2.29.3, 4 ranks), all_reduce busbw 1-32 MiB and 128-512 MiB (revised report s4)": (
        "1M 51.6 vs 99.7 (+93 %), 2M 103.9 vs 147.3 (+42 %), 4M 144.8 vs 193.5 (+34 %), 8M 141.7 vs 283.7 "
        "(+100 %), 16M 252.0 vs 395.3 (+57 %), 32M 400.1 vs 510.8 (+28 %), 128M 588.6 vs 654.2 (+11.2 %), "
        "256M 610.6 vs 686.4 (+12.4 %), 512M 634.2 vs 703.6 (+10.9 %). 8M is flat on 4M (141.7 after "
        "144.8) where the 2.29.7 run of the same GPUs gives 271.1: run-to-run scatter of this host at mid "
        "sizes; from 1 GiB on the rows meet the model (asserted)"
    ),
    "8 x B300 (NCCL 2.29.3, -g 8), all_reduce busbw 1-64 MiB (revised report s4c.1)": (
        "1M 33.1 vs 54.5 (+65 %, ring LL under the one-thread launch floor 33.7 us), 4M 128.0 vs 154.7 "
        "(+21 %), 16M 267.9 vs 334.3 (+25 %), 64M 422.7 vs 600.7 (+42 %; NVLS). The 4-rank run of the same "
        "board reaches 544.7 at 64M: the 8-GPU NVLS rows climb later than the model's NVLS pipeline; the "
        "rows from 256M on meet it (asserted). No channel count or algorithm is printed"
    ),
    "4 x B300, PyTorch stress (BF16, NCCL_ALGO=Ring, 32 channels), all_gather / reduce_scatter / alltoall": (
        "at 4 GiB all_gather 493.6 vs 718.8 (+46 %), reduce_scatter 482.3 vs 718.8 (+49 %), alltoall 605.6 "
        "vs 719.9 (+19 %); +50..+75 % for all_gather and reduce_scatter from 64 MiB to 2 GiB. The script's "
        "bus factor is (n-1)/n for all three, but what byte count it divides (the full or the per-rank "
        "tensor) is not in the report; the same run's all_reduce, broadcast and P2P rows meet the model at "
        ">= 1 GiB (asserted). Not fitted"
    ),
    "4 x B300, PyTorch stress, all_reduce 64 MiB-2 GiB, broadcast 64-512 MiB, P2P 1-512 MiB": (
        "all_reduce 64M 530.8 vs 598.3 (+12.7 %) ... 2G 631.2 vs 717.2 (+12.7..+16.6 %); broadcast 64M "
        "483.4 vs 601.5 (+24 %), 512M 628.4 vs 704.2 (+12.1 %); P2P (bytes / t) 1-16M 20.6-150.2 vs "
        "79.1-478.8 (+164..+284 %), 64M 163.7 vs 640.5, 128M 172.9 vs 678.7, 256M 337.6 vs 699.6 "
        "(+107..+293 %), 512M 620.6 vs 710.5 (+14.5 %). The Python loop adds a "
        "per-call cost (torch.distributed call and synchronise) the model does not price, and the P2P "
        "column doubles from 256M to 512M, a step no link explains: the harness, not NCCL"
    ),
    "8 x RTX PRO 6000 (AMD Turin NPS=4, every pair SYS, NCCL 2.29.3), NCCL_P2P_LEVEL=SYS, 4 GPUs on socket "
    "0, 16 GB (a0007 Table 2)": (
        "sendrecv 37.07 vs 48.0 (+29 %), reduce 42.60 vs 48.0 (+12.7 %), broadcast 43.20 vs 48.0 (+11.1 "
        "%), reduce_scatter 33.93 vs 48.0 (+41 %), all_gather 39.07 vs 48.0 (+23 %), all_reduce 39.82 vs "
        "48.0 (+21 %), alltoall 2.38 vs 48.0. The model runs P2P through the CPU at NCCL's PCIe Gen5 x16 "
        "figure (48 GB/s; no INTEL_P2P_OVERHEAD on AMD). The source reads its rows against a per-GPU DMA "
        "budget of ~37 GB/s each way when a GPU sends and receives at once (2-GPU sendrecv 36.95; one-way "
        "patterns reach 42-45), a figure no datasheet gives; alltoall (and scatter, 1.85) at P2P level SYS "
        "is a fault the source leaves open (13.30 and 50.76 at defaults)"
    ),
    "8 x RTX PRO 6000 (AMD Turin NPS=4), NCCL_P2P_LEVEL=SYS, all 8 GPUs over two sockets (a0007 Table 3)": (
        "reduce 13.54, broadcast 13.62, reduce_scatter 13.53, all_gather 13.66, all_reduce 13.61 vs 48.0 "
        "(+251..+255 %), sendrecv 35.43 vs 48.0 (+35 %), alltoall 1.01 vs 48.0. The sockets are modelled "
        "(cpu_sockets; NCCL's AMD_BW 16 GB/s SYS link, cpus.yaml): on Blackwell no ring fits below the "
        "slowest search speed 18, and NCCL falls back to one channel in GPU order, as the host's own log "
        "prints ('Could not find a path for pattern 4', 'nChannels 1, bw 0.100000/0.100000, type SYS/SYS', "
        "a0007-diag-a0007-335360). That graph is no rate: NCCL's 16 GB/s would put the ring at 16 where "
        "8 x RTX 5090 on two EPYC 9575F ring at 45.4 over the same kind of link (aikitoria README, asserted "
        "in test_cases_public_node4.py with cpu_sockets 2), and this host's own crossing pair reaches 36.6 "
        "and its 8-GPU sendrecv 35.4. What sets 13.6 is this host's: the source records a socket-1 fault "
        "(diag_a0007_socket1.md: any group with >= 2 GPUs on socket 1, PCIe domain 0001, collapses at "
        "defaults; root cause open), so the rows stay out"
    ),
    "8 x RTX PRO 6000 (AMD Turin NPS=4), NCCL defaults (SHM), 4 GPUs on one socket, 16 GB (a0007 defaults "
    "column; node a0008 alike)": (
        "sendrecv 13.09, reduce 13.19, broadcast 17.29, reduce_scatter 12.91, all_gather 13.29, all_reduce "
        "13.17, alltoall 13.30 vs 38.4 (SHM, 64 GB/s x 0.6; +122..+197 %). The model takes the same "
        "transport (tested below) but one SHM figure for every host; on this NPS=4 host each GPU sits on "
        "its own NUMA die and host-memory staging runs at a third of what the 8 x RTX 5090 hosts of "
        "test_cases_public_node6.py reach over SHM (38-41). At 8 GPUs over both sockets the defaults "
        "collapse (sendrecv at 16 MiB 0.04 GB/s vs 38.4; source: the SHM fallback with >= 2 GPUs on socket "
        "1, cause open). The catalogue's inter-socket figures are NCCL's search figures (cpus.yaml), not "
        "an SHM rate; no public figure sizes host-memory staging on this host"
    ),
    "2 x RTX PRO 6000 on one socket (AMD Turin, NCCL defaults: P2P), sendrecv 16 GB (node a0001; a0007 "
    "pairs)": (
        "37.4 vs 48.0 (+28 %); a0007 at NCCL_P2P_LEVEL=SYS 36.95 vs 48.0 (+30 %), its 12 pairs at 16 MiB "
        "39.3-40.4 vs 46.1 (+14..+18 %): the per-GPU bidirectional DMA budget of the row above, not in the "
        "model"
    ),
}


def test_every_missed_point_names_measured_and_predicted() -> None:
    assert all(" vs " in why for why in MISSED.values())


@pytest.mark.parametrize(
    ("gpus", "env", "shm"), [(2, {}, False), (4, {}, True), (4, {"NCCL_P2P_LEVEL": "SYS"}, False)]
)
def test_rtx6k_turin_transport_follows_the_p2p_level(gpus: int, env: dict[str, str], shm: bool) -> None:
    # a0007: 4 GPUs at NCCL defaults run "the SHM fallback path" (NCCL_P2P_DISABLE=1 gives the same 0.04-13
    # GB/s as the defaults), NCCL_P2P_LEVEL=SYS "keeps the direct-pointer path"; 2 GPUs were "small enough
    # that NCCL used P2P even at defaults" (a0001 37.4 GB/s): paths.cc allows P2P through an AMD CPU for <= 2
    # GPUs only
    r = formula_collective("all_reduce", 16 * GiB, rtx6k_turin(gpus), nccl_version="2.29.2", env=env)
    assert ("SHM through host memory" in r.explanation) is shm


def test_rtx6k_turin_ring_search_falls_back_across_cpu_nodes() -> None:
    # a0007-diag-a0007-335360 (NCCL 2.29.3, 2 GPUs at 0000:03 and 0000:42, NPS=4: two CPU nodes):
    # "=== System : maxBw 16.0 totalBw 48.0 ===", "+ SYS[16.0] - CPU/0-3", "Could not find a path for pattern
    # 4, falling back to simple order", "Pattern 4, crossNic 0, nChannels 1, bw 0.100000/0.100000, type
    # SYS/SYS": AMD_BW 16 is below sm100SpeedArrayIntra's slowest 18 (search.cc), so no ring fits; the pair
    # still moved 39.4 GB/s
    r = formula_collective("all_reduce", 16 * GiB, rtx6k_turin(2, cpu_nodes=2), nccl_version="2.29.2")
    assert "no ring fits NCCL's slowest blackwell search speed (18 GB/s)" in r.explanation
    assert "16 GB/s (amd-epyc" in r.explanation
