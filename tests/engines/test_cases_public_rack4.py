"""The formula engine against a fifth set of public scale-up figures off the NVIDIA rack: AMD and TPU (blind).

AMD, two nodes (ROCm/mori ``examples/fsdp_sdma/bench/results``, commit 16c5f1e): the hierarchical
AllGather's benchmarks time RCCL's ``torch.distributed.all_gather_into_tensor`` on 2 nodes x 8 GPUs as the
reference (``[sweep] fp32 64MB out=1.074GB | ... | rccl 2.879ms 373.0GB/s``; ``tests/python/ccl/
bench_sweep.py`` times with CUDA events, ``bench_ag_perf_w16.py`` with the host clock after a barrier, both
the minimum over the repetitions; GB/s = the gathered output bytes / time, nccl-tests' algbw of an
all_gather of that output size). Two
platforms: MI300X with eight mlx5 RDMA ports on RoCE (``NCCL_IB_HCA=mlx5_0,...,mlx5_9``,
``NCCL_IB_GID_INDEX=3``; the ports' rate is not printed, but the 361 GB/s of ring busbw needs 400 Gb/s
ones: eight 200G ports cap a ring at 8 x 24.5 = 196) and MI355X with eight AMD AINIC (``ionic_0..7``,
Pensando Pollara 400) on RoCEv2. RCCL's release is not printed: newest tables. busbw = algbw x 15/16.

AMD, one node (ROCm/mori #200): RCCL all_gather / reduce_scatter on 8 x MI355X at 128 MB a rank (the
tests' "GB/s" is 2**30 B/s of the 1 GiB gathered output or scattered input). ROCm/system-acceptance-docs:
the RCCL all_reduce acceptance floors (in-place busbw at 8 GB) of MI300X, MI350X/MI355X and MI300A.
ROCm/xla #326: ``jax.lax.psum`` under ``jax.pmap`` on 8 x MI300X, host-timed with ``timeit``.

TPU (AI-Hypercomputer/jetstream-pytorch #168, ``benchmarks/basic_ops.py``): ``jax.lax.all_gather`` and
``psum`` under ``shard_map`` over the 8 chips of a v5litepod-8 (2x4), a (32768, 32768) array sharded by
rows, host-timed around ``block_until_ready`` (5 runs averaged).

No NVIDIA rack-scale document outside the used lists was found in this round. Tolerance: the blind check's
bar, busbw 10 % at >= 64 MiB, 15 % at 8-32 MiB. None of these documents is a calibration source of the
catalogue. Figures the model misses are in ``MISSED`` (measured, predicted, the missing mechanism).
"""

from __future__ import annotations

import pytest
from tests.clusters import mi300x_node
from tests.engines.test_cases_public import Point  # one public row, as the other blind checks have it
from tests.engines.test_cases_public_amd_tpu2 import _gives_its_gap  # the same rule for a miss
from tests.engines.test_cases_public_multi5 import mi300x_oci, mi355x_pollara
from tests.engines.test_cases_public_node5 import MI350X, MI355X
from tests.engines.test_cases_public_rack2 import tpu_host
from tests.engines.test_cases_public_rack3 import _tolerance  # the same bar

from aifabric.cluster.spec import ClusterSpec
from aifabric.engines.formula import formula_collective

MiB = 2**20
GiB = 2**30

MORI = "https://github.com/ROCm/mori/blob/16c5f1e43ae1c55e0c7b271ae09e96fcb01bf04c/examples/fsdp_sdma/bench/results/"
MORI_300_SWEEP = MORI + "mi300x_mlx5/raw/ut_w16.log"
MORI_300_PERF = MORI + "mi300x_mlx5/raw/ag_perf_perf.csv"
MORI_300_E2E = MORI + "mi300x_mlx5/raw/ag_perf_e2e.csv"
MORI_355_SWEEP = MORI + "mi355x_ainic/raw/ut_w16.log"
MORI_355_E2E = MORI + "mi355x_ainic/raw/ag_perf_e2e.csv"
MORI_RESULTS = (
    "https://github.com/ROCm/mori/blob/ebdde48dd0d989d7ebb6ac6d587ada5ec91b3243/examples/fsdp_sdma/RESULTS.md"
)
MORI200 = "https://github.com/ROCm/mori/pull/200"
ACCEPT = "https://github.com/ROCm/system-acceptance-docs/blob/23e73127964d71bde4dca3f8390c78eea2943851/docs/"
XLA326 = "https://github.com/ROCm/xla/pull/326"
JETSTREAM = "https://github.com/AI-Hypercomputer/jetstream-pytorch/pull/168"
MOJO455 = "https://github.com/gabrieldemarmiesse/torch-mojo-backend/pull/455"

