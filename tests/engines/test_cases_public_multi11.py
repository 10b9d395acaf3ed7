"""The formula engine against more public multi-node nccl-tests results (blind, eleventh set).

The main document no other test covers: odissei-benchmarks/nccl-tests, a sweep of all_reduce_perf,
all_gather_perf and reduce_scatter_perf (8 B - 8 GiB, ``-f 2``, 20 iterations) on two nodes of SURF's
Snellius ``gpu_h100`` partition (slurm_scripts/snellius-h100-n2.job: ``-p gpu_h100``, 2 nodes x 4 GPUs,
``module load NCCL/2.22.3``; the logs print "NCCL version 2.22.3+cuda12.6"). A node is 4 x H100 on NVLink
with no NVSwitch (every local pair "via P2P/CUMEM", "NVLS multicast support is not available", "0 nvls
channels") and four 200 Gb/s InfiniBand ports (runs/2nodes/ib_speed.txt: four "Rate: 200" ports Active;
the log sends "via NET/IB/1..4/GDRDMA", one port per GPU). Each asserted point is one in-place row of a
printed log; its comment gives the row and the model's figure. AIST's ABCI 2.0 benchmark repository, the
data of an IPSJ technical report, gives NCCL 2.8.4 all_reduce sweeps (4 B - 32 MiB) on 2-16 of its A100
nodes and 2 of its V100 nodes: misses but for three small V100 rows. Further threads give stated figures on
stated hardware; the A800 bare-metal figure is asserted, the rest are misses. Misses sit in ``MISSED``.
Tolerance: the blind check's bar, 10 % on busbw at >= 64 MiB, 15 % on busbw at mid sizes and on time at
small sizes. None of these documents is a calibration source of the catalogue. The public papers the
brief names (arXiv evaluations of H100/MI300X clusters, MegaScale, HPN, "Demystifying NCCL") were not
readable past their abstracts in the searchable corpora, so no row here comes from a paper.
"""

from __future__ import annotations

import pytest
from tests.engines.test_cases_public import Point  # one public row, as the other blind checks have it
from tests.engines.test_cases_public_multi3 import ROCE, _nodes, _tolerance
from tests.engines.test_cases_public_multi5 import _table
from tests.engines.test_cases_public_multi8 import _sweep, _time

from aifabric.cluster.spec import ClusterSpec

MiB = 2**20
GiB = 2**30

ODISSEI = "https://github.com/odissei-benchmarks/nccl-tests/blob/db955d0c9465ecc06a63f4d34a8bfc435e6ff97a/runs/2nodes/"
ODISSEI_AG_RS = "https://github.com/odissei-benchmarks/nccl-tests/blob/d09453f611815da89b472ea22ec3ea83620818da/runs/2nodes/"
AR_LOG, AG_LOG, RS_LOG = (
    ODISSEI + "all_reduce.log",
    ODISSEI_AG_RS + "all_gather_mpi.log",
    ODISSEI_AG_RS + "reduce_scatter_mpi.log",
)
NT156 = "https://github.com/NVIDIA/nccl-tests/issues/156"
N495 = "https://github.com/NVIDIA/nccl/issues/495"
NT112 = "https://github.com/NVIDIA/nccl-tests/issues/112"
N949 = "https://github.com/NVIDIA/nccl/issues/949"
#: AIST's ABCI 2.0 benchmark repository (README: results of the IPSJ SIG HPC-180 report "ABCI 2.0: Advances
#: in Open AI Computing Infrastructure at AIST"); allreduce/README.md: NCCL 2.8.4-1, nccl-tests 0b30de5;
#: nccl.sh: ``all_reduce_perf -b 4 -e 32M -f 2 -n 100``, NCCL's own choice
ABCI = "https://github.com/aistabci/abci2.0benchmark/blob/8b20e1128f87234f7feff14a0b693dce998d9751/allreduce/"
V2223 = (("nccl_version", "2.22.3"),)


