"""The formula engine against more public multi-node nccl-tests results (blind, third set).

Machines and documents no other test covers: 2 x AWS p5.48xlarge over EFA (a full 8 B - 16 GiB sweep),
2 x OCI BM.GPU.GB200.4 trays in one NVLink domain (MNNVL, NCCL 2.26.6), 2 x OCI BM.GPU.H100.8 on 16 x 200
Gb/s RoCE (NCCL 2.21.5), 2 x OCI A100 shapes on 16 x 100 Gb/s RoCE (three runs: Oracle Linux with NCCL
2.21.5, Ubuntu with NCCL 2.26.5, OKE with the manifest's NCCL 2.23.4), 2 x 4 H100 on 4 x 200 Gb/s with
the ring forced. Each point is one row of a public document or thread whose hardware is stated; the comment
gives the source, the quoted row (size, time us, busbw GB/s) and the model's figure. Tolerance: the blind
check's bar, 10 % on busbw at >= 64 MiB, 15 % on busbw at mid sizes and on time at small sizes. The model
runs the run's NCCL release when the document states it (the catalogue's newest tables at or before it),
else the newest recorded tables (said per source). None of these documents is a calibration source of
the catalogue. Points the model misses are in ``MISSED`` (measured, predicted, what is missing); not
asserted.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.engines.test_cases_public import Point  # one public row, as the other blind checks have it

from aifabric.cluster.presets import preset
from aifabric.cluster.spec import ClusterSpec
from aifabric.collectives.communicator import Communicator

MiB = 2**20
GiB = 2**30
ROCE = {"fabric": "ethernet", "switch": "spectrum-4-sn5600-400g"}


def _nodes(accelerator: str, nodes: int, scale_out: dict[str, Any], gpus_per_node: int = 8) -> ClusterSpec:
    """``nodes`` x ``gpus_per_node`` ``accelerator`` on one NVSwitch domain each, with the given scale-out."""
    spec = {"accelerator": accelerator, "gpus_per_node": gpus_per_node, "nodes": nodes, "name": accelerator}
    spec |= {"scale_up": {"kind": "nvswitch"}, "scale_out": scale_out}
    return ClusterSpec.model_validate(spec)


def p5(nodes: int) -> ClusterSpec:
    """AWS p5.48xlarge: 8 x H100, 32 x 100 Gb/s EFA (4 per GPU; cloud_instances.yaml p5; the document's own
    table: "p5.48xlarge | 3200 Gbps EFAv2 | 900 GB/s NVSwitch"), SRD through aws-ofi-nccl."""
    return _nodes(
        "h100-sxm", nodes, {"nic": "efa-v2", "nics_per_gpu": 4, "planes": 4, "transport": "efa-srd", **ROCE}
    )


def oci_h100(nodes: int) -> ClusterSpec:
    """OCI BM.GPU.H100.8: 8 x H100 80GB, 16 RDMA ports of 200 Gb/s on the RoCEv2 cluster network (the
    tutorial: "全16ポートのRDMAインタフェース", ``NCCL_IB_GID_INDEX=3``, 16 mlx5 HCAs). ``connectx-6`` stands
    for a 200 Gb/s port, two per GPU."""
    return _nodes("h100-sxm", nodes, {"nic": "connectx-6", "nics_per_gpu": 2, "planes": 2, **ROCE})


def oci_a100(nodes: int) -> ClusterSpec:
    """OCI BM.GPU4.8 / BM.GPU.B4.8: 8 x A100-SXM4-40GB, 16 x 100 Gb/s RDMA ports on the RoCEv2 cluster
    network (ocitutorials: "クラスタ・ネットワーク (100Gbps x 16 /ノード)"; the OKE manifest lists 16 mlx5
    HCAs). ``connectx-5`` is the catalogue's 100 Gb/s port, two per GPU."""
    return _nodes("a100-sxm-40gb", nodes, {"nic": "connectx-5", "nics_per_gpu": 2, "planes": 2, **ROCE})


def h100_four_hdr(nodes: int) -> ClusterSpec:
    """4 x H100 80GB HBM3 per node (NVIDIA/nccl-tests #252: "two nodes with 4 H100 GPUs per"), one 200 Gb/s
    NIC per GPU (the maintainer: "~24GB/s per NIC" for the run's 95 GB/s busbw, 4 x 24)."""
    return _nodes("h100-sxm", nodes, {"nic": "connectx-6", "switch": "quantum-qm8700"}, gpus_per_node=4)


