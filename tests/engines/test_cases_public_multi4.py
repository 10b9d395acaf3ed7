"""The formula engine against more public multi-node nccl-tests results (blind, fourth set).

Machines and documents no other test covers: 2 x AWS p5.48xlarge over EFA with the NCCL release in the log
(2.20.3 and 2.22.3, aws-ofi-nccl 1.9.2; a Kubeflow MPIJob's full 8 B - 16 GiB sweeps, a third one with the
plugin's tuner within 1 % of them), and two B200 clusters on NDR InfiniBand swept from 2 to 64 nodes with the
algorithm forced per run (Together AI's together-nccl-tests baselines: "flapping-airplanes", NCCL 2.28.9, 2-64
nodes at 32 GiB, and its 4-node July sweep on 2.30.7 with all_gather and reduce_scatter; "use3a-ss", a DGX
Cloud B200 cluster, NCCL 2.29.7, 2-46 nodes at 16 GiB). Each point is one row of a public log or report whose
hardware is stated; the comment gives the source, the quoted row (size, time us, busbw GB/s, or the report's
busbw cell) and the model's figure. Tolerance: the blind check's bar, 10 % on busbw at >= 64 MiB, 15 % on
busbw at mid sizes and on time at small sizes. The model runs the release each document prints (the
catalogue's newest tables at or before it). None of these documents is a calibration source of the catalogue.
Points the model misses are in ``MISSED`` (measured, predicted, what is missing); not asserted.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.engines.test_cases_public import Point  # one public row, as the other blind checks have it
from tests.engines.test_cases_public_multi3 import _nodes, _tolerance, p5  # the same node shape, bar, p5

from aifabric.cluster.spec import ClusterSpec
from aifabric.engines.formula import formula_collective

MiB = 2**20
GiB = 2**30


def b200_ndr(nodes: int) -> ClusterSpec:
    """8 x B200 per node, one 400 Gb/s NDR ConnectX-7 per GPU on Quantum-2 (the reports: "Mellanox
    ConnectX-7 (MT4129), NDR 400 Gb/s InfiniBand", 8 compute HCAs; flapping-airplanes lists 12 HCAs, its
    Ring plateau, 389 GB/s = 8 x 48.6, is eight 400G rails)."""
    return _nodes("b200", nodes, {"nic": "connectx-7", "switch": "quantum-2-qm9700"})


KEITA = "https://github.com/KeitaW/p5-nccl-test-2024-07-19/blob/1c78584b9f4c621b1779270e1cf0b8d6f3daec11/"
P5_2223 = KEITA + "nccl-test-output-v2.22.3-1.log"
P5_2203 = KEITA + "nccl-test-output-v2.20.3-1.log"
TOGETHER = "https://github.com/togethercomputer/together-nccl-tests/blob/"
FLAPPING = (
    TOGETHER + "6fd65d198b200b39b80a9d9841732dc2054ef0be/baselines/flapping-airplanes/"
    "2026-05-12_nccl_collective_scaling_report.md"
)
FLAPPING_JULY = (
    TOGETHER + "5fa38e7b3236045183d9e960a1af4409011d26c4/baselines/flapping-airplanes/"
    "2026-07-11_nccl_collective_scaling_report.md"
)
USE3A = (
    TOGETHER + "0492bede4ebf49ff5c0d0a9c4abd7b034ec96da4/baselines/use3a-ss/"
    "2026-05-02_nccl_collective_scaling_report.md"
)
P5_2 = p5(2)
RING = {"NCCL_ALGO": "Ring"}
TREE = {"NCCL_ALGO": "Tree"}


def _p5(url: str, version: str, size: int, time_us: float, busbw: float) -> Point:
    return Point(
        url, P5_2, "all_reduce", size, time_us * 1e-6, busbw * 1e9, False, (("nccl_version", version),)
    )


def _b200(url: str, version: str, coll: str, nodes: int, size: int, busbw: float, env: Any = None) -> Point:
    """A report cell: busbw only (the reports print no time); ``env`` the run's forced algorithm."""
    opts: tuple[tuple[str, Any], ...] = (("nccl_version", version),) + ((("env", env),) if env else ())
    return Point(url, b200_ndr(nodes), coll, size, 0.0, busbw * 1e9, False, opts)


