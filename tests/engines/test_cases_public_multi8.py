"""The formula engine against more public multi-node nccl-tests results (blind, eighth set).

Machines and documents no other test covers: CSCS's own Alps documentation (eth-cscs/cscs-docs: 2 x 4
GH200 over Slingshot 11 through aws-ofi-nccl, all_reduce 8 B - 128 MiB; and the Sarus Suite page's 2 x 1
GH200 run on NCCL 2.30.7), an HPE container guide's 2 x 4 GH200 on Slingshot 11 with the tree forced
(crickett-hpe/hpc-ai-envs examples, NCCL 2.20.5), Google's Cluster Toolkit GKE guide for A3 Mega (2 x 8
H100 on 8 x 200 Gb/s GPUDirect-TCPXO, all_gather 256 B - 8 GiB) and A4 (2 x 8 B200 on 8 x 400 Gb/s RoCE
through gIB, all_gather 256 MiB - 8 GiB), a Kubernetes MPI-operator guide's 2 x 8
H100 on 8 x 400 Gb/s InfiniBand with the ring forced (wutz/k8s-in-action, CoreWeave's NCCL 2.19.3 image),
and, all missed, the same toolkit's A3 High and A4 High guides and NERSC Perlmutter runs of
aws-ofi-nccl 1.19.0 (dingp/communication-libraries-image). Each point is one row of a printed log; the
comment gives the source, the quoted row (size, in-place time us, busbw GB/s) and the model's figure.
Tolerance: the blind check's bar, 10 % on busbw at >= 64 MiB, 15 % on busbw at mid sizes and on time at
small sizes. The model runs the release the log prints (the catalogue's newest tables at or before it),
else the newest tables. None of these documents is a calibration source of the catalogue; the gcp-tcpxo
efficiency 0.94 comes from dstack's A3 Mega all_gather (188.5 GB/s, transports.yaml), so the A3 Mega
plateau here (188.9) is an independent run of the same figure. Points the model misses are in ``MISSED``
(measured, predicted, what is missing); not asserted.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.engines.test_cases_public import Point  # one public row, as the other blind checks have it
from tests.engines.test_cases_public_multi2 import a3_mega  # 8 x H100, 8 x 200G GPUDirect-TCPXO NICs
from tests.engines.test_cases_public_multi3 import _tolerance
from tests.engines.test_cases_public_multi5 import _bw, h100_ndr
from tests.engines.test_cases_published import gcp_a4  # 8 x B200, 8 x 400G CX-7 RoCE through gIB

from aifabric.cluster.presets import preset
from aifabric.cluster.spec import ClusterSpec
from aifabric.collectives.communicator import Communicator

MiB = 2**20
GiB = 2**30

CSCS = "https://github.com/eth-cscs/cscs-docs/blob/"
#: "Below are the results of of running the collective all reduce latency test on 2 nodes with 8 GPUs
#: total": srun -N2 --ntasks-per-node=4 ... /nccl-tests-2.17.1/build/all_reduce_perf -b 8 -e 128M -f 2
#: (the image page, guidelines-images/image-nccl-tests.md, prints the same run: CUDA 12.8.1, libfabric
#: 1.22.0, the AWS OFI NCCL hook; NCCL release not printed: newest tables)
ALPS = CSCS + "1690357c10f4e05dab9e8654a6d4bae1466c1910/docs/software/communication/nccl.md"
#: "srun -N2 --gpus-per-node=4 ... all_reduce_perf -b 1M -e 128M -f2": two ranks, rank 0 on nid007106 and
#: rank 1 on nid007109, one GH200 (and its one Slingshot NIC) a node; "nccl-library=23007"
SARUS = CSCS + "06d5c43d7e4f99304797a500f86b2ec9c1f3af91/docs/software/container-engine/sarus-suite/index.md"
TOOLKIT = "https://github.com/GoogleCloudPlatform/cluster-toolkit/blob/"
#: "Verify NCCL Performance": nccl-test-host-1/2 (two a3-megagpu-8g nodes), /scripts/allgather.sh
A3MEGA = TOOLKIT + "0a497447c85ca6ae75910636b0c8a0619a988fcf/examples/gke-a3-megagpu/README.md"
A3HIGH = TOOLKIT + "37e5703ab0256d1452f2cae6ff3ee6b60fb3301d/examples/gke-a3-highgpu/multi-node-test-plan.md"
A4 = TOOLKIT + "2c54caab14d8822f2fa91dd388f0eb5a6c3833fc/examples/gke-a4/README.md"
A4HIGH = TOOLKIT + "94636317d32f3cba735877ddfa2dde2d45fa9af4/examples/gke-a4-highgpu/README.md"
#: "16 卡 H100 NVLink + 8x 400Gbps IB 测试结果" (16 H100 on NVLink + 8 x 400 Gbps IB); nccl-tests-h100.yaml
#: of the same commit: 2 workers x 8 GPUs, image "ghcr.io/coreweave/nccl-tests:12.2.2-cudnn8-devel-
#: ubuntu20.04-nccl2.19.3-1-3e0fbc3", "-x NCCL_ALGO=Ring", "-x NCCL_IB_HCA=mlx5"
WUTZ = "https://github.com/wutz/k8s-in-action/blob/aed28ba358274bd038e3a939466e44df4142c117/ai/nccl-tests/README.md"
#: "running the all_reduce test on two nodes using four GPUs per node" with "NCCL_ALGO=Tree" and the host's
#: Cray libfabric 1.15.2 (Slingshot 11) bind-mounted; "NCCL version 2.20.5+cuda12.4". The repository's
#: examples/README.md prints the same nodes' nvidia-smi topo (NV6 between each of 4 GPUs, 72 cores a GPU:
#: 4 x GH200, as the gh200-quad preset). The repository's PR #30 (one MI300X node) is another document.
HPE = (
    "https://github.com/crickett-hpe/hpc-ai-envs/blob/1546625e3308daf9dc02d4a33e1c034531d78fc3/"
    "examples/nccl-tests/README.md"
)
PERLMUTTER = (
    "https://github.com/dingp/communication-libraries-image/blob/4a45cf3536e6e629d6e9497b8b93f6922b3bba51/"
    "benchmarks/reports/nccl-podman-hpc-8node-aws-ofi-1.19.0-libfabric-2.1.0-20260508.md"
)
#: the guide's image entrypoint (dockerfile_scripts/scrape_libs.sh, same commit) sets NCCL_NET_GDR_LEVEL=PHB
#: unless stated: GPUDirect RDMA through the Grace CPU, which NCCL 2.20.5 classes PHB
V2205_TREE = (("nccl_version", "2.20.5"), ("env", {"NCCL_ALGO": "Tree", "NCCL_NET_GDR_LEVEL": "PHB"}))
V2193_RING = (("nccl_version", "2.19.3"), ("env", {"NCCL_ALGO": "Ring"}))
GH200_2 = preset("gh200-quad", nodes=2)  # 4 x GH200 a node, one 200 Gb/s Slingshot 11 NIC each
#: the CSCS image's libfabric ("Libfabric 1.22.0", guidelines-images/image-nccl-tests.md of the same docs):
#: messages past 4097 B go by rendezvous (transports.yaml slingshot-cxi); the HPE guide's host Cray 1.15.2
#: has the same limit; the Sarus page names none (the newest recorded, 18433 B)
ALPS_2X4 = GH200_2.with_changes(**{"scale_out.libfabric_version": "1.22.0"})
HPE_2X4 = GH200_2.with_changes(**{"scale_out.libfabric_version": "1.15.2"})
#: the Sarus run's two ranks: the first GH200 of each node
SARUS_OPTS = (("comm", Communicator.from_gpus(GH200_2, [0, 4])), ("nccl_version", "2.30.7"))
A3MEGA_2, H100_2, A4_2 = a3_mega(2), h100_ndr(2), gcp_a4(2)

Row = tuple[int, float, float]  # size (B), in-place time (us), in-place busbw (GB/s), as the log prints


def _time(url: str, spec: ClusterSpec, coll: str, size: int, time_us: float, opts: Any = ()) -> Point:
    """A small-size row, its time asserted."""
    return Point(url, spec, coll, size, time_us * 1e-6, 0.0, True, tuple(opts))


def _sweep(name: str, url: str, spec: ClusterSpec, coll: str, opts: Any, rows: tuple[Row, ...]) -> dict:
    """One log's in-place rows of ``coll``, busbw asserted, keyed '<name> <size>'."""
    points = {}
    for size, t, bw in rows:
        label = f"{size // MiB} MiB" if size < GiB else f"{size // GiB} GiB"
        points[f"{name} {label}"] = _bw(url, spec, coll, size, t, bw, opts)
    return points


