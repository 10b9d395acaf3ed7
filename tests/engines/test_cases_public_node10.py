"""The formula engine against a tenth set of public single-node results, none among the shared cases nor
the sets before it (test_cases_public_node.py .. ..._node9.py, test_cases_public_alltoall*.py): a Dell
XE8545 of Sheffield's Stanage cluster (4 x A100 SXM4 80GB joined by NVLink, two EPYC 7413), two 8 x A100
SXM4 80GB hosts (one on NCCL 2.19.3, one run both from one thread and with a process per GPU), and an 8-GPU
gfx950 (MI350-series) host on RCCL 2.27.7 (all_reduce and alltoall); two container runs whose rates sit
below every path the model knows are recorded as misses.
This round found few new sources: the single-node logs the search corpora hold on the GPUs it asked for
(H20, H800, L40S, H100/H200 NVL, GH200, MI325X/MI355X, B300, GB300, RTX PRO 6000) are in the rounds before
(nccl-tests #306's H20), multi-node (nccl-tests #367's H20, L40S and H200 OpenShift guides, GH200 on
Olivia and Alps, RTX 6000D two-node reports) or an "Expected Results" block of a recipe (8 x H200 NVL, one
32 GiB row, a GPU the catalogue lacks).

Each point is one row of a public log about ONE node; the comment gives the source and the quoted row
(size, time us, busbw GB/s). Tolerance, the blind check's bar: 10 % on busbw at >= 64 MiB, 15 % at mid
sizes (8-512 MiB) and 15 % on time at small sizes. No constant was set from these sources. Where a log
prints no release the model runs the newest recorded tables, the project's default; a release the
catalogue lacks (RCCL 2.27.7) runs the newest tables too. Two logs come from files the search index names
by an id only: they are cited by that id, the host name and the command the log prints. Points the model
misses are in ``MISSED`` (measured, predicted, what is missing); not asserted.
"""

from __future__ import annotations

import pytest
from tests.engines.test_cases_public_node import hgx, one_node
from tests.engines.test_cases_public_node3 import _rows  # one table's rows as Points
from tests.engines.test_cases_public_node4 import LAUNCH_S_PER_GPU

MiB = 2**20

STANAGE = (
    "https://github.com/rcgsheffield/sheffield_hpc/blob/master/stanage/software/libs/cuda.rst, 'Inter-GPU "
    "performance was tested on all 4x A100 devices in gpu01 using ... all_reduce_perf -b 8 -e 128M -f 2 -g "
    "4' (NCCL-tests/2.13.6-GCC-11.3.0-CUDA-11.7.0 module, release not printed), 4 x NVIDIA A100-SXM4-80GB at "
    "0x01/0x41/0x81/0xc1; the node per stanage/cluster_specs.rst of the same repository: Dell XE8545, 2 x "
    "24-core AMD EPYC 7413, 4 x A100 80GB with NVLink GPU interconnects"
)
DKH = (
    "GitHub file, search-index id 69473998636: host dkh, ./build/all_reduce_perf -b 8 -e 128M -f 2 -g 8, "
    "'nccl-tests version 2.19.4 nccl-headers=21903 nccl-library=21903' (NCCL 2.19.3), 8 x NVIDIA "
    "A100-SXM4-80GB at 0000:14/19/53/58/90/96/ce/d4 (an HGX A100 8-GPU board)"
)
THANOS = (
    "GitHub file, search-index id 33201577724 (a Chinese nccl-tests walkthrough): host thanos, 8 x NVIDIA "
    "A100-SXM4-80GB at 0x07/0x0a/0x45/0x4b/0x84/0x8a/0xc0/0xc3, 'nvidia-smi nvlink -s' 12 links of 25 GB/s "
    "per GPU, NCCL from pip nvidia-nccl-cu12 (release not printed); ./build/all_reduce_perf -b 8 -e 4G -f 2 "
    "-g 8 (one thread) and mpirun -np 8 -host localhost ... -g 1 (a process per GPU)"
)
AION = (
    "https://github.com/prasad-nair-amd/aion/blob/main/README.md ('aion RCCL perf numbers'), host gpu-3, "
    "docker prasadnairamd/rccl-tests, all_reduce_perf -f 2 -g 8 -b 4 -e 1G and alltoall_perf -b 8 -e 128M -f"
    " 2 -g 8, 'rccl-headers=22803 rccl-library=22707' (RCCL 2.27.7); 8 x 'AMD Radeon Graphics', the name "
    "the same author's prasad-nair-amd/alibaba README prints for its MI355X (gfx950), at the bus order "
    "75/05/65/15/f5/85/e5/95 of AMD's MI350X acceptance guide example"
)