#: 2 nodes x 8 GPUs, one 400 Gb/s RoCE port a GPU (multi5's helpers: MI300X with ConnectX-7, MI355X with
#: Pollara 400, both on the xGMI mesh of their generation)
MI300X_2, MI355X_2 = mi300x_oci(2), mi355x_pollara(2)
#: a v5litepod-8: 8 v5e chips, one 2x4 slice on one host (no wraparound below a full 16-chip axis)
V5E_8 = tpu_host("tpu-v5e", [2, 4, 1])
RANKS = 16


def _ag(url: str, spec: ClusterSpec, per_rank_mb: int, algbw_gbs: float) -> Point:
    """An RCCL all_gather of ``per_rank_mb`` MiB a rank over 16 ranks, given as algbw (output bytes / time,
    GB/s): nccl-tests' size is the 16-fold output, busbw = algbw x 15/16, the time derived (not asserted)."""
    size = RANKS * per_rank_mb * MiB
    return Point(url, spec, "all_gather", size, size / (algbw_gbs * 1e9), algbw_gbs * 1e9 * 15 / 16, False)


def _rows(label: str, url: str, spec: ClusterSpec, rows: tuple[tuple[int, float], ...]) -> dict[str, Point]:
    """Rows ``(MiB a rank, algbw GB/s)`` of one table, keyed ``label MiB``."""
    return {f"{label} {mb} MiB/rank": _ag(url, spec, mb, bw) for mb, bw in rows}


POINTS = {
    # mi300x_mlx5/raw/ut_w16.log, RCCL columns: "fp32 16MB out=0.268GB | ... | rccl 0.775ms 346.2GB/s",
    # "32MB ... rccl 1.456ms 368.8GB/s", "64MB ... rccl 2.879ms 373.0GB/s": ring/Simple over the 8 ports
    # 370.1 / 388.8 / 398.9 GB/s of algbw (+6.9 / +5.4 / +7.0 %)
    **_rows("mori MI300X 2x8 sweep", MORI_300_SWEEP, MI300X_2, ((16, 346.2), (32, 368.8), (64, 373.0))),
    # raw/ag_perf_perf.csv "64,373.4" "128,379.4" "512,382.8": 398.9 / 404.2 / 408.2 (+6.8 / +6.5 / +6.6 %)
    **_rows("mori MI300X 2x8 perf", MORI_300_PERF, MI300X_2, ((64, 373.4), (128, 379.4), (512, 382.8))),
    # raw/ag_perf_e2e.csv "64,376.0" "128,379.2" "256,382.6" "512,384.9": +6.1 / +6.6 / +6.3 / +6.1 %
    **_rows(
        "mori MI300X 2x8 e2e", MORI_300_E2E, MI300X_2, ((64, 376.0), (128, 379.2), (256, 382.6), (512, 384.9))
    ),
    # RESULTS.md (an earlier run, MI300X mlx5 RoCEv2), "world=16 (2 nodes x 8 GPU), fp32" RCCL column:
    # "16MB ... 345.4", "32MB ... 370.2", "64MB ... 375.1", "128MB ... 379.6", "256MB ... 380.9", "512MB ...
    # 383.2": 370.1 / 388.8 / 398.9 / 404.2 / 406.9 / 408.2 (+7.1 / +5.0 / +6.4 / +6.5 / +6.8 / +6.5 %)
    **_rows(
        "mori MI300X 2x8 results",
        MORI_RESULTS,
        MI300X_2,
        ((16, 345.4), (32, 370.2), (64, 375.1), (128, 379.6), (256, 380.9), (512, 383.2)),
    ),
    # mi355x_ainic/raw/ut_w16.log: "fp32 16MB ... rccl 0.790ms 339.7GB/s", "fp32 128MB ... rccl 5.644ms
    # 380.5GB/s", "fp32 256MB ... rccl 11.605ms 370.1GB/s": 370.1 / 404.2 / 406.9 (+8.9 / +6.2 / +9.9 %)
    **_rows("mori MI355X 2x8 fp32", MORI_355_SWEEP, MI355X_2, ((16, 339.7), (128, 380.5), (256, 370.1))),
    # "bf16 128MB ... rccl 5.421ms 396.1GB/s", "bf16 256MB ... rccl 11.589ms 370.6GB/s": +2.0 / +9.8 %
    **_rows("mori MI355X 2x8 bf16", MORI_355_SWEEP, MI355X_2, ((128, 396.1), (256, 370.6))),
    # mi355x_ainic/raw/ag_perf_e2e.csv "128,380.0": 404.2 (+6.4 %)
    **_rows("mori MI355X 2x8 e2e", MORI_355_E2E, MI355X_2, ((128, 380.0),)),
}