def _flapping(coll: str, nodes: int, busbw: float, env: Any = None) -> Point:
    return _b200(FLAPPING, "2.28.9", coll, nodes, 32 * GiB, busbw, env)


def _july(coll: str, busbw: float, env: Any = None) -> Point:
    return _b200(FLAPPING_JULY, "2.30.7", coll, 4, 8 * GiB, busbw, env)


def _use3a(nodes: int, busbw: float, env: Any = None) -> Point:
    return _b200(USE3A, "2.29.7", "all_reduce", nodes, 16 * GiB, busbw, env)


#: KeitaW/p5-nccl-test-2024-07-19: 2 x p5.48xlarge (ranks 0-7 on test-nccl-worker-0, 8-15 on -1; "Selected
#: Provider is efa (found 32 nics)"), aws-ofi-nccl 1.9.2 ("Setting NCCL_NVLS_CHUNKSIZE to 512KiB", "16 nvls
#: channels"), one log per NCCL release ("NCCL version 2.22.3+cuda12.2"; the image tag v2.20.3-1). Rows
#: (size, time us, busbw GB/s) as the logs print them; the model's NVLS tree over 8 x 4 x 100 Gb/s EFA x
#: 0.59 (efa-srd), efa-v2's 27.0 us network step, and its error in the comments, 2.22.3 then 2.20.3.
P5_ROWS = {
    "2.22.3": (
        P5_2223,
        (
            (256 * MiB, 1469.4, 342.52),  # 365.6 (+6.7 %)
            (512 * MiB, 2593.9, 388.08),  # 379.0 (-2.3 %)
            (GiB, 4575.2, 440.04),  # 408.3 (-7.2 %)
            (2 * GiB, 9058.9, 444.48),  # 412.3 (-7.2 %)
            (4 * GiB, 17232, 467.32),  # 426.9 (-8.7 %)
            (8 * GiB, 33594, 479.43),  # 434.6 (-9.4 %)
        ),
    ),
    "2.20.3": (
        P5_2203,
        (
            (256 * MiB, 1465.8, 343.38),  # 366.2 (+6.6 %)
            (512 * MiB, 2566.7, 392.20),  # 379.3 (-3.3 %)
            (GiB, 4577.2, 439.85),  # 408.4 (-7.1 %)
            (2 * GiB, 9145.8, 440.26),  # 412.4 (-6.3 %)
            (4 * GiB, 17244, 467.01),  # 426.9 (-8.6 %)
            (8 * GiB, 33589, 479.50),  # 434.6 (-9.4 %)
        ),
    ),
}


