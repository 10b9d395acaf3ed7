"""The formula engine against more public multi-node nccl-tests results (blind, tenth set).

Documents no other test covers: AWS's EKS guide for EFA (aws-samples/aws-efa-eks, 2 x p4d.24xlarge, the
ring forced, NCCL 2.9.9, 8 B - 4 GiB) and a user's 2 x p4d sweep in aws/aws-ofi-nccl #65; Modal's
multi-node benchmark on OCI (modal-labs/multinode-training-guide, 2 x BM.GPU.H100.8 through torch's NCCL);
and, all missed, an OKE guide's 2 x BM.GPU4.8 run over SR-IOV RDMA functions (OguzPastirmaci/oke-rdma,
NCCL 2.14.3), the Mass Open Cloud's RHEL AI logs (CCI-MOC/roce-testing: 2 x 1 and 2 x 4 H100 on one
400 Gb/s RoCE port a node, NCCL 2.26.2), an alltoall figure on 2 x 8 H800 (NVIDIA/nccl-tests #355) and a
NERSC staff run of alltoall on 4 Perlmutter nodes (NVIDIA/nccl-tests #139). Each asserted point is one row
of a printed log; its comment gives the quoted in-place row (size, time us, busbw GB/s) and the model's
figure. Tolerance: the blind check's bar, 10 % on busbw at >= 64 MiB, 15 % on busbw at mid sizes and on
time at small sizes. The model runs the release the document prints (the catalogue's newest tables at or
before it), else the newest tables (NCCL 2.9.9 and 2.14.3 are older than the catalogue). None of these
documents is a calibration source of the catalogue. Points the model misses are in ``MISSED`` (measured,
predicted, what is missing); not asserted.
"""

from __future__ import annotations

import pytest
from tests.engines.test_cases_public_multi3 import _tolerance, oci_h100  # 8 x H100, 16 x 200G RoCE ports
from tests.engines.test_cases_public_multi5 import _bw
from tests.engines.test_cases_public_multi8 import _time

from aifabric.cluster.presets import preset

MiB = 2**20
GiB = 2**30

#: "kubectl create -f examples/nccl-efa-tests.yaml": 16 ranks on 2 x p4d.24xlarge ("NET/OFI Running on P4d
#: platform"), "NCCL version 2.9.9+cuda11.2"; the manifest of the same commit sets NCCL_ALGO=RING
EKS = "https://github.com/aws-samples/aws-efa-eks/blob/9933d7f3940191f69b9a9e938c07cc671ae476fd/README.md"
#: "I am running nccl-tests on two p4d instances": 16 ranks, release not printed (newest tables)
OFI65 = "https://github.com/aws/aws-ofi-nccl/issues/65"
#: benchmark.py of the same commit: torch.distributed all_reduce of a 500000 x 2000 float32 tensor (4.0e9 B),
#: 50 trials, busbw = algbw x 2 (n-1)/n as nccl-tests; main.py: gpu="H100:8", cloud="oci", 2 nodes, the
#: 16 mlx5 HCAs named, NCCL_IB_GID_INDEX=3 (OCI's RoCE); torch's NCCL, release not printed (newest tables)
MODAL = (
    "https://github.com/modal-labs/multinode-training-guide/blob/83bd9fa6e1f6498494cc25d5529f73677aa10845/"
    "benchmark/README.md"
)
OKE_RDMA = (
    "https://github.com/OguzPastirmaci/oke-rdma/blob/bbe150fd26e46ffdc8161a00131910a0d11075d7/README.md"
)
MOC = "https://github.com/CCI-MOC/roce-testing/blob/24e67d1710d81d0d9a2b6ebb7689edad88af8750/RHELAI/3_nccl_tests/"
NT355 = "https://github.com/NVIDIA/nccl-tests/issues/355"
NT139 = "https://github.com/NVIDIA/nccl-tests/issues/139"

P4D_2 = preset("aws-p4d", nodes=2)  # 8 x A100-40GB, 4 x 100 Gb/s EFA, SRD through aws-ofi-nccl
RING = (("env", {"NCCL_ALGO": "Ring"}),)

#: aws-efa-eks, ring/Simple (EFA SRD's step, the plugin's LL off), in-place time: "1024 256 float sum 195.4
#: ... 195.8" 219.7 us (+12.2 %); "2048 ... 217.1" 219.7 (+1.2 %); "4096 ... 246.7" 219.9 (-10.9 %);
#: "32768 ... 271.7" 309.5 (+13.9 %); "65536 ... 284.8" 311.6 (+9.4 %); "131072 ... 305.2" 315.8 (+3.5 %);
#: "262144 ... 308.3" 324.1 (+5.1 %). The log climbs 178 -> 247 us over 512 B - 4 KiB where the model is
#: flat, and steps to 423 us at 512 KiB (MISSED): these rows are where the two curves cross
EKS_TIME = ((1024, 195.8), (2048, 217.1), (4096, 246.7), (32768, 271.7), (65536, 284.8), (131072, 305.2))
EKS_TIME += ((262144, 308.3),)