AWS = "https://github.com/aws-samples/awsome-distributed-training/blob/main/1.architectures/2.aws-parallelcluster/deployment-guides/pcluster-observability.md"
OKE_GB200 = (
    "https://github.com/oracle-quickstart/oci-hpc-oke/blob/28b73d871a43d5f5831e5387d446e8f988fcb5e7/README.md"
)
OKE_A100 = (
    "https://github.com/oracle-quickstart/oci-hpc-oke/blob/185aceb6e3972f2a2b80b20e8afcd6b000a46163/README.md"
)
OCI_H100 = (
    "https://github.com/oracle-japan/ocitutorials/blob/master/tutorials/_hpc/benchmark/run-nccltests-h100.md"
)
OCI_A100 = (
    "https://github.com/oracle-japan/ocitutorials/blob/master/tutorials/_hpc/benchmark/run-nccltests.md"
)
NT252 = "https://github.com/NVIDIA/nccl-tests/issues/252"
P5_2, H100_OCI_2, A100_OCI_2 = p5(2), oci_h100(2), oci_a100(2)
#: GB200 NVL72 rack (catalogue preset); the run's 8 ranks are two trays of it (``--map-by ppr:4:node``,
#: ``NCCL_MNNVL_ENABLE=1``, one ComputeDomain): one NVLink domain, NCCL's one MNNVL node.
NVL72 = preset("gb200-nvl72", gpus=72)
TWO_TRAYS = (("comm", Communicator.from_gpus(NVL72, list(range(8)))), ("nccl_version", "2.26.6"))
V2215 = (("nccl_version", "2.21.5"),)
#: The BM.GPU.B4.8 manifest's image at that commit: nccl-tests:pytorch-24.11-nccl-2.23.4-1.
V2234 = (("nccl_version", "2.23.4"),)
RING = (("env", {"NCCL_ALGO": "Ring"}),)


def _bus(url: str, spec: ClusterSpec, size: int, time_us: float, busbw: float, opts: Any = ()) -> Point:
    return Point(url, spec, "all_reduce", size, time_us * 1e-6, busbw * 1e9, False, opts)


def _aws(size: int, time_us: float, busbw: float) -> Point:
    return _bus(AWS, P5_2, size, time_us, busbw)


def _gb200(size: int, time_us: float, busbw: float) -> Point:
    return _bus(OKE_GB200, NVL72, size, time_us, busbw, TWO_TRAYS)


def _oci_h100(size: int, time_us: float, busbw: float) -> Point:
    return _bus(OCI_H100, H100_OCI_2, size, time_us, busbw, V2215)


def _oke_a100(size: int, time_us: float, busbw: float) -> Point:
    return _bus(OKE_A100, A100_OCI_2, size, time_us, busbw, V2234)


def _nt252(size: int, time_us: float, busbw: float) -> Point:
    return _bus(NT252, h100_four_hdr(2), size, time_us, busbw, RING)