@pytest.mark.parametrize("key", sorted(POINTS))
def test_public_rack4_point(key: str) -> None:
    point = POINTS[key]
    assert abs(point.relative_error()) <= _tolerance(point), f"{key}: {point.relative_error():+.1%}"


def test_two_node_all_gather_runs_on_400g_ports() -> None:
    # The MI300X ring's 384.9 GB/s of algbw at 8 GiB (ag_perf_e2e.csv) is 360.8 GB/s of busbw: more than
    # eight 200G ports carry (8 x 24.5 = 196) and less than eight 400G ones (8 x 49.0 = 392.1), the
    # catalogue's ConnectX-7 payload rate; the model's ring sits between the two as well
    measured = POINTS["mori MI300X 2x8 e2e 512 MiB/rank"].busbw
    eight_ports = 8 * MI300X_2.nic_effective_bytes_per_s
    predicted = formula_collective("all_gather", RANKS * 512 * MiB, MI300X_2).busbw_bytes_per_s
    assert 8 * 24.5e9 < measured < eight_ports
    assert measured < predicted <= eight_ports


@pytest.mark.parametrize(
    ("spec", "floor_gbs"),
    [(mi300x_node(), 304.0), (MI350X, 350.0), (MI355X, 350.0)],
    ids=["mi300x", "mi350x", "mi355x"],
)
def test_a_healthy_node_passes_the_rccl_acceptance_floor(spec: ClusterSpec, floor_gbs: float) -> None:
    # system-acceptance-docs common/rccl-benchmarking.md: "exceed an in-place busbw metric of 304 GB/s for
    # MI300X or 350 GB/s for MI350X/MI355X at a message size of 8 GB" (all_reduce_perf -g 8). A floor every
    # healthy node clears, so the model's nominal node must: ring over 7 xGMI links 335.6 / 402.6 GB/s
    predicted = formula_collective("all_reduce", 8 * GiB, spec).busbw_bytes_per_s
    assert predicted >= floor_gbs * 1e9, ACCEPT


#: jetstream-pytorch #168 on v5litepod-8: (op, bytes the call moves in nccl-tests' terms, mean ms); the
#: all_gather gathers the 2 GiB (bf16) / 1 GiB (int8) array onto every chip, the psum sums 256 / 128 MiB
#: a chip
TPU_ROWS = (
    ("all_gather", 2 * GiB, 68.3381),
    ("all_reduce", 256 * MiB, 8.25386),
    ("all_gather", GiB, 34.4571),
    ("all_reduce", 128 * MiB, 4.34715),
)


def test_v5e_collectives_stay_under_the_two_link_ceiling() -> None:
    # A physical invariant of the 2x4 slice: a 1-D collective over its 8 chips runs a ring through two of a
    # chip's four ICI ports, so its busbw cannot pass 2 x 50 GB/s on the wire (Cloud TPU v5e: 400 GBps
    # bidirectional a chip over 4 ports) nor the model's 2 x 45 (the scaling book's one-way rate). The
    # measured 27.5 / 56.9 GB/s sit under both (the gap is in MISSED)
    wire = 2 * V5E_8.scaleup_link.per_gpu_per_direction_bytes_per_s / V5E_8.scaleup_link.links_per_gpu
    for op, size, ms in TPU_ROWS:
        factor = 7 / 8 if op == "all_gather" else 2 * 7 / 8
        measured = size / (ms * 1e-3) * factor
        predicted = formula_collective(op, size, V5E_8).busbw_bytes_per_s
        assert measured < predicted <= wire, JETSTREAM


