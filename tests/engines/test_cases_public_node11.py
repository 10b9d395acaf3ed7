"""The formula engine against an eleventh set of public single-node results, none among the shared cases nor
the sets before it (test_cases_public_node.py .. ..._node10.py, test_cases_public_alltoall*.py): the one-node
sweeps of two HPC-centre benchmark repositories whose multi-node logs test_cases_public_multi11.py holds.
SURF's Snellius ``gpu_h100`` node (odissei-benchmarks/nccl-tests runs/1node: all_reduce, all_gather and
reduce_scatter, 4 B - 128 MiB, one thread driving 4 GPUs, NCCL 2.22.3) and AIST's ABCI 2.0 compute nodes
(aistabci/abci2.0benchmark allreduce/intra_anode and intra_vnode: all_reduce 4 B - 32 MiB, a process per
GPU, NCCL 2.8.4) on 8 and 4 x A100 SXM4 40GB and 4 x V100 SXM2 16GB.
This round's searches of the corpora for the GPUs the brief asks for (H20, H800, L40S, L4, A40, A10, H100/
H200 NVL, GH200, RTX 6000 Ada, B300, GB300, MI325X, MI355X, MI250X, NCCL 2.27-2.29) found only logs already
used (nf5688m7 H800, test_cases_public_node3.py), multi-node runs (L40S and H200 on OpenShift, p6-b300
pairs, an H100 NVL + A100 pair that timed out) or tool listings without rows.

Each point is one out-of-place row of a public log about ONE node; the comment gives the quoted row (size,
time us, busbw GB/s) and the model's figure. Tolerance, the blind check's bar: 10 % on busbw at >= 64 MiB,
15 % at mid sizes (8-512 MiB) and 15 % on time at small sizes. No constant was set from these sources. NCCL
2.8.4 predates the catalogue's first release (2.18.1), so the ABCI rows run the newest recorded tables, the
project's default. Points the model misses are in ``MISSED`` (measured, predicted, what is missing); not
asserted.
"""

from __future__ import annotations

import pytest
from tests.engines.test_cases_public_multi11 import abci_v, snellius_h100
from tests.engines.test_cases_public_node import hgx, one_node
from tests.engines.test_cases_public_node3 import _rows  # one table's rows as Points
from tests.engines.test_cases_public_node4 import LAUNCH_S_PER_GPU

MiB = 2**20

_ODISSEI = "https://github.com/odissei-benchmarks/nccl-tests/blob/db955d0c9465ecc06a63f4d34a8bfc435e6ff97a/runs/1node/"
#: Snellius gcn155, 4 x "NVIDIA H100" at 06/26/a6/c6, "nThread 1 nGpus 4", "NCCL version 2.22.3+cuda12.6",
#: every pair "via P2P/direct pointer", "NVLS multicast support is not available", "24 coll channels ... 0
#: nvls channels"
SN_AR, SN_AG, SN_RS = (
    _ODISSEI + "all_reduce.log",
    _ODISSEI + "all_gather_perf.log",
    _ODISSEI + "reduce_scatter_perf.log",
)
_ABCI = (
    "https://github.com/aistabci/abci2.0benchmark/blob/8b20e1128f87234f7feff14a0b693dce998d9751/allreduce/"
)
#: ABCI (A) a0008, 8 x A100-SXM4-40GB, mpirun of 8 processes ("nThread 1 nGpus 1"), NCCL 2.8.4-1
#: (allreduce/README.md), all_reduce_perf -b 4 -e 32M -f 2 -n 100 (nccl.sh)
ABCI_A8 = _ABCI + "intra_anode/job.sh.7194257.nccl"
#: ABCI (A) a0048, 4 of its 8 x A100-SXM4-40GB (0x27/0x2a/0x51/0x57), the same build and command
ABCI_A4 = (
    "https://github.com/aistabci/abci2.0benchmark/blob/7cbfa36b9ed7119652f5e0f741964f4c023f83f4/allreduce/"
    "intra_anode/job04.sh.7280520.nccl"
)
#: ABCI (V) g0165, 4 x Tesla V100-SXM2-16GB, the same build and command
ABCI_V4 = _ABCI + "intra_vnode/job.sh.7194325.nccl"

#: one Snellius gpu_h100 node: 4 x H100 on an NVLink mesh without NVSwitch (test_cases_public_multi11.py)
SNELLIUS = snellius_h100(1)
#: the HGX A100 board of an ABCI (A) node (ABCI system overview, 計算ノード(A): 8 x A100 SXM4 40GB, NVLink 3
#: through NVSwitch), and 4 of its GPUs on the same switches
A100_40_X8 = hgx("a100-sxm-40gb")
A100_40_X4 = one_node("a100-sxm-40gb", 4, {"kind": "nvswitch"})
#: one ABCI (V) node: 4 x V100 SXM2, 2 NVLink 2 links to each peer (test_cases_public_multi11.py)
ABCI_V = abci_v(1)
#: one host thread driving the node's 4 GPUs (-g 4), at nccl-tests #123's per-GPU launch cost
V2223_ONE_THREAD_4 = (
    ("nccl_version", "2.22.3"),
    ("gpus_per_thread", 4),
    ("launch_s_per_gpu", LAUNCH_S_PER_GPU),
)