POINTS = {
    # awsome-distributed-training, PCluster deployment guide: "results for 2 x p5.48xlarge instances with 8B
    # to 16GB buffer size", release not printed (newest tables). NVLS tree over 8 x 4 x 100 Gb/s EFA x 0.59
    # (efa-srd; efa-v2's 27.0 us network step), with the 512 KiB NVLS chunks aws-ofi-nccl sets on p5
    # (newest plugin release, aws_ofi_nccl.yaml; 128 MiB and 256 MiB run 64/128 KiB either way).
    # "134217728 ... 870.3 154.22 289.16": 306.3 (+5.9 %)
    "AWS p5 2 nodes 128 MiB": _aws(128 * MiB, 870.3, 289.16),
    # "268435456 ... 1468.2 182.83 342.81": 362.0 (+5.6 %)
    "AWS p5 2 nodes 256 MiB": _aws(256 * MiB, 1468.2, 342.81),
    # "536870912 ... 2559.2 209.78 393.34": 377.0 (-4.2 %; 398.2 at NCCL's own 128 KiB)
    "AWS p5 2 nodes 512 MiB": _aws(512 * MiB, 2559.2, 393.34),
    # "1073741824 ... 4607.6 233.04 436.95": 407.1 (-6.8 %; 419.2)
    "AWS p5 2 nodes 1 GiB": _aws(GiB, 4607.6, 436.95),
    # "2147483648 ... 9074.5 236.65 443.72": 411.8 (-7.2 %; 430.5)
    "AWS p5 2 nodes 2 GiB": _aws(2 * GiB, 9074.5, 443.72),
    # "4294967296 ... 17286 248.46 465.87": 426.6 (-8.4 %; 436.4)
    "AWS p5 2 nodes 4 GiB": _aws(4 * GiB, 17286, 465.87),
    # "8589934592 ... 33605 255.62 479.28": 434.4 (-9.4 %; 439.4)
    "AWS p5 2 nodes 8 GiB": _aws(8 * GiB, 33605, 479.28),
    # "17179869184 ... 66132 259.78 487.09": 438.4 (-9.99 %; 441.0): the plateau, under the measured one
    # by the efa-srd efficiency (0.59, from p4dn); the 512 KiB chunks' fill, 2 x 16 x 8 x 512 KiB = 128
    # MiB (32 MiB at 128 KiB), costs 0.6 %
    "AWS p5 2 nodes 16 GiB": _aws(16 * GiB, 66132, 487.09),
    # The same guide's small rows: tree/LL, 6.8 + 2 x (7 x 0.6 + 27.0) = 69.2 us with efa-v2's latency
    # (nics.yaml, taken from aws-k8s-tester #585's p5 run, not from this one). "8 2 float sum -1 69.12":
    # 69.2 (+0.1 %)
    "AWS p5 2 nodes 8 B": Point(AWS, P5_2, "all_reduce", 8, 69.12e-6, 0.0, True),
    # "128 ... 74.92": 69.3 (-7.5 %)
    "AWS p5 2 nodes 128 B": Point(AWS, P5_2, "all_reduce", 128, 74.92e-6, 0.0, True),
    # "1024 ... 69.24": 70.1 (+1.3 %)
    "AWS p5 2 nodes 1 KiB": Point(AWS, P5_2, "all_reduce", 1024, 69.24e-6, 0.0, True),
    # "8192 ... 81.44": 74.0 (-9.1 %)
    "AWS p5 2 nodes 8 KiB": Point(AWS, P5_2, "all_reduce", 8192, 81.44e-6, 0.0, True),
    # oci-hpc-oke GB200 README: 8 ranks on 2 x BM.GPU.GB200.4 through MNNVL, image nccl-2.26.6-1 (2.25.1
    # tables). NVLS in the NVLink domain (721.8 GB/s x 0.74 nvlsEfficiency). "4194304 ... 52.72 79.55
    # 139.22": 141.4 (+1.5 %)
    "OKE GB200 MNNVL 4 MiB": _gb200(4 * MiB, 52.72, 139.22),
    # "8388608 ... 67.94 123.47 216.07": 241.1 (+11.6 %)
    "OKE GB200 MNNVL 8 MiB": _gb200(8 * MiB, 67.94, 216.07),
    # "16777216 ... 102.8 163.15 285.52": 303.3 (+6.2 %)
    "OKE GB200 MNNVL 16 MiB": _gb200(16 * MiB, 102.8, 285.52),
    # "134217728 ... 386.9 346.95 607.15": 611.7 (+0.8 %)
    "OKE GB200 MNNVL 128 MiB": _gb200(128 * MiB, 386.9, 607.15),
    # "268435456 ... 698.9 384.07 672.13": 699.9 (+4.1 %)
    "OKE GB200 MNNVL 256 MiB": _gb200(256 * MiB, 698.9, 672.13),
    # "536870912 ... 1314.7 408.37 714.65": 754.3 (+5.6 %)
    "OKE GB200 MNNVL 512 MiB": _gb200(512 * MiB, 1314.7, 714.65),
    # "1073741824 ... 2544.0 422.06 738.61": 784.8 (+6.3 %)
    "OKE GB200 MNNVL 1 GiB": _gb200(GiB, 2544.0, 738.61),
    # "2147483648 ... 4557.5 471.20 824.59": 788.9 (-4.3 %)
    "OKE GB200 MNNVL 2 GiB": _gb200(2 * GiB, 4557.5, 824.59),
    # "4294967296 ... 9015.4 476.40 833.71": 803.2 (-3.7 %)
    "OKE GB200 MNNVL 4 GiB": _gb200(4 * GiB, 9015.4, 833.71),
    # "8589934592 ... 17887 480.23 840.41": 810.5 (-3.6 %)
    "OKE GB200 MNNVL 8 GiB": _gb200(8 * GiB, 17887, 840.41),
    # "17179869184 ... 35549 483.27 845.72": 814.2 (-3.7 %)
    "OKE GB200 MNNVL 16 GiB": _gb200(16 * GiB, 35549, 845.72),
    # "34359738368 ... 70981 484.07 847.12": 816.0 (-3.7 %)
    "OKE GB200 MNNVL 32 GiB": _gb200(32 * GiB, 70981, 847.12),
    # ocitutorials, NCCL Tests on BM.GPU.H100.8 (2 nodes, 16 GPUs, NCCL 2.21.5 of the TensorFlow 24.06 NGC
    # container): NVLS tree over 16 x 200 Gb/s RoCE. "1073741824 ... 4511.2 238.02 446.28": 442.4 (-0.9 %)
    "OCI H100 16x200G 1 GiB": _oci_h100(GiB, 4511.2, 446.28),
    # "2147483648 ... 8825.9 243.31 456.22": 451.8 (-1.0 %)
    "OCI H100 16x200G 2 GiB": _oci_h100(2 * GiB, 8825.9, 456.22),
    # "4294967296 ... 17437 246.31 461.83": 456.7 (-1.1 %)
    "OCI H100 16x200G 4 GiB": _oci_h100(4 * GiB, 17437, 461.83),
    # "8589934592 ... 34719 247.41 463.90": 459.1 (-1.0 %)
    "OCI H100 16x200G 8 GiB": _oci_h100(8 * GiB, 34719, 463.90),
    # "17179869184 ... 69338 247.77 464.57": 460.4 (-0.9 %)
    "OCI H100 16x200G 16 GiB": _oci_h100(16 * GiB, 69338, 464.57),
    # ocitutorials, NCCL Tests on BM.GPU4.8 (2 nodes, 16 x A100-SXM4-40GB, the same container's NCCL
    # 2.21.5): the 2-node tree/Simple, bound by the chain's NVLink, 240 x 8 / 14 x 0.92 (tree.chain_relief).
    # "10737418240 ... 90330 118.87 222.88": 235.3 (+5.6 %; 206.1, -7.6 %, while each GPU sent 2 S)
    "OCI A100 16x100G 10 GiB": _bus(OCI_A100, A100_OCI_2, 10 * GiB, 90330, 222.88, V2215),
    # oci-hpc-oke README, BM.GPU.B4.8 NCCL test (2 x 8 A100-SXM4-40GB, 16 HCAs). "33554432 ... 452.3 74.18
    # 139.08": tree/LL128 153.9 (+10.7 %)
    "OKE A100 16x100G 32 MiB": _oke_a100(32 * MiB, 452.3, 139.08),
    # "67108864 ... 821.7 81.67 153.13": 163.6 (+6.9 %)
    "OKE A100 16x100G 64 MiB": _oke_a100(64 * MiB, 821.7, 153.13),
    # "1073741824 ... 9187.8 116.87 219.12": tree/Simple 234.0 (+6.8 %; 205.1 at 2 S per GPU)
    "OKE A100 16x100G 1 GiB": _oke_a100(GiB, 9187.8, 219.12),
    # "2147483648 ... 18289 117.42 220.16": 235.3 (+6.9 %; 206.0)
    "OKE A100 16x100G 2 GiB": _oke_a100(2 * GiB, 18289, 220.16),
    # "4294967296 ... 34176 125.67 235.63": 235.9 (+0.1 %; 206.5, -12.4 %, a miss at 2 S per GPU)
    "OKE A100 16x100G 4 GiB": _oke_a100(4 * GiB, 34176, 235.63),
    # "8589934592 ... 67689 126.90 237.94": 236.3 (-0.7 %; 206.8, -13.1 %)
    "OKE A100 16x100G 8 GiB": _oke_a100(8 * GiB, 67689, 237.94),
    # NVIDIA/nccl-tests #252: 2 x 4 H100, NCCL_ALGO=RING, release not printed (newest tables); ring/Simple
    # over 4 x 200 Gb/s per node. "536870912 ... 10052 53.41 93.46": 95.0 (+1.6 %)
    "252 H100 2x4 ring 512 MiB": _nt252(512 * MiB, 10052, 93.46),
    # "1073741824 ... 20079 53.48 93.58": 95.5 (+2.0 %)
    "252 H100 2x4 ring 1 GiB": _nt252(GiB, 20079, 93.58),
    # "2147483648 ... 39871 53.86 94.26": 95.7 (+1.6 %)
    "252 H100 2x4 ring 2 GiB": _nt252(2 * GiB, 39871, 94.26),
    # "4294967296 ... 77194 55.64 97.37": 95.9 (-1.5 %)
    "252 H100 2x4 ring 4 GiB": _nt252(4 * GiB, 77194, 97.37),
    # "8589934592 ... 158070 54.34 95.10": 95.9 (+0.9 %)
    "252 H100 2x4 ring 8 GiB": _nt252(8 * GiB, 158070, 95.10),
}