#: ROCm/xla #326, "false (rccl kernel)": (per-device f32 shape, median ms)
XLA_ROWS = (((128, 128), 0.661), ((512, 128), 0.597), ((512, 512), 0.632), ((1024, 1024), 0.666))


def test_pmap_psum_times_are_the_host_dispatch_not_the_collective() -> None:
    # The medians stay within 0.60-0.67 ms while the payload grows 64-fold (64 KiB to 4 MiB a device), and
    # every one is far above RCCL's device time on the 8-GPU xGMI mesh (26-64 us): what the thread measures
    # is jax.pmap's launch from Python, which the model does not price (MISSED)
    medians = [ms for _, ms in XLA_ROWS]
    assert max(medians) / min(medians) < 1.15
    for (rows, cols), ms in XLA_ROWS:
        device = formula_collective("all_reduce", rows * cols * 4, mi300x_node()).time_s
        assert device < ms * 1e-3 / 5, XLA326


def test_a_miss_gives_both_figures_and_its_gap() -> None:
    # the earlier rounds' rule: "measured vs predicted", and the gap in per cent or why none is asserted
    assert [key for key, why in MISSED.items() if not _gives_its_gap(why)] == []


#: Public figures the model misses (measured, predicted, what is missing); not asserted.
MISSED = {
    "mori MI300X 2x8 all_gather 8 MiB/rank (128 MiB)": (
        '"fp32 8MB ... rccl 0.507ms 264.7GB/s" and RESULTS.md "8MB ... 265.6" vs 337.5 GB/s of algbw (0.398 '
        "ms): +27.5 / +27.1 %. The model's "
        "ring/Simple is near its plateau by 128 MiB while the run (CUDA events around the call, min of 4) "
        "still climbs from 264.7 to 346.2 GB/s between 128 and 256 MiB: a fill or channel-count step in "
        "RCCL's multi-node gfx942 tables that NCCL's tables, which price it, do not take; the 16 MiB/rank "
        f"row is back to +6.9 % ({MORI_300_SWEEP})"
    ),
    "mori MI300X 2x4 all_gather 4-512 MiB/rank (RESULTS.md world=8)": (
        'algbw "4MB ... 112.9" / "8MB 141.5" / "16MB 159.3" / "32MB 170.2" / "64MB 177.0" / "128MB 177.4" '
        '/ "256MB 175.6" / "512MB 176.9" vs 171.4 / 192.5 / 205.1 / 212.0 / 215.7 / 217.5 / 218.5 / 218.9 '
        "(ring over four GPUs of each node and their four ports): +51.9 / +36.0 / +28.7 / +24.6 / +21.8 / "
        "+22.6 / +24.4 / +23.8 %. The plateau, 154.8 GB/s of busbw, is 38.7 GB/s a port where the model's "
        "ring is bound by the ports' 49.0. Our reading: on four of the eight MI300X each ring hop inside the "
        "node rides one xGMI link and RCCL builds fewer channels than on the full mesh (RCCL's usage tips: "
        "fewer than 8 GPUs reach a fraction of the bandwidth, NCCL_MIN_NCHANNELS raises it); the model has "
        f"no record of RCCL's channel count on a subset of the mesh ({MORI_RESULTS})"
    ),
    "mori MI355X 2x8 all_gather 8-64 MiB/rank (fp32 and bf16)": (
        'algbw "rccl 0.475ms 282.4" / "1.854ms 289.6" / "3.404ms 315.4" GB/s (fp32 8 / 32 / 64 MB a rank), '
        '"0.476ms 282.2" / "0.799ms 336.0" / "1.733ms 309.8" / "3.292ms 326.2" (bf16 8 / 16 / 32 / 64) vs '
        "337.5 / 388.8 / 398.9 and 337.5 / 370.1 / 388.8 / 398.9: +19.5 / +34.3 / +26.5 and +19.6 / +10.1 / "
        "+25.5 / +22.3 %. The dip at 0.5-1 GiB (289.6 after 339.7 at 256 MiB) is not a bandwidth curve: "
        "RCCL's multi-node gfx950 tuning switches algorithm or channel count in that window (the same "
        "32-224 MB window ROCm/rocm-systems #9406 retunes for MI350X all_reduce); the model has no "
        f"gfx950 multi-node table ({MORI_355_SWEEP})"
    ),
    "mori MI355X 2x8 all_gather 512 MiB/rank (8 GiB)": (
        '"fp32 512MB ... rccl 23.822ms 360.6GB/s", "bf16 512MB ... 23.796ms 361.0", ag_perf_e2e.csv '
        '"512,361.4" vs 408.2 GB/s: +13.2 / +13.1 / +13.0 %. The run loses 5 % between 2 and 8 GiB (380.5 -> '
        "360.6), which a bandwidth-bound ring does not; our reading: RoCE back-pressure on the Pollara ports "
        f"under sustained load, not modelled ({MORI_355_SWEEP})"
    ),
    "mori MI355X 2x8 all_gather 64 MiB/rank (ag_perf_e2e.csv)": (
        f'"64,320.9" vs 398.9 GB/s: +24.3 %, the same gfx950 mid-size window as the sweep ({MORI_355_E2E})'
    ),
    "mori #200 MI355X x8 all_gather and reduce_scatter, 128 MB a rank (1 GiB)": (
        '"AG standalone BW | 361 GB/s | 333 GB/s" (RCCL column) and "RS standalone BW | 381 GB/s | 326 '
        'GB/s": 333 and 326 GiB/s = 357.6 and 350.0 GB/s of algbw vs 454.5 (ring over 7 xGMI links): '
        "+27.1 / "
        "+29.8 %. The torch list APIs stage the 1 GiB through a flat buffer (dist.all_gather into a list, "
        "dist.reduce_scatter from a list: one HBM read and write, ~0.27 ms of the 0.64 / 0.71 ms gaps at 8 "
        "TB/s) and RCCL's single-node gfx950 AG/RS channel count is not recorded; neither is modelled "
        f"({MORI200})"
    ),
    "jetstream-pytorch #168 v5litepod-8 all_gather 2 GiB / 1 GiB": (
        '"bfloat16 all_gather: 68.3381 ms" and "int8 all_gather: 34.4571 ms" (busbw 27.5 / 27.3 GB/s) vs '
        "20.88 / 10.44 ms (bidirectional ring over the slice, 90.0 GB/s): -69 / -70 % on time. XLA's 1-D "
        "all-gather over a 2x4 mesh and the replicated (8, 4096, 32768) output (out_specs=P(), "
        "check_rep=False) are not what the model's ring prices: our reading is a one-direction ring plus "
        f"the output relayout; no trace is published ({JETSTREAM})"
    ),
    "jetstream-pytorch #168 v5litepod-8 psum 256 MiB / 128 MiB a chip": (
        '"bfloat16 all_reduce: 8.25386 ms" and "int8 all_reduce: 4.34715 ms" (busbw 56.9 / 54.0 GB/s) vs '
        "5.23 / 2.62 ms (90 GB/s): -37 / -40 % on time. XLA's TPU all-reduce over a 1-D axis laid on a 2-D "
        "slice reaches 0.63 of the two-link rate here; the model has no record of XLA's decomposition on "
        f"sub-torus slices, and int8 sums are not reduced at a different rate in it ({JETSTREAM})"
    ),
    "ROCm/xla #326 MI300X x8 jax.pmap psum 64 KiB-4 MiB": (
        'median "0.661 ms" / "0.597" / "0.632" / "0.666" (128x128 to 1024x1024 f32 a device, RCCL kernel) '
        "vs 26.4 / 26.4 / 28.0 / 64.3 us (RCCL over the xGMI mesh): +2400 / +2160 / +2160 / +940 %; timeit "
        "around the pmapped call measures JAX's Python dispatch of 8 device programs, which the model does "
        f"not price (not asserted: the device time is asserted to be a lower bound) ({XLA326})"
    ),
    "system-acceptance-docs MI300A x4 all_reduce 8 GiB": (
        '"Pass: >= 230 GB/s busbw (peak, at 8 GiB message size)" (gpus/mi300a.md, -g 4) vs no prediction: '
        "the catalogue has no MI300A (4 APUs a node, three xGMI links each: torch-mojo-backend #455 measures "
        '"one link\'s 63 GB/s" and "233 GB/s, RCCL\'s own ceiling" on Adastra); not asserted until an '
        f"accelerator entry with a sourced link count and rate is added ({ACCEPT}gpus/mi300a.md, {MOJO455})"
    ),
}