#: eth-cscs/cscs-docs nccl.md, 2 x 4 GH200: the in-place rows at 64/128 MiB ("67108864 ... 1083.5 61.94
#: 108.39"): tree/LL128 110.7 and tree/Simple 125.7 (+2.1/+2.1 %; the two-node tree carries S per
#: direction through the four 25 GB/s NICs)
ALPS_BW = ((64 * MiB, 1083.5, 108.39), (128 * MiB, 1907.8, 123.11))
#: the same log, 64 B - 2 KiB ("64 16 float sum -1 ... 19.21"): tree/LL 20.45/20.51/20.61/20.82/21.33/
#: 22.50 us (+6.5/+9.8/+8.4/+7.3/+5.0/+3.6 %); 4-32 KiB ("4096 1024 float sum -1 ... 31.58"): tree/LL 31.70
#: us each (+0.4/-11.5/-13.2/-14.5 %), LL's wire bytes (data x 2) on one channel past the 4097 B eager limit
#: from 4 KiB, so both network steps of the tree wait 3.25 us for the cxi provider's rendezvous Get (was
#: 25.20, -20 to -32 %, without it)
ALPS_LAT = ((64, 19.21), (128, 18.67), (256, 19.02), (512, 19.40), (1024, 20.32), (2048, 21.72))
ALPS_LAT += ((4096, 31.58), (8192, 35.84), (16384, 36.53), (32768, 37.09))
#: cscs-docs sarus-suite/index.md, 2 ranks on 2 nodes, NCCL 2.30.7: "16777216 ... 841.25 19.94 19.94":
#: ring/Simple through one NIC per node, 22.3/23.2/23.7/24.0 (+12.1/+6.5/+5.4/+4.7 %)
SARUS_BW = ((16 * MiB, 841.25, 19.94), (32 * MiB, 1538.74, 21.81), (64 * MiB, 2983.25, 22.50))
SARUS_BW += ((128 * MiB, 5867.43, 22.88),)
#: cluster-toolkit gke-a3-megagpu README, all_gather on 2 x a3-megagpu-8g, release not printed (newest
#: tables): "16777216 ... 196.38 85.43 80.09" ring/LL128 85.3 (+6.5 %); 32 MiB 114.2 (+3.2 %); ring/Simple
#: 138.7/159.6/172.7/180.0/183.9/185.9/187.0/187.5 at 64 MiB-8 GiB (-2.0/+0.3/+3.4/+2.7/+0.3/-0.2/-0.6/-0.8 %)
A3MEGA_BW = ((16 * MiB, 196.38, 80.09), (32 * MiB, 284.11, 110.72), (64 * MiB, 444.29, 141.61))
A3MEGA_BW += ((128 * MiB, 790.70, 159.14), (256 * MiB, 1507.46, 166.94), (512 * MiB, 2872.37, 175.23))
A3MEGA_BW += ((GiB, 5489.29, 183.38), (2 * GiB, 10805.3, 186.32), (4 * GiB, 21413.4, 188.04))
A3MEGA_BW += ((8 * GiB, 42630.7, 188.90),)
#: wutz/k8s-in-action ai/nccl-tests, 2 x 8 H100, NCCL 2.19.3, NCCL_ALGO=Ring: "536870912 ... 2622.4 204.72
#: 383.86": ring/Simple through a node's eight 400G ports, 366.8/379.5/386.3/389.7/391.4 (-4.4/-2.0/-0.3/
#: -0.7/-0.3 %)
WUTZ_BW = ((512 * MiB, 2622.4, 383.86), (GiB, 5199.4, 387.21), (2 * GiB, 10389, 387.57))
WUTZ_BW += ((4 * GiB, 20530, 392.27), (8 * GiB, 41008, 392.76))