def snellius_h100(nodes: int) -> ClusterSpec:
    """Snellius ``gpu_h100``: 4 x H100 on an NVLink mesh without NVSwitch, one 200 Gb/s InfiniBand port per
    GPU. NVLink, not PCIe: the same repository's one-node all_reduce (runs/1node/all_reduce.log) reaches
    324.76 GB/s busbw at 128 MiB with every pair "via P2P/direct pointer". ``nvlink4-gh200-quad`` stands
    for the mesh: the same Hopper die with 18 NVLink 4 links wired all-to-all over 3 peers and no NVLS;
    ``connectx-6`` is the catalogue's 200 Gb/s port."""
    spec = {"accelerator": "h100-sxm", "gpus_per_node": 4, "nodes": nodes, "name": "snellius-gpu-h100"}
    spec |= {"scale_up": {"kind": "nvswitch", "link": "nvlink4-gh200-quad"}}
    spec |= {"scale_out": {"nic": "connectx-6", "switch": "quantum-qm8700"}}
    return ClusterSpec.model_validate(spec)


def a800_four_roce(nodes: int) -> ClusterSpec:
    """8 x A800 with 4 x 200 Gb/s RoCE, one per GPU pair (NVIDIA/nccl-tests #156: "A800 * 8, RoCE 200Gb * 4
    (for computing)", "GPU0/1 and mlx5_1 in the same PCIe switch"). ``a100-sxm-80gb`` stands for the A800
    (an A100 with NVLink cut to 400 GB/s): the two-node check is bound by the four ports."""
    return _nodes("a100-sxm-80gb", nodes, {"nic": "connectx-6", "gpus_per_nic": 2, **ROCE})


def abci_v(nodes: int) -> ClusterSpec:
    """ABCI compute node (V): 4 x Tesla V100-SXM2-16GB (the log's devices) on NVLink 2 with 2 links to each
    peer (catalogue ``nvlink2-quad-mesh``; ``v100-sxm2-32gb`` stands, memory size aside) and 2 x InfiniBand
    EDR 100 Gb/s, one per GPU pair (ABCI's system overview, aistabci/abci-docs, 計算ノード(V): "NVIDIA V100
    for NVLink 16GiB HBM2 | 4", "InfiniBand EDR (100 Gbps) | 2"); ``connectx-5`` is the catalogue's 100 Gb/s
    port."""
    spec = {"accelerator": "v100-sxm2-32gb", "gpus_per_node": 4, "nodes": nodes, "name": "abci-v"}
    spec |= {"scale_up": {"kind": "nvswitch", "link": "nvlink2-quad-mesh"}}
    spec |= {"scale_out": {"nic": "connectx-5", "gpus_per_nic": 2, "switch": "quantum-qm8700"}}
    return ClusterSpec.model_validate(spec)


SNELLIUS_2 = snellius_h100(2)


def _small(name: str, url: str, coll: str, rows: tuple[tuple[int, float], ...]) -> dict[str, Point]:
    """One log's small in-place rows of ``coll`` on 2 Snellius nodes, time asserted, keyed '<name> <B>'."""
    return {f"{name} {size} B": _time(url, SNELLIUS_2, coll, size, t, V2223) for size, t in rows}


