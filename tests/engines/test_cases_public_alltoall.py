"""The formula engine against public multi-node all_to_all results (blind, the MoE expert-parallel pattern).

Two Oracle quick-start guides publish ``alltoall_perf`` on 2 to 48 hosts of 4 Blackwell GPUs: GB200 (one 400
Gb/s RoCE port per GPU, ``NCCL_IB_HCA`` names 4 HCAs, NCCL 2.27.3 printed by the same guide's all_reduce runs)
and GB300 (the guide's table: "RDMA (ROCe) NICs 8 x 400 Gbps" per host, 8 HCAs named, "NCCL version
2.28.7+cuda13.0" printed by every run). Up to 16 hosts share one NVLink rack (``NCCL_MNNVL_ENABLE=1``: NCCL's
one MNNVL node); 32 hosts are 2 racks of 16 and 48 hosts 3, so the traffic between racks crosses RoCE. Each
point is one row (the out-of-place busbw); the comment gives the quoted row and the model's figure. The GB200
guide's count column is garbled (copied rows), the size column is what the time and algbw agree with.
Tolerance: the blind check's bar (10 % on busbw at >= 64 MiB). None of these guides is a calibration source of
the catalogue. Rows the model misses are in ``MISSED`` (measured, predicted, what is missing); not asserted.
"""

from __future__ import annotations

import pytest
from tests.engines.test_cases_public import Point  # one public row, as the other blind checks have it
from tests.engines.test_cases_public_multi3 import _tolerance  # the same bar

from aifabric.cluster.spec import ClusterSpec
from aifabric.collectives.communicator import Communicator

GiB = 2**30
ROCE = {"fabric": "ethernet", "switch": "spectrum-4-sn5600-400g"}
GB200_URL = "https://github.com/oracle-quickstart/oci-gpu-quickstarts/blob/main/nvidia/GB200/README-GB200.md"
GB300_URL = "https://github.com/oracle-quickstart/oci-gpu-quickstarts/blob/main/nvidia/GB300/README-GB300.md"
RACK_GPUS, HOSTS_PER_RACK, GPUS_PER_HOST = 72, 16, 4


def nvl72_roce(accelerator: str, racks: int, nics_per_gpu: int) -> ClusterSpec:
    """``racks`` NVL72 racks of ``accelerator`` (72-GPU NVLink domain, 4 GPUs per host) on 400 Gb/s RoCE ports
    (``connectx-7`` stands for a 400 Gb/s port): 1 per GPU on BM.GPU.GB200.4 (4 HCAs), 2 on BM.GPU.GB300.4."""
    scale_out = {"nic": "connectx-7", "nics_per_gpu": nics_per_gpu, "planes": nics_per_gpu, **ROCE}
    spec = {"accelerator": accelerator, "gpus_per_node": GPUS_PER_HOST, "gpus": RACK_GPUS * racks}
    spec |= {"name": accelerator, "scale_up": {"kind": "nvswitch", "gpus": RACK_GPUS}, "scale_out": scale_out}
    return ClusterSpec.model_validate(spec)


