"""The formula engine against a sixth set of public single-node results for the collectives other than
all_reduce, none among the shared cases nor the public sets before it (test_cases_public_node.py ..
..._node5.py, test_cases_public_alltoall.py).

Each point is one row of a public log about ONE node whose hardware is stated; the comment gives the source
and the quoted figures. Tolerance, the blind check's bar: 10 % on busbw at >= 64 MiB, 15 % at mid sizes and
15 % on time at small sizes. No constant was set from these sources.

One-process runs (``-g 8``: one host thread drives the eight GPUs) are priced with the host's launch floor
(:mod:`aifabric.engines.host_launch`) at the per-GPU cost NVIDIA/nccl-tests #123 measures on a DGX A100
host (33.7 us / 8), as test_cases_public_node4.py does. Points the model misses are in ``MISSED``
(measured, predicted, what is missing); not asserted.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.engines.test_cases_public import Point  # one public row
from tests.engines.test_cases_public_node import rtx5090_shm
from tests.engines.test_cases_public_node4 import LAUNCH_S_PER_GPU

from aifabric.cluster.spec import ClusterSpec

GiB = 2**30

R5090_DOC = (
    "GitHub file, search-index id 53015678395: skill 'remote-70-88' (host 10.10.70.88: 8 x NVIDIA RTX 5090, "
    "driver 580.126.09, NCCL 2.28.9-1+cuda13.0), table '8x RTX 5090 reference values (measured 2025-04-29)' "
    "of ./build/<op>_perf -b 8 -e 8G -f 2 -g 8"
)

#: 8 x RTX 5090 on PCIe Gen5 x16 with the stock driver (no GPU peer-to-peer, catalogue ``peer_to_peer:
#: false``): NCCL moves bytes through host memory (SHM)
R5090 = rtx5090_shm(8)
#: one host thread driving 8 GPUs (-g 8), at nccl-tests #123's per-GPU launch cost; the log's NCCL 2.28.9
R5090_ONE_THREAD = (
    ("nccl_version", "2.28.9"),
    ("gpus_per_thread", 8),
    ("launch_s_per_gpu", LAUNCH_S_PER_GPU),
)


def _peak(
    url: str, spec: ClusterSpec, collective: str, busbw_gbs: float, opts: tuple[tuple[str, Any], ...]
) -> Point:
    """The table's peak busbw, read at the sweep's last row (-e 8G): the source says the last row (the
    largest size) is the peak."""
    return Point(url, spec, collective, 8 * GiB, 0.0, busbw_gbs * 1e9, False, opts)


POINTS = {
    # 8 x RTX 5090 table, "峰值 BusBW": all_gather 39.74, broadcast 41.25, reduce_scatter 38.12 GB/s: ring
    # (chain for broadcast)/Simple over SHM, 64 GB/s x 0.6 = 38.4 GB/s (NCCL's PCIe Gen5 x16 figure times
    # the SHM path's share, rtx5090_shm), 38.39 each (-3.4/-6.9/+0.7 %)
    "r5090 x8 all_gather 8 GiB peak": _peak(R5090_DOC, R5090, "all_gather", 39.74, R5090_ONE_THREAD),
    "r5090 x8 broadcast 8 GiB peak": _peak(R5090_DOC, R5090, "broadcast", 41.25, R5090_ONE_THREAD),
    "r5090 x8 reduce_scatter 8 GiB peak": _peak(R5090_DOC, R5090, "reduce_scatter", 38.12, R5090_ONE_THREAD),
    # the same table, "8B 延迟" broadcast 30.5 us: the one-thread launch floor 33.7 us (+10.5 %)
    "r5090 x8 broadcast 8 B": Point(R5090_DOC, R5090, "broadcast", 8, 30.5e-6, 0.0, True, R5090_ONE_THREAD),
}


@pytest.mark.parametrize("key", list(POINTS))
def test_public_node_point(key: str) -> None:
    point = POINTS[key]
    bar = 0.10 if not point.latency and point.size >= 64 * 2**20 else 0.15
    assert abs(point.relative_error()) <= bar


#: Public single-node rows the model misses (measured, predicted, what is missing); not asserted.
MISSED = {
    "8 x RTX 5090 (SHM, NCCL 2.28.9, -g 8), alltoall and sendrecv peak busbw": (
        "alltoall 27.58 vs 38.40 (+39 %), sendrecv 25.82 vs 38.40 (+49 %): the model runs point-to-point "
        "over SHM at the figure the ring reaches, 38.4 GB/s, which the same table's ring and chain "
        "collectives meet (all_gather 39.74, broadcast 41.25, reduce_scatter 38.12, asserted above); the "
        "point-to-point ops reach 0.67-0.72 of it. The source does not give the host's CPUs, sockets or "
        "the GPUs' root ports, nor the size of the peak row; no source gives SHM throughput of NCCL's p2p "
        "kernels as against its ring, so none is taken"
    ),
    "8 x RTX 5090 (SHM, NCCL 2.28.9, -g 8), smallest-size time": (
        "all_gather 40.7 us, reduce_scatter 40.5, alltoall 54.8, sendrecv 42.6 vs 33.7 (the one-thread "
        "launch floor at nccl-tests #123's 4.21 us per GPU; -17/-17/-39/-21 %), while broadcast 30.5 "
        "(asserted) and the same table's all_reduce 31.76 sit at the floor. What adds 7-21 us to the "
        "ring-LL all_gather and reduce_scatter and to the grouped send/recv ops over SHM on this host "
        "has no per-message figure in a source"
    ),
    "2 x RTX 4090 on two sockets in a container (SHM, NCCL 2.21.5, -g 2; GitHub file, search-index id "
    "45827724892, host 0fed198eb8ba, comprehensive_nccl_tests.sh)": (
        "busbw at 128 MiB broadcast 0.96, all_gather 0.84 (reduce_scatter and the log's all_reduce 0.89 "
        "alike) vs 19.16/19.12 (chain/ring over SHM at NCCL's PCIe Gen4 x16 figure times the SHM share; "
        "+1900/+2200 %); time at 8 B broadcast 16.26 us, at 32 B all_gather 12.86 vs 8.42 (-48/-35 %). "
        "The log shows SHM/direct channels between GPUs on different sockets (busIds 01 and 81, CPU "
        "affinity on different sets) inside a container; what holds host-memory copies near 1 GB/s there "
        "(the log prints no memory or inter-socket figure) is not in the source, so the rows are recorded, "
        "not fitted"
    ),
}


def test_every_missed_point_names_measured_and_predicted() -> None:
    assert all(" vs " in why for why in MISSED.values())