#: all_reduce, 8 ranks: tree/LL "1024 256 float sum -1 ... 18.63" 21.3 us (+14.5 %); "8192 ... 22.47" 25.2
#: (+12.2 %); tree/LL128 "262144 ... 42.74" 44.5 (+4.0 %), "524288 ... 50.35" 50.4 (+0.1 %)
AR_SMALL = ((1024, 18.63), (8192, 22.47), (262144, 42.74), (524288, 50.35))
#: "1048576 ... 68.58 15.29 26.76": tree/LL128 29.45 (+10.1 %); "2097152 ... 85.11 24.64 43.12": 42.62
#: (-1.2 %); "67108864 ... 1148.5 58.43 102.26": 111.38 (+8.9 %); "268435456 ... 3959.4 67.80 118.65":
#: 127.11 (+7.1 %); tree/Simple from 512 MiB, where the log steps too (118.65 -> 150.94): 140.06/142.44/
#: 143.66/144.28/144.59 at 512 MiB-8 GiB (-7.2/-7.3/-7.4/-7.2/-7.5 %). The two-node tree carries more than
#: the four ports' ring (all_gather's 97.7 below): each node's tree half crosses once per direction
AR_BW = ((MiB, 68.58, 26.76), (2 * MiB, 85.11, 43.12), (64 * MiB, 1148.5, 102.26))
AR_BW += ((256 * MiB, 3959.4, 118.65), (512 * MiB, 6224.4, 150.94), (GiB, 12227, 153.68))
AR_BW += ((2 * GiB, 24228, 155.11), (4 * GiB, 48320, 155.55), (8 * GiB, 96175, 156.30))
#: all_gather (size = the gathered output): ring/LL "128 4 float none -1 ... 15.95" 15.3 us (-3.8 %);
#: "1024 ... 16.16" 15.7 (-3.0 %); "8192 ... 16.87" 18.2 (+8.1 %); "262144 ... 29.65" 27.1 (-8.7 %);
#: ring/LL128 "524288 ... 39.46" 34.6 (-12.3 %)
AG_SMALL = ((128, 15.95), (1024, 16.16), (8192, 16.87), (262144, 29.65), (524288, 39.46))
#: ring/LL128 1/2/4/8/16 MiB 21.60/36.86/51.53/67.40/75.73 vs 23.06/36.57/51.72/65.24/75.05 (+6.8/-0.8/
#: +0.4/-3.2/-0.9 %); ring/Simple 32 MiB-8 GiB 81.05/88.17/91.18/94.42/96.07/96.91/96.95/97.55/97.65 vs
#: 84.21/89.72/92.75/94.35/95.17/95.58/95.79/95.90/95.95 (+3.9 to -1.7 %): four 200 Gb/s ports' ring
AG_BW = ((MiB, 42.48, 21.60), (2 * MiB, 49.79, 36.86), (4 * MiB, 71.22, 51.53), (8 * MiB, 108.9, 67.40))
AG_BW += ((16 * MiB, 193.8, 75.73), (32 * MiB, 362.2, 81.05), (64 * MiB, 666.0, 88.17))
AG_BW += ((256 * MiB, 2487.7, 94.42), (GiB, 9695.2, 96.91), (8 * GiB, 76970, 97.65))
#: reduce_scatter: ring/LL "128 ... 16.94" 15.3 us (-9.4 %); "1024 ... 16.64" 15.7 (-5.8 %); "8192 ...
#: 17.44" 18.2 (+4.6 %); "262144 ... 29.49" 27.1 (-8.2 %)
RS_SMALL = ((128, 16.94), (1024, 16.64), (8192, 17.44), (262144, 29.49))
#: ring/LL128 1/2/4/8/16 MiB 21.14/33.10/50.82/66.53/75.17 vs 23.06/36.57/51.72/65.24/75.05 (+9.1/+10.5/
#: +1.8/-1.9/-0.2 %); ring/Simple 64 MiB 87.82 vs 89.72 (+2.2 %), 256 MiB 94.21 vs 94.35 (+0.1 %), 1 GiB
#: 96.89 vs 95.58 (-1.3 %), 8 GiB 97.68 vs 95.95 (-1.8 %)
RS_BW = ((MiB, 43.40, 21.14), (2 * MiB, 55.45, 33.10), (4 * MiB, 72.21, 50.82), (8 * MiB, 110.3, 66.53))
RS_BW += ((16 * MiB, 195.3, 75.17), (64 * MiB, 668.6, 87.82), (256 * MiB, 2493.2, 94.21))
RS_BW += ((GiB, 9697.1, 96.89), (8 * GiB, 76948, 97.68))

#: ABCI (V), 2 nodes, inter_vnode/job02.sh.7194532.nccl: tree/LL "8 2 float sum ... 17.96" 20.4 us
#: (+13.6 %); "512 128 ... 19.60" 20.8 (+6.2 %); "1024 256 ... 23.33" 21.3 (-8.6 %)
ABCI_V_SMALL = ((8, 17.96), (512, 19.60), (1024, 23.33))