#: 8 x A100 SXM4 80GB on NVSwitch (HGX A100 8-GPU: 12 NVLink 3 links per GPU at NCCL's SM80 20 GB/s)
A100_X8 = hgx("a100-sxm-80gb")
#: the XE8545's 4 x A100 SXM4 80GB, joined directly by their 12 NVLink 3 links (no NVSwitch on the 4-GPU
#: board) on two AMD EPYC sockets. NCCL's ring search over a full mesh builds rings that use all of each
#: GPU's links, as on a switch (the project's V100 and GB200 NVL4 mesh notes, test_cases_public_node7.py),
#: and A100 has no NVLS, so the switch form gives the same rings: a mesh entry with the links split 4 a
#: pair returns the same predictions to the digit and would add an unsourced wiring assumption
A100_X4_XE8545 = one_node("a100-sxm-80gb", 4, {"kind": "nvswitch"}, cpu_vendor="amd")
#: 8 x gfx950 on xGMI (catalogue mi355x: 7 Infinity Fabric links of 153.6 GB/s; the MI350X reads the same
#: links and RCCL tables in the model, mi350x entry, so which of the two gpu-3 holds moves no figure)
MI35X = one_node("mi355x", 8, {"kind": "nvswitch"})
#: one host thread driving the node's GPUs (-g 8 / -g 4), at nccl-tests #123's per-GPU launch cost
ONE_THREAD_8 = (("gpus_per_thread", 8), ("launch_s_per_gpu", LAUNCH_S_PER_GPU))
ONE_THREAD_4 = (("gpus_per_thread", 4), ("launch_s_per_gpu", LAUNCH_S_PER_GPU))
V2193_ONE_THREAD_8 = (("nccl_version", "2.19.3"), *ONE_THREAD_8)


