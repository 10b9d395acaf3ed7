"""The formula engine against a ninth set of public single-node results, none among the shared cases nor
the sets before it (test_cases_public_node.py .. ..._node8.py, test_cases_public_alltoall*.py): two RTX 4090
hosts whose GPU peer-to-peer was re-enabled by tinygrad's kernel module, both on AMD Threadripper PRO
(WRX80) boards of one author; a third 4090 pair with P2P (tinygrad #17's first post) is recorded as a miss.
This round found few new sources: the public single-node logs the search corpora hold on the GPUs it asked
for (H20, H800, L40S, H100 NVL, MI325X/MI355X, B300, GB300) are in the rounds before or are multi-node.

Each point is one row of a public log about ONE node whose hardware is stated; the comment gives the source
and the quoted row (size, time us, busbw GB/s). Tolerance, the blind check's bar: 10 % on busbw at >= 64 MiB,
15 % at mid sizes (8-512 MiB) and 15 % on time at small sizes. No constant was set from these sources. Where
a log prints no release the model runs the newest recorded tables, the project's default. Points the model
misses are in ``MISSED`` (measured, predicted, what is missing); not asserted.
"""

from __future__ import annotations

import pytest
from tests.engines.test_cases_public_node import one_node
from tests.engines.test_cases_public_node3 import _rows  # one table's rows as Points

from aifabric.cluster.spec import ClusterSpec

MiB = 2**20

T17 = (
    "https://github.com/tinygrad/open-gpu-kernel-modules/issues/17, mylesgoose's comment of 2024-10-22: "
    "NCCL_P2P_LEVEL=SYS ./all_reduce_perf -g 5 (33554432 bytes), host myles-System-Product-Name, GPUs at "
    "busId 1000/2b000/41000/42000 'via P2P' with every card at PCIe x16; the author's board is an ASUS "
    "WRX80E-SAGE SE (AMD Threadripper PRO), tinygrad/open-gpu-kernel-modules #6, same author"
)
P22 = (
    "https://github.com/tinygrad/open-gpu-kernel-modules/pull/22 (560.35.03 p2p), mylesgoose's comment "
    "(2024-11-15, continued in turn 21): NCCL_P2P_LEVEL=SYS ./build/all_reduce_perf -b 8 -e 128M -f 2 -g 4, "
    "'NCCL version 2.23.4+cuda12.6', 4 x RTX 4090 (0x02/0x41/0x42/0x61) on host myles-MC62-G40-00 (Gigabyte "
    "MC62-G40, AMD WRX80), every ring hop 'via P2P/direct pointer'"
)
#: NCCL_P2P_LEVEL=SYS: NCCL's default allows P2P through an AMD CPU for <= 2 GPUs only (paths.cc, from 2.23)
P2P_SYS = (("env", {"NCCL_P2P_LEVEL": "SYS"}),)
#: the same on the release the PR #22 log prints
P2P_SYS_2234 = (*P2P_SYS, ("nccl_version", "2.23.4"))


def rtx4090_p2p_wrx80(gpus: int) -> ClusterSpec:
    """``gpus`` x RTX 4090 (PCIe Gen4 x16) with peer-to-peer re-enabled by tinygrad's kernel module
    (``peer_to_peer: true``), through the root complex of an AMD Threadripper PRO: P2P at NCCL's Gen4 x16
    figure, 24 GB/s, no INTEL_P2P_OVERHEAD on AMD (search.cc followPath)."""
    pcie = {"kind": "pcie", "link": "pcie-gen4", "p2p_through_cpu": True, "peer_to_peer": True}
    return one_node("rtx-4090", gpus, pcie, cpu_vendor="amd")


POINTS = {
    # tinygrad #17, 5 GPUs: "33554432 8388608 float sum -1 2174.8 15.43 24.69": ring/Simple over 5 ranks at
    # 24 GB/s per GPU, 23.43 (-5.1 %)
    **_rows("t17 4090 x5 p2p", T17, rtx4090_p2p_wrx80(5), "all_reduce", ((32 * MiB, 0, 24.69),), P2P_SYS),
    # tinygrad PR #22, 4 GPUs: "32768 8192 float sum -1 18.78 1.74 2.62": ring/LL 16.7 us (-11.1 %); the
    # rows from 1 MiB on are in MISSED
    **_rows("p22 4090 x4 p2p", P22, rtx4090_p2p_wrx80(4), "all_reduce", ((32768, 18.78, 0),), P2P_SYS_2234),
}


@pytest.mark.parametrize("key", list(POINTS))
def test_public_node_point(key: str) -> None:
    assert abs(POINTS[key].relative_error()) <= POINTS[key].single_node_bar()


#: Public single-node rows the model misses (measured, predicted, what is missing); not asserted.
MISSED = {
    "4 x RTX 4090 P2P (tinygrad PR #22, AMD WRX80, NCCL 2.23.4), all_reduce 64 KiB-64 MiB": (
        "time 64K 25.80 vs 20.8 us (-19 %), 128K 42.44 vs 29.0 (-32 %), 256K 66.25 vs 45.4 (-31 %), 512K "
        "94.11 vs 75.4 (-20 %); busbw 1M 10.30 vs 14.55 (+41 %), 4M 12.32 vs 20.65 (+68 %), 16M 12.63 vs "
        "23.06 (+83 %), 64M 12.76 vs 23.76 (+86 %; ring/Simple at NCCL's Gen4 x16 24 GB/s). The measured "
        "curve flattens at 12.7, half the Gen4 x16 figure, from 4 MiB on, while the same author's 5-GPU run "
        "on his other WRX80 host reaches 24.69 at 32 MiB (asserted). The comment names the driver "
        "(560.35.03 with the P2P patch) but no link width per card; the author writes in #17 that a card "
        "at x4/x8 makes NCCL leave P2P, and this log still prints P2P/direct pointer. A card at Gen4 x8 "
        "(NCCL's 12 GB/s) or a slower P2P path of that driver build would set the ring at this rate; "
        "neither is stated, so the model keeps x16"
    ),
    "2 x RTX 4090 P2P (tinygrad #17, ZP-AlwaysWin's first post, host moons, GPUs 0x41/0x42, -g 2, "
    "NCCL_P2P_LEVEL=SYS), alltoall time 8-64 B": (
        "8 B 12.28 vs 14.1 us (+14.8 %, inside the bar), 16 B 12.03 vs 14.1 (+17.2 %), 32 B 11.90 vs 14.1 "
        "(+18.5 %), 64 B 11.52 vs 14.1 (+22.4 %; direct/Simple pairwise exchange, one peer). The host's CPU "
        "is not stated (the latency term does not depend on it: Intel and AMD give the same 14.1 us); the "
        "measured floor 11.5-12.3 us is 2 us under the model's one-peer Simple exchange on PCIe, and "
        "the log prints nothing (release, channels, protocol) that tells what sets it. "
        "Not asserted: 3 of the 4 rows are out of the bar and no run of the same host sizes the floor"
    ),
}


def test_every_missed_point_names_measured_and_predicted() -> None:
    assert all(" vs " in why for why in MISSED.values())