POINTS = {
    f"p5 {version} {size // MiB} MiB": _p5(url, version, size, time_us, busbw)
    for version, (url, rows) in P5_ROWS.items()
    for size, time_us, busbw in rows
} | {
    # The same logs' 1 KiB rows, "1024 256 float sum -1 65.74" (2.22.3) and "... 65.12" (2.20.3): tree/LL
    # 6.8 + 2 x (7 x 0.6 + 27.0) + the LL term = 70.1 us with efa-v2's network step (nics.yaml, from
    # aws-k8s-tester #585, not from these logs): +6.6 / +7.6 %
    "p5 2.22.3 1 KiB": Point(
        P5_2223, P5_2, "all_reduce", 1024, 65.74e-6, 0.0, True, (("nccl_version", "2.22.3"),)
    ),
    "p5 2.20.3 1 KiB": Point(
        P5_2203, P5_2, "all_reduce", 1024, 65.12e-6, 0.0, True, (("nccl_version", "2.20.3"),)
    ),
    # together-nccl-tests, flapping-airplanes B200 report 2026-05-12 (NCCL 2.28.9, 1 process x 8 GPUs per
    # node, 1 MiB - 32 GiB), "all_reduce busBW peak (GB/s) @ 32 GiB", Ring column (NCCL_ALGO=Ring): ring/
    # Simple over 8 x 400G. 2n 388.41: 392.8 (+1.1 %)
    "flapping B200 2n ring": _flapping("all_reduce", 2, 388.41, RING),
    # 4n 389.30: 392.3 (+0.8 %)
    "flapping B200 4n ring": _flapping("all_reduce", 4, 389.30, RING),
    # 8n 389.20: 391.3 (+0.5 %)
    "flapping B200 8n ring": _flapping("all_reduce", 8, 389.20, RING),
    # 16n 388.30: 389.5 (+0.3 %)
    "flapping B200 16n ring": _flapping("all_reduce", 16, 388.30, RING),
    # 32n 389.98: 385.8 (-1.1 %)
    "flapping B200 32n ring": _flapping("all_reduce", 32, 389.98, RING),
    # 64n 389.81: 378.6 (-2.9 %; the ring's 2 x 511 steps of latency at 32 GiB)
    "flapping B200 64n ring": _flapping("all_reduce", 64, 389.81, RING),
    # Tree column (NCCL_ALGO=Tree): 2n 338.52: 320.9 (-5.2 %)
    "flapping B200 2n tree": _flapping("all_reduce", 2, 338.52, TREE),
    # 4n 192.25: 185.9 (-3.3 %): from 3 nodes the tree's interior ranks send and receive twice
    "flapping B200 4n tree": _flapping("all_reduce", 4, 192.25, TREE),
    # 8n 194.53: 188.9 (-2.9 %)
    "flapping B200 8n tree": _flapping("all_reduce", 8, 194.53, TREE),
    # 16n 195.82: 190.4 (-2.8 %)
    "flapping B200 16n tree": _flapping("all_reduce", 16, 195.82, TREE),
    # 32n 195.43: 191.1 (-2.2 %)
    "flapping B200 32n tree": _flapping("all_reduce", 32, 195.43, TREE),
    # 64n 195.90: 191.5 (-2.2 %)
    "flapping B200 64n tree": _flapping("all_reduce", 64, 195.90, TREE),
    # "NVLS / NVLSTree" column, NCCL's own choice ("defaults for NVLSTree"): NVLS tree at 2 nodes, 719.70:
    # 735.3 (+2.2 %)
    "flapping B200 2n default": _flapping("all_reduce", 2, 719.70),
    # 4n 388.40: the model's choice is ring, 392.3 (+1.0 %), as NCCL's (the cell equals the Ring column's)
    "flapping B200 4n default": _flapping("all_reduce", 4, 388.40),
    # 8n 389.89: 391.3 (+0.4 %)
    "flapping B200 8n default": _flapping("all_reduce", 8, 389.89),
    # 16n 388.87: 389.5 (+0.2 %)
    "flapping B200 16n default": _flapping("all_reduce", 16, 388.87),
    # 32n 389.49: 385.8 (-1.0 %)
    "flapping B200 32n default": _flapping("all_reduce", 32, 389.49),
    # 64n 389.72: 378.6 (-2.9 %)
    "flapping B200 64n default": _flapping("all_reduce", 64, 389.72),
    # "all_gather busBW peak (GB/s) @ 32 GiB", Ring column: 2n 371.44: 392.9 (+5.8 %)
    "flapping B200 2n all_gather ring": _flapping("all_gather", 2, 371.44, RING),
    # 4n 376.91: 392.5 (+4.1 %)
    "flapping B200 4n all_gather ring": _flapping("all_gather", 4, 376.91, RING),
    # 8n 380.62: 391.9 (+3.0 %)
    "flapping B200 8n all_gather ring": _flapping("all_gather", 8, 380.62, RING),
    # 16n 382.83: 390.5 (+2.0 %)
    "flapping B200 16n all_gather ring": _flapping("all_gather", 16, 382.83, RING),
    # 32n 378.50: 387.8 (+2.5 %)
    "flapping B200 32n all_gather ring": _flapping("all_gather", 32, 378.50, RING),
    # 64n 380.15: 382.6 (+0.6 %)
    "flapping B200 64n all_gather ring": _flapping("all_gather", 64, 380.15, RING),
    # together-nccl-tests, flapping-airplanes 4-node report 2026-07-11 (NCCL 2.30.7, the 2.30.3 tables; 8
    # healthy 400G rails named in NCCL_IB_HCA), "peak busBW at 8 GiB", Tuned column. ring: all_reduce 384.0:
    # 389.6 (+1.4 %)
    "flapping July B200 4n all_reduce ring": _july("all_reduce", 384.0, RING),
    # all_gather 376.2: 390.5 (+3.8 %)
    "flapping July B200 4n all_gather ring": _july("all_gather", 376.2, RING),
    # reduce_scatter 384.1: 390.5 (+1.7 %)
    "flapping July B200 4n reduce_scatter ring": _july("reduce_scatter", 384.1, RING),
    # nvls config (NVLS on, NCCL's choice; across nodes NVLS all_gather / reduce_scatter need CollNet, so
    # ring): all_gather 376.3: 390.5 (+3.8 %)
    "flapping July B200 4n all_gather default": _july("all_gather", 376.3),
    # reduce_scatter 384.1: 390.5 (+1.7 %)
    "flapping July B200 4n reduce_scatter default": _july("reduce_scatter", 384.1),
    # collnet_sharp config (NCCL_COLLNET_ENABLE=1): the model's choice for all_gather and reduce_scatter is
    # ring, with or without NVLS (the report: "SHARP does not help all_gather ... ring/nvls/collnet all
    # ~377"). all_gather 377.8: 390.5 (+3.4 %)
    "flapping July B200 4n all_gather collnet on": _july("all_gather", 377.8, {"NCCL_COLLNET_ENABLE": "1"}),
    # reduce_scatter 383.7: 390.5 (+1.8 %)
    "flapping July B200 4n reduce_scatter collnet on": _july(
        "reduce_scatter", 383.7, {"NCCL_COLLNET_ENABLE": "1"}
    ),
    # together-nccl-tests, use3a-ss B200 DGX Cloud report 2026-05-02, re-run table "all_reduce Peak busBW
    # @ 16G" (NCCL 2.29.7, 8 HCAs mlx5_0,1,4,5,6,11,14,15). Tree column: 2n 335.2: 320.7 (-4.3 %)
    "use3a B200 2n tree": _use3a(2, 335.2, TREE),
    # 4n 190.7: 185.9 (-2.5 %)
    "use3a B200 4n tree": _use3a(4, 190.7, TREE),
    # 8n 192.6: 188.8 (-2.0 %)
    "use3a B200 8n tree": _use3a(8, 192.6, TREE),
    # 16n 193.4: 190.3 (-1.6 %)
    "use3a B200 16n tree": _use3a(16, 193.4, TREE),
    # 32n 193.5: 191.0 (-1.3 %)
    "use3a B200 32n tree": _use3a(32, 193.5, TREE),
    # 46n 193.2: 191.2 (-1.0 %)
    "use3a B200 46n tree": _use3a(46, 193.2, TREE),
    # NVLSTree column (NCCL_ALGO=NVLSTree) at 2 nodes, 717.2: 733.3 (+2.2 %)
    "use3a B200 2n nvls_tree": _use3a(2, 717.2, {"NCCL_ALGO": "NVLSTree"}),
}