POINTS = {
    **_small("Snellius 2 x 4 H100 all_reduce", AR_LOG, "all_reduce", AR_SMALL),
    **_sweep("Snellius 2 x 4 H100 all_reduce", AR_LOG, SNELLIUS_2, "all_reduce", V2223, AR_BW),
    **_small("Snellius 2 x 4 H100 all_gather", AG_LOG, "all_gather", AG_SMALL),
    **_sweep("Snellius 2 x 4 H100 all_gather", AG_LOG, SNELLIUS_2, "all_gather", V2223, AG_BW),
    **_small("Snellius 2 x 4 H100 reduce_scatter", RS_LOG, "reduce_scatter", RS_SMALL),
    **_sweep("Snellius 2 x 4 H100 reduce_scatter", RS_LOG, SNELLIUS_2, "reduce_scatter", V2223, RS_BW),
    **{
        f"ABCI (V) 2 x 4 V100 all_reduce {size} B": _time(
            ABCI + "inter_vnode/job02.sh.7194532.nccl", abci_v(2), "all_reduce", size, t
        )
        for size, t in ABCI_V_SMALL
    },
    # nccl-tests #156, bare metal: "only 76GB/s bus bw, which reaches 96GB/s in bare metal" (2 x 8 A800, 4 x
    # 200G RoCE; size and release not printed, newest tables). NCCL's own choice: ring/Simple 95.9 (-0.1 %),
    # flat from 1 GiB (95.2) to 8 GiB; tree forced (the thread's VM runs set NCCL_ALGO=Tree) gives 88.5
    # (-7.9 %), both inside the bar
    "nccl-tests #156 2 x 8 A800 bare metal all_reduce": _table(
        NT156, a800_four_roce(2), "all_reduce", 8 * GiB, 96.0
    ),
}


@pytest.mark.parametrize("key", list(POINTS))
def test_public_multi_node_point(key: str) -> None:
    assert abs(POINTS[key].relative_error()) <= _tolerance(POINTS[key])