#: crickett-hpe/hpc-ai-envs examples/nccl-tests, 2 x 4 GH200, NCCL 2.20.5, NCCL_ALGO=Tree: "67108864 ...
#: 1074.1 62.48 109.34": each NIC behind its Grace CPU is PHB to NCCL 2.26 (no LL128 across nodes), so
#: tree/Simple, its steps priced at 2.23.4's latencies (2.20.5's 28 us a step is the tuner's penalty):
#: 90.9/108.7/125.7/128.0/143.4/144.2/144.5/144.7/144.8 at 32 MiB-8 GiB (-2.5/-0.5/-0.4/-8.7/-4.0/-6.7/-7.9/
#: -8.4/-8.7 %); was tree/LL128 106.2/110.7/125.4/126.9 at 32-256 MiB (+13.9/+1.2/-0.7/-9.5 %) on the
#: default PIX path
HPE_BW = ((32 * MiB, 629.5, 93.28), (64 * MiB, 1074.1, 109.34), (128 * MiB, 1861.1, 126.20))
HPE_BW += ((256 * MiB, 3351.4, 140.17),)
HPE_BW += ((512 * MiB, 6287.4, 149.43), (GiB, 12167, 154.44), (2 * GiB, 23959, 156.86))
HPE_BW += ((4 * GiB, 47551, 158.07), (8 * GiB, 94730, 158.69))
#: cluster-toolkit gke-a4 README, all_gather on 2 x a4-highgpu-8g (nccl-jobset-example.yaml: the gIB image,
#: whose environment transports.yaml gcp-gib records), release not printed (newest tables): "268435456 ...
#: 775.8 346.02 324.40": ring/Simple through the eight 400G ports at RoCEv2's framing (49.02 GB/s a port, 4
#: QPs a connection) 353.6/371.9/381.7/386.9/389.5/390.8 (+9.0/+6.8/+5.7/+4.9/+4.5/+4.3 %)
A4_BW = ((256 * MiB, 775.8, 324.40), (512 * MiB, 1446.0, 348.07), (GiB, 2788.3, 361.02))
A4_BW += ((2 * GiB, 5457.9, 368.87), (4 * GiB, 10806, 372.63), (8 * GiB, 21499, 374.57))

