"""The formula engine against a second set of public single-node results, none among the shared cases.

Each point is one row (or one stated figure) of a public log or thread about ONE node whose hardware is
stated; the comment gives the source and the quoted row (size, time us, busbw GB/s). Tolerance: the blind
check's bar, 15 % on busbw at >= 64 MiB, and at mid sizes where asserted. The model runs the log's NCCL
release (the nccl-tests header's ``nccl-library`` number) when the catalogue has it, else the newest
recorded tables (said per point).

The richest source is waynehacking8/nccl-collectives-bench: 4 (and 2, 6) of the 8 H100 of one NV18 board
(``topology_host.txt``), NCCL 2.29.2 (``nccl-library=22902``), one process driving the GPUs (``-g 4``),
all_reduce / all_gather / reduce_scatter from 8 B to 8 GiB, and a run with ``NCCL_DEBUG_SUBSYS=TUNING`` that
prints what NCCL picked (ring at 2 and 4 GPUs, NVLS at 6 for 256 MiB-8 GiB): the model picks the same.
hisohara/ai-scripts gives rccl-tests all_reduce on one node of 8 MI300X and of 8 MI325X (xGMI mesh).
No constant was set from these sources. Points the model misses are in ``MISSED`` (measured, predicted,
what is missing); not asserted.
"""

from __future__ import annotations

import pytest
from tests.clusters import mi300x_node
from tests.engines.test_cases_public import Point  # one public row, as the multi-node threads have it
from tests.engines.test_cases_public_node import hgx, one_node

from aifabric.cluster.spec import ClusterSpec
from aifabric.engines.formula import formula_collective

MiB = 2**20
GiB = 2**30

WH = "https://github.com/waynehacking8/nccl-collectives-bench/blob/main/results/"
WH_AR, WH_AG, WH_RS = WH + "all_reduce.txt", WH + "all_gather.txt", WH + "reduce_scatter.txt"
WH_SCALE = WH + "scaling_attributed/report.md"
N1281 = "https://github.com/NVIDIA/nccl/issues/1281"
N1047 = "https://github.com/NVIDIA/nccl/issues/1047"
N1506 = "https://github.com/NVIDIA/nccl/issues/1506"
N2169 = "https://github.com/NVIDIA/nccl/issues/2169"
HISO = "https://github.com/hisohara/ai-scripts/blob/main/training/01_rccl-smoketest/README.md"

H100 = hgx("h100-sxm")
#: 2, 4 and 6 of the 8 H100 of one NVSwitch board (nccl-collectives-bench topology_host.txt: NV18 all pairs)
H100_OF = {n: one_node("h100-sxm", n, {"kind": "nvswitch"}) for n in (2, 4, 6)}
V2292 = (("nccl_version", "2.29.2"),)
#: 8 x MI300X / MI325X, xGMI full mesh, 7 x 48 GB/s per GPU (catalogue infinity-fabric-mi300)
MI300X = mi300x_node()
MI325X = MI300X.model_copy(update={"accelerator": "mi325x"})


def _wh(url: str, collective: str, size: int, time_us: float, busbw_gbs: float) -> Point:
    """One out-of-place row of nccl-collectives-bench's 4-GPU sweeps (NCCL 2.29.2, -g 4)."""
    return Point(url, H100_OF[4], collective, size, time_us * 1e-6, busbw_gbs * 1e9, False, V2292)


def _wh_sweep(url: str, collective: str, rows: tuple[tuple[int, float, float], ...]) -> dict[str, Point]:
    """Rows ``(size, time us, busbw GB/s)`` of one nccl-collectives-bench 4-GPU sweep, keyed by size."""
    return {f"wh H100 x4 {collective} {s // MiB} MiB": _wh(url, collective, s, t, bw) for s, t, bw in rows}


def _sweep(
    label: str, url: str, spec: ClusterSpec, collective: str, rows: tuple[tuple[int, float, float], ...]
) -> dict[str, Point]:
    """Rows ``(size, time us, busbw GB/s)`` of one public sweep (busbw asserted), keyed ``label size MiB``."""
    return {
        f"{label} {s // MiB} MiB": Point(url, spec, collective, s, t * 1e-6, bw * 1e9, False)
        for s, t, bw in rows
    }