POINTS = {
    # Snellius all_reduce: "4 1 float sum -1 17.05", "16 ... 16.87", "256 ... 17.33", "1024 ... 16.89", "4096
    # ... 16.87", "16384 ... 16.59", "32768 ... 16.95", "65536 ... 17.80", "262144 ... 19.25": the one-thread
    # floor 4 x 4.21 = 16.85 us (-1.2/-0.1/-2.8/-0.2/-0.1/+1.6/-0.6/-5.3/-12.5 %); "1048576 ... 20.67 50.73
    # 76.10", "2097152 ... 96.96", "4194304 ... 139.87": ring/LL, LL, LL128 73.65/96.76/143.50 (-3.2/-0.2/
    # +2.6 %); "8388608 ... 189.40", "16777216 ... 246.92", "33554432 ... 279.68": LL128, Simple, Simple
    # 202.02/260.33/305.90 (+6.7/+5.4/+9.4 %); "67108864 ... 307.48", "134217728 ... 323.99": ring/Simple over
    # the 18-link mesh 335.24/352.12 (+9.0/+8.7 %)
    **_rows(
        "snellius gcn155 H100 x4",
        SN_AR,
        SNELLIUS,
        "all_reduce",
        (
            (4, 17.05, 0),
            (16, 16.87, 0),
            (256, 17.33, 0),
            (1024, 16.89, 0),
            (4096, 16.87, 0),
            (16384, 16.59, 0),
            (32768, 16.95, 0),
            (65536, 17.80, 0),
            (262144, 19.25, 0),
            (MiB, 20.67, 76.10),
            (2 * MiB, 32.44, 96.96),
            (4 * MiB, 44.98, 139.87),
            (8 * MiB, 66.44, 189.40),
            (16 * MiB, 101.9, 246.92),
            (32 * MiB, 180.0, 279.68),
            (64 * MiB, 327.4, 307.48),
            (128 * MiB, 621.4, 323.99),
        ),
        V2223_ONE_THREAD_4,
    ),
    # all_gather: "64 4 float none -1 17.11", "256 ... 17.13", "1024 ... 16.69", "4096 ... 16.87", "16384 ...
    # 17.02", "32768 ... 17.00", "65536 ... 17.21", "262144 ... 18.81": the floor 16.85 us (-1.5/-1.6/+1.0/
    # -0.1/-1.0/-0.9/-2.1/-10.4 %); "16777216 ... 60.20 278.69 209.02": ring/Simple 239.52 (+14.6 %)
    **_rows(
        "snellius gcn155 H100 x4",
        SN_AG,
        SNELLIUS,
        "all_gather",
        (
            (64, 17.11, 0),
            (256, 17.13, 0),
            (1024, 16.69, 0),
            (4096, 16.87, 0),
            (16384, 17.02, 0),
            (32768, 17.00, 0),
            (65536, 17.21, 0),
            (262144, 18.81, 0),
            (16 * MiB, 60.20, 209.02),
        ),
        V2223_ONE_THREAD_4,
    ),
    # reduce_scatter: "64 4 float sum -1 18.41", "256 ... 18.18", "1024 ... 18.43", "4096 ... 18.20", "16384
    # ... 18.20", "32768 ... 18.92", "65536 ... 18.93": the floor 16.85 us (-8.5/-7.3/-8.6/-7.4/-7.4/-10.9/
    # -11.0 %)
    **_rows(
        "snellius gcn155 H100 x4",
        SN_RS,
        SNELLIUS,
        "reduce_scatter",
        (
            (64, 18.41, 0),
            (256, 18.18, 0),
            (1024, 18.43, 0),
            (4096, 18.20, 0),
            (16384, 18.20, 0),
            (32768, 18.92, 0),
            (65536, 18.93, 0),
        ),
        V2223_ONE_THREAD_4,
    ),
    # ABCI (A) a0008, 8 processes: "4 1 float sum 17.18", "16 ... 17.11", "64 ... 17.42": ring/LL 15.00/15.02/
    # 15.07 us (-12.7/-12.2/-13.5 %)
    **_rows(
        "abci a0008 A100-40 x8",
        ABCI_A8,
        A100_40_X8,
        "all_reduce",
        ((4, 17.18, 0), (16, 17.11, 0), (64, 17.42, 0)),
    ),
    # ABCI (A) a0048, 4 processes: "8 2 float sum 11.92", "16 ... 11.93": ring/LL 10.21 us (-14.4/-14.4 %)
    **_rows("abci a0048 A100-40 x4", ABCI_A4, A100_40_X4, "all_reduce", ((8, 11.92, 0), (16, 11.93, 0))),
    # ABCI (V) g0165, 4 processes: "8388608 ... 148.4 56.53 84.80", "16777216 ... 255.3 ... 98.56", "33554432
    # ... 449.9 ... 111.88": ring/Simple over 2 NVLink 2 links a pair 94.14/105.51/112.29 (+11.0/+7.1/+0.4 %)
    **_rows(
        "abci g0165 V100 x4",
        ABCI_V4,
        ABCI_V,
        "all_reduce",
        ((8 * MiB, 148.4, 84.80), (16 * MiB, 255.3, 98.56), (32 * MiB, 449.9, 111.88)),
    ),
}