POINTS = {
    # Stanage gpu01, 4 x A100 (release not printed: newest tables), "8 2 float sum -1 15.29", "256 ... 14.85",
    # "8192 ... 14.93", "32768 ... 19.80": one thread launching 4 kernels, 4 x 4.21 us = 16.85 us over ring/LL
    # (+10.2/+13.5/+12.9/-14.9 %)
    **_rows(
        "stanage gpu01 A100 x4",
        STANAGE,
        A100_X4_XE8545,
        "all_reduce",
        ((8, 15.29, 0), (256, 14.85, 0), (8192, 14.93, 0), (32768, 19.80, 0)),
        ONE_THREAD_4,
    ),
    # dkh, 8 x A100 (NCCL 2.19.3), "8 2 float sum -1 34.84", "256 ... 36.93", "4096 ... 37.17", "32768 ...
    # 36.74", "65536 ... 37.48": the one-thread floor 8 x 4.21 = 33.7 us (-3.3/-8.7/-9.3/-8.3/-10.1 %)
    **_rows(
        "dkh A100 x8",
        DKH,
        A100_X8,
        "all_reduce",
        ((8, 34.84, 0), (256, 36.93, 0), (4096, 37.17, 0), (32768, 36.74, 0), (65536, 37.48, 0)),
        V2193_ONE_THREAD_8,
    ),
    # thanos, one thread (-g 8, newest tables): "256 64 float sum -1 39.08", "4096 ... 39.12": the floor
    # 33.7 us (-13.8/-13.9 %); "2097152 ... 59.30 35.37 61.89": ring/LL 64.6 (+4.3 %); "1073741824 ... 8247.6
    # 130.19 227.83", "2147483648 ... 16330 ... 230.13", "4294967296 ... 32336 ... 232.44": ring/Simple over
    # 12 x 20 GB/s 238.3/239.1/239.6 (+4.6/+3.9/+3.1 %)
    **_rows(
        "thanos A100 x8 thread",
        THANOS,
        A100_X8,
        "all_reduce",
        (
            (256, 39.08, 0),
            (4096, 39.12, 0),
            (2 * MiB, 59.30, 61.89),
            (1024 * MiB, 8247.6, 227.83),
            (2048 * MiB, 16330, 230.13),
            (4096 * MiB, 32336, 232.44),
        ),
        ONE_THREAD_8,
    ),
    # thanos, a process per GPU: "524288 131072 float sum -1 28.11": ring/LL 25.5 us (-9.4 %); "1048576 ...
    # 37.89 27.67 48.43", "2097152 ... 55.39 ... 66.26", "4194304 ... 81.66 ... 89.89": ring/LL, LL, LL128
    # 51.1/64.6/99.4 (+5.5/-2.6/+10.6 %); "536870912 ... 4248.8 ... 221.13", "1073741824 ... 8244.5 ...
    # 227.91", "2147483648 ... 16288 ... 230.72", "4294967296 ... 32285 ... 232.81": ring/Simple 236.6/238.3/
    # 239.1/239.6 (+7.0/+4.6/+3.7/+2.9 %)
    **_rows(
        "thanos A100 x8 mpi",
        THANOS,
        A100_X8,
        "all_reduce",
        (
            (512 * 1024, 28.11, 0),
            (MiB, 37.89, 48.43),
            (2 * MiB, 55.39, 66.26),
            (4 * MiB, 81.66, 89.89),
            (512 * MiB, 4248.8, 221.13),
            (1024 * MiB, 8244.5, 227.91),
            (2048 * MiB, 16288, 230.72),
            (4096 * MiB, 32285, 232.81),
        ),
    ),
    # aion gpu-3 (RCCL 2.27.7, newest tables), all_reduce "4194304 ... 58.10 72.19 126.33", "8388608 ... 89.76
    # 93.46 163.55", "33554432 ... 222.70 150.67 263.67": ring/LL128 121.6/183.1/295.2 (-3.8/+12.0/+12.0 %)
    **_rows(
        "aion gpu-3 gfx950 x8",
        AION,
        MI35X,
        "all_reduce",
        ((4 * MiB, 58.10, 126.33), (8 * MiB, 89.76, 163.55), (32 * MiB, 222.70, 263.67)),
        ONE_THREAD_8,
    ),
    # alltoall "128 4 float none -1 38.24", "1024 ... 38.90", "2048 ... 39.21", "8192 ... 39.02": the
    # pairwise exchange under the one-thread floor, 33.7 us (-11.9/-13.4/-14.1/-13.6 %)
    **_rows(
        "aion gpu-3 gfx950 x8",
        AION,
        MI35X,
        "alltoall",
        ((128, 38.24, 0), (1024, 38.90, 0), (2048, 39.21, 0), (8192, 39.02, 0)),
        ONE_THREAD_8,
    ),
}


@pytest.mark.parametrize("key", list(POINTS))
def test_public_node_point(key: str) -> None:
    assert abs(POINTS[key].relative_error()) <= POINTS[key].single_node_bar()