POINTS = {
    **{
        f"EKS 2 x p4d ring all_reduce {s} B": _time(EKS, P4D_2, "all_reduce", s, t, RING) for s, t in EKS_TIME
    },
    # "134217728 33554432 float sum 8731.1 15.37 28.82 5e-07 8457.4 15.87 29.76": ring/Simple at efa-srd's
    # 0.59 of the four NICs, 28.47 (-4.3 %): where the log's rising curve meets the model's plateau (MISSED)
    "EKS 2 x p4d ring all_reduce 128 MiB": _bw(EKS, P4D_2, "all_reduce", 128 * MiB, 8457.4, 29.76, RING),
    # aws-ofi-nccl #65, NCCL's own choice: "33554432 8388608 float sum 1931.6 17.37 32.57 5e-07 1963.7 17.09
    # 32.04": tree/Simple 32.32 (+0.9 %), between a 16 MiB and a 64 MiB row the model misses (MISSED)
    "ofi #65 2 x p4d all_reduce 32 MiB": _bw(OFI65, P4D_2, "all_reduce", 32 * MiB, 1963.7, 32.04),
    # "268435456 67108864 float sum 11812 22.72 42.61 5e-07 11919 22.52 42.23": tree/Simple 45.06 (+6.7 %)
    "ofi #65 2 x p4d all_reduce 256 MiB": _bw(OFI65, P4D_2, "all_reduce", 256 * MiB, 11919, 42.23),
    # Modal on OCI, "The average bandwidth of all_reduce with a 4.0GB payload (50 trials, 16 ranks): algbw:
    # 239.742 GBps ... busbw: 449.515 GBps": NVLS tree through the sixteen 200 Gb/s ports, 455.9 (+1.4 %);
    # the time is the algbw's, 4.0e9 / 239.742e9 s
    "Modal 2 x OCI H100 all_reduce 4.0 GB": _bw(
        MODAL, oci_h100(2), "all_reduce", 4_000_000_000, 4e9 / 239.742e9 * 1e6, 449.515
    ),
}


@pytest.mark.parametrize("key", list(POINTS))
def test_public_multi_node_point(key: str) -> None:
    assert abs(POINTS[key].relative_error()) <= _tolerance(POINTS[key])


