"""The formula engine against a seventh set of public single-node results, none among the shared cases nor
the sets before it (test_cases_public_node.py .. ..._node6.py, test_cases_public_alltoall.py): a B300 board
on NCCL 2.29.7, a four-GPU V100 SXM2 NVLink mesh on NCCL 2.29.3 and four H100 of a cloud VM on NCCL
2.26.2; a GB200 NVL4 mesh and three 8 x RTX 5090 hosts are recorded as misses.

Each point is one row of a public log about ONE node whose hardware is stated; the comment gives the source
and the quoted figures. Tolerance, the blind check's bar: 10 % on busbw at >= 64 MiB, 15 % at mid sizes (8-512
MiB) and 15 % on time at small sizes. No constant was set from these sources. Where a log prints a release
the catalogue lacks (the V100 log's 2.29.3), the model runs the newest recorded tables, the project's default.
Points the model misses are in ``MISSED`` (measured, predicted, what is missing); not asserted.
"""

from __future__ import annotations

import pytest
from tests.engines.test_cases_public_node import one_node
from tests.engines.test_cases_public_node3 import _rows  # one table's rows as Points
from tests.engines.test_cases_public_node4 import LAUNCH_S_PER_GPU

from aifabric.engines.formula import formula_collective

MiB = 2**20
GiB = 2**30

B300_DOC = (
    "GitHub file, search-index id 53685439639: 'Interference Experiment Summary (Plan A)', 2026-03-11, "
    "host of 8 x NVIDIA B300 SXM6 AC, libnccl.so.2.29.7, all_reduce_perf 4M-128M -n 50 -w 10 on "
    "CUDA_VISIBLE_DEVICES=0,1,2,3; tables 'A2: Memory Bandwidth Pressure' (Baseline column, default "
    "algorithm) and 'A3: CPU Stress' (Ring baseline / NVLS baseline columns)"
)
V100_DOC = (
    "GitHub file, search-index id 60239448160: Santos Dumont sequana_gpu node, 4 x V100 SXM2 32 GB joined "
    "all to all by NV2 (2 NVLink 2 links a pair), NCCL 2.29.3+cuda12.9 (12 coll channels, P2P/CUMEM), "
    "section 8.3 'All-reduce results' of bench-nccl.py (torch.distributed all_reduce, fp16, 20 timed calls "
    "after 5)"
)

LAMBDA_H100 = (
    "dudeperf3ct.github.io, 'Distributed communication for GPUs (part 1)', 2025-09-09 (GitHub file, "
    "search-index id 43466784132): Lambda 4 x H100 80GB HBM3 instance, nvidia-smi topo NV18 between every "
    "pair, NCCL 2.26.2+cuda12.8; all_reduce_perf -b 8 -e 1G -f 2 -g 4 (one process), and Stas Bekman's "
    "ml-engineering all_reduce benchmark over 4 ranks (torch 2.7.0, 5 warmups / 20 trials)"
)

#: 4 of the 8 B300 of an HGX B300 board on NVSwitch (catalogue b300: 18 NVLink 5 links, DGX B300 datasheet)
B300_X4 = one_node("b300", 4, {"kind": "nvswitch"})
#: 4 x V100 SXM2 32 GB, each GPU's 6 NVLink 2 links spread 2 to each peer (the log's "NV2" all-to-all
#: topology; catalogue nvlink2-quad-mesh, a full mesh of 2-link bundles of 2 x 20 GB/s, NCCL's SM70 NVLink
#: figure): NCCL's ring search (catalog/nccl_mesh.py) builds the 6 directed rings of 4 GPUs at 20 GB/s,
#: every ordered pair crossed twice, so a ring gets the GPU's whole 6 x 20 GB/s, as on a switch
V100_X4 = one_node("v100-sxm2-32gb", 4, {"kind": "nvswitch", "link": "nvlink2-quad-mesh"})
#: 4 of the 8 H100 SXM of an HGX board (topo NV18: each GPU's 18 NVLink 4 links to the NVSwitches)
H100_X4 = one_node("h100-sxm", 4, {"kind": "nvswitch"})
#: GB200 NVL4: 4 Blackwell GPUs whose 18 NVLink 5 links are wired all-to-all, 6 a pair, no NVSwitch
#: (catalogue nvlink5-gb200-nvl4: 3 bundles of 6 x 40.1 GB/s, NCCL's SM100 figure)
NVL4 = one_node("gb200", 4, {"kind": "nvswitch", "link": "nvlink5-gb200-nvl4"})
NVL4_DOC = (
    "GitHub file, search-index id 67244393525: a Go test fixture, 'a trimmed but format-faithful capture "
    "from a real GB200 NVL4 run of all_reduce_perf -b 8 -e 8G -f 2 -g 4 (data-correct, switchless "
    "direct-NVLink mesh)', nccl-tests 2.20.0, nccl-library=23102 (NCCL 2.31.2, not catalogued: the newest "
    "recorded tables)"
)
#: one host thread driving 4 GPUs (-g 4), at nccl-tests #123's per-GPU launch cost
ONE_THREAD_4 = (("gpus_per_thread", 4), ("launch_s_per_gpu", LAUNCH_S_PER_GPU))
N2297 = (("nccl_version", "2.29.7"),)
N2297_RING = (*N2297, ("env", {"NCCL_ALGO": "Ring"}))


