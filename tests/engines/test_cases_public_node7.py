"""The formula engine against a seventh set of public single-node results, none among the shared cases nor
the sets before it (test_cases_public_node.py .. ..._node6.py, test_cases_public_alltoall.py): a B300 board
on NCCL 2.29.7 and a four-GPU V100 SXM2 NVLink mesh on NCCL 2.29.3.

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

#: 4 of the 8 B300 of an HGX B300 board on NVSwitch (catalogue b300: 18 NVLink 5 links, DGX B300 datasheet)
B300_X4 = one_node("b300", 4, {"kind": "nvswitch"})
#: 4 x V100 SXM2 32 GB, each GPU's 6 NVLink 2 links spread 2 to each peer (the log's "NV2" all-to-all
#: topology); the full mesh is run as one switch of the same per-GPU links, as the MI300X xGMI mesh is
#: (test_cases_public_node5.py): NCCL's 12 rings use every pair, 6 links x 25 GB/s a GPU
V100_X4 = one_node("v100-sxm2-32gb", 4, {"kind": "nvswitch"})
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
    # times, 1.5 x size / t = 107.1/115.4/121.2 GB/s. Ring/Simple over 6 x 25 GB/s: 116.0/119.0/119.7
    # (+8.3/+3.1/-1.2 %)
    **_rows(
        "v100 x4 mesh",
        V100_DOC,
        V100_X4,
        "all_reduce",
        ((64 * MiB, 940.0, 107.09), (256 * MiB, 3490.0, 115.37), (GiB, 13290.0, 121.19)),
    ),
}


@pytest.mark.parametrize("key", list(POINTS))
def test_public_node_point(key: str) -> None:
    point = POINTS[key]
    bar = 0.10 if not point.latency and point.size >= 64 * 2**20 else 0.15
    assert abs(point.relative_error()) <= bar


#: Public single-node rows the model misses (measured, predicted, what is missing); not asserted.
MISSED = {
    "4 x B300 (NCCL 2.29.7), default algorithm, all_reduce busbw 4-32 MiB and 128 MiB (A2 Baseline)": (
        "4M 150.41 vs 193.5 (+29 %, ring LL), 16M 259.00 vs 395.3 (+53 %), 32M 420.04 vs 510.8 (+22 %), "
        "128M 575.96 vs 654.2 (+14 %; ring Simple). The same run's 8M (254.66) and 64M (559.04) rows meet "
        "the model (asserted), and 16M sits barely above 8M while 32M jumps by 62 %: the curve is not smooth "
        "enough to tell a mechanism from run-to-run scatter. The source's note that NVLS is the default at 4 "
        "GPUs disagrees with its own tables (the default row tracks the Ring baseline, 560 at 128M, not the "
        "NVLS baseline, 421); the model picks ring. What holds a 4-rank ring below its NVLink 5 plateau at "
        "128 MiB is not in the source (it gives no channel count nor NCCL_DEBUG output)"
    ),
    "4 x B300 (NCCL 2.29.7), NCCL_ALGO=Ring, all_reduce busbw (A3 Ring baseline)": (
        "4M 63.18 vs 193.5 (+206 %), 8M 246.21 vs 283.7 (+15.2 %), 16M 180.00 vs 395.3 (+120 %), 32M "
        "413.21 vs 510.8 (+24 %), 128M 560.45 vs 654.2 (+17 %). The table is not monotone (8M 246 above "
        "16M 180; the default run of the same host gives 150 at 4M where this one gives 63): scatter of a "
        "run made to study CPU interference (-n 50). 64M (557.63) is asserted above"
    ),
    "4 x B300 (NCCL 2.29.7), NCCL_ALGO=NVLS, all_reduce busbw (A3 NVLS baseline)": (
        "4M 63.21 vs 145.2, 8M 66.65 vs 204.1, 16M 115.05 vs 304.7, 32M 239.83 vs 404.4 (+130..+206 % "
        "to +69 %), 64M 378.23 vs 449.5 (+19 %), 128M 420.85 vs 514.3 (+22 %). The source calls the small "
        "sizes 'NVLS setup overhead'; the model's NVLS on a 4-GPU communicator of an 8-GPU NVSwitch board "
        "charges no such cost and reaches a higher plateau. Which NVLS channel count and multicast group "
        "limits a 4-rank NVLS communicator on Blackwell Ultra is not in the source, so the rows are recorded"
    ),
}


def test_every_missed_point_names_measured_and_predicted() -> None:
    assert all(" vs " in why for why in MISSED.values())