POINTS = {
    **_sweep("Alps 2 x 4 GH200 all_reduce", ALPS, ALPS_2X4, "all_reduce", (), ALPS_BW),
    **{f"Alps 2 x 4 GH200 all_reduce {s} B": _time(ALPS, ALPS_2X4, "all_reduce", s, t) for s, t in ALPS_LAT},
    **_sweep("HPE 2 x 4 GH200 tree all_reduce", HPE, HPE_2X4, "all_reduce", V2205_TREE, HPE_BW),
    **_sweep("Alps Sarus 2 x 1 GH200 all_reduce", SARUS, GH200_2, "all_reduce", SARUS_OPTS, SARUS_BW),
    **_sweep("GKE A3 Mega 2 x 8 H100 all_gather", A3MEGA, A3MEGA_2, "all_gather", (), A3MEGA_BW),
    # the same log's small rows: "8192 128 float none -1 ... 84.08" ring/LL 75.4 us (-10.4 %); "65536 ...
    # 93.80" ring/LL128 93.9 (+0.1 %)
    "GKE A3 Mega 2 x 8 H100 all_gather 8 KiB": _time(A3MEGA, A3MEGA_2, "all_gather", 8192, 84.08),
    "GKE A3 Mega 2 x 8 H100 all_gather 64 KiB": _time(A3MEGA, A3MEGA_2, "all_gather", 65536, 93.80),
    **_sweep("k8s MPI-operator 2 x 8 H100 ring all_reduce", WUTZ, H100_2, "all_reduce", V2193_RING, WUTZ_BW),
    **_sweep("GKE A4 2 x 8 B200 all_gather", A4, A4_2, "all_gather", (), A4_BW),
}


@pytest.mark.parametrize("key", list(POINTS))
def test_public_multi_node_point(key: str) -> None:
    assert abs(POINTS[key].relative_error()) <= _tolerance(POINTS[key])