def _run(accelerator: str, hosts: int, nics_per_gpu: int, version: str) -> tuple[ClusterSpec, tuple]:
    """The spec and options of a run on ``hosts`` hosts: the first 16 hosts of each rack, as the guides place
    them (one rack up to 16 hosts, then 16 per rack)."""
    racks = max(1, hosts // HOSTS_PER_RACK)
    spec = nvl72_roce(accelerator, racks, nics_per_gpu)
    per_rack = min(hosts, HOSTS_PER_RACK) * GPUS_PER_HOST
    gpus = [RACK_GPUS * r + g for r in range(racks) for g in range(per_rack)]
    return spec, (("comm", Communicator.from_gpus(spec, gpus)), ("nccl_version", version))


RUNS = {
    ("gb200", 2): _run("gb200", 2, 1, "2.27.3"),
    ("gb200", 32): _run("gb200", 32, 1, "2.27.3"),
    ("gb300", 2): _run("gb300", 2, 2, "2.28.7"),
    ("gb300", 16): _run("gb300", 16, 2, "2.28.7"),
}


def _a2a(url: str, run: tuple[str, int], size: int, time_us: float, busbw: float) -> Point:
    spec, options = RUNS[run]
    return Point(url, spec, "all_to_all", size, time_us * 1e-6, busbw * 1e9, False, options)


POINTS = {
    # GB200 guide, "All to All Scale Performance 2 Hosts Single Rack" (8 ranks, MNNVL): direct p2p, NVLink.
    # "8589934592 ... 11426 751.78 657.81": 721.0 (+9.6 %)
    "OCI GB200 2 hosts 8 GiB": _a2a(GB200_URL, ("gb200", 2), 8 * GiB, 11426, 657.81),
    # "17179869184 ... 22698 756.88 662.27": 721.4 (+8.9 %)
    "OCI GB200 2 hosts 16 GiB": _a2a(GB200_URL, ("gb200", 2), 16 * GiB, 22698, 662.27),
    # "32 Hosts 2 Racks" (128 ranks): half of each GPU's data leaves the rack on its one 400 Gb/s port, busbw
    # = B_o (n - 1) / (n - g) (the maintainers' N/(N-1) x NIC rule, nccl-tests #130). "4294967296 ... 48079
    # 89.33 88.63": 97.2 (+9.7 %)
    "OCI GB200 32 hosts 4 GiB": _a2a(GB200_URL, ("gb200", 32), 4 * GiB, 48079, 88.63),
    # "8589934592 ... 95018 90.40 89.70": 97.2 (+8.4 %)
    "OCI GB200 32 hosts 8 GiB": _a2a(GB200_URL, ("gb200", 32), 8 * GiB, 95018, 89.70),
    # GB300 guide, "2 Hosts Single Rack" (NCCL 2.28.7). "8589934592 ... 11059 776.74 679.65": 721.0 (+6.1 %)
    "OCI GB300 2 hosts 8 GiB": _a2a(GB300_URL, ("gb300", 2), 8 * GiB, 11059, 679.65),
    # "17179869184 ... 21943 782.92 685.06": 721.4 (+5.3 %)
    "OCI GB300 2 hosts 16 GiB": _a2a(GB300_URL, ("gb300", 2), 16 * GiB, 21943, 685.06),
    # "16 Hosts 1 Rack" (64 ranks, one MNNVL domain). "17179869184 ... 25357 677.51 666.92": 721.4 (+8.2 %)
    "OCI GB300 16 hosts 16 GiB": _a2a(GB300_URL, ("gb300", 16), 16 * GiB, 25357, 666.92),
}


@pytest.mark.parametrize("key", list(POINTS))
def test_public_all_to_all_point(key: str) -> None:
    assert abs(POINTS[key].relative_error()) <= _tolerance(POINTS[key])


#: Public rows the model misses (measured, predicted, what is missing); not asserted.
MISSED = {
    "OCI GB200 guide, 16 hosts in one NVL72 rack (64 ranks, MNNVL), alltoall 4-8 GiB (NCCL 2.27.3)": (
        "busbw 566.30/622.92 at 4/8 GiB (in-place 624.88/623.60) vs 720.3/721.1 (direct p2p over NVLink, "
        "+27/+16 %); the GB300 guide's same shape gives 649.03 at 8 GiB (in-place 652.82) vs 721.1 (+11 %). "
        "Both guides' 2-host rows (8 ranks) reach 658-685, so 64 NVLink peers cost 3-5 % (GB300) and 6 % "
        "(GB200) of the 8-peer rate: the model's bound, B_i of the NVLink port, has no term that grows with "
        "the peers. NCCL 2.27 runs 63 peers on p2pnChannels channels in rounds (enqueue.cc: "
        "p2pnChannelsPerPeer each, ncclP2pChannelBaseForRound), so each channel carries several peers in "
        "turn; what a turn costs on MNNVL has no public figure, and the out-of-place 4 GiB row is 10 % under "
        "its in-place twin (run-to-run spread of the same size)"
    ),
    "OCI GB200 guide, 48 hosts in 3 NVL72 racks (192 ranks), alltoall 4-8 GiB (NCCL 2.27.3)": (
        "busbw 60.90/62.49 vs 73.1/73.1 (direct p2p, two thirds of each GPU's data on its one 400 Gb/s "
        "port; +20/+17 %) while 2 racks (half the data off-rack) are within 10 %: the guide does not state "
        "the RoCE fabric between racks (tiers, oversubscription, ECMP), which sets what 3 racks get"
    ),
    "OCI GB300 guide, 32 hosts in 2 NVL72 racks (128 ranks), alltoall 8-16 GiB (NCCL 2.28.7)": (
        "busbw 47.30/47.67 vs 194.4/194.5 (direct p2p over both 400 Gb/s ports per GPU; +311 %): half of "
        "each GPU's data leaves the rack at 8 GiB / 2 / 180.2 ms = 24 GB/s, half the GB200 run's 45 GB/s on "
        "one port per GPU (4 GiB / 95.0 ms) and a quarter of the guide's two ports. The same guide's "
        "32-host all_reduce (738.39 at 16 GiB) does not contradict it: NVLS tree sends each GPU's 1/64 share "
        "of S each way between the racks, a few GB/s. The RoCE fabric between GB300 racks (tiers, "
        "oversubscription) is not stated, and the run sets NCCL_IB_QPS_PER_CONNECTION=4 with "
        "NCCL_IB_SPLIT_DATA_ON_QPS=0; nothing public prices either"
    ),
    "NVIDIA/nccl #1531, 8 x 8 H800 (64 ranks), alltoall_perf 8 MiB": (
        "time 337.8 us, busbw 24.44 vs 171.7 us, 48.1 (direct p2p with 8 x 400 Gb/s NDR per node assumed; "
        "-49 % on time): the thread states neither the NICs nor the fabric, and reports the rows as unstable "
        "from run to run (its subject); nothing to price it from"
    ),
}


def test_every_missed_point_names_measured_and_predicted() -> None:
    assert all(" vs " in why for why in MISSED.values())