#: Public rows the model misses (measured, predicted, what is missing); not asserted.
MISSED = {
    f"{EKS}: 2 x p4d.24xlarge ring all_reduce plateau, 256 MiB - 4 GiB (NCCL 2.9.9)": (
        "busbw 37.48/41.21/42.46/43.24/43.72 at 256 MiB/512 MiB/1/2/4 GiB vs ring/Simple 28.98/29.24/29.37/"
        "29.43/29.47 (-23/-29/-31/-32/-33 %). A node's ring carries its four 100 Gb/s EFA ports: 43.72 of "
        "4 x 12.5 = 50 GB/s is 0.87 of the line rate, where the efa-srd transport's 0.59 is four p4dn's "
        "ring on the same NCCL 2.9.9 (NVIDIA/nccl #527, 29.61). Two runs of one release on one instance "
        "type, one plugin generation, 0.59 and 0.87: the test_cases_public_multi9 MISSED finds 0.89 on p5 "
        "(EFA v2); this is the p4d (EFA v1) side of the same gap. Not applied: #527's 2- and 4-node rows "
        "are asserted at 0.59 (test_cases_public) and no source says which fabric state either run met"
    ),
    f"{EKS}: 2 x p4d.24xlarge ring all_reduce 512 KiB - 64 MiB": (
        "busbw 2.32/4.04/5.90/9.90/13.72/16.80/19.91/23.74 at 512 KiB-64 MiB vs 2.88/5.26/8.92/13.70/18.71/"
        "22.90/25.78/27.52 (+24/+30/+51/+38/+36/+36/+29/+16 %): the log ramps later than the ring's "
        "pipeline at the model's per-step SRD cost; the same per-message EFA cost test_cases_public_multi3 "
        "MISSED finds on p5 at 1-64 MiB, unsized by any public figure"
    ),
    f"{EKS}: 2 x p4d.24xlarge ring all_reduce 8 B - 512 B and 8-16 KiB": (
        "time 176.3/175.5/175.2/176.3/176.5/177.3/178.2 us at 8 B-512 B vs ring/Simple 219.6 (+23 to +25 "
        "%); 261.7/265.8 at 8/16 KiB vs 220.1/308.5 (-16/+16 %). Sixteen ranks' ring is 2 x 15 steps: 176 "
        "us is 5.9 us a step where the model's is 7.3. The model pins Simple on p4d as aws-ofi-nccl does "
        "when the EFA endpoint refuses in-order 128-byte writes (aws_ofi_nccl.yaml: #715 on plugin 1.11.0, "
        "#889); the image here builds the plugin's 'aws' branch of June 2021 (the Dockerfile of the same "
        "commit), whose protocol choice the log does not print"
    ),
    f"{OFI65}: 2 x p4d all_reduce 8-16 MiB and 64-128 MiB": (
        "busbw 13.08/16.80 at 8/16 MiB vs tree/Simple 27.75/29.58 (+112/+76 %); 19.09/30.85 at 64/128 MiB "
        "vs 38.46/44.34 (+101/+44 %). The thread is the dip: 32.04 at 32 MiB falls to 19.09 at 64 MiB and "
        "recovers to 42.23 at 256 MiB ('Performance degradation for buffer size starting from ~46MB'); "
        "the thread sizes no cause, and the model has no size-dependent cost in the plugin; the plateau "
        "(256 MiB, asserted) is the same curve"
    ),
    f"{OKE_RDMA}: 2 x OCI BM.GPU4.8 (16 SR-IOV RDMA VFs a node) all_reduce 1 and 10 GiB (NCCL 2.14.3)": (
        "busbw 170.99/180.08 at 1/10 GiB vs tree/Simple 234.0/236.3 (+37/+31 %) through 16 x 100 Gb/s "
        "ports, where the same shape on physical functions reaches 219-238 (oci-hpc-oke README, "
        "test_cases_public_multi3, asserted) and 185-190 with the ring forced (test_cases_public_multi5). "
        "The run is on virtual functions ('Using virtual functions for RDMA is currently not a supported "
        "configuration on OKE', oci-hpc-oke README) and NCCL 2.14.3, older than the catalogue's tables; "
        "which of the two costs the 55 GB/s no public figure separates"
    ),
    f"{MOC}logs/all_reduce_roce_1gpu.log and sendrecv_roce_1gpu.log: 2 x 1 H100, one 400 Gb/s RoCE port": (
        "all_reduce busbw 15.13-14.98 and sendrecv 13.95-13.98 from 1 to 25 GiB (NCCL 2.26.2, NCCL_ALGO="
        "RING, 'GDR 0') vs ring/Simple 32.6 and p2p 32.7 through host memory (nic_path SYS, the host-staging "
        "transport's 0.667 of a 400 Gb/s port; 48.9/49.0 with GPUDirect RDMA) (+116/+134 %). The site's "
        "own perftest on the same port (RHELAI/2_perftest/README.md) reaches 210 Gb/s = 26.3 GB/s "
        "unidirectional with ib_write_bw, half the line rate: the port or its host path runs at half speed "
        "before NCCL, which no catalogue figure describes"
    ),
    f"{MOC}logs/sendrecv_roce_4gpu.log: 2 x 4 H100 sharing one 400 Gb/s RoCE port a node": (
        "sendrecv busbw 5.59-5.86 from 1 to 25 GiB (GDRDMA through the PXN peer) vs p2p 49.0 (one of the "
        "eight rank pairs crosses each way; +737 % at 25 GiB): four GPUs on one port run at 0.4 of the "
        "one-GPU run on the same port (13.96); the README: 'Increasing the number of GPUs per node "
        "ends up reducing the network performance'. Not a mechanism the model carries; no figure sizes it"
    ),
    f"{NT355}: 2 x 8 H800, 8 x CX-7 a node, alltoall 4 GiB (NCCL 2.28.7)": (
        "busbw 'the CPU-proxy bandwidth can reach 80GB' (the reporter's figure, 16 ranks) vs direct/Simple "
        "92.1 (+15 %): 80 / 2 = 40 GB/s of each GPU's 400 Gb/s port where the model's InfiniBand "
        "efficiency gives 46; the GIN kernels' 50 and 10-20 GB/s in the thread are device-initiated "
        "alltoall, which the model does not carry"
    ),
    f"{NT139}: NERSC Perlmutter, 4 nodes x 4 A100, 4 x Slingshot 11 a node, alltoall 4 GiB (double)": (
        "time 'around 200 ms for the alltoall test command' (romerojosh, NERSC; -b 4G -e 4G -d double, 16 "
        "ranks) vs direct 133.1 ms (-33 %) through four 200 Gb/s Cassini NICs at the slingshot-cxi figure "
        "(no Perlmutter preset: a 4 x A100 NVSwitch node stands in for the NVLink 3 mesh, which the "
        "NIC-bound alltoall does not reach). 200 ms is 3/4 x 4 GiB / 0.2 s = 16.1 GB/s a NIC, 0.64 of 25; "
        "test_cases_public_multi8 MISSED finds the same machine's all_reduce at 18.1 a NIC: the Perlmutter "
        "path through the host bridge, unsized"
    ),
}


def test_every_missed_point_names_measured_and_predicted() -> None:
    assert all(" vs " in why for why in MISSED.values())