#: Public rows the model misses (measured, predicted, what is missing); not asserted.
MISSED = {
    f"{ALPS}: 2 x 4 GH200 all_reduce 64 KiB - 32 MiB over aws-ofi-nccl/CXI": (
        "time 68.45/108.9/187.7 us at 64/256 KiB/1 MiB vs tree/LL and LL128 38.1/51.0/68.8 (-44/-53/-63 %); "
        "busbw 20.32/24.85/42.47/64.67/85.52 at 2/4/8/16/32 MiB vs 39.7/63.0/85.4/98.2/106.2 (+95/+154/+101/"
        "+52/+24 %). The model now carries the cxi provider's rendezvous, one 3.25 us round trip a network "
        "step past the 4097 B eager limit (transports.yaml slingshot-cxi), which brings 4-32 KiB within the "
        "bar (asserted); from 64 KiB the log still runs 30-180 us slower than the model's tree. What costs "
        "it is not sized by a public figure: CSCS's own tuner file runs Simple at every size here "
        "(cscs-docs nccl-assets/nccl_tuner_v226.conf, tree/Simple to 4 MiB) and its env file turns LL128 "
        "off "
        "(NCCL_PROTO=^LL128, 'typically performs worse on Slingshot'), so LL and LL128 through the plugin "
        "cost more per step than NCCL's tables; tree/Simple alone gives 85.7/102.6/132.8/187.0/349.9 us at "
        "1/2/4/8/16 MiB, still -54 to -23 %. 8/16/32 B read 17.72/17.63/17.43 us vs 20.41-20.43 "
        "(+15.2/+15.8/+17.2 %), just outside"
    ),
    f"{HPE}: 2 x 4 GH200 tree all_reduce 1-16 MiB (NCCL 2.20.5)": (
        "busbw 17.37/26.14/41.55/53.70/71.26 at 1/2/4/8/16 MiB vs tree/LL 7.6 and tree/Simple 33.6/52.7/75.9/"
        "82.4 (-56/+29/+27/+41/+16 %), with the NICs behind the Grace CPUs (PHB on 2.20.5: no LL128 across "
        "nodes; GDR on through the image's NCCL_NET_GDR_LEVEL=PHB; 32 MiB-8 GiB asserted). On the PIX path "
        "the model ran tree/LL128 26.7/39.6/63.0/85.4/98.2 (+54/+52/+52/+59/+38 %). The log runs 1 MiB in "
        "105.7 us, where 2.20.5's tuner, still pricing Simple's steps at its 28 us penalty, picks LL (242 "
        "us); tree/Simple at 2.23.4's step latencies would take 92.2 us (19.9, +14.6 %), so NCCL ran Simple "
        "there or its LL beats the tuner's LL figures. 2-8 MiB run 25-40 % slower than tree/Simple: the "
        "mid-size cost of the cscs-docs rows above and of the Alps 2.23.4 logs (test_cases_public_multi12 "
        "MISSED, 28.26/48.13 at 2/8 MiB on 2 nodes, the same curve), which no public figure sizes. The "
        "tree/Simple plateau stays short: 144.8 at 8 GiB, 0.855 of the four NICs' 96.8 GB/s, against the "
        "log's 158.69, 0.937 (-8.7 %, asserted)"
    ),
    f"{SARUS}: 2 x 1 GH200 all_reduce 1-8 MiB (NCCL 2.30.7)": (
        "busbw 3.12/5.80/8.90/15.00 at 1/2/4/8 MiB vs ring/LL128 and Simple 12.4/15.9/18.6/20.8 (+297/+175/"
        "+109/+38 %); the log's 1 MiB takes 335.9 us against the model's 84.6 with the rendezvous (libfabric "
        "not named: 18433 B eager limit): 250 us a call, far beyond two round trips a step, that no public "
        "figure sizes (16-128 MiB asserted)"
    ),
    f"{A3MEGA}: 2 x A3 Mega all_gather 256 B - 8 MiB (GPUDirect-TCPXO)": (
        "time 88.21/86.81 us at 256 B/1 KiB vs ring/LL 72.3/72.6 (-18.0/-16.4 %), 130.32 at 256 KiB vs "
        "ring/LL128 94.9 (-27.2 %); busbw 7.62/14.69/26.49/48.81 at 1/2/4/8 MiB vs 10.1/18.8/33.8/56.6 "
        "(+32/+28/+28/+16 %). The log is flat at 84-112 us to 128 KiB and at 126-148 us from 256 KiB to "
        "4 MiB: TCPXO's step latency (53.9 us, dstack's 8 B all_reduce by NCCL's tree/LL formula) splits "
        "between LL and LL128 on the FasTrak plugin in a way no public figure gives"
    ),
    f"{A3HIGH}: 2 x A3 High all_gather (GPUDirect-TCPX)": (
        "busbw 46.28/64.83/70.99/71.35 at 64/128/256/512 MiB vs ring/Simple 79.8/86.3/90.0/92.0 (+72/+33/"
        "+27/+29 %), and ~1 ms flat from 1 to 32 MiB (1007.1 us at 1 MiB vs ring/LL128 105 us). The "
        "plateau is 71.35 / 4 NICs = 17.8 GB/s a 200G NIC, 0.71, as SkyPilot's A3 High guide (0.66-0.68, "
        "test_cases_public_multi7 MISSED) and dstack's a3high guide (0.50, multi6): the TCPX host receive "
        "path (flow steering, socket threads), which the formula engine does not carry; gcp-tcpx's 0.94 is "
        "TCPXO's, assumed"
    ),
    f"{A4}: 2 x A4 (8 x B200, 8 x 400G RoCE, gIB) all_gather 16-128 MiB": (
        "busbw 118.80/171.23/215.24/267.28 at 16/32/64/128 MiB vs ring/LL128 178.3/238.7 and ring/Simple "
        "273.0/321.9 (+50/+39/+27/+20 %), where 256 MiB-8 GiB sit within 4-9 % (asserted): the log ramps "
        "later than NCCL's own tuner and pipeline would. The gIB image hands the protocol and channel "
        "choice to Google's tuner (NCCL_TUNER_CONFIG_PATH=/usr/local/gib/configs/tuner_config_a4.txtpb), "
        "whose table is not public; 1 KiB-64 KiB run 35-41 us flat (in place) against ring/LL 24.1 and "
        "ring/LL128 44.8, the same per-call cost as A3 Ultra's (test_cases_public_multi7 MISSED)"
    ),
    f"{A4HIGH}: A4 High all_gather (2 pods printed, 'four nodes' by default)": (
        "busbw 226.52/292.17/327.98/335.67 at 64/256 MiB/1/8 GiB vs ring/Simple 273.0/353.6/381.7/390.8 on 2 "
        "nodes (+21/+21/+16/+16 %; against the yaml's default four nodes 250.6/321.5/371.7/389.5, +11/+10/"
        "+13/+16 %): the same machine "
        "type, image and transport as the A4 guide above (374.57 at 8 GiB, asserted), so 0.84 of the eight "
        "ports against 0.94 is the run's, not gIB's (placement across blocks, the fabric of that day); no "
        "public figure names it"
    ),
    f"{PERLMUTTER}: NERSC Perlmutter, 4 x A100 and 4 x Slingshot 11 a node, all_reduce 4 GiB (NCCL 2.29.2, "
    "aws-ofi-nccl 1.19.0, DMA-BUF off)": (
        "busbw 72.48 on 2 nodes (podman-hpc; 72.62 in the host report of the same day, "
        "nccl-host-aws-ofi-1.19.0-libfabric-2.1.0-20260508.md) and 68.93/68.99/68.84 on 8 nodes "
        "(podman-hpc, host, Shifter) vs ring/Simple 96.7/96.2 through four 200 Gb/s Cassini NICs at the "
        "slingshot-11 figure (0.968 x 25 GB/s; no Perlmutter preset: a 4 x A100 NVSwitch node stands in for "
        "the NVLink 3 mesh, which the NIC-bound ring does not reach) (-25/-28 %). 72.5 is 18.1 GB/s a NIC, "
        "where one GH200 rank per Alps node reaches 22.9 (Sarus row, asserted): the report's path crosses "
        "the host bridge (NCCL_NET_GDR_LEVEL=PHB, GDR 1) with DMA-BUF registration disabled "
        "(OFI_NCCL_DISABLE_DMABUF=1); no public figure sizes that path's rate"
    ),
}


def test_every_missed_point_names_measured_and_predicted() -> None:
    assert all(" vs " in why for why in MISSED.values())