#: Public rows the model misses (measured, predicted, what is missing); not asserted.
MISSED = {
    f"{AR_LOG}: 2 x 4 H100 all_reduce 4-32 MiB and 128 MiB (NCCL 2.22.3)": (
        "busbw 53.72/74.71/82.98/86.96 at 4/8/16/32 MiB vs tree/LL128 66.77/88.71/100.39/107.46 (+24/+19/+21/"
        "+24 %), 110.30 at 128 MiB vs 125.80 (+14 %), while 1-2 MiB, 64 MiB, 256 MiB and the Simple plateau "
        "are asserted: the log climbs 74.7 -> 118.7 over 8-256 MiB where the model's LL128 tree reaches 89 "
        "at 8 MiB and flattens. The two-node tree's LL128 through the four 200 Gb/s ports ramps later than "
        "the model's pipeline; no public figure sizes the per-chunk cost"
    ),
    f"{AR_LOG}: 2 x 4 H100 all_reduce 8 B - 64 KiB": (
        "time 17.42/17.39 us at 8/64 B vs tree/LL 20.4/20.5 (+17/+18 %), 26.70 at 64 KiB vs 31.6 (+18 %), "
        "while 1-8 KiB (+15/+12 %) are asserted: the floor is 3 us under the model's two-node tree "
        "(base 6.8 us, LL's inter-node step twice); the all_gather and reduce_scatter floors on the same "
        "nodes (15.95/16.94 us at 128 B) are asserted at -4/-9 %, so the gap is the tree's, not the port's"
    ),
    f"{AG_LOG} and {RS_LOG}: 2 x 4 H100 64 KiB and reduce_scatter 512 KiB": (
        "all_gather time 23.23 us at 64 KiB vs ring/LL 27.1 (+17 %); reduce_scatter 22.98 us vs 27.1 "
        "(+18 %) and 40.89 us at 512 KiB vs ring/LL128 34.6 (-15.4 %): the model's LL -> LL128 switch "
        "sits between 256 and 512 KiB where the log's curve bends between 64 and 128 KiB"
    ),
    f"{NT156}: 2 x 8 A800 VMs, 4 x 200G RoCE SR-IOV VFs, all_reduce with NCCL_ALGO=Tree": (
        "busbw 76 ('only 76GB/s bus bw', qemu 2.10, GPUs passed through, NICs as VFs) vs tree/Simple 88.5 "
        "(+16 %); the bare-metal 96 on the same hardware is asserted. The thread finds ATS enabled and no "
        "cause; a virtualisation cost the catalogue does not carry"
    ),
    f"{N495}: 2 x 8 A100, 8 x 100 Gb/s RoCE a node, all_reduce peak (NCCL 2.7)": (
        "busbw 75 ('Bandwidth can reach 600Gbps', from the reporter's screenshot) vs tree/Simple 165.4 "
        "(+121 %) with NCCL's own choice, ring/Simple 95.9 (+28 %) forced. The maintainers: 'roughly "
        "matching our expectation (though lower by a little bit)' and 'a bit low'; NCCL 2.7 is older than "
        "the catalogue's tables (2.18.1 first) and the thread prints neither size nor algorithm. 75 is "
        "0.78 of the ring's 8 x 12.5 GB/s: the 2.7 ring the reporter ran, below the 12 GB/s a 100G port "
        "reaches (sjeaugey, nccl-tests #119)"
    ),
    f"{NT112}: 2 x 8 A100, NCCL_IB_HCA=mlx5_0 (one of four 200 Gb/s RoCEv2 ports), 1-8 GiB (NCCL 2.11.4)": (
        "average busbw 9.84 ('about 80Gbps') vs ring/Simple 24.0 through the one port (+144 %). The "
        "maintainer: 'Did you make sure ACS was disabled? That could explain why bandwidth is halved'; the "
        "reporter: 'The ACS is enabled on my machines'. With ACS on, GPUDirect RDMA traffic detours through "
        "the root complex: a host-path cost the model does not carry"
    ),
    f"{ABCI}inter_anode/job02-job16: ABCI (A), 8 x A100-SXM4-40GB, 4 x HDR a node (NCCL 2.8.4)": (
        "8 x A100 40GB and 'InfiniBand HDR (200 Gbps) | 4' a node (ABCI system overview, 計算ノード(A)); "
        "busbw at 32 MiB 33.37/31.34/15.15/26.41 on 2/4/8/16 nodes vs ring or tree/LL128 74.93/73.84/64.09/"
        "54.73 (+125/+136/+323/+107 %); 8 MiB 29.43/27.93/14.60/22.57 vs 62.10/47.14/45.65/43.95; time at "
        "8 B 32.25/51.17/61.60 us (2/8/16 nodes) vs 25.2/45.2/55.2 (-22/-12/-10 %). The log flattens at "
        "~30 GB/s from 8 MiB on 2 nodes, a third of the four HDR ports' 96; through host memory "
        "(nic_path SYS) the model still gives 56.6. NCCL 2.8.4 is older than the catalogue's tables (2.18.1 "
        "first; 'NCCL 2.8 or later may be able to give better performance on Ampere multi-node', nccl "
        "#495), and the logs print no transport: which path the 2021 runs took, no figure in the "
        "repository says"
    ),
    f"{ABCI}inter_vnode/job02.sh.7194532.nccl: ABCI (V), 2 x 4 V100, 2 x EDR a node, 8 KiB - 32 MiB": (
        "time 31.26/52.82/90.74 us at 8/64/256 KiB vs tree/LL 25.2/42.8 and tree/LL128 63.7 (-19/-19/-30 %); "
        "busbw 9.21/12.82/16.51/18.55/19.41/19.77 at 1-32 MiB vs 14.35/17.39/21.54/25.49/26.37/26.84 "
        "(+56/+36/+30/+37/+36/+36 %), while 8 B - 1 KiB are asserted. 19.8 is 0.82 of the two EDR "
        "ports' 24: the two-node tree's excess over the ring, which the model gives NCCL 2.8.4 from today's "
        "tables, the log does not show"
    ),
    f"{N949}: 2 x 8 A100 SXM4 80GB VMs, 2 x HDR InfiniBand SR-IOV VFs a node, all_reduce peak": (
        "busbw 'about 27GB/s (=~ 216Gb/s)' vs ring/Simple 48.0 through the two 200 Gb/s ports (+78 %); the "
        "reporter expected 50. A VM with SR-IOV VFs, as #156 above: the virtualisation cost, unsized"
    ),
}


def test_every_missed_point_names_measured_and_predicted() -> None:
    assert all(" vs " in why for why in MISSED.values())