def _wh_peak(gpus: int, busbw_gbs: float, algo: str | None) -> Point:
    """A peak of nccl-collectives-bench's scaling table (all_reduce 256 MiB-8 GiB, NCCL 2.29.2): the 8 GiB
    row, under ``NCCL_ALGO=algo`` (None: NCCL's own choice)."""
    env = (("env", {"NCCL_ALGO": algo}),) if algo else ()
    return Point(WH_SCALE, H100_OF[gpus], "all_reduce", 8 * GiB, 0.0, busbw_gbs * 1e9, False, (*V2292, *env))


POINTS = {
    # nccl-collectives-bench all_reduce.txt, 4 x H100: "4194304 ... 43.41 96.63 144.94", "8388608 ... 62.88
    # 133.41 200.12", "16777216 ... 102.10 164.32 246.47": ring/LL128, ring/LL128, ring/Simple 143.5/202.0/
    # 260.3 (-1.0/+0.9/+5.6 %); NCCL's tuner prices NVLS on its 4-channel x 60 GB/s NVLS graph (search.cc) at
    # 204 GB/s algbw, under the ring's, so NVLS is never picked on 4 of the 8 GPUs (tuning.cc 2.29.2);
    # "33554432 ... 176.20 190.44 285.66", "67108864 ...
    # 325.86 205.95 308.92", "134217728 ... 617.77 ... 325.89", "268435456 ... 1181.43 ... 340.82",
    # "536870912 ... 2311.72 ... 348.36", "1073741824 ... 4511.11 ... 357.03", "2147483648 ... 8923.11 ...
    # 361.00", "4294967296 ... 17735.5 ... 363.25", "8589934592 ... 35168.9 ... 366.37": ring/Simple
    # 305.9/335.2/352.1/361.2/366.0/368.4/369.6/370.2/370.5 (+7.1/+8.5/+8.0/+6.0/+5.0/+3.2/+2.4/+1.9/+1.1 %)
    **_wh_sweep(
        WH_AR,
        "all_reduce",
        (
            (4 * MiB, 43.41, 144.94),
            (8 * MiB, 62.88, 200.12),
            (16 * MiB, 102.10, 246.47),
            (32 * MiB, 176.20, 285.66),
            (64 * MiB, 325.86, 308.92),
            (128 * MiB, 617.77, 325.89),
            (256 * MiB, 1181.43, 340.82),
            (512 * MiB, 2311.72, 348.36),
            (GiB, 4511.11, 357.03),
            (2 * GiB, 8923.11, 361.00),
            (4 * GiB, 17735.5, 363.25),
            (8 * GiB, 35168.9, 366.37),
        ),
    ),
    # all_gather.txt: "536870912 ... 1268.09 423.37 317.53", "1073741824 ... 2475.82 ... 325.27",
    # "2147483648 ... 4819.87 ... 334.16", "4294967296 ... 9479.24 ... 339.82", "8589934592 ... 18732.3 ...
    # 343.92": ring/Simple 364.6/367.7/369.2/370.0/370.4 (+14.8/+13.0/+10.5/+8.9/+7.7 %)
    **_wh_sweep(
        WH_AG,
        "all_gather",
        (
            (512 * MiB, 1268.09, 317.53),
            (GiB, 2475.82, 325.27),
            (2 * GiB, 4819.87, 334.16),
            (4 * GiB, 9479.24, 339.82),
            (8 * GiB, 18732.3, 343.92),
        ),
    ),
    # reduce_scatter.txt: "1073741824 ... 2439.07 440.23 330.17", "2147483648 ... 4741.30 ... 339.70",
    # "4294967296 ... 9440.67 ... 341.21", "8589934592 ... 18389.0 ... 350.34": ring/Simple
    # 367.7/369.2/370.0/370.4 (+11.4/+8.7/+8.4/+5.7 %)
    **_wh_sweep(
        WH_RS,
        "reduce_scatter",
        (
            (GiB, 2439.07, 330.17),
            (2 * GiB, 4741.30, 339.70),
            (4 * GiB, 9440.67, 341.21),
            (8 * GiB, 18389.0, 350.34),
        ),
    ),
    # scaling_attributed/report.md, all_reduce peak busbw (256 MB-8 GB, the TUNING log naming the
    # algorithm): 2 GPUs auto (RING) 347, Ring 348; 4 GPUs auto (RING) 365, Ring 365, NVLS 376; 6 GPUs auto
    # (NVLS) 443, Ring 367, NVLS 443. Model at 8 GiB: 370.6/370.6, 370.5/370.5/353.6, 436.1/370.4/436.1
    # (+6.8/+6.5, +1.5/+1.5/-5.9, -1.5/+0.9/-1.5 %), picking ring, ring, NVLS as NCCL did
    "wh H100 x2 all_reduce auto": _wh_peak(2, 347, None),
    "wh H100 x2 all_reduce Ring": _wh_peak(2, 348, "Ring"),
    "wh H100 x4 all_reduce auto peak": _wh_peak(4, 365, None),
    "wh H100 x4 all_reduce Ring peak": _wh_peak(4, 365, "Ring"),
    "wh H100 x4 all_reduce NVLS peak": _wh_peak(4, 376, "NVLS"),
    "wh H100 x6 all_reduce auto": _wh_peak(6, 443, None),
    "wh H100 x6 all_reduce Ring": _wh_peak(6, 367, "Ring"),
    "wh H100 x6 all_reduce NVLS": _wh_peak(6, 443, "NVLS"),
    # nccl #2169: 4 x H100 80GB HBM3 of one node ("Node1"), NCCL 2.30.4, alltoall_perf -b 500M -R1 with
    # NCCL_ALGO=Ring NCCL_PROTO=Simple: "524288000 32768000 float none -1 1097.14 477.87 358.40": pairwise
    # direct over NVSwitch 366.7 (+2.3 %)
    "2169 H100 x4 all_to_all 500 MiB": Point(
        N2169,
        H100_OF[4],
        "all_to_all",
        524288000,
        1097.14e-6,
        358.40e9,
        False,
        (("nccl_version", "2.30.4"), ("env", {"NCCL_ALGO": "Ring", "NCCL_PROTO": "Simple"})),
    ),  # fmt: skip
    # hisohara/ai-scripts rccl-smoketest README, "AAC8 Kubernetes": 8 x MI300X of one node, a process per
    # GPU (mpirun -np 8 ... -g 1), rccl-tests develop:a7809b3 (RCCL release not printed: newest tables,
    # NCCL's Hopper row): "8388608 ... 84.78 98.95 173.16", "67108864 ... 432.5 155.15 271.51",
    # "134217728 ... 800.3 ... 293.50", "268435456 ... 1540.4 ... 304.96", "536870912 ... 3027.1 ...
    # 310.37", "1073741824 ... 5990.7 ... 313.66", "2147483648 ... 11940 ... 314.75", "4294967296 ... 23841
    # ... 315.26", "8589934592 ... 47617 ... 315.69": ring over 7 xGMI links 166.7/289.6/311.1/323.1/
    # 329.4/332.7/334.3/335.2/335.6 (-3.8/+6.7/+6.0/+5.9/+6.1/+6.1/+6.2/+6.3/+6.3 %); "1024 256 float sum
    # -1 13.67": ring/LL 15.36 us (+12.3 %)
    "hiso MI300X x8 1 KiB": Point(HISO, MI300X, "all_reduce", 1024, 13.67e-6, 0.0, True),
    **_sweep(
        "hiso MI300X x8",
        HISO,
        MI300X,
        "all_reduce",
        (
            (8 * MiB, 84.78, 173.16),
            (64 * MiB, 432.5, 271.51),
            (128 * MiB, 800.3, 293.50),
            (256 * MiB, 1540.4, 304.96),
            (512 * MiB, 3027.1, 310.37),
            (GiB, 5990.7, 313.66),
            (2 * GiB, 11940, 314.75),
            (4 * GiB, 23841, 315.26),
            (8 * GiB, 47617, 315.69),
        ),
    ),
    # same README, "AAC11 MI325X Slurm", 1-node with NCCL_ALGO=Ring (ROCm 6.4.1): "4294967296 ... 23719
    # 181.07 316.88", "8589934592 ... 47217 ... 318.37", "17179869184 ... 94222 ... 319.08": ring 335.2/
    # 335.6/335.8 (+5.8/+5.4/+5.2 %)
    **{
        f"hiso MI325X x8 ring {size // GiB} GiB": Point(
            HISO, MI325X, "all_reduce", size, t * 1e-6, bw * 1e9, False, (("env", {"NCCL_ALGO": "Ring"}),)
        )
        for size, t, bw in ((4 * GiB, 23719, 316.88), (8 * GiB, 47217, 318.37), (16 * GiB, 94222, 319.08))
    },
    # nccl #1281: "the result of nccl-tests on H100, reducescatter's busbw is 360GBps, and allgather's
    # busbw is 350GBps" (NVLink figures: one 8-GPU board; size and release not given: 8 GiB, newest
    # tables): ring/Simple 370.2 (+2.8 % / +5.8 %)
    "1281 H100 reduce_scatter": Point(N1281, H100, "reduce_scatter", 8 * GiB, 0.0, 360e9, False),
    "1281 H100 all_gather": Point(N1281, H100, "all_gather", 8 * GiB, 0.0, 350e9, False),
    # nccl #1047: "Reducescatter (H100: ring)", 8 x H100 of one server (the rank list ends "Rank 7 ...
    # NVIDIA H100 80GB HBM3"; release not printed: newest tables): "134217728 ... 377.2 355.81 311.34",
    # "268435456 ... 709.7 ... 330.94", "536870912 ... 1377.8 ... 340.94", "1073741824 ... 2689.3 ...
    # 349.36", "2147483648 ... 5295.9 ... 354.81", "4294967296 ... 10505 ... 357.76", "8589934592 ...
    # 20754 ... 362.16": ring/Simple 336.6/352.9/361.6/366.1/368.5/369.6/370.2 (+8.1/+6.6/+6.1/+4.8/+3.8/
    # +3.3/+2.2 %): on 8 GPUs the ring's all_gather / reduce_scatter ramp is what the model gives, unlike
    # on 4 of them (MISSED)
    **_sweep(
        "1047 H100 x8 reduce_scatter",
        N1047,
        H100,
        "reduce_scatter",
        (
            (128 * MiB, 377.2, 311.34),
            (256 * MiB, 709.7, 330.94),
            (512 * MiB, 1377.8, 340.94),
            (GiB, 2689.3, 349.36),
            (2 * GiB, 5295.9, 354.81),
            (4 * GiB, 10505, 357.76),
            (8 * GiB, 20754, 362.16),
        ),
    ),
    # nccl #1506, one 8-GPU NVSwitch board (NVLS all_reduce "470GB": H100; release not printed: newest
    # tables), "transmitting 1GB data": all_gather "using the NVLS is only 300GB", "the ring algorithm ...
    # 350GB". NVLS (NCCL_ALGO=NVLS): S into each GPU at 370.8 x 0.85, 273.8 (-8.7 %); ring 366.1 (+4.6 %)
    "1506 H100 all_gather NVLS": Point(
        N1506, H100, "all_gather", GiB, 0.0, 300e9, False, (("env", {"NCCL_ALGO": "NVLS"}),)
    ),
    "1506 H100 all_gather Ring": Point(
        N1506, H100, "all_gather", GiB, 0.0, 350e9, False, (("env", {"NCCL_ALGO": "Ring"}),)
    ),
}