def _tolerance(point: Point) -> float:
    """The blind check's bar: 10 % on busbw at >= 64 MiB, 15 % on busbw below and on small-size time."""
    return 0.10 if not point.latency and point.size >= 64 * MiB else 0.15


@pytest.mark.parametrize("key", list(POINTS))
def test_public_multi_node_point(key: str) -> None:
    assert abs(POINTS[key].relative_error()) <= _tolerance(POINTS[key])


#: Public rows the model misses (measured, predicted, what is missing); not asserted.
MISSED = {
    "awsome-distributed-training PCluster guide, 2 x p5.48xlarge all_reduce 64 KiB": (
        "time 135.1 us vs 74.8 (tree/LL, -45 %) while 8 B-8 KiB are asserted (69.1-81.4 us measured): the "
        "log adds 53.7 us from 8 KiB (81.44) to 64 KiB where the model's LL bandwidth term adds 0.8; SRD's "
        "per-message cost of the tree's chunks is the same unsized mechanism as the 1-64 MiB rows below. "
        "The latency aws-ofi-nccl reports to NCCL "
        "(src/platform-aws.cpp: 75 us on p4d/p5, 35 us on p5en/p6-b200/p6-b300; NCCL adds it to its "
        "tuner's NET latency, search.cc latencyInter, tuning.cc interLat, twice for Simple) is a tuner "
        "setting 'based on empirical search' (aws-ofi-nccl 2496e7de), not a time: as one it would give "
        "6.8 + 2 x (7 x 0.6 + 5 + 75) = 175 us at 8 B against 69 measured"
    ),
    "awsome-distributed-training PCluster guide, 2 x p5.48xlarge all_reduce 1-64 MiB": (
        "busbw 15.95/46.64/105.52/143.09/209.19 at 1/4/16/32/64 MiB vs 19.0/62.8/124.3/194.1/234.2 "
        "(tree/LL128 to 4 MiB, NVLS tree above; +19/+35/+18/+36/+12 %; with efa-v2's 27.0 us network step, "
        "was 23.2/73.7/134.2/206.0/242.6 at 17.7 us): the same mid-size shortfall as "
        "p6-b300's row (test_cases_public_multi2 MISSED): SRD's per-message cost of the tree's 64-128 KiB "
        "chunks has no public figure; from 128 MiB the rows are asserted. Not the chunks aws-ofi-nccl sets "
        "on p5 (platform-aws.cpp: NCCL_NVLS_CHUNKSIZE and NCCL_NVLSTREE_MAX_CHUNKSIZE 512 KiB, "
        "NCCL_BUFFSIZE 8 MiB): on 2 nodes enqueue.cc shrinks 512 KiB to 64 KiB below 64 MiB, as it does "
        "128 KiB; they change NVLS-tree's chunk from 512 MiB only (modelled: 1 GiB 419.2 -> 407.1). Not "
        "NCCL_STEPS' window either (the KeitaW p5 row, test_cases_public_multi4 MISSED, has the check): "
        "below 64 MiB no connection has 8 steps to send"
    ),
    "oci-hpc-oke GB200 README, 8 ranks on 2 MNNVL trays, all_reduce 8 B-1 MiB (NCCL 2.26.6)": (
        "time 21.57/24.87/27.39/28.26/29.95/30.58/32.18 us at 8 B/64 B/1 KiB/8 KiB/64 KiB/256 KiB/1 MiB vs "
        "15.0/15.0/15.2/16.6/21.5/21.5/21.5 (ring/LL: baseLat 6.6 + 14 x hwLat NVLink 0.6; -28 to -45 %): "
        "a ~6.5 us floor per call that no tuning.cc term gives (v2.26.2-1 has no MNNVL case); NCCL counts "
        "the two trays as one node, and the cross-tray path (fabric-handle memory through IMEX) has no "
        "public latency figure"
    ),
    "oci-hpc-oke GB200 README, 8 ranks on 2 MNNVL trays, all_reduce 32-64 MiB (NCCL 2.26.6)": (
        "busbw 368.17/442.59 vs 442.5/574.3 (NVLS, +20/+30 %) while 4-16 MiB and >= 128 MiB are within 12 "
        "%. 2.26.6 gives every Blackwell 32 NVLS channels (nvls.cc v2.26.6-1 NVLS_NCHANNELS_SM100; the "
        "24-channel one-node figure starts in 2.27.3), so with 8 heads enqueue.cc's chunk is 16 KiB below "
        "16 MiB, 32 KiB to 128 MiB, 64 KiB to 2 GiB and 128 KiB above. Per added loop (32 x 8 x chunk) the "
        "run takes 15.2 us at 16 KiB, 26.5-28.3 at 32 KiB, 38.4-39.0 at 64 KiB and 69.0-69.7 at 128 KiB: "
        "276 / 296-317 / 430-437 / 482-486 GB/s algbw against the model's 467 at every chunk. The busbw "
        "step at 2 GiB (739 -> 825) is the switch to 128 KiB chunks, where the rate meets the NVLink "
        "bound; the B200 A4 log has the same per-chunk rates to 2 % from 32 MiB (test_cases_public_node3 "
        "MISSED, where what was checked is listed): the one-node NVLS kernel, not the cross-tray path. No "
        "source prices the rate at a chunk"
    ),
    "oci-hpc-oke B4.8 README, 2 x 8 A100 on 16 x 100 Gb/s RoCE, all_reduce 8 B-256 KiB": (
        "time 36.47/38.85/41.97/48.16/51.69/67.95 us at 8 B/128 B/1 KiB/8 KiB/64 KiB/256 KiB vs "
        "25.2/25.3/26.4/31.2/32.2/52.7 (tree/LL: 6.8 + 2 x (7 x 0.6 + 5.0); -22 to -38 %): NCCL's "
        "hwLat NET 5.0 us reproduces InfiniBand's 25 us 2-node row (nccl-tests #309); this RoCE cluster "
        "network gives (36.5 - 6.8 - 8.4) / 2 = 10.6 us per hop, which no public figure of the OCI "
        "fabric states"
    ),
    "oci-hpc-oke B4.8 README, 2 x 8 A100 on 16 x 100 Gb/s RoCE, all_reduce 1-16 MiB and 128-512 MiB": (
        "busbw 22.97/61.93/90.25/111.29 at 1/4/8/16 MiB vs 30.1/79.3/113.5/137.6 (tree/LL128, +24 to "
        "+31 %); 163.20/165.42/156.41 at 128/256/512 MiB vs 187.1/190.5 (LL128) /231.5 (Simple) (+15/+15/"
        "+48 %): the run has two plateaus (~165 to 512 MiB, 219-238 from 1 GiB); the tree's LL128 rows run"
        " 7 to 31 % under the model's LL128 (NCCL's 120/128 of the chain's NVLink, capped per channel) and"
        " Simple takes over one size before the run's second plateau. Not NCCL_STEPS' window: on 32 "
        "channels enqueue.cc's tree/LL128 chunk (576000 B halved while S / (nc x chunk) < 22.4, then < "
        "5.6) is 18000-72000 B and gives each channel 1.8-7.3 steps at 1-16 MiB, under the 8 that fill "
        "it; the marginal algbw 1->4/4->8/8->16 MiB, 76/89/77 GB/s vs the model's 93/106/93, is the gap"
    ),
    "ocitutorials Ubuntu guide, 2 x BM.GPU4.8 (16 x 100 Gb/s) all_reduce 10 GiB (NCCL 2.26.5)": (
        "busbw 57.00 vs 236.3 (tree, +315 %) while the same shape under Oracle Linux (NCCL 2.21.5, "
        "NCCL_IB_GID_INDEX=3 and the 16 HCAs named) reaches 222.88: the Ubuntu run sets neither the RoCE "
        "GID index nor the HCA list; what NCCL fell back to (another GID or NIC, or sockets) the guide "
        "does not print (oracle-japan/ocitutorials tutorials/_hpc/benchmark/run-nccltests-ubuntu.md)"
    ),
}


def test_every_missed_point_names_measured_and_predicted() -> None:
    assert all(" vs " in why for why in MISSED.values())
