"""The formula engine against more public multi-node nccl-tests results on cloud fabrics (blind, sixth set).

Machines and documents no other test covers, all from dstack's cluster guides (each a two-node run the guide
prints in full): Lambda 1-Click Clusters, 2 x 8 B200 on eight 400 Gb/s InfiniBand ports a node (NCCL 2.26.2),
Nebius, 2 x 8 H100 on eight 400 Gb/s InfiniBand ports a node (release not printed), and GCP A3 High, 2 x 8
H100 on four 200 Gb/s GPUDirect-TCPX NICs a node (ring/Simple forced). Each point is one row of the printed
log; the comment gives the source, the quoted row (size, time us, busbw GB/s) and the model's figure.
Tolerance: the blind check's bar, 10 % on busbw at >= 64 MiB, 15 % on busbw at mid sizes and on time at small
sizes. The model runs the release the log prints (the catalogue's newest tables at or before it), else the
newest tables. None of these documents is a calibration source of the catalogue (the gcp-tcpx transport's
figures are TCPXO's, taken from dstack's gcp.md, a different document). Points the model misses are in
``MISSED`` (measured, predicted, what is missing); not asserted.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.engines.test_cases_public import Point  # one public row, as the other blind checks have it
from tests.engines.test_cases_public_multi3 import _nodes, _tolerance
from tests.engines.test_cases_public_multi5 import h100_ndr  # 8 x H100, one 400G NDR port per GPU

from aifabric.cluster.spec import ClusterSpec

MiB = 2**20
GiB = 2**30


def b200_ndr(nodes: int) -> ClusterSpec:
    """8 x B200 on NVSwitch, one 400 Gb/s InfiniBand port per GPU. The guide prints no NICs (the log's
    ``NCCL_IB_HCA=^mlx5_0`` only leaves out the front-end port); Lambda sells its 1-Click Clusters with
    3200 Gb/s of Quantum-2 InfiniBand a node (its product page, not quoted in the guide), and the 696 GB/s
    two-node plateau is within 2 % of the NVLS tree over eight 400G ports."""
    return _nodes("b200", nodes, {"nic": "connectx-7", "switch": "quantum-2-qm9700"})


DSTACK = "https://github.com/dstackai/dstack/blob/"
LAMBDA = DSTACK + "35a4914417bcd76b57a60e39ddcbc74530fd62a5/examples/clusters/lambda/README.md"
NEBIUS = DSTACK + "107fefef52821c544abe1755d9379fe9ed54a96c/examples/clusters/nebius/README.md"
A3HIGH = DSTACK + "6f6b421b2fb3039afc4c3a45d99fca9fc14b7efd/examples/clusters/a3high/README.md"
#: "nccl-tests version 2.17.6 nccl-headers=22602 nccl-library=22602"
V2262 = (("nccl_version", "2.26.2"),)
B200_2, H100_2 = b200_ndr(2), h100_ndr(2)


def _bw(url: str, spec: ClusterSpec, size: int, time_us: float, busbw: float, opts: Any = ()) -> Point:
    """An all_reduce row, its busbw asserted."""
    return Point(url, spec, "all_reduce", size, time_us * 1e-6, busbw * 1e9, False, tuple(opts))


def _lambda(size: int, time_us: float, busbw: float) -> Point:
    return _bw(LAMBDA, B200_2, size, time_us, busbw, V2262)


def _nebius(size: int, time_us: float, busbw: float) -> Point:
    return _bw(NEBIUS, H100_2, size, time_us, busbw)


POINTS = {
    # dstack examples/clusters/lambda/README.md, "Run NCCL tests": 2 x 8 B200 (hosts worker-gpu-8x-b200-*),
    # all_reduce_perf, NCCL 2.26.2, NCCL's own choice. "16777216 ... 186.86 89.78 168.34": NVLS tree/Simple
    # 173.8 (+3.2 %)
    "Lambda 1CC 2 x B200 16 MiB": _lambda(16 * MiB, 186.86, 168.34),
    # "33554432 ... 255.79 131.18 245.96": 281.3 (+14.4 %)
    "Lambda 1CC 2 x B200 32 MiB": _lambda(32 * MiB, 255.79, 245.96),
    # "134217728 ... 596.75 224.92 421.72": 445.4 (+5.6 %)
    "Lambda 1CC 2 x B200 128 MiB": _lambda(128 * MiB, 596.75, 421.72),
    # "268435456 ... 934.67 287.20 538.50": 555.3 (+3.1 %)
    "Lambda 1CC 2 x B200 256 MiB": _lambda(256 * MiB, 934.67, 538.50),
    # "536870912 ... 1625.63 330.25 619.23": 633.5 (+2.3 %)
    "Lambda 1CC 2 x B200 512 MiB": _lambda(512 * MiB, 1625.63, 619.23),
    # "1073741824 ... 2972.25 361.26 677.35": 681.4 (+0.6 %)
    "Lambda 1CC 2 x B200 1 GiB": _lambda(GiB, 2972.25, 677.35),
    # "2147483648 ... 5784.75 371.23 696.06": 708.2 (+1.8 %)
    "Lambda 1CC 2 x B200 2 GiB": _lambda(2 * GiB, 5784.75, 696.06),
    # dstack examples/clusters/nebius/README.md, "NCCL tests": 2 x 8 H100 in a Nebius GPU cluster (the
    # guide's fleet "gpu: H100:8", InfiniBand; NICs not printed, one 400G NDR port per GPU as Nebius's H100
    # hosts, and the 467.5 GB/s plateau needs it), all_reduce_perf -b 8 -e 8G, release not printed (newest
    # tables).
    # "8388608 ... 154.48 54.30 101.82": NVLS tree/Simple 93.1 (-8.6 %)
    "Nebius 2 x H100 8 MiB": _nebius(8 * MiB, 154.48, 101.82),
    # "16777216 ... 210.33 79.77 149.56": 154.9 (+3.6 %)
    "Nebius 2 x H100 16 MiB": _nebius(16 * MiB, 210.33, 149.56),
    # "33554432 ... 274.23 122.36 229.43": 232.0 (+1.1 %)
    "Nebius 2 x H100 32 MiB": _nebius(32 * MiB, 274.23, 229.43),
    # "67108864 ... 472.43 142.05 266.35": 264.5 (-0.7 %)
    "Nebius 2 x H100 64 MiB": _nebius(64 * MiB, 472.43, 266.35),
    # "134217728 ... 759.58 176.70 331.31": 336.3 (+1.5 %)
    "Nebius 2 x H100 128 MiB": _nebius(128 * MiB, 759.58, 331.31),
    # "268435456 ... 1305.66 205.59 385.49": 389.1 (+0.9 %)
    "Nebius 2 x H100 256 MiB": _nebius(256 * MiB, 1305.66, 385.49),
    # "536870912 ... 2379.38 225.63 423.06": 422.3 (-0.2 %)
    "Nebius 2 x H100 512 MiB": _nebius(512 * MiB, 2379.38, 423.06),
    # "1073741824 ... 4511.97 237.98 446.21": 441.1 (-1.2 %)
    "Nebius 2 x H100 1 GiB": _nebius(GiB, 4511.97, 446.21),
    # "2147483648 ... 8776.26 244.69 458.80": 451.1 (-1.7 %)
    "Nebius 2 x H100 2 GiB": _nebius(2 * GiB, 8776.26, 458.80),
    # "4294967296 ... 17407.8 246.73 462.61": 456.3 (-1.4 %)
    "Nebius 2 x H100 4 GiB": _nebius(4 * GiB, 17407.8, 462.61),
    # "8589934592 ... 34448.4 249.36 467.54": 458.9 (-1.8 %)
    "Nebius 2 x H100 8 GiB": _nebius(8 * GiB, 34448.4, 467.54),
}


@pytest.mark.parametrize("key", list(POINTS))
def test_public_multi_node_point(key: str) -> None:
    assert abs(POINTS[key].relative_error()) <= _tolerance(POINTS[key])


#: Public rows the model misses (measured, predicted, what is missing); not asserted.
MISSED = {
    "dstack a3high README, 2 x 8 H100 GCP A3 High, all_gather ring/Simple over GPUDirect-TCPX": (
        "busbw 43.92/49.99/49.67/49.27/50.17 at 64 MiB/128 MiB/256 MiB/1 GiB/8 GiB ('8589934592 ... 160505 "
        "53.52 50.17') vs ring/Simple 79.8/86.3/90.0/93.0/93.9 (+82/+73/+81/+89/+87 %); 8-32 MiB 10.02/"
        "15.57/27.08 vs 38.8/55.0/69.4 (+156 to +288 %), on test_cases_public_multi's gcp_a3_high spec "
        "with the guide's NCCL_ALGO=Ring NCCL_PROTO=Simple. The plateau is 0.50 of the four 200G NICs "
        "where test_cases_public_multi's A3 High run (another document, the same machine type) reaches "
        "0.84-0.88 and the model's gcp-tcpx figure (0.94, assumed equal to TCPXO's) sits near it. The "
        "guide runs the plugin from the COS image with one socket thread and four sockets per NIC "
        "(NCCL_SOCKET_NTHREADS=1, NCCL_NSOCKS_PERTHREAD=4) and says a purpose-built image 'will ... "
        "improve performance': a host receive-path limit of TCPX's CPU-side flow steering, which the "
        "formula engine does not carry and no public per-configuration figure sizes"
    ),
    "dstack lambda README, 2 x 8 B200 all_reduce 1-8 MiB and 64 MiB (NCCL 2.26.2)": (
        "busbw 17.01/111.24/359.09 at 1/8/64 MiB ('1048576 ... 115.58 9.07 17.01') vs tree/LL128 36.1, "
        "NVLS tree/Simple 134.4/407.2 (+112/+21/+13.4 %); the log's 1, 2 and 4 MiB rows all take 114-118 "
        "us, a flat per-call floor near 115 us the model's tree/LL128 (54 us at 1 MiB) does not have; at "
        "64 MiB the NVLS tree has not reached the model's pipelined rate (16 and 32 MiB fit, asserted). "
        "The floor starts at 512 KiB (in place 125.73 us; out of place 240.71, a first call), and 1-16 MiB "
        "are one NET step per NVLS-tree op: 2.26.2's enqueue.cc runs 32 channels (nvls.cc "
        "NVLS_NCHANNELS_SM100) x 8 heads = 256 ops with 32 KiB chunks below 16 MiB and 64 KiB at 16 MiB, "
        "so each op moves S / 256 = 4-64 KiB once. The rows read 96 us + S / 183 GB/s algbw from 4 MiB "
        "(118.25/141.39/186.86 at 4/8/16 MiB) with a 114 us floor below; forced NVLS-tree, the model "
        "gives 61.0/69.0/85.0/117.0 us at 1/2/4/8 MiB (53 us latency, 2.26.2's 25 + 2 x 14; its marginal "
        "rate, 131 GB/s at 8-16 MiB, is below the measured one): the gap is a ~45-60 us per-call cost of "
        "B200's NVLS tree, against 6 us on H100 on the same release (case 03 T1: 71.9 vs 65.8 at 1 MiB), "
        "which no tuning.cc table of 2.25.1-2.30.7 carries (NVLS-tree NVLink 25 us and NET 14/20.9 us are "
        "the same for sm90 and sm100) and no public figure sizes"
    ),
    "dstack lambda README, 2 x 8 B200 small all_reduce (NCCL 2.26.2)": (
        "time 36.50/45.33/44.59 us at 8 B/1 KiB/64 KiB out of place, 36.16/37.98/43.90 in place, vs tree/LL "
        "25.2/26.1/30.8 (-30/-31/-30 % in place): a flat ~11 us a call above the model from 8 B to 64 KiB. "
        "Case 03 T1 (case_03_h100_xe9680, asserted) runs the same release, the same ConnectX-7 NDR ports, "
        "one rank per GPU under mpirun, and gives 24.70/26.65/33.08 in place: the offset belongs to the "
        "platform, not to NCCL's tables, which have no per-GPU-generation or per-host latency term (tuning.cc"
        " v2.26.2-1 to v2.30.7-1: baseLat/hwLat one table for all; getNetOverhead's CPU-vendor term, 1 us "
        "Intel / 2 us AMD, only on ring steps; graph latencyInter 0 on net_ib). The LL step over the network"
        " goes through host memory on the sender (net.cc v2.26.2-1 sendSetup: LL buffers never on the GPU; "
        "the proxy checks the LL flags before posting), a host-side cost no public figure sizes per platform"
        ", and the guide does not name the host CPU"
    ),
    "dstack nebius README, 2 x 8 H100 small all_reduce and 1 MiB (release not printed)": (
        "time 45.72/31.36/37.85 us at 8 B/1 KiB/64 KiB out of place, 29.78/31.29/37.55 in place, vs tree/LL "
        "25.2/26.1/30.8 (-15.4/-16.5/-18.0 % in place; the 8 B out-of-place row is a first-call outlier); "
        "busbw 22.58 at 1 MiB (87.08 us) vs tree/LL128 32.6 (+44 %): 4.6-6.8 us a call above NCCL's newest "
        "tables and case 03 T1's in-place rows on the same NIC (see the Lambda entry for what was checked), "
        "on VMs of a fabric whose latency has no public figure. At 1 MiB the row is NVLS-tree's cost under "
        "the newest tables (forced: 79.6 us, busbw +9.4 %), as case 03 T4's 1-2 MiB are "
        "(test_cases_accuracy MISSED '03 T4 2 nodes, 1-2 MiB'): the newest tuner keeps tree/LL128 to 2 MiB, "
        "the <= 2.28.3 tables pick NVLS-tree from 1 MiB but at 25 + 2 x 14 us (65.8 us, busbw +32 %); no "
        "one release reading gives both the pick and the time, and the guide prints no release"
    ),
}


def test_every_missed_point_names_measured_and_predicted() -> None:
    assert all(" vs " in why for why in MISSED.values())