@pytest.mark.parametrize("key", list(POINTS))
def test_public_node_point(key: str) -> None:
    assert abs(POINTS[key].relative_error()) <= POINTS[key].single_node_bar()


#: Public single-node rows the model misses (measured, predicted, what is missing); not asserted.
MISSED = {
    f"{SN_AG}: Snellius gcn155, 4 x H100 mesh (NCCL 2.22.3, one thread), all_gather 1-8 MiB and 32-128 MiB": (
        "time 1/2 MiB 20.37/23.45 vs 16.85/19.56 us (-17.3/-16.6 %); busbw 4/8/32/64/128 MiB 70.57/135.65/"
        "248.65/277.71/305.29 vs ring/Simple 116.15/176.89/291.04/326.11/347.02 (+64.6/+30.4/+17.0/+17.4/"
        "+13.7 %). The 4 MiB row jumps from 23.45 to 44.58 us, where the model's LL-to-Simple switch costs "
        "7.5 us: NCCL 2.22.3 runs 4-8 MiB at a latency near 40 us the model does not have. Above, the log's "
        "all_gather at S tracks its all_reduce at S/2 (128 MiB 329.7 us vs all_reduce 64 MiB 327.4), as the "
        "bytes a link carries are the same; the model prices that all_reduce 9 % fast (asserted) and the "
        "all_gather 14-17 % fast: the mid-size ramp of the mesh's Simple protocol is not built"
    ),
    f"{SN_RS}: Snellius gcn155, 4 x H100 mesh (NCCL 2.22.3, one thread), reduce_scatter 256 KiB-128 MiB": (
        "time 256 KiB/1/2 MiB 19.92/22.82/24.09 vs 16.85/16.85/19.56 us (-15.4/-26.2/-18.8 %); busbw 4/8/16/"
        "32/64/128 MiB 71.75/133.57/188.12/226.86/254.26/273.98 vs ring/Simple 116.15/176.89/239.52/291.04/"
        "326.11/347.02 (+61.9/+32.4/+27.3/+28.3/+28.3/+26.7 %). 10 % under the log's own all_gather from 16 "
        "MiB (the 2-node reduce_scatter in test_cases_public_multi11.py meets the model, the network bound): "
        "on the NVLink mesh the reduction's extra load per element bounds the ring, a cost the model "
        "does not charge one-node reduce_scatter; no NCCL source or microbenchmark found sizes it"
    ),
    f"{_ABCI}intra_anode: ABCI (A), 8 and 4 x A100 SXM4 40GB, NCCL 2.8.4, all_reduce 256 B-32 MiB": (
        "8 GPUs: time 256/512 B/1/32 KiB/2 MiB 18.20/18.47/19.83/35.73/116.6 vs ring/LL 15.28/15.56/16.12/"
        "21.72/56.85 us (-16.0/-15.8/-18.7/-39.2/-51.2 %); busbw 4/8/16/32 MiB 51.53/71.80/117.30/162.84 vs "
        "99.40/137.09/169.15/195.30 (+93/+91/+44/+20 %). 4 GPUs: time 256 B/1/4/64 KiB/1 MiB 12.73/14.31/"
        "15.53/27.08/83.97 vs 10.44/11.16/13.08/13.08/28.13 (-18/-22/-16/-52/-67 %); busbw 4/8/16/32 MiB "
        "49.03/90.77/118.74/168.64 vs 116.74/154.91/188.29/211.02 (+138/+71/+59/+25 %). NCCL 2.8.4 (2021) "
        "predates the catalogue's first tables (2.18.1): its LL/LL128 ring costs more per byte and its "
        "channel count on A100 is not recorded; the same gap as the ABCI multi-node rows (MISSED in "
        "test_cases_public_multi11.py)"
    ),
    f"{ABCI_V4}: ABCI (V), 4 x V100 SXM2 16GB, NCCL 2.8.4, all_reduce 8 B-4 MiB": (
        "time 8/256 B/1/4 KiB 8.22/8.52/9.47/10.98 vs ring/LL 10.21/10.44/11.16/13.08 us (+24.2/+22.5/+17.8/"
        "+19.1 %), 64/256 KiB/1 MiB 22.34/34.39/77.21 vs 13.08/20.28/39.65 (-41.5/-41.0/-48.7 %); busbw 4 "
        "MiB 62.14 vs 77.45 (+24.6 %). The 2021 release starts 2 us faster on V100 than the newest tables "
        "and ramps slower through LL and LL128; from 8 MiB its Simple ring meets the model (asserted)"
    ),
}


def test_every_missed_point_names_measured_and_predicted() -> None:
    assert all(" vs " in why for why in MISSED.values())