#: Public single-node rows the model misses (measured, predicted, what is missing); not asserted.
MISSED = {
    "Stanage gpu01, 4 x A100 SXM4 (XE8545, one thread), all_reduce 1 KiB and 64 KiB-128 MiB": (
        "time 1 KiB 14.50 vs 16.85 us (+16.2 %), 64/128/256/512 KiB 21.48/25.64/35.04/44.89 vs "
        "16.85/16.85/16.85/19.17 (-21.6/-34.3/-51.9/-57.3 %); busbw 1/2/4/8/16/32 MiB 24.90/45.53/72.97/"
        "94.81/133.36/176.64 vs 55.90/79.34/116.74/154.91/188.29/211.02 (+124/+74/+60/+63/+41/+19.5 %), "
        "64/128 MiB 187.32/206.51 vs 224.58/232.03 (+19.9/+12.4 %; ring/LL, LL128, Simple over 12 x 20 "
        "GB/s). The model hides the kernel under the one-thread launch floor up to 256 KiB, where the log "
        "adds it; above, the same slow ramp as dkh's A100 rows and shared case_20's 8 x A100 (4-128 MiB "
        "+29..+55 %, MISSED in test_cases_accuracy.py), whose 256 MiB-8 GiB rows the ring meets. The "
        "module's NCCL is not printed; its CUDA 11.7 toolchain (2022) predates the catalogue's first "
        "release, 2.18.1 (2023), so the run's own tables cannot be chosen"
    ),
    "dkh, 8 x A100 SXM4 (NCCL 2.19.3, one thread), all_reduce 128 KiB-128 MiB": (
        "time 128/256/512 KiB 40.33/46.38/56.27 vs 33.70 us (-16.4/-27.3/-40.1 %); busbw 1/2/4/8/16/32 MiB "
        "27.26/45.24/68.88/90.81/107.50/136.11 vs 40.26/64.14/99.40/137.09/169.15/195.30 (+48/+42/+44/+51/"
        "+57/+43.5 %), 64/128 MiB 174.83/181.32 vs 215.35/227.01 (+23.2/+25.2 %; ring/LL, LL128, Simple). "
        "The rows match shared case_20's 8 x A100 VM (NCCL 2.18.5: 4 MiB 71, 128 MiB 174) within 5 %: a "
        "second log of the A100 mid-size ramp the model does not have. What sets it is not printed "
        "(channels, protocol): the log carries no NCCL_DEBUG output. "
        "NCCL 2.19.3's own tuner prices every row as the model does (ring/LL128 40.6 us + S / 126.2 GB/s "
        "algbw to 16 MiB, ring/Simple 56.0 us + S / 137.1 from 32 MiB, on 24 channels; Simple's 2 MiB chunks "
        "make one partial loop below 384 MiB: tests/collectives/test_ring_ll128_tuner.py). One mechanism of "
        "this release is not built: runRing (all_reduce.h 2.18-2.19) rounds an LL128 chunk up to 19,200 B "
        "(640 threads x 60 B / 2), which at 2-8 MiB leaves the last chunk rows of every channel (nearly) "
        "empty, so the GPU whose two once-sent chunks they are sends 2 S, not 2 (n-1)/n S (x 8/7 at 2-4 MiB, "
        "1.136 at 8 MiB, 1.04 at 16 MiB): 8 MiB 116.1 us for 107.1, still under the measured 161.7; 2.20 on "
        "split a channel's remainder evenly (enqueue.cc computeCollLastChunkInfo)"
    ),
    "thanos, 8 x A100 SXM4 (release not printed, one thread and a process per GPU), all_reduce 8 B-512 MiB": (
        "one thread: time 8 B/32/64/128/256/512 KiB 40.12/40.93/40.97/42.26/43.97/48.31 vs 33.70 us (-16.0/"
        "-17.7/-17.7/-20.3/-23.4/-30.2 %); busbw 1/4/8/16/32/64/128/256/512 MiB 34.88/70.70/90.27/112.72/"
        "133.71/168.86/179.99/196.34/203.03 vs 51.08/99.40/137.09/169.15/195.30/215.35/227.01/233.32/236.62 "
        "(+46/+41/+52/+50/+46/+27.5/+26.1/+18.8/+16.5 %). A process per GPU: time 8/16/256/1024 B and 4/32/"
        "64/128/256 KiB 20.26/17.90/23.61/24.43/25.29/30.25/31.82/31.90/27.65 vs ring/LL 15.01/15.02/15.28/"
        "16.12/19.48/21.72/21.72/21.72/21.72 (-16..-35 %); busbw 8/16/32/64/128/256 MiB 112.37/137.68/155.53/"
        "190.73/198.78/211.78 vs 137.09/169.15/195.30/215.35/227.01/233.32 (+22.0/+22.9/+25.6/+12.9/+14.2/"
        "+10.2 %). The third A100 log with the mid-size ramp below the ring (dkh, shared case_20); from 1 "
        "GiB both runs meet the 12 x 20 GB/s ring (asserted). The process-per-GPU run's 8 B-256 KiB floor "
        "(18-32 us, jagged) is the MPI launch path, which the log does not describe. "
        "Its wider sizes keep NCCL's latencies at lower rates: 4-16 MiB 40.4 us + S / 168.7 GB/s busbw (the "
        "tuner's ring/LL128 40.6 + 220.8), 1-4 GiB 246.6 us + S / 234.6 (ring/Simple 56.0 + 240), the Simple "
        "intercept 115-127 us at 32-64 MiB and 180-266 us from 128 MiB, about one 2 MiB chunk at a channel's "
        "234.6 / 24 GB/s (214 us) once a loop is full; one thread runs 22-124 us slower than it at 4-128 "
        "MiB, a gap growing with S (not the 33.7 us launch floor). No NCCL source or microbenchmark found "
        "sizes either rate"
    ),
    "aion gpu-3, 8 x gfx950 (RCCL 2.27.7, one thread), all_reduce 4 B-2 MiB, 16 MiB and 64 MiB-1 GiB": (
        "time 4/8/1024/65536/524288 B 45.99/45.21/39.67/44.50/51.42 vs 33.70 us (-26.7/-25.5/-15.05/-24.3/"
        "-34.5 %); busbw 1/2/16 MiB 37.08/71.27/192.04 vs 54.45/89.45/245.18 (+46.8/+25.5/+27.7 %), 64/128/"
        "256/512 MiB and 1 GiB 291.32/308.50/314.94/317.82/322.36 vs 338.18/367.84/384.71/393.74/398.41 "
        "(+16.1/+19.2/+22.2/+23.9/+23.6 %; ring/Simple over 7 x 153.6 GB/s xGMI). The same docker image and "
        "command on the same author's Vultr MI355X host Aliyun3 (test_cases_public_node5.py) floors at "
        "33.4-35.5 us and reaches 402.55 at 1 GiB (-1.0 %, asserted): gpu-3 is ~10 us slower to launch and "
        "~20 % slower on the wire, and its README states no CPU, link speed, clocks or power cap that would "
        "say why (an air-cooled MI350X at a lower clock moves no figure the model reads)"
    ),
    "aion gpu-3, 8 x gfx950 (RCCL 2.27.7, one thread), alltoall 256 B-128 MiB": (
        "time 256/512/4096/16384/65536/262144 B 40.21/41.85/41.44/41.61/42.20/46.86 vs 33.70 us (-16.2/-19.5/"
        "-18.7/-19.0/-20.1/-28.1 %); busbw 1/2/4/8/16/32/64/128 MiB 19.70/38.45/79.38/151.18/196.04/219.20/"
        "245.88/268.26 vs 27.23/54.45/108.90/217.81/304.51/346.97/372.98/387.50 (+38/+42/+37/+44/+55/+58/+52"
        "/+44 %; pairwise over the 7 xGMI links). Floor-bound to 4 MiB as on Aliyun3, and ~30 % under the "
        "links above it: the host difference of the all_reduce entry, unstated"
    ),
    "kalavai-net/kalavai-client scripts/README.md (search-index id 54386745728), 2 and 4 x RTX 4090 in "
    "docker (nvcr.io pytorch 24.01, --shm-size=2g), all_reduce 1 MiB-2 GiB": (
        "busbw 2 GPUs (0x1a/0x1b) 1 MiB/1 GiB 1.95/2.24 vs SHM ring 14.09/19.19 (+623/+757 %), a "
        "Kubernetes pod's 2 GPUs (0x1a/0xb2) 1 GiB 3.82 vs 19.19 (+402 %), 4 GPUs 1 GiB 2.58 vs 19.19 "
        "(+644 %); the 2-GPU 8 B floor, 8.97 vs 8.61 us (-4.1 %), is met. 2-4 GB/s is below any PCIe or "
        "host-memory path the model knows; the README states no host, CPU or PCIe width and the log prints "
        "no transport (SHM, or NET/Socket if SHM failed in the container): not a checkable point"
    ),
    "search-index id 40793914582 (a Chinese cluster guide, 'sm02'), 4 x A100-PCIE-40GB in a container "
    "(host nccl-test), all_reduce 8 B-128 MiB": (
        "time 8 B 23.43 vs 16.85 us (-28.1 %; P2P ring/LL, one thread); busbw 1/64/128 MiB 4.96/5.38/5.20 "
        "vs 14.55/23.76/23.88 (+193/+342/+359 %; ring/Simple at NCCL's Gen4 x16 24 GB/s). The GPUs sit two "
        "per socket (0x18/0x3b, 0x86/0xaf) but the guide states no CPU, ACS or container setting, and "
        "3-5.6 GB/s with a jagged curve (4 MiB 4.58, 32 MiB 4.42) is the rate of a bounce through the host "
        "or NCCL's socket transport, not of PCIe P2P: not a checkable point"
    ),
}


def test_every_missed_point_names_measured_and_predicted() -> None:
    assert all(" vs " in why for why in MISSED.values())