POINTS = {
    # A2 Baseline (default algorithm, 4 GPUs): "8M 254.66 GB/s", "64M 559.04 GB/s": ring LL128 283.7
    # (+11.4 %, mid size), ring Simple 598.3 (+7.0 %)
    **_rows(
        "b300 x4 default",
        B300_DOC,
        B300_X4,
        "all_reduce",
        ((8 * MiB, 0, 254.66), (64 * MiB, 0, 559.04)),
        N2297,
    ),
    # A3 Ring baseline (NCCL_ALGO=Ring): "64M 557.63 GB/s": ring Simple 598.3 (+7.3 %)
    **_rows("b300 x4 ring", B300_DOC, B300_X4, "all_reduce", ((64 * MiB, 0, 557.63),), N2297_RING),
    # "64 MB 0.94 ms", "256 MB 3.49 ms", "1024 MB 13.29 ms" (MB = MiB: the script allocates mb*1024*1024 bytes
    # of fp16). The script's busbw, 2(n-1)/n x (mb/1024) / dt, is in GiB/s (100.0/107.4/112.9); from the
    # times, 1.5 x size / t = 107.1/115.4/121.2 GB/s. Ring/Simple over 6 x 20 GB/s: 116.0/119.0/119.7
    # (+8.3/+3.1/-1.2 %)
    **_rows(
        "v100 x4 mesh",
        V100_DOC,
        V100_X4,
        "all_reduce",
        ((64 * MiB, 940.0, 107.09), (256 * MiB, 3490.0, 115.37), (GiB, 13290.0, 121.19)),
    ),
    # Lambda 4 x H100, all_reduce_perf -g 4, NCCL 2.26.2 (not catalogued: the newest recorded tables):
    # "2097152 ... 32.05 65.43 98.15", "4194304 ... 45.05 ... 139.65", "8388608 ... 65.19 ... 193.03",
    # "16777216 ... 104.4 ... 241.03", "33554432 ... 174.9 ... 287.78": ring LL/LL128/LL128/Simple/Simple
    # 96.8/143.5/202.0/260.3/305.9 (-1.4/+2.8/+4.7/+8.0/+6.3 %)
    **_rows(
        "lambda H100 x4",
        LAMBDA_H100,
        H100_X4,
        "all_reduce",
        (
            (2 * MiB, 32.05, 98.15),
            (4 * MiB, 45.05, 139.65),
            (8 * MiB, 65.19, 193.03),
            (16 * MiB, 104.4, 241.03),
            (32 * MiB, 174.9, 287.78),
        ),
        ONE_THREAD_4,
    ),
    # "67108864 ... 326.6 ... 308.21", "134217728 ... 614.7 ... 327.51", "268435456 ... 1184.9 ... 339.81",
    # "536870912 ... 2314.9 ... 347.88", "1073741824 ... 4525.6 ... 355.89": ring/Simple on 18 NVLink 4
    # links, 335.2/352.1/361.2/365.9/368.4 (+8.8/+7.5/+6.3/+5.2/+3.5 %)
    **_rows(
        "lambda H100 x4",
        LAMBDA_H100,
        H100_X4,
        "all_reduce",
        (
            (64 * MiB, 326.6, 308.21),
            (128 * MiB, 614.7, 327.51),
            (256 * MiB, 1184.9, 339.81),
            (512 * MiB, 2314.9, 347.88),
            (GiB, 4525.6, 355.89),
        ),
        ONE_THREAD_4,
    ),
    # GB200 NVL4 (-g 4): "268435456 ... 713.27 376.34 564.51", "8589934592 ... 21286.0 403.55 605.32": ring/
    # Simple over the rings NCCL's search builds on the mesh (16 channels of 40 GB/s, the 8 ordered pairs of
    # its two repeated orders crossed 6 times, the 4 others 4: 240.6 x 16/6 = 641.6 GB/s a GPU, not the
    # 721.8 of a switch), 613.4/640.7 (+8.7/+5.8 %; as one switch of 18 links: 686.4/720.6, +22/+19 %)
    **_rows(
        "gb200 nvl4",
        NVL4_DOC,
        NVL4,
        "all_reduce",
        ((256 * MiB, 0, 564.51), (8 * GiB, 0, 605.32)),
        ONE_THREAD_4,
    ),
    # the same host, torch all_reduce over 4 ranks (a process per GPU): "256MiB | 335.62GBps", "512MiB |
    # 345.78", "1GiB | 355.72", "2GiB | 360.91", "4GiB | 363.27", "8GiB | 365.21", "16GiB | 366.99": ring/
    # Simple 361.2/365.9/368.4/369.6/370.2/370.5/370.6 (+7.6/+5.8/+3.6/+2.4/+1.9/+1.4/+1.0 %); the rows
    # below 256 MiB carry the benchmark's per-call host cost (MISSED)
    **_rows(
        "lambda H100 x4 torch",
        LAMBDA_H100,
        H100_X4,
        "all_reduce",
        (
            (256 * MiB, 0, 335.62),
            (512 * MiB, 0, 345.78),
            (GiB, 0, 355.72),
            (2 * GiB, 0, 360.91),
            (4 * GiB, 0, 363.27),
            (8 * GiB, 0, 365.21),
            (16 * GiB, 0, 366.99),
        ),
    ),
}


