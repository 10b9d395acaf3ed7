"""The formula engine against a third set of public single-node results, none among the shared cases nor
the first two sets (test_cases_public_node.py, test_cases_public_node2.py).

Each point is one row of a public log about ONE node whose hardware is stated; the comment gives the source
and the quoted row (size, time us, busbw GB/s). Tolerance, the blind check's bar: 10 % on busbw at >= 64
MiB, 15 % at mid sizes (1-32 MiB) and 15 % on time at small sizes. The model runs the log's NCCL release
when the catalogue has it, else the newest recorded tables (said per point). Two logs come from files the
search index names by an id only (its find_string answer gives no repository or path): they are cited by
that id, the host name and the command the log prints. No constant was set from these sources.

Two mechanisms they exposed are in the model: a GeForce pair on an NVLink bridge runs NCCL's P2P transport
over the bridge (ClusterSpec.peer_to_peer: an NVLink path is within every P2P level, paths.cc), where the
model had run SHM because the GeForce driver has no PCIe peer-to-peer; and GPUs behind one PCIe switch
(``scale_up.gpus_per_switch``) share its uplink when SHM sends through host memory from all of them at
once (tiers.shm_switch_share). The RTX 2080 Ti is in the catalogue (Turing, tuned with NCCL's Volta
row). Points the model misses are in ``MISSED`` (measured, predicted, what is missing); not asserted.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.clusters import mi300x_node
from tests.engines.test_cases_public import Point  # one public row, as the multi-node threads have it
from tests.engines.test_cases_public_node import hgx, one_node

from aifabric.cluster.spec import ClusterSpec

MiB = 2**20
GiB = 2**30

R1562 = "https://github.com/ROCm/rccl/issues/1562"
NT44 = "https://github.com/NVIDIA/nccl-tests/issues/44"
AUTODL = (
    "https://github.com/Anthony-Hoo/Anthony-Hoo.github.io/blob/37e805e8e56f839f6557756d76503d45af6ab47e/"
    "posts/AutoDL_Multi-GPU_Interconnection_Test.md"
)
H800_BCAST = "GitHub file, search-index id 24836070500: host nf5688m7-1, broadcast_perf -g 8, NCCL 2.18.3"
B200_A4 = "GitHub file, search-index id 36588483035: GKE a4-highgpu (8 x B200), all_reduce_perf -g 8"

#: 8 x MI300X VF of an Azure VM (Xeon 8480C host), xGMI full mesh, 7 x 48 GB/s per GPU
MI300X = mi300x_node()
#: 8 x H800 SXM5 on NVSwitch (Inspur NF5688M7): 8 NVLink 4 links per GPU (the log's NCCL search: 16 channels)
H800 = hgx("h800-sxm")
#: 8 x B200 on NVSwitch (Google Cloud A4)
B200 = hgx("b200")
#: 2 x RTX 2080 Ti behind one PCIe Gen3 x16 switch (nvidia-smi topo PIX), no peer-to-peer (topo -p2p NS): SHM
R2080_SHM = one_node("rtx-2080-ti", 2, {"kind": "pcie", "link": "pcie-gen3", "gpus_per_switch": 2})
#: 2 x RTX 2080 Ti joined by an NVLink bridge (two NVLink 2 x8 links): NCCL P2P over NVLink
R2080_NVL = one_node("rtx-2080-ti", 2, {"kind": "nvswitch"})
V2183 = (("nccl_version", "2.18.3"),)


def _rows(
    tag: str,
    url: str,
    spec: ClusterSpec,
    collective: str,
    rows: tuple[tuple[int, float, float], ...],
    opts: tuple[tuple[str, Any], ...] = (),
) -> dict[str, Point]:
    """Points of one table, keyed ``tag collective size``: rows ``(size, time us, busbw GB/s)``; busbw 0
    asserts the time (a small size)."""
    return {
        f"{tag} {collective} {size} B": Point(url, spec, collective, size, t * 1e-6, bw * 1e9, bw == 0, opts)
        for size, t, bw in rows
    }


POINTS = {
    # rccl #1562 (2025-02-22): 8 x "AMD Instinct MI300X VF", ./build/all_reduce_perf -b 8 -e 128M -f 2 -g 8
    # (one process), RCCL 2.20.5 (ROCm 6.2). NCCL's newest Hopper-row tables (the project's default for AMD
    # GPUs: RCCL's own tables would run MSCCL at 8-16 MiB, which one process driving 8 GPUs turns off,
    # mscclCommCompatible): "8388608 ... 88.10 95.22 166.63", "16777216 ... 152.7 ... 192.22", "33554432 ...
    # 244.8 ... 239.86", "67108864 ... 431.9 ... 271.93", "134217728 ... 801.4 ... 293.07": ring/LL128,
    # LL128, LL128, Simple, Simple 166.6/216.6/254.7/289.6/311.1 (+0.0/+12.7/+6.2/+6.5/+6.1 %)
    **_rows(
        "rccl1562 MI300X x8",
        R1562,
        MI300X,
        "all_reduce",
        (
            (8 * MiB, 88.10, 166.63),
            (16 * MiB, 152.7, 192.22),
            (32 * MiB, 244.8, 239.86),
            (64 * MiB, 431.9, 271.93),
            (128 * MiB, 801.4, 293.07),
        ),
    ),
    # H800 broadcast log (NCCL 2.18.3, -g 8, root 0): "67108864 ... 430.6 155.87 155.87", "134217728 ...
    # 837.8 ... 160.21", "268435456 ... 1649.9 ... 162.70", "536870912 ... 3274.5 ... 163.96", "1073741824
    # ... 6520.1 ... 164.68", "2147483648 ... 13018 ... 164.97": chain/Simple over 8 x 20.6 GB/s
    # 152.7/158.5/161.6/163.2/164.0/164.4 (-2.0/-1.0/-0.7/-0.5/-0.4/-0.4 %); the log's own search prints
    # "maxBw 164.8"
    **_rows(
        "nf5688m7 H800 x8",
        H800_BCAST,
        H800,
        "broadcast",
        (
            (64 * MiB, 430.6, 155.87),
            (128 * MiB, 837.8, 160.21),
            (256 * MiB, 1649.9, 162.70),
            (512 * MiB, 3274.5, 163.96),
            (GiB, 6520.1, 164.68),
            (2 * GiB, 13018, 164.97),
        ),
        V2183,
    ),
    # B200 A4 log (release not printed: newest tables): "134217728 ... 396.9 338.18 591.81", "268435456 ...
    # 714.7 ... 657.26", "536870912 ... 1335.6 ... 703.44", "1073741824 ... 2576.7 ... 729.25", "2147483648
    # ... 5102.4 ... 736.53", "4294967296 ... 10171 ... 738.97", "8589934592 ... 17899 ... 839.82",
    # "17179869184 ... 35561 ... 845.44": NVLS 641.7/719.2/765.4/790.8/794.9/806.3/812.0/815.0
    # (+8.4/+9.4/+8.8/+8.4/+7.9/+9.1/-3.3/-3.6 %)
    **_rows(
        "a4 B200 x8",
        B200_A4,
        B200,
        "all_reduce",
        (
            (128 * MiB, 396.9, 591.81),
            (256 * MiB, 714.7, 657.26),
            (512 * MiB, 1335.6, 703.44),
            (GiB, 2576.7, 729.25),
            (2 * GiB, 5102.4, 736.53),
            (4 * GiB, 10171, 738.97),
            (8 * GiB, 17899, 839.82),
            (16 * GiB, 35561, 845.44),
        ),
    ),
    # AutoDL 2080Ti x2 post (SHM; release not printed: newest tables), broadcast_perf -g2: "65536 ... 20.73",
    # "1048576 ... 113.8 9.22 9.22", "2097152 ... 208.3 ... 10.07", "8388608 ... 780.0 ... 10.75": chain/
    # Simple 20.9 us (+0.9 %), busbw 8.50/9.02/9.45 at the Gen3 line x SHM's 0.6 (-7.8/-10.4/-12.1 %)
    **_rows(
        "autodl 2080Ti x2",
        AUTODL,
        R2080_SHM,
        "broadcast",
        ((65536, 20.73, 0), (MiB, 113.8, 9.22), (2 * MiB, 208.3, 10.07), (8 * MiB, 780.0, 10.75)),
    ),
    # reduce_perf -g2: "65536 ... 19.10", "1048576 ... 112.5 9.32 9.32", "8388608 ... 779.9 ... 10.76":
    # chain/Simple 20.9 us (+9.6 %), 8.50/9.45 (-8.8/-12.2 %)
    **_rows(
        "autodl 2080Ti x2",
        AUTODL,
        R2080_SHM,
        "reduce",
        ((65536, 19.10, 0), (MiB, 112.5, 9.32), (8 * MiB, 779.9, 10.76)),
    ),
    # alltoall_perf -g 2: "1024 128 float none -1 12.94", "67108864 8388608 ... 7365.2 9.11 4.56",
    # "1073741824 134217728 ... 116573 9.21 4.61": direct/Simple 14.21 us (+9.8 %), busbw 4.79/4.80 (+5.1/
    # +4.1 %): both GPUs send at once, so they share the switch's uplink to the host, 16 x 0.6 / 2 GB/s
    # each (tiers.shm_switch_share); was 9.56/9.60 (+110/+108 %) at a whole uplink per GPU
    **_rows(
        "autodl 2080Ti x2",
        AUTODL,
        R2080_SHM,
        "all_to_all",
        ((1024, 12.94, 0), (64 * MiB, 7365.2, 4.56), (GiB, 116573, 4.61)),
    ),
    # nccl-tests #44: 2 x RTX 2080 Ti with an NVLink bridge (i5-9400F, PCIe 3.0 x8 each), NCCL 2.6.4 (older
    # than the catalogue: newest tables), ./all_reduce_perf -b 8 -e 128M -f 2 -g 2: "8 2 float sum 7.18",
    # "16 4 ... 7.00", "32 8 ... 7.28", "64 16 ... 7.20": ring/LL over the bridge 7.81/7.81/7.82/7.84 us
    # (+8.7/+11.6/+7.4/+8.9 %); was 8.60 us (SHM, +19.8 %) while the GeForce card's missing PCIe
    # peer-to-peer also took NVLink-bridged pairs off P2P
    **_rows(
        "nt44 2080Ti x2 bridge",
        NT44,
        R2080_NVL,
        "all_reduce",
        ((8, 7.18, 0), (16, 7.00, 0), (32, 7.28, 0), (64, 7.20, 0)),
    ),
}


@pytest.mark.parametrize("key", list(POINTS))
def test_public_node_point(key: str) -> None:
    point = POINTS[key]
    bar = 0.10 if not point.latency and point.size >= 64 * MiB else 0.15
    assert abs(point.relative_error()) <= bar


def test_a_bridged_geforce_pair_runs_p2p_not_shm() -> None:
    # nccl-tests #44: the bridged 2080 Ti pair's 8 B all_reduce takes 7.18 us, below what SHM through host
    # memory costs (the AutoDL pair without a bridge: 12.25 us); paths.cc ncclTopoCheckP2p puts an NVLink
    # path within every P2P level
    assert R2080_NVL.peer_to_peer and not R2080_SHM.peer_to_peer
    assert R2080_NVL.scaleup_effective_bytes_per_s > R2080_SHM.scaleup_effective_bytes_per_s


#: Public single-node rows the model misses (measured, predicted, what is missing); not asserted.
MISSED = {
    "rccl #1562, 8 x MI300X VF, one process (-g 8), all_reduce 8 B-1 MiB": (
        "time 8 B / 1 KiB / 64 KiB / 1 MiB 45.92/52.41/55.40/65.38 us vs 15.0/15.4/26.4/28.0 (ring/LL, NCCL "
        "tables). A flat 46-68 us up to 4 MiB; the same all_reduce with a process per GPU (hisohara, "
        "test_cases_public_node2) takes 13.7-17.5 us: the floor is one host thread launching eight "
        "GPUs' kernels (as nccl-collectives-bench's -g 4 H100 floor). The floor is modelled "
        "(engines/host_launch.py), but its per-GPU cost is the host's: HIP on this VM implies 45.92 / 8 = "
        "5.7 us; nccl-tests #123's CUDA host, 4.21 us, gives 33.7 us (-27 % at 8 B, -48 % at 1 MiB, where "
        "the measured time also grows with the size)"
    ),
    "H800 broadcast log (NCCL 2.18.3, -g 8), 4 B-1 MiB and 8 MiB": (
        "time 4 B / 1 KiB / 64 KiB 27.06/25.57/26.72 us vs 10.8/11.0/16.8 (chain/LL): the same one-process "
        "launch floor (engines/host_launch.py), 27.06 / 8 = 3.4 us per GPU on this host, where nccl-tests "
        "#123's 4.21 would give 33.7 us (+25 %); 1 MiB busbw 24.16 vs 35.1 (+45 %: measured 43.3-45.1 us "
        "flat from 512 KiB to 4 MiB); "
        "8 MiB 120.67 vs 101.5 (-15.9 %, chain/LL128 where the log's 69.5 us fits Simple at the 164.8 "
        "GB/s ring plus the 43 us floor)"
    ),
    "B200 A4 log, all_reduce 8-64 MiB": (
        "busbw 182.77/265.67/340.13/419.49 vs 260.2/334.3/474.6/600.7 (NVLS/Simple, +42/+26/+40/+43 %; "
        "ring/LL128 would give 234.1 at 8 MiB and 540.1 at 64 MiB, also above). The log prints no release "
        "(one process, 'nGpus 8', an NGC 25.04 container per its README): 2.25-2.26 give every Blackwell 32 "
        "NVLS channels (nvls.cc v2.26.6-1 NVLS_NCHANNELS_SM100), from 2.27.3 24 on one node "
        "(NVLS_NCHANNELS_SM100_NVL), which the model's newest tables run. The rate per added byte follows "
        "enqueue.cc's chunk, not the channels: 270-312 GB/s algbw at 32 KiB (16 -> 64 MiB) and 422-433 at "
        "64 KiB (128 MiB -> 1 GiB), as the GB200 MNNVL log (2.26.6, 32 channels: 296-317 and 430-437, then "
        "482-486 at 128 KiB; test_cases_public_multi3 MISSED) to 2 % from 32 MiB (9 % at 16 -> 32 MiB), "
        "against the model's ~467 at every chunk; per loop of channels x 8 heads x chunk that is 26.9 / "
        "38.8-39.7 us on 32 channels (20.1 / 29.1-29.8 on 24). Hopper shows the same dependence, smaller: "
        "case 20's H200 and H100 (16 channels) run 202-230 GB/s at 32 KiB (8 -> 32 MiB; 64 MiB already runs "
        "64 KiB, 8 x 128 x 64 KiB), 256-268 at 64 KiB and 273-276 at 128 KiB against 275.8, and step at 1 "
        "GiB (443 -> 468 busbw) where the chunk becomes 128 KiB. No source prices the per-chunk rate. "
        "NCCL_STEPS = 8 slots per head and channel (nvls.cc: buffSize = nvlsChunkSize x NCCL_STEPS; "
        "all_reduce.h ProtoSimple<1, 1>: one slot per chunk) would bind only for a slot cycle of 8 x 27 = "
        "215 us, far above an NVLink round trip (Little's law). The kernel's gather (7 warps at 8 ranks, "
        "all_reduce.h) copies each head's chunk in hunks of 4 KiB per warp (common_kernel.h: COLL_UNROLL 8 "
        "x 32 lanes x 16 B), so warp 0 waits on 8/16/24/40 dependent loads per loop at 16/32/64/128 KiB: "
        "that gives the concave shape (GB200's 16 and 32 KiB loops at 4 us + 1.41 us a round give 37.8 us "
        "at 64 KiB, 38.4-39.0 measured), but the 1.41 us is fitted, a loaded latency no B200 microbenchmark "
        "gives. The 2-4 GiB rows (422 algbw) then 8-16 GiB (480-483) step where no chunk or channel rule of "
        "any release changes"
    ),
    "AutoDL 2080Ti x2 (SHM, both GPUs behind one PCIe switch), all_reduce, all_gather, alltoall 1-8 MiB": (
        "all_reduce busbw 1 MiB / 64 MiB / 1 GiB 3.75/3.99/4.00 vs 4.40/4.79/4.80 (+17/+20/+20 %; "
        "+117/+140/+140 % before the shared switch uplink); all_gather 2.89/3.23/3.79 vs 4.25/4.79/4.80 "
        "(+47/+48/+27 %; was +164/+196/+153 %); alltoall 1 / 8 MiB 3.46/3.95 vs 4.25/4.72 (+23/+20 %). "
        "Without P2P NCCL diverts GPU-to-GPU traffic through the CPU (paths.cc ncclTopoComputePaths, "
        "addInterStep); both GPUs sit behind one Gen3 x16 switch (topo PIX), so when both send at once "
        "the uplink carries both GPUs' writes up and both reads down, half of 16 x 0.6 each: the model "
        "now shares it (alltoall from 64 MiB asserted). What keeps the ring collectives 20 % under that "
        "half (4.0 against 4.8), and all_gather below all_reduce, is not found"
    ),
    "AutoDL 2080Ti x2, broadcast and reduce 64 MiB-1 GiB (SHM)": (
        "busbw 11.03/11.09 (broadcast), 11.07/11.14 (reduce) vs 9.58/9.60 (-13 %): one direction at a time "
        "the Gen3 x16 path runs at 0.69 of its 16 GB/s line, above the 0.6 SHM efficiency the catalogue "
        "takes for every SHM flow (transports.yaml shm)"
    ),
    "AutoDL 2080Ti x2, small messages (-g 2, one process)": (
        "time all_reduce 8 B / 1 KiB 12.25/12.10 us vs 8.6/8.8, broadcast 8 B 11.65 vs 7.6, reduce 8 B "
        "10.39 vs 7.6: the one-process launch floor again, smaller on two GPUs; this host implies 12.25 / 2 "
        "= 6.1 us per GPU, and nccl-tests #123's 4.21 (8.4 us) stays below SHM's 8.6 us"
    ),
    "nccl-tests #44, 2 x 2080 Ti on an NVLink bridge, the 32 KiB-128 MiB rows": (
        "rows like '32768 4096 float 13.39 1.22 1.22' (no reduction operator, count = size / 8 bytes) belong "
        "to a table whose collective the thread's excerpt does not name (an all_gather of 2 ranks in "
        "nccl-tests 2.0's columns); read as all_reduce of the printed size they give 21.4 vs 39.6 busbw at "
        "64 MiB, as all_gather of half that size they fit neither, so they are not compared"
    ),
    "Azure NC96ads_A100_v4 (malaysia-ai finetune README): 4 x A100 80GB PCIe, NV12 pairs, SYS between": (
        "all_gather -g 4 32 MiB busbw 25.86 vs 18.8 (newest tables, -27 %): on an AMD host of four GPUs "
        "NCCL >= 2.23 takes the SYS hops off P2P (SHM: the Gen4 line 32 GB/s x 0.6); a release allowing "
        "P2P there (2.18.1, P2P at NCCL's 24 GB/s) gives 23.4 (-9.4 %). The README (2023) prints no "
        "release, and the model has no node of NVLink pairs joined through the CPU, so the ring's NV12 "
        "hops are priced as PCIe"
    ),
    "rccl #930, 16 GCDs of 8 MI250X (one node), all_gather 64 B-8 KiB before MSCCL": (
        "time 33.75-34.81 us vs no prediction: the catalogue has no MI250X (two GCDs per package, "
        "Infinity Fabric between packages)"
    ),
    "kvcache-ai/Mooncake #3484, 8 x H20 (NCCL 2.30.4), all_reduce 32 KiB-1 GiB": (
        "busbw 1 GiB 357.73 vs not compared: the table precedes a section headed 'Mooncake PG legacy' and "
        "the excerpt does not show whether it is NCCL's own run or Mooncake's collective layer under "
        "nccl-tests"
    ),
}


def test_every_missed_point_names_measured_and_predicted() -> None:
    assert all(" vs " in why for why in MISSED.values())
