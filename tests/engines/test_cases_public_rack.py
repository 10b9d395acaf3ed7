"""The formula engine against public results from rack-scale NVLink domains and their neighbours (blind).

Machines: two GB200 NVL72 compute trays in one NVLink domain (MNNVL, 8 ranks) and the same two trays over
InfiniBand; one GB200 tray (4 ranks) and 32 GPUs of one NVL72 domain at small sizes; 2 x 8 B200 and 2 x 8
H100 over ConnectX-7 InfiniBand (CoreWeave). Each point is one figure of a public document whose hardware is
stated; the comment gives the source, the quoted figure and the model's. Tolerance: the blind check's bar,
10 % on busbw at >= 64 MiB, 15 % on busbw at mid sizes and on time at small sizes. The model runs the
run's NCCL release when the document states it, else the newest recorded tables (said per source). None of
these documents is a calibration source of the catalogue. Where a document gives busbw only, the point's
time is derived from it (nccl-tests: busbw = S / t x 2 (n - 1) / n) and is not asserted. Points the model
misses are in ``MISSED`` (measured, predicted, what is missing); not asserted.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.engines.test_cases_public import Point  # one public row, as the other blind checks have it

from aifabric.cluster.presets import preset
from aifabric.cluster.spec import ClusterSpec
from aifabric.collectives.communicator import Communicator

GiB = 2**30
NDR = {"nic": "connectx-7", "fabric": "infiniband", "switch": "quantum-2-qm9700"}


def ndr_nodes(accelerator: str, nodes: int) -> ClusterSpec:
    """``nodes`` x 8 ``accelerator`` on one NVSwitch each, one ConnectX-7 NDR 400 Gb/s NIC per GPU. HGX H100
    and HGX B200 have eight such NICs (DGX H100 / DGX B200 user guides, hardware: "8x single-port
    ConnectX-7 ... 400Gb/s"); CoreWeave's PR runs its b200-8x and H100 SKUs with the same MPIJob as its
    InfiniBand H100 examples."""
    spec = {"accelerator": accelerator, "gpus_per_node": 8, "nodes": nodes, "name": accelerator}
    return ClusterSpec.model_validate(spec | {"scale_up": {"kind": "nvswitch"}, "scale_out": NDR})


def _all_reduce_peak(url: str, spec: ClusterSpec, n: int, size: int, busbw: float, opts: Any = ()) -> Point:
    """An all_reduce figure on ``n`` ranks given as busbw only (GB/s): its time is derived, not asserted."""
    time_s = size * 2 * (n - 1) / n / (busbw * 1e9)
    return Point(url, spec, "all_reduce", size, time_s, busbw * 1e9, False, opts)


LIXUEDUAN = "https://www.lixueduan.com/posts/ai/13-gb200-mnnvl-nccl-test"
CW92 = "https://github.com/coreweave/nccl-tests/pull/92"
NT333 = "https://github.com/NVIDIA/nccl-tests/issues/333"
BLOG227 = "https://developer.nvidia.com/blog/enabling-fast-inference-and-resilient-training-with-nccl-2-27"
#: GB200 NVL72 rack (catalogue preset): the post's 8 GPUs are two of its trays ("2 个节点子集(每节点 4 个
#: GB200 + 2 个 Grace,共 8 个 GPU)"), one NVLink domain to NCCL (MNNVL).
NVL72 = preset("gb200-nvl72", gpus=72)
TWO_TRAYS = (("comm", Communicator.from_gpus(NVL72, list(range(8)))),)

POINTS = {
    # lixueduan.com, "GB200 MNNVL 实测带宽提升 10 倍": 2 trays x 4 GB200 through MNNVL, "MNNVL 实测带宽可达
    # 811GB/s" (the sweep's peak busbw; size and NCCL release not in the text: newest tables, 8 GiB, where
    # nccl-tests sweeps usually end). NVLS on the 8-rank NVLink domain (721.8 GB/s x nvlsEfficiency):
    # 812.0 (+0.1 %); the model's plateau is 790.8-815.0 over 1-16 GiB, within 3 % at any large size.
    "lixueduan GB200 2 trays MNNVL peak": _all_reduce_peak(LIXUEDUAN, NVL72, 8, 8 * GiB, 811.0, TWO_TRAYS),
    # coreweave/nccl-tests PR #92, test plan: "B200 8-GPU x 2-node base MPIJob ... 690.07 GB/s busbw @ 8G
    # allreduce" (no SHARP; release not printed: newest tables, 2.27.6 gives the same within 0.3 %).
    # NVLS tree over 8 x 400 Gb/s per node: 732.2 (+6.1 %)
    "CoreWeave PR 92 B200 2 nodes 8 GiB": _all_reduce_peak(CW92, ndr_nodes("b200", 2), 16, 8 * GiB, 690.07),
    # "H100 8-GPU x 2-node base MPIJob ... 440.58 GB/s busbw @ 8G allreduce": NVLS tree 458.9 (+4.2 %)
    "CoreWeave PR 92 H100 2 nodes 8 GiB": _all_reduce_peak(
        CW92, ndr_nodes("h100-sxm", 2), 16, 8 * GiB, 440.58
    ),
}


@pytest.mark.parametrize("key", sorted(POINTS))
def test_public_rack_point(key: str) -> None:
    point = POINTS[key]
    tolerance = 0.10 if point.size >= 64 * 2**20 else 0.15
    assert abs(point.relative_error()) <= tolerance, f"{key}: {point.relative_error():+.1%}"


MISSED = {
    "lixueduan GB200 2 trays over InfiniBand, all_reduce peak": (
        'busbw 85 ("InfiniBand 为 85GB/s") vs 340.9 (NVLS tree over the tray\'s 4 x ConnectX-7 400G, '
        "newest tables, 8 GiB; 299.2 with NVLS off), +301 %. The post's summary gives neither the NICs the "
        "pods saw nor NCCL's algorithm; 85 is what one 400 Gb/s NIC per tray gives (NVLS tree, algbw 48.5 x "
        "2 x 7/8 = 85; the model with gpus_per_nic=4: 85.8), as when a Kubernetes RDMA device plugin hands "
        f"each pod a single HCA. Not asserted: the NIC count would be read off the result ({LIXUEDUAN})"
    ),
    "nccl-tests #333, one GB200 tray (4 ranks), all_reduce 8 B-1 KiB (NCCL 2.27)": (
        'time < 8 us (kiskra-nvidia: "I routinely get under 8µs with all_reduce_perf for messages sizes '
        "up to 1KB, on a single-node GB200 (4 GPUs)\", in the thread on 2.27's symmetric-memory kernels, "
        "nccl-tests -R 2) vs 10.20/10.37 us (ring/LL, 2.27.3 tables; >= +28 %). Missing: the symmetric "
        "kernels (AllReduce_AGxLL_R/AGxLLMC_R on registered windows), which the model does not price; "
        "NCCL's own estimate for them on sm_100 (symmetric.cc v2.27.3-1 queryModel: baseLat 11 us for LL "
        "all-reduce + softplus term) is 11.3-11.5 us at 8 B-1 KiB on 4 or 32 ranks, so its constants "
        f"would not close the gap either ({NT333})"
    ),
    "nccl-tests #333 and the NCCL 2.27 blog, 32 GPUs of a GB200 NVL72 domain, small all_reduce": (
        'time ~6.3 us ("NCCL is expected to achieve ~6.3 µs latency for small message all-reduce '
        'operations on B200s (32 GPUs)"; AddyLaddy: a 32-GPU job, one GPU per process, in one NVLink '
        "domain of a GB200 NVL72 reproduces it) vs 25.0 us at 8 B-1 KiB (NVLS/Simple, 2.27.3 tables), "
        "+297 %. The figure is for symmetric-memory buffers (-R 2), which the model does not price (see "
        "the 4-rank entry); the model's 25 us is the unregistered path. The blog's text gives \"up to 9x "
        'reduction in latency for small message sizes" (its Figure 1, whose numbers are not in the text), '
        "so the unregistered path may run slower than the model's 25 us as well; neither is asserted "
        f"({NT333}, {BLOG227})"
    ),
}


def test_every_missed_point_names_measured_and_predicted() -> None:
    assert all(" vs " in why for why in MISSED.values())