@pytest.mark.parametrize("key", list(POINTS))
def test_public_node_point(key: str) -> None:
    assert abs(POINTS[key].relative_error()) <= 0.15


@pytest.mark.parametrize(("gpus", "algorithm"), [(2, "ring"), (4, "ring"), (6, "nvls")])
def test_the_model_picks_what_nccls_tuning_log_printed(gpus: int, algorithm: str) -> None:
    # nccl-collectives-bench g{2,4,6}_auto.log (NCCL 2.29.2, NCCL_DEBUG_SUBSYS=TUNING): "AllReduce: ...
    # Bytes -> Algo RING proto SIMPLE" on 2 and 4 of the board's H100, "Algo NVLS proto SIMPLE" on 6, for
    # every size from 256 MiB to 8 GiB.
    for size in (256 * MiB, GiB, 8 * GiB):
        r = formula_collective("all_reduce", size, H100_OF[gpus], nccl_version="2.29.2")
        assert (r.algorithm, r.protocol) == (algorithm, "Simple")


#: Public single-node rows the model misses (measured, predicted, what is missing); not asserted.
MISSED = {
    "nccl-collectives-bench, 4 x H100, all_gather 8-256 MiB and reduce_scatter 8-512 MiB": (
        "all_gather busbw 110.2/186.6/229.3/258.2/287.4/305.5 vs 176.9/239.5/291.0/326.1/347.0/358.5 "
        "(+60/+28/+27/+26/+21/+17 %); reduce_scatter 146.7/201.3/238.0/266.0/289.7/303.6/316.6 vs 176.9/"
        "239.5/291.0/326.1/347.0/358.5/364.6 (+21/+19/+22/+23/+20/+18/+15 %). The same-size all_reduce "
        "agrees (+5..+8 % from 32 MiB). NCCL 2.29.2's source gives all_gather / reduce_scatter of S half "
        "the all_reduce's work at every size: nBytes = nRanks x count = S for all three (enqueue.h "
        "ncclFuncMaxSendRecvCount), so the same channels and threads (topoGetAlgoInfo); the same chunk "
        "(CHUNKSTEPS = SLICESTEPS x 2 = NCCL_STEPS / 2 for all three, collectives.h; calcCollChunking has no "
        "ring branch) and the same per-step slice, S / (n nc), with n - 1 steps against 2 (n - 1) "
        "(all_gather.h / all_reduce.h runRing); tuning.cc nsteps n - 1 and algbw = busBw n / nsteps. The "
        "measured reduce_scatter exceeds half the all_reduce by a growing amount (11 / 26 / 72 / 184 / 805 "
        "us at 8 MiB / 64 MiB / 256 MiB / 1 GiB / 8 GiB: a marginal busbw of 300-345 against the "
        "all_reduce's 336-369), which no per-step or per-call term of the source gives; what costs "
        "all_gather / reduce_scatter bandwidth on NVLink that all_reduce does not pay is not found. "
        "Ruled out since: noise (results/quiet/all_gather.txt, a rerun on a quiet box, gives 187.1/258.2/"
        "305.6/327.5/343.5 at 16 MiB/64 MiB/256 MiB/1 GiB/8 GiB, within 1 % of the first run); NVLS (NCCL "
        "2.29.2 prices it at 4 x 60 x 0.85 x 3/4 x 3/4 = 114.75 GB/s algbw against the ring's 494.4, and "
        "forced it would give 370.8 x 0.85 x 3/4 = 236.4 busbw, under the measured 344); PAT (one rank per "
        "node only, tuning.cc); the kernels' step structure (all_gather.h / reduce_scatter.h runRing: the "
        "same chunk, slices and channels as all_reduce.h, and reduce_scatter's recvReduceSend, all_gather's "
        "recvCopySend are all_reduce's two halves). The maintainers know of no cause (nccl #1281, "
        "jbachan: 'There isn't a known reason for this', of all_gather's 350 against reduce_scatter's 360 "
        "on H100). On all 8 GPUs of a board the ring's reduce_scatter misses by only +2..+8 % (nccl #1047, "
        "asserted; +20 % at 128 MiB here); why the gap is larger on 4 of the 8 is not known"
    ),
    "nccl-collectives-bench, 4 x H100 (-g 4, one process), 8 B-1 MiB": (
        "time all_reduce 8 B / 1 KiB / 64 KiB / 1 MiB 22.72/23.67/26.20/27.03 us vs 10.2/10.5/14.4/21.4 "
        "(ring/LL); all_gather 64 B 16.98 vs 8.4, reduce_scatter 64 B 21.70 vs 8.4. symmetric/report.md: "
        "the eager floor is 23-25 us on 2.18 and 2.29 and 16.1 us under CUDA Graph (-G 1) at 8 B, 'the "
        "floor is host-side launch overhead' (one thread launches the four GPUs' kernels). The floor is "
        "modelled (engines/host_launch.py: max(t_device, g x t_launch)), but t_launch is the host's: this "
        "one implies 22.72 / 4 = 5.7 us, nccl-tests #123's DGX A100 4.21 (16.8 us here, -26 %), case 20's "
        "Azure H100 VM at most 3.2; no source states this host's figure"
    ),
    "nccl-collectives-bench scaling_attributed, 2 x H100, NCCL_ALGO=NVLS, 256 MiB-8 GiB": (
        "peak busbw 207 vs 157.4 (-24 %): the model's NVLS on h = 2 heads is B_i e (h-1)/h = 370.8 x 0.85 "
        "/ 2, tuning.cc's (nChannels-1)/nChannels, which 2.29.2 uses only to price NVLS (the price, 2 x 60 "
        "x 0.85 = 102 GB/s on search.cc's 2-channel graph, is what the model's tuner now reads). search.cc "
        "ncclTopoSearchTryNvls books 2 x the channel speed on the head's link and 1 x on the others', a "
        "head's link carrying (h+1)/h of the bytes: B_i e h/(h+1) gives 210.1 / 252.2 / 270.2 / 280.2 "
        "algbw on 2/4/6/8 GPUs (measured 207 / 250.7 / 265.8 / 270.6-275.8), but at 8 GPUs it puts case 20 "
        "[S2] (2.18.5, 32 MiB) at +15.05 % busbw (asserted within 15 %), so the head's traffic alone is "
        "not the whole of NVLS's rate"
    ),
    "hisohara/ai-scripts, 8 x MI300X (AAC8, a process per GPU), all_reduce 8 B-256 KiB (RCCL)": (
        "time 16 B / 8 KiB / 64 KiB / 256 KiB 16.32/13.76/14.25/17.46 us vs 15.0/17.9/26.4/26.4 (NCCL's "
        "ring/LL tables, which run when no RCCL release is stated, as here): flat at 13.7-14.3 us from "
        "1 KiB to 64 KiB, below any NCCL ring. RCCL runs its MSCCL all-pairs kernels there; under a "
        "stated RCCL 2.20.5 the model does too (msccl/LL 8 KiB 13.48, 64 KiB 14.97, 256 KiB 19.06 us, "
        "tests/collectives/test_msccl.py), but those tables are not the default (next entry)"
    ),
    "hisohara/ai-scripts, 8 x MI300X, all_reduce 16 B and 8 MiB under RCCL 2.20.5's tables and MSCCL": (
        "time 16.32 / 84.78 us vs 23.21 / 67.89 (busbw 173.16 vs 216.2, +24.9 %). Under a stated RCCL 2.20.5 "
        "the model runs RCCL's MSCCL all-pairs kernels where they serve the size "
        "(aifabric.collectives.msccl; tests/collectives/test_msccl.py: 1 KiB-256 KiB within 9.2 %), but "
        "16 B is 4 floats, which 16 chunks per loop do not divide, so RCCL's ring/LL runs (12 + 14 x 0.8 "
        "us; measured 8-256 B take 17-23 us), and at 8 MiB -simple-op's two direct steps (17 + 2 x 3.6 us "
        "+ 2 x 1 MiB per 48 GB/s xGMI link = 43.7 us) run 20 % faster than measured: what holds the "
        "Simple all-pairs kernel below the link rate (8 threadblocks per link, the scratch-buffer "
        "reduction) is not modelled. So RCCL's tables are not the default for AMD GPUs: with them the "
        "asserted 8 MiB point (and case 31's, one process of 8 GPUs, where mscclCommCompatible turns "
        "MSCCL off and RCCL's ring/Simple gives 132.1 vs 161.14) leave the 15 % bar"
    ),
    "nccl #2169, 4 x H100, alltoall 500 MiB with -R2 -x2 (NCCL 2.30.4)": (
        "busbw 120.77 (3256 us) vs 366.7 (the -R1 run of the same thread, 358.40, agrees): the "
        "issue's drop above 512 MB under symmetric registration; that code path is not modelled"
    ),
    "nccl-tests #268, 2 x H100 on NVLink, sendrecv_perf 4K-4G, release not printed": (
        "busbw 'increases from 80 to 180 GB/s but seems to plateau' vs 369.3 at 1 GiB / 370.4 at 4 GiB "
        "(p2p/Simple at NCCL's 18 x 20.6 GB/s): NCCL runs send/recv on p2pnChannelsPerPeer channels "
        "(paths.cc ncclTopoComputeP2pChannels: pow2Up(min(nChannels, 2 x path bw / NVLink bw))), each CTA "
        "splitting its warps between the send and the receive of the pair (enqueue.cc p2p scheduling). On "
        "two H100 of an NVSwitch board NCCL 2.29.2 gives the pair 32 channels (2 x 370.8 / 20.6 = 36 -> "
        "pow2Up 64, capped by p2pnChannels = pow2Up(24 ring channels) = 32), no fewer than the ring's 24, so "
        "the source sets no rate below 370.8 and tests/collectives/test_full_mesh.py's figure stands; the "
        "thread says only '2 H100s connect via NVLink' with nvbandwidth's bidirectional SM copy at 260 "
        "GB/s, not which board, so the NVLink the pair has is not known"
    ),
    "nccl-tests #314, 8 x H20-3e (-g 8, one process), alltoall 1/2/4 MiB": (
        "time 58.14/58.94/59.35 us vs 14.3/16.8/21.7 (direct): flat in size, one thread enqueues the "
        "8 x 14 sends and receives; DeepEP #303's 8 x H20 with a process per GPU runs alltoall in 10.6 us. "
        "The one-thread floor (engines/host_launch.py) at nccl-tests #123's 4.21 us per GPU gives 33.7 us "
        "(-42 %): a group of 14 point-to-point operations per GPU costs the host more than one "
        "collective's launch, by an amount no source gives"
    ),
    "nccl #2094, 8 x H100 (one machine), all_reduce 1-32 KiB, NCCL 2.28/2.29.7": (
        "time 34.57/33.40/32.51/32.89/32.41/33.56 us vs 15.6/16.2/17.4/18.7/18.7/18.7 (ring/LL, 2.29.7 "
        "tables); the issue does not say which of the two releases the quoted table ran, nor how the "
        "eight ranks were launched"
    ),
    "nccl-tests #333, B200 (8-GPU board), all_reduce -R 2 (symmetric memory, NCCL v2.27_sym_memory)": (
        "time at 8 B 'around 9us' on 2 GPUs, 22 us on 4 GPUs vs 7.8 / 10.2 (ring/LL, 2.27.3 tables: -13 % / "
        "-54 %): the symmetric-memory kernels (-R 2) are a code path of 2.27 whose latency the tuning "
        "tables do not describe, so the 2-GPU agreement is not counted either"
    ),
    "nccl-tests #331, 2 x A100-SXM-64GB (Leonardo node, NVLink 3), sendrecv_perf, NCCL 2.22.3": (
        "busbw peak 71-73 GB/s vs no prediction: the catalogue has no A100-SXM-64GB nor a point-to-point "
        "NVLink mesh of 4 links per GPU pair (4 x 20 GB/s = 80, -10 % would be the ring figure)"
    ),
}


def test_every_missed_point_names_measured_and_predicted() -> None:
    assert all(" vs " in why for why in MISSED.values())
