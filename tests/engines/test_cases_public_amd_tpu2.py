"""The formula engine against a second set of public TPU and AMD collective figures (blind).

TPU Ironwood (tpu7x): Google's tpu-recipes ``microbenchmarks/ironwood/collectives/all_gather.md`` gives
"Expected Results" of ``jax.lax.all_gather`` on a 2x2x1 slice (4 chips, one host), float32, from 64 KiB to
64 MiB a device. An Ironwood chip shows its 2 TensorCores as 2 JAX devices; the run gathers over one device
of each of the 4 chips while the chips' other devices run the same gather ("Parallel Replica": mesh 2x2x2
of the 8 devices, sharded 2x2x1, accelerator-microbenchmarks commit 0cf3898
``Ironwood/configs/collectives/all_gather_tpu7x_2x2x1.yaml``). Its "Achieved Bandwidth" is
``input x (ranks - 1) x 2 / t`` for that case (``participating_ranks = rank - 1``, ``tf_multiplier = 2``,
``Ironwood/src/benchmark_collectives.py``), which is nccl-tests' all-gather busbw of one chip-level
gather of ``S`` = 4 chips x 2 devices x input bytes: ``(n-1)/n S / t`` with ``n`` = 4. The model runs it
as 4 ranks of an Ironwood pod (16x24x24, 9,216 chips), where the 4 chips resolve to the 2x2x1 slice
without wraparound (Cloud TPU docs: sub-cube slices have none), two lines of 2 chips: each chip gathers
over its 2 connected ICI links at the catalogue's 9e10 B/s, busbw ``2 x 90`` = 180 GB/s less the hop
latency. No constant was set from these figures.

AMD: crickett-hpe/hpc-ai-envs #30 ("Initial draft xCCL tests") prints rccl-tests all_reduce on one node of
8 x MI300X (one process, ``-g 8``, rccl-tests develop:83d38d9, RCCL release not printed: newest tables);
stas00/ml-engineering (network chapter) gives all_reduce_bench.py busbw at 4 GiB on 2 and 8 of the 8
MI300X of one node, the 2-GPU figure one xGMI link's worth (the mesh gives a pair one of its 7 links).

Tolerance: the blind check's bar, busbw 10 % at >= 64 MiB, 15 % at 8-512 MiB. Figures the model misses are
in ``MISSED`` with measured, predicted and the missing mechanism; not asserted.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.clusters import mi300x_node
from tests.engines.test_cases_public import Point  # one public row, as the multi-node threads have it

from aifabric.cluster.spec import ClusterSpec
from aifabric.collectives.communicator import Communicator
from aifabric.engines.formula import formula_collective

MiB = 2**20
GiB = 2**30

IRONWOOD_AG = "https://github.com/AI-Hypercomputer/tpu-recipes/blob/main/microbenchmarks/ironwood/collectives/all_gather.md"
XCCL = "https://github.com/crickett-hpe/hpc-ai-envs/pull/30"
MLENG = "https://github.com/stas00/ml-engineering/blob/master/network/README.md"
SCALING_BOOK = "https://github.com/jax-ml/scaling-book/blob/main/sharding.md"
TRILLIUM = (
    "https://github.com/AI-Hypercomputer/tpu-recipes/blob/main/microbenchmarks/trillium/collectives/README.md"
)


def ironwood_pod() -> ClusterSpec:
    """A whole Ironwood pod: 9,216 chips (Cloud TPU7x docs, catalogue tpu-ironwood-ici) as a 16x24x24 3D
    torus, 4 chips a host (the tpu7x 2x2x1 host of the recipe's node pool: ``google.com/tpu: 4``)."""
    spec: dict[str, Any] = {"name": "ironwood-pod", "accelerator": "tpu-ironwood", "gpus_per_node": 4}
    spec |= {"gpus": 9216, "scale_out": None}
    spec["scale_up"] = {"kind": "torus", "gpus": 9216, "torus_dims": [16, 24, 24]}
    return ClusterSpec.from_dict(spec, source="test")


IRONWOOD = ironwood_pod()
#: 8 x MI300X on the xGMI full mesh, 7 x 48 GB/s usable a GPU (catalogue infinity-fabric-mi300)
MI300X = mi300x_node()
#: the 4 chips of one 2x2x1 slice of the pod
FOUR_CHIPS = (("comm", Communicator.contiguous(IRONWOOD, 4)),)


def _ironwood_row(elements: int, achieved_gbs: float) -> Point:
    """One 2x2x1 row: ``elements`` float32 a device, 2 devices a chip, 4 chips; busbw = the recipe's
    "Achieved Bandwidth" (derivation in the module docstring)."""
    size = elements * 4 * 2 * 4
    return Point(IRONWOOD_AG, IRONWOOD, "all_gather", size, 0.0, achieved_gbs * 1e9, False, FOUR_CHIPS)


POINTS = {
    # tpu-recipes all_gather.md, "2x2x1 | 16777216 | 178.7714158 | 0.402653184 | f32[16384,8,128] |
    # f32[65536,8,128]": S = 512 MiB; "2x2x1 | 4194304 | 174.765465 | 0.100663296 | ...": S = 128 MiB;
    # "2x2x1 | 1048576 | 161.9040742 | 0.025165824 | ...": S = 32 MiB. Model: the 2x2x1 slice's two lines,
    # 2 links x 90 GB/s less 2 hops of 1 us: 179.8 / 179.4 / 177.5 (+0.6 / +2.6 / +9.6 %)
    "Ironwood 2x2x1 all_gather 512 MiB": _ironwood_row(16777216, 178.7714158),
    "Ironwood 2x2x1 all_gather 128 MiB": _ironwood_row(4194304, 174.765465),
    "Ironwood 2x2x1 all_gather 32 MiB": _ironwood_row(1048576, 161.9040742),
    # hpc-ai-envs #30: 8 x MI300X of node g100n126, "8388608 2097152 float sum -1 91.10 92.08 161.14":
    # ring/LL128 over the 7 xGMI links (catalogue infinity-fabric-mi300) 166.6 (+3.4 %)
    "xccl MI300X x8 all_reduce 8 MiB": Point(
        XCCL, mi300x_node(), "all_reduce", 8 * MiB, 91.10e-6, 161.14e9, False
    ),
    # ml-engineering network/README.md: all_reduce_bench.py (nccl-tests' busbw, 2 (n-1)/n x size / t, GB =
    # 1e9 B) "on a 8x GPU AMD MI300X node with a 4GiB payload": "2 GPUs: 47.671GBps", "8 GPUs:
    # 312.912GBps". Model: 2 GPUs share one xGMI link of the mesh, ring/Simple 48.0 (+0.7 %); 8 GPUs ring
    # over all 7 links 335.2 (+7.1 %)
    "mleng MI300X x2 all_reduce 4 GiB": Point(
        MLENG,
        MI300X,
        "all_reduce",
        4 * GiB,
        0.0,
        47.671e9,
        False,
        (("comm", Communicator.contiguous(MI300X, 2)),),
    ),
    "mleng MI300X x8 all_reduce 4 GiB": Point(MLENG, MI300X, "all_reduce", 4 * GiB, 0.0, 312.912e9, False),
}


def ironwood_host() -> ClusterSpec:
    """One tpu7x host as its own domain: 4 chips, torus_dims 2x2x1 (the recipe's node pool: a 2x2x1
    topology, ``google.com/tpu: 4``). A domain of one of the generation's slice shapes is that slice: no
    wraparound below a whole cube, each chip's 6 ports at the per-link rate, 2 of them wired."""
    spec: dict[str, Any] = {"name": "ironwood-host", "accelerator": "tpu-ironwood", "gpus_per_node": 4}
    spec |= {"gpus": 4, "scale_out": None}
    spec["scale_up"] = {"kind": "torus", "gpus": 4, "torus_dims": [2, 2, 1]}
    return ClusterSpec.from_dict(spec, source="test")


def _tolerance(size: int) -> float:
    """The blind check's bar: 10 % on busbw at >= 64 MiB, 15 % below."""
    return 0.10 if size >= 64 * MiB else 0.15


@pytest.mark.parametrize("key", list(POINTS))
def test_public_amd_tpu_point(key: str) -> None:
    p = POINTS[key]
    assert abs(p.relative_error()) <= _tolerance(p.size)


@pytest.mark.parametrize("key", [k for k in POINTS if k.startswith("Ironwood")])
def test_one_ironwood_host_as_its_own_domain_is_the_pods_2x2x1_slice(key: str) -> None:
    # The same rows on the host declared alone: before, the 2x2x1 domain ran as a torus with wraparound
    # and the chip's 540 GB/s spread over its 2 axes (b = 135 GB/s): 538.6 GB/s at 512 MiB (+201 %);
    # now it is the slice (Cloud TPU docs: no wraparound below a cube), 2 lines at 90 GB/s: 179.8 (+0.6 %)
    p = POINTS[key]
    host = Point(p.url, ironwood_host(), p.collective, p.size, 0.0, p.busbw, False)
    assert abs(host.relative_error()) <= _tolerance(p.size)


def test_a_v5e_4x4_domain_has_no_wraparound() -> None:
    # A v5litepod-16 (4x4) declared as the domain: the JAX scaling book ch. 2, "a 4x4 v5e slice has" no
    # wraparound, so an all-gather runs on 2 lines of 4.5e10 B/s: busbw -> 2 x 45 = 90 GB/s (the torus the
    # domain used to be gave 180)
    spec: dict[str, Any] = {"name": "v5e-16", "accelerator": "tpu-v5e", "gpus_per_node": 4, "gpus": 16}
    spec |= {"scale_out": None, "scale_up": {"kind": "torus", "gpus": 16, "torus_dims": [4, 4, 1]}}
    r = formula_collective("all_gather", 2**31, ClusterSpec.from_dict(spec, source="test"))
    assert r.busbw_bytes_per_s == pytest.approx(2 * 45e9, rel=0.005)


def test_ironwood_gather_is_bound_by_two_links_of_the_slice() -> None:
    # A physical invariant of the 2x2x1 slice: its 4 chips reach each other over 2 ICI links a chip (no
    # wraparound below a cube), so no gather beats 2 x 90 GB/s (catalogue tpu-ironwood-ici) whatever the
    # size, and a large one comes to it; the recipe's largest figure, 178.77, sits 0.7 % under it
    r = formula_collective("all_gather", 32 * 2**30, IRONWOOD, **dict(FOUR_CHIPS))
    assert r.busbw_bytes_per_s < 2 * 90e9
    assert r.busbw_bytes_per_s == pytest.approx(2 * 90e9, rel=0.001)
    assert POINTS["Ironwood 2x2x1 all_gather 512 MiB"].busbw < 2 * 90e9


def _gives_its_gap(why: str) -> bool:
    """A MISSED record's text: "measured vs predicted", and the gap in per cent or why none is given."""
    return " vs " in why and ("%" in why or "not asserted" in why)


def test_a_miss_gives_both_figures_and_its_gap() -> None:
    assert [key for key, why in MISSED.items() if not _gives_its_gap(why)] == []


#: Public figures the model misses (measured, predicted, what is missing); not asserted.
MISSED = {
    "tpu-recipes Ironwood all_gather.md, 2x2x1, 65536 and 262144 elements a device (S = 2 and 8 MiB)": (
        "busbw 71.77 / 129.19 GB/s (t = 21.9 / 48.7 us) vs 146.5 / 170.3 (t = 10.7 / 37.0 us): +104 / +32 %. "
        "The model's time is the 2-link bandwidth term plus 2 hops of 1 us; the measured time carries a "
        "further ~11 us at both sizes, a fixed cost a call (our reading: launching and synchronising the XLA "
        "collective on the TensorCores) for which the model has no TPU term and no public figure"
    ),
    "tpu-recipes Ironwood all_gather.md, 2x2x2 rows (mesh 2x4x2 of 16 devices, sharded 1x4x1)": (
        "busbw 178.76 / 174.67 / 162.09 at 64 / 16 / 4 M elements a device, the 2x2x1 rows to 0.1 %, vs "
        "179.8 / 179.4 / 177.5 if the size-4 mesh axis is one 2x2 face of the 2x2x2 slice; not asserted: "
        "which 4 chips the benchmark's device mesh puts on that axis is not printed"
    ),
    "JAX scaling book, sharding.md Pop Quiz 2: AllGather_Y on a v5e mesh {X: 8, Y: 4}, bf16[2048, 8192]": (
        "680 us ('an actual profile') vs 562 us for a line of 4 chips at 4.5e10 B/s (3/4 x 33.6 MB / "
        "4.5e10 + 3 hops of 1 us, torus.axis_all_gather_s; -17 %): the gather runs over one axis of a 4x8 "
        "slice while the model runs collectives over whole slices (4 chips resolve to a 2x2, and 4x1 is no "
        "v5e slice), so only the torus module's line formula prices it; the 18 % left is the rate XLA "
        "reaches on a line, which the book calls 'not getting 100% of the theoretical bandwidth'. E = F = "
        "256 (131 kB): 'closer to 8us' vs 5.2 us, the per-launch cost the Ironwood rows show"
    ),
    "tpu-recipes trillium/collectives README, v6e-256 psum_ici 17408x17408 bf16 (606 MB a chip)": (
        "achieved_bandwidth 235.76 GB/s (the benchmark's S x 2 (n-1)/n / t, nccl-tests' all-reduce busbw; "
        "accelerator-microbenchmarks branch trillium-collectives) vs 356.6 on the 16x16 torus with every "
        "chip's 4 links at 9e10 B/s (+51 %). The mechanism is not identified: the measured rate is 2.6 "
        "links' worth, between the 4 of both torus axes working at once (the model) and the 2 of axes "
        "taken one after the other (180); nothing public says how XLA schedules this pod-wide psum"
    ),
}