@pytest.mark.parametrize("key", list(POINTS))
def test_public_multi_node_point(key: str) -> None:
    assert abs(POINTS[key].relative_error()) <= _tolerance(POINTS[key])


COLLNET_DIRECT = {"NCCL_COLLNET_ENABLE": "1", "NCCL_NVLS_ENABLE": "0", "NCCL_ALGO": "CollnetDirect"}

#: flapping-airplanes 2026-05-12 report, "all_reduce busBW @ 8 GiB / 16 GiB / 32 GiB (CollnetDirect, GB/s)":
#: the 16 and 32 GiB cells per node count. Their marginal rate, 16 GiB / (t32 - t16) with t = S x 2 (n - 1)
#: / n / busbw, is CollNet Direct's bandwidth without the per-call cost that still lifts busbw from 16 to
#: 32 GiB; the model's slope is its 0.85 x 8 x 49.15 = 334.2 GB/s (tuning.cc's sm90+ x .85 on 8 NICs).
#: 2n 578.12 / 597.97: 330.3 measured, +1.2 %; 4n 578.27 / 605.90: 328.4, +1.8 %; 16n 563.13 / 588.83:
#: 310.9, +7.5 % (32n 294.9 and 64n 277.9 are in MISSED: the rate itself falls with the node count).
DIRECT_16_32_GIB = {2: (578.12, 597.97), 4: (578.27, 605.90), 16: (563.13, 588.83)}