@pytest.mark.parametrize("key", list(POINTS))
def test_public_node_point(key: str) -> None:
    assert abs(POINTS[key].relative_error()) <= POINTS[key].single_node_bar()


#: Public single-node rows the model misses (measured, predicted, what is missing); not asserted.
MISSED = {
    "4 x B300 (NCCL 2.29.7), default algorithm, all_reduce busbw 4-32 MiB and 128 MiB (A2 Baseline)": (
        "4M 150.41 vs 193.5 (+29 %, ring LL), 16M 259.00 vs 395.3 (+53 %), 32M 420.04 vs 510.8 (+22 %), 128M "
        "575.96 vs 654.2 (+14 %; ring Simple). The same run's 8M (254.66) and 64M (559.04) rows meet the "
        "model (asserted), and 16M sits barely above 8M while 32M jumps by 62 %: the curve is not smooth "
        "enough to tell a mechanism from run-to-run scatter. The source's note that NVLS is the default at 4 "
        "GPUs disagrees with its own tables (the default row tracks the Ring baseline, 560 at 128M, not the "
        "NVLS baseline, 421); the model picks ring. What holds a 4-rank ring below its NVLink 5 plateau at "
        "128 MiB is not in the source (it gives no channel count nor NCCL_DEBUG output); NCCL's own source "
        "gives no term for it either (test_cases_accuracy.py '20 GB200 tray ring 2.25.1, 16 MiB-1 GiB': the "
        "same excess in microseconds as 4 x H100 rings, over half the bandwidth term)"
    ),
    "4 x B300 (NCCL 2.29.7), NCCL_ALGO=Ring, all_reduce busbw (A3 Ring baseline)": (
        "4M 63.18 vs 193.5 (+206 %), 8M 246.21 vs 283.7 (+15.2 %), 16M 180.00 vs 395.3 (+120 %), 32M 413.21 "
        "vs 510.8 (+24 %), 128M 560.45 vs 654.2 (+17 %). The table is not monotone (8M 246 above 16M 180; the"
        " default run of the same host gives 150 at 4M where this one gives 63): scatter of a run made to "
        "study CPU interference (-n 50). 64M (557.63) is asserted above"
    ),
    "4 x B300 (NCCL 2.29.7), NCCL_ALGO=NVLS, all_reduce busbw (A3 NVLS baseline)": (
        "4M 63.21 vs 145.2, 8M 66.65 vs 204.1, 16M 115.05 vs 304.7, 32M 239.83 vs 404.4 (+130..+206 % to +69 "
        "%), 64M 378.23 vs 449.5 (+19 %), 128M 420.85 vs 514.3 (+22 %). The source calls the small sizes "
        "'NVLS setup overhead'. NCCL's source bounds the plateau from both sides without fixing it: the run "
        "model, B_i e (h - 1)/h = 721.8 x 0.74 x 3/4 = 400.6 GB/s algbw (busbw 601), is what each GPU's "
        "NVLink allows (multimem traffic per GPU is S (n + 1)/n each way, 1.25 S at n = 4: NVLink is not the "
        "limit); NCCL 2.29.7's own tuner prices the 4-rank NVLS graph (search.cc: h = 4 heads at 90 GB/s, "
        "the top of the SM100 speed ladder) at 4 x 90 x 0.74 = 266.4 GB/s algbw (busbw 399.6), below the "
        "rows. The 64M-to-128M increment, 212 us for 64 MiB, gives busbw 475: 79 GB/s of reduced output "
        "per head, against 59 per head on 8 B200 (nccl #1807, 830 busbw), so the limit scales with the "
        "heads (each GPU's multimem reduce rate), not with the GPU's links; nvls.cc gives 24 NVLS channels "
        "on one Blackwell node whatever the local ranks (NVLS_NCHANNELS_SM100_NVL), NCCL_NVLS_ENABLE "
        "defaults to 2 (on where multicast is supported). No source gives a GPU's multimem reduce rate, and "
        "the table is a CPU-interference study (the Ring rows are not monotone), so the rows are recorded"
    ),
    "Lambda 4 x H100 (NCCL 2.26.2, -g 4), all_reduce time at 8 B - 1 MiB": (
        "8 B-512 KiB 23.5-26.8 us vs 16.85 (the one-thread launch floor at nccl-tests #123's 4.21 us per GPU,"
        " x 4; -28..-37 %), 1 MiB 28.06 us vs 21.4 (busbw 56.05 vs 73.7, +31 %). The flat 23.5-24.6 us from 8"
        " B to 128 KiB is a floor of 5.9-6.2 us per GPU on this host (a cloud VM: 4 of an HGX board's 8 "
        "GPUs); from 2 MiB on, where the ring's own time passes it, the rows meet the model (asserted). No "
        "source gives the launch cost of this host, so #123's DGX A100 figure stands"
    ),
    "Lambda 4 x H100 (NCCL 2.26.2), torch all_reduce over 4 ranks, 32 KiB - 128 MiB": (
        "busbw 32 KiB 1.18 vs 4.2 ... 1 MiB 34.50 vs 73.7, 8 MiB 154.14 vs 202.0, 64 MiB 293.25 vs 335.2 (+14"
        " %), 128 MiB 317.31 vs 352.1 (+11 %): every row from 32 KiB to 512 KiB takes 40.2-41.7 us (size / "
        "algbw), a per-call cost of the Python benchmark (a torch.distributed call and a device synchronise "
        "per trial), not of NCCL; the nccl-tests table of the same host takes 24 us there. 40 us added to the"
        " model's time leaves 128 MiB at +3.5 %. The model prices NCCL, not the caller's loop"
    ),
    "GB200 NVL4 (4 GPUs, switchless NVLink 5 mesh, NCCL 2.31.2, -g 4; GitHub file, search-index id "
    "67244393525, a Go test fixture 'trimmed ... capture from a real GB200 NVL4 run'), 8 B and 1 MiB": (
        "1 MiB 44.44 vs 93.3 (+110 %, ring LL on the mesh's 16 channels); 8 B 55.18 us vs 16.8 (in-place "
        "38.83; the one-thread launch floor of nccl-tests #123, 4.21 us per GPU x 4). The fixture keeps 4 "
        "of the run's rows, so the size where the host's floor gives way is not in it, nor NCCL_DEBUG output "
        "that would show the channels and protocol 2.31 ran; the 256 MiB and 8 GiB rows are asserted above"
    ),
    "8 x RTX 5090 (SHM), alltoall_perf -b 8 -e 1g -f 2 -g 8, peak busbw on three hosts (nccl-tests #332)": (
        "Xeon 6530 x 2: 22 vs 38.4 (+75 %), EPYC 9554 x 2: 25 vs 38.4 (+54 %), EPYC 9355 x 2: 33 vs 38.4 (+16"
        " %): the same GPUs and test vary 1.5x with the host's CPUs, as test_cases_public_node6.py's 8 x RTX "
        "5090 alltoall (27.58 vs 38.40) does. The model's SHM path is 64 GB/s x 0.6, one figure for every "
        "host; what of the CPU (memory channels, inter-socket links, I/O dies) sets the point-to-point SHM "
        "rate is not in the thread (the reporter names the CPUs only; NCCL release not given)"
    ),
}


def test_every_missed_point_names_measured_and_predicted() -> None:
    assert all(" vs " in why for why in MISSED.values())


@pytest.mark.parametrize("size", [64 * MiB, 128 * MiB])
def test_b300_partial_board_default_is_ring(size: int) -> None:
    # A2 Baseline (default algorithm) "64M 559.04", "128M 575.96" track A3's Ring baseline (557.63, 560.45),
    # not its NVLS baseline (378.23, 420.85): NCCL 2.29.7 ran ring by default on 4 of the board's 8 B300,
    # whatever the source's note says; the model's tuner picks ring there too
    r = formula_collective("all_reduce", size, B300_X4, **dict(N2297))
    assert r.algorithm == "ring"