def _measured_direct_slope(nodes: int) -> float:
    """The report's marginal algbw between 16 and 32 GiB, bytes/s (nccl-tests' busbw factor undone)."""
    factor = 2 * (8 * nodes - 1) / (8 * nodes)
    bw16, bw32 = DIRECT_16_32_GIB[nodes]
    t16, t32 = 16 * GiB * factor / (bw16 * 1e9), 32 * GiB * factor / (bw32 * 1e9)
    return 16 * GiB / (t32 - t16)


def _model_direct_slope(nodes: int) -> float:
    """The model's CollNet Direct marginal algbw between 16 and 32 GiB on NCCL 2.28.9, bytes/s."""
    t16, t32 = (
        formula_collective("all_reduce", s, b200_ndr(nodes), nccl_version="2.28.9", env=COLLNET_DIRECT).time_s
        for s in (16 * GiB, 32 * GiB)
    )
    return 16 * GiB / (t32 - t16)


@pytest.mark.parametrize("nodes", list(DIRECT_16_32_GIB))
def test_collnet_direct_marginal_rate(nodes: int) -> None:
    assert abs(_model_direct_slope(nodes) / _measured_direct_slope(nodes) - 1) <= 0.10


#: Public rows the model misses (measured, predicted, what is missing); not asserted.
MISSED = {
    "KeitaW p5 logs, 2 x p5.48xlarge all_reduce 8 B and 64 KiB (NCCL 2.22.3 and 2.20.3)": (
        "time 85.70/107.4 us (2.22.3) and 85.14/106.8 us (2.20.3) at 8 B/64 KiB vs 69.2/74.8 (tree/LL "
        "with efa-v2's 27.0 us network step, aws-k8s-tester #585; -19/-30 %), while the 1 KiB rows of the "
        "same logs, 65.74/65.12, are asserted (70.1, +6.6/+7.6 %): the 8 B row sits 20 us above the 1 KiB "
        "one in both logs, a first-size cost the model has no term for; 64 KiB is the PCluster p5 run's "
        "step (test_cases_public_multi3 MISSED). The 75 us the log prints ('NET/OFI Internode latency set "
        "at 75.0 us') is the tuner input aws-ofi-nccl gives NCCL, not a measured time"
    ),
    "KeitaW p5 logs, 2 x p5.48xlarge all_reduce 1-128 MiB (NCCL 2.22.3 and 2.20.3)": (
        "busbw 14.24/111.13/209.59/287.91 (2.22.3) and 16.03/111.28/207.56/289.19 (2.20.3) at 1/16/64/128 "
        "MiB vs 21.4/142.6/249.2/318.8 and 21.9/143.9/250.2/319.7 (NVLS tree; +50/+28/+19/+11 % and "
        "+37/+29/+21/+11 %): the same mid-size shortfall as the PCluster p5 run and p6-b300 "
        "(test_cases_public_multi2/3 MISSED), now with the release known; SRD's per-message cost of the "
        "NVLS tree's 64-512 KiB chunks has no public figure. 128 MiB is in range on the newest tables "
        "(313.4) and out on 2.20.3/2.22.3's (their NVLS-tree chunk and channel tables). Checked, no "
        "Little's-law ramp: the NVLS-tree NET step is one chunk (v2.22.3-1 all_reduce.h ProtoSimple<1, 1>), "
        "at most NCCL_STEPS = 8 in flight per connection (net.cc maxDepth; nsubs = 1, collective "
        "connections are not shared); 16 channels x 8 heads over 32 NICs are 4 connections per NIC with S "
        "/ 128 each, so the window never fills below 8 x 128 chunks (64 MiB at 64 KiB, 128 MiB at 128 KiB) "
        "and past that binds only at a step round trip over 8 x 64 KiB / 1.84 GB/s = 285 us. The rows are "
        "the model's rate plus a larger offset: marginal algbw 64 MiB-2 GiB ~240 GB/s (model 236), time "
        "over the model +46/+62/+95/+85/+111 us at 1/16/64/128/256 MiB, of which the 8 B row's ~35 us is "
        "the unsourced per-hop latency above. A chunk's store-and-forward per tree hop (2 more loops of "
        "fill) would close 16-256 MiB (-2.9 to -7.2 %) but takes 512 MiB-8 GiB to -11 to -12 % and "
        "case 03's InfiniBand NVLS tree at 64 MiB to 205.6 vs 270.0: refuted"
    ),
    "KeitaW p5 logs, 2 x p5.48xlarge all_reduce 16 GiB": (
        "busbw 487.90 (2.22.3) and 487.27 (2.20.3) vs 438.6 (NVLS tree; -10.1 % and -9.99 %): the plateau "
        "is 260 GB/s algbw over 32 x 12.5 GB/s = 0.65 of the EFA line rate where the efa-srd transport's "
        "0.59 comes from 4 x p4dn (NVIDIA/nccl #527); no public p5 (EFAv2) efficiency figure to take in its "
        "place, and taking it from this log would be fitting. A microbenchmark's one exists since: 0.950 of "
        "a GPU's four EFA v2 ports (crazyguitar/Libefaxx write benchmark) gives 457.4 here (-6.3/-6.1 %), "
        "but leaves 15 asserted p5 ramp rows, this file's 256 MiB ones among them (+11.0/+10.9 %): "
        "test_cases_public_multi9 MISSED has the check"
    ),
    "together-nccl-tests flapping-airplanes, B200 2-64 nodes, all_reduce 32 GiB CollNet (SHARP, 2.28.9)": (
        "busbw CollnetDirect 597.97/605.90/588.83/565.06/545.77 at 2/4/16/32/64 nodes vs "
        "626.4/647.3/662.9/665.5/666.9 (+5/+7/+13/+18/+22 %); CollnetChain 526.44/540.07/546.26/544.99/"
        "540.74/534.53 at 2/4/8/16/32/64 nodes vs 676.2/698.7/710.0/715.6/718.5/719.9 (+28 to +35 %), "
        "NCCL_COLLNET_ENABLE=1, NCCL_NVLS_ENABLE=0: the runs level at 270-305 GB/s algbw per node, "
        "0.7-0.78 of 8 x 400G, and fall with the node count; the model bounds Chain by the node's NVLink "
        "(B_i / 2) and Direct by NCCL's x 0.85, and has no SHARP aggregation throughput of Quantum-2 "
        "(per-operation rate of the switch ASIC, nccl-rdma-sharp-plugins' outstanding operations, the SAT "
        "tree's depth): no public figure found. Direct's marginal rate 16 -> 32 GiB (the report's 8/16/32 "
        "GiB table) is 330.3/328.4/310.9/294.9/277.9 GB/s algbw at 2/4/16/32/64 nodes vs the model's 334.2 "
        "(asserted at 2/4/16 nodes, test_collnet_direct_marginal_rate): at 2-4 nodes the 32 GiB shortfall "
        "is a per-call cost, 3.7-5.3 ms on the report's 8/16/32 GiB times, and busbw still rises with size "
        "as NCCL's CollNet Direct chunk grows (enqueue.cc calcCollChunking: 128/256/512 KiB at 8/16/32 GiB "
        "on 16 channels x 8 heads; coll_net.cc posts one SHARP op per COLLNET_GROUP_NSUBS = 8 channels, "
        "NCCL_STEPS = 8 in flight): the rates follow 1/r = 1/B + L/M with B = 41 GB/s per NIC and L = 6.5 "
        "us per op round, a SHARP per-operation cost with no public figure. Chain (256 KiB chunks, 2 "
        "channels per NIC, 512 KiB SHARP ops) has the smallest ops and the lowest rate, 282 GB/s marginal "
        "16 -> 32 GiB at 2 nodes (524.28/526.44), vs the model's 360.9 (NVLink; NCCL's tuner, busBw = "
        "nChannels x bwIntra x 0.5, gives the same). Checked without a mechanism: tuning.cc 2.28.9/2.29.7/"
        "2.30.7 (CollNet factors unchanged: Chain none, Direct ppn/nChannels = 1 with 8 NICs then x .85), "
        "all_reduce.h (Chain and Direct both move 2 (g - 1)/g S per GPU over NVLink, below the model's "
        "bound), the SHARP plugin (maxCollBytes only; SAT on, tree locked at comm init), and Graham et "
        "al., ISC 2020 (doi:10.1007/978-3-030-50743-5_3): SHARPv2 streaming aggregation reaches ~95 % of "
        "point-to-point bandwidth on HDR, so the switch's rated SAT rate is not the 0.7 ceiling"
    ),
    "together-nccl-tests use3a-ss, B200 2-46 nodes, all_reduce / all_gather 16 GiB Ring (2.29.7)": (
        "all_reduce busbw 344.7/334.8/322.6/306.3/304.4/291.4 at 2/4/8/16/32/46 nodes vs 392.3/391.4/389.5/"
        "385.8/378.6/372.5 (ring; +14 to +28 %; the 'NVLS' column, NCCL's own choice from 4 nodes, the "
        "same); "
        "NVLSTree 288.9/274.3/290.7/280.7/274.9 at 4-46 nodes vs 349.3/349.2/349.0/348.9/348.9 (+20 to "
        "+27 %); all_gather Ring 342.9/323.9/311.5/304.9/302.3/293.3 vs 392.5/391.9/390.5/387.8/382.6/378.2 "
        "(+15 to +29 %). The flapping-airplanes cluster, the same B200 + ConnectX-7 NDR hosts on 2.28.9, "
        "runs Ring at 389 GB/s from 2 to 64 nodes with NCCL_IB_QPS_PER_CONNECTION=2 and "
        "NCCL_IB_AR_THRESHOLD=0 set, within 3 % of the model; its 2026-07-11 report measures the same "
        "shortfall without them, 4-node Ring 307.3 all_reduce / 308.7 all_gather against 384.0 / 376.2 "
        "('ring-critical'). use3a-ss's report sets neither, and its Tree rows, at half the Ring rate, are "
        "within 4.3 %: the flows of one QP per connection colliding on the fabric's ECMP paths with "
        "adaptive routing left to the default threshold, which the formula engine (ideal routing) does "
        "not carry and the flow engine could only with the cluster's Clos, which the report does not give"
    ),
    "together-nccl-tests flapping-airplanes July, B200 4 nodes, all_reduce 8 GiB nvls / SHARP (2.30.7)": (
        "busbw 350.8 (nvls config) vs 389.6 (the model's choice, ring; +11 %) or 378.9 as NVLS tree (+8 %), "
        "the report not saying which NCCL ran; collnet_sharp 554.4 vs 760.3 (NVLS with SHARP) or 697.2 "
        "(CollNet Chain with NVLS off; +37 / +26 %): the SHARP ceiling named for the May runs"
    ),
    "together-nccl-tests use3a-ss, B200 2-46 nodes, all_reduce 16 GiB CollNet SHARP (2.29.7)": (
        "busbw 533.0/543.8/547.9/546.7/544.3/544.8 at 2/4/8/16/32/46 nodes vs 736.5/761.1/773.4/779.5/"
        "782.6/783.5 with NCCL_COLLNET_ENABLE=1 (NCCL 2.29.7's choice in the model is NVLS with SHARP; "
        "+38 to +44 %): the report does not say whether NVLS was on for its CollNet runs; the same "
        "~545 GB/s SHARP ceiling as flapping-airplanes, whose missing mechanism is named there"
    ),
}


def test_every_missed_point_names_measured_and_predicted() -> None:
    assert all(" vs " in why for why in MISSED.values())
