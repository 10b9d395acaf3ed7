"""The formula engine against a third set of public rack-scale and TPU collective figures (blind).

GB300 NVL72 (NVIDIA/aicr, the validator that qualifies its recipes): ``all_reduce_perf`` with
``NCCL_NVLS_ENABLE=1`` across trays of one NVLink domain (MNNVL, an IMEX ComputeDomain), the busbw of the
16 GiB row. Two runs: 3 trays x 4 GPUs on bare metal (the runtime template's recorded baseline) and 2 trays
x 4 GPUs on EKS ``p6e-gb300r`` (issue #1256). The validator's runtimes run NGC ``pytorch:25.06``; NCCL's
release is not printed, so the model runs the newest tables (2.27.3 gives the same figures).

TPU (marin-community/marin #6736): a barriered ``lax.ppermute`` sweep from 1 KiB to 64 MiB a device on
v5p-8 (4 chips, 2x2x1) and v6e-8 (8 chips, 2x4), each device sending to its neighbour over one ICI link
inside a ``fori_loop`` (repeat-count slopes, no host launch). The model runs it as its TPU send_recv: two
neighbouring chips over one link at the catalogue's 9e10 B/s one-way (JAX scaling book), plus a 1 us hop.
The thread's least-squares fits (``time = a + bytes / B``) give B, the link rate the sweep reached; it is
compared with the model's slope over the same sizes.

Tolerance: the blind check's bar, busbw 10 % at >= 64 MiB. None of these documents is a calibration source
of the catalogue. Figures the model misses are in ``MISSED`` (measured, predicted, the missing mechanism);
not asserted.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.engines.test_cases_public import Point  # one public row, as the other blind checks have it
from tests.engines.test_cases_public_amd_tpu2 import _gives_its_gap  # the same rule for a miss

from aifabric.cluster.presets import preset
from aifabric.cluster.spec import ClusterSpec
from aifabric.collectives.communicator import Communicator
from aifabric.engines.formula import formula_collective

MiB = 2**20
GiB = 2**30

MARIN = "https://github.com/marin-community/marin/issues/6736"
AICR = "https://github.com/NVIDIA/aicr"
AICR_GB300 = AICR + "/blob/main/validators/performance/testdata/gb300/generic/runtime-nvls.yaml"
AICR_VR200 = AICR + "/blob/main/validators/performance/testdata/vr200/rke2/runtime-nvls.yaml"
AICR_1256 = AICR + "/issues/1256"
AICR_2784 = AICR + "/issues/2784"
AMB71 = "https://github.com/AI-Hypercomputer/accelerator-microbenchmarks/issues/71"
AMB73 = "https://github.com/AI-Hypercomputer/accelerator-microbenchmarks/issues/73"
NEBIUS = "https://github.com/nebius/nebius-solutions-library/pull/1135"
RCCL_TIPS = "https://github.com/ROCm/rocm-systems/blob/develop/projects/rccl/docs/how-to/rccl-usage-tips.rst"


def tpu_host(accelerator: str, dims: list[int]) -> ClusterSpec:
    """One TPU host as its own domain: v5p-8 is 4 chips (2x2x1), v6e-8 8 chips (2x4); a domain of one of the
    generation's slice shapes is that slice (no wraparound below a cube or a full 16-chip axis)."""
    chips = dims[0] * dims[1] * dims[2]
    spec: dict[str, Any] = {"name": f"{accelerator}-host", "accelerator": accelerator, "gpus_per_node": chips}
    spec |= {
        "gpus": chips,
        "scale_out": None,
        "scale_up": {"kind": "torus", "gpus": chips, "torus_dims": dims},
    }
    return ClusterSpec.from_dict(spec, source="test")


def gb300_rack() -> ClusterSpec:
    """One GB300 NVL72 rack: 18 trays of 4 GPUs in one NVLink 5 domain (catalogue gb300); the scale-out NIC
    (ConnectX-8, GB300 NVL72 product page) carries nothing in these NVLS runs."""
    spec = {"accelerator": "gb300", "gpus_per_node": 4, "gpus": 72, "name": "gb300-nvl72"}
    spec |= {"scale_up": {"kind": "nvswitch", "gpus": 72}}
    return ClusterSpec.model_validate(spec | {"scale_out": {"nic": "connectx-8", "fabric": "infiniband"}})


V5P = tpu_host("tpu-v5p", [2, 2, 1])
V6E = tpu_host("tpu-v6e", [2, 4, 1])
GB300 = gb300_rack()


def _ppermute(spec: ClusterSpec, time_us: float) -> Point:
    """The sweep's 64 MiB row: busbw = algbw = S / t (one send a device, nccl-tests' sendrecv)."""
    size = 64 * MiB
    return Point(MARIN, spec, "send_recv", size, time_us * 1e-6, size / (time_us * 1e-6), False)


def _nvls(url: str, trays: int, busbw_gbs: float) -> Point:
    """A 16 GiB all_reduce over ``trays`` trays of the rack, given as busbw (GB/s); time derived."""
    n = 4 * trays
    size = 16 * GiB
    time_s = size * 2 * (n - 1) / n / (busbw_gbs * 1e9)
    comm = Communicator.from_gpus(GB300, list(range(n)))
    return Point(url, GB300, "all_reduce", size, time_s, busbw_gbs * 1e9, False, (("comm", comm),))


POINTS = {
    # marin #6736, "v5p ... 64 MiB: 781.98 us": 85.8 GB/s; one link at 9e10 B/s + 1 us: 746.6 us, 89.9
    # (+4.7 %)
    "marin v5p-8 ppermute 64 MiB": _ppermute(V5P, 781.98),
    # "v6e ... 64 MiB: 776.34 us": 86.4 GB/s; 746.6 us, 89.9 (+4.0 %)
    "marin v6e-8 ppermute 64 MiB": _ppermute(V6E, 776.34),
    # aicr gb300/generic runtime-nvls.yaml: "Baseline: 895.08 GB/s busbw at the 16 GiB message size (3 nodes x
    # 4 GPUs, driver 580.126.20)". NVLS on 12 ranks of the domain: 893.1 (-0.2 %)
    "aicr GB300 3 trays NVLS 16 GiB": _nvls(AICR_GB300, 3, 895.08),
    # aicr #1256: "2x p6e-gb300r.36xlarge ... 8 GPUs, 16 GiB all-reduce ... nccl-all-reduce-bw-nvls
    # 841.17 GB/s busbw". NVLS on 8 ranks: 814.9 (-3.1 %)
    "aicr GB300 2 trays NVLS 16 GiB": _nvls(AICR_1256, 2, 841.17),
}


@pytest.mark.parametrize("key", sorted(POINTS))
def test_public_rack2_point(key: str) -> None:
    point = POINTS[key]
    tolerance = 0.10 if point.size >= 64 * MiB else 0.15
    assert abs(point.relative_error()) <= tolerance, f"{key}: {point.relative_error():+.1%}"


#: marin #6736's large-payload fits, "time = a + bytes / B": the link rate B (B/s) of each sweep
FITS = {"v5p": (V5P, 86.3e9), "v6e": (V6E, 86.8e9)}


def _model_slope(spec: ClusterSpec) -> float:
    """The model's send_recv rate between the sweep's 1 MiB and 64 MiB rows, bytes/s (the fit's B)."""
    small, large = MiB, 64 * MiB
    t_small = formula_collective("send_recv", small, spec).time_s
    t_large = formula_collective("send_recv", large, spec).time_s
    return (large - small) / (t_large - t_small)


@pytest.mark.parametrize("key", sorted(FITS))
def test_ppermute_link_rate_is_the_fits_slope(key: str) -> None:
    # v5p: "Large-payload fit: time = 4.55 us + bytes / 86.3 GB/s"; v6e: "2.29 us + bytes / 86.8 GB/s". The
    # model's slope is the catalogue's 9e10 B/s link (scaleup.yaml, the scaling book's one-way ICI rate):
    # +4.3 / +3.7 %. Only the slope is compared: the fits' intercepts are the per-call cost in MISSED.
    spec, measured = FITS[key]
    assert _model_slope(spec) == pytest.approx(measured, rel=0.10)


def test_one_ici_link_bounds_every_ppermute() -> None:
    # A physical invariant of the sweep: a ppermute sends each device's payload over one ICI link, so no size
    # beats the link's 9e10 B/s one-way (catalogue tpu-v5p-ici / tpu-v6e-ici); both 64 MiB rows sit under it
    for spec in (V5P, V6E):
        r = formula_collective("send_recv", 1 * GiB, spec)
        assert r.busbw_bytes_per_s < 9e10
    assert all(POINTS[k].busbw < 9e10 for k in ("marin v5p-8 ppermute 64 MiB", "marin v6e-8 ppermute 64 MiB"))


def trays(accelerator: str, nic: str, nic_speed: str | None = None) -> ClusterSpec:
    """Two compute trays of 4 GPUs, each tray its own NVLink domain (MNNVL off: the trays meet over the
    scale-out NICs), one ``nic`` per GPU on InfiniBand, the leaf left to the spec (the fabric's default leaf
    for the NIC's rate: QM9700 at 400 Gb/s, Q3400 at 800, ``catalog.default_leaf_switch``)."""
    so = {"nic": nic, "fabric": "infiniband"} | ({} if nic_speed is None else {"nic_speed": nic_speed})
    spec = {"accelerator": accelerator, "gpus_per_node": 4, "gpus": 8, "name": f"{accelerator}-trays"}
    return ClusterSpec.model_validate(spec | {"scale_up": {"kind": "nvswitch", "gpus": 4}, "scale_out": so})


#: One GPU's NIC, slowest first: 200, 400 Gb/s and ConnectX-8 at 400 (nic_speed) and at its own 800.
NIC_LADDER = (("connectx-6", None), ("connectx-7", None), ("connectx-8", "400 Gb/s"), ("connectx-8", None))


@pytest.mark.parametrize("op", ["all_reduce", "all_gather", "reduce_scatter", "all_to_all"])
@pytest.mark.parametrize("size", [64 * 2**10, 64 * MiB, 16 * GiB])
def test_more_nic_bandwidth_is_never_slower_across_gb300_trays(op: str, size: int) -> None:
    # A physical invariant: every byte between the trays crosses their NICs, so a faster NIC (on a leaf
    # that does not train it down) can only shorten the call
    times = [formula_collective(op, size, trays("gb300", nic, speed)).time_s for nic, speed in NIC_LADDER]
    assert all(fast <= slow * (1 + 1e-9) for slow, fast in zip(times, times[1:], strict=False)), times


def test_800g_trays_beat_400g_trays_where_the_nics_bound() -> None:
    # By hand, 16 GiB all_reduce over 2 trays x 4 GPUs, the trays joined only by their 4 NICs each.
    # 400G (GB200, ConnectX-7 on QM9700): a tray's NICs carry 4 x 50 GB/s x 0.983 (payload, nics.yaml) =
    # 196.6 GB/s a direction; the best algorithm (NVLS-tree: NCCL's tree moves S each way through a tray's
    # NICs on 2 trays) reaches algbw 196.6, busbw x 2 (8 - 1) / 8 = 344.1 GB/s.
    # 800G (GB300, ConnectX-8 on Quantum-X800 Q3400, 800 Gb/s ports): 4 x 100 x 0.983 = 393.2 GB/s; the
    # NVLS-tree and tree are capped per channel (NCCL's perChMaxNVLSTreeBw / perChMaxTreeBw, Blackwell 2
    # nodes), so NCCL's tuner runs the ring (test_cases_public_multi2), whose busbw is the tray's NICs:
    # 393.2 GB/s (NVIDIA/aicr #1413 measured 387 on the same trays over 800G RoCE).
    slow = formula_collective("all_reduce", 16 * GiB, trays("gb200", "connectx-7"))
    fast = formula_collective("all_reduce", 16 * GiB, trays("gb300", "connectx-8"))
    # the GPU reaches its ConnectX-8 over a PCIe Gen6 x16 link (Hot Chips 2025): 111.1 GB/s of DMA, above
    # the NIC's 98.3 GB/s of payload, so the NIC, not the link, is the bound
    assert trays("gb300", "connectx-8").nic_effective_bytes_per_s == pytest.approx(98.3e9)
    assert slow.busbw_bytes_per_s == pytest.approx(344.1e9, rel=0.02)
    assert fast.busbw_bytes_per_s == pytest.approx(393.2e9, rel=0.02)
    assert fast.busbw_bytes_per_s > 1.1 * slow.busbw_bytes_per_s
    # a ConnectX-8 on 400 Gb/s leaf ports trains to 400 (IBTA link training): no faster than ConnectX-7
    eight_on_four = trays("gb300", "connectx-8").with_changes(**{"scale_out.switch": "quantum-2-qm9700"})
    assert eight_on_four.nic_speed_bytes_per_s == pytest.approx(50e9)
    trained_down = formula_collective("all_reduce", 16 * GiB, eight_on_four)
    assert trained_down.busbw_bytes_per_s == pytest.approx(slow.busbw_bytes_per_s)
    assert "connectx-8 at 800 Gb/s runs at 400 Gb/s" in trained_down.explanation  # and says why


def test_eight_rubin_gpus_run_the_ring_as_nccls_tuner_prices_nvls() -> None:
    # By hand, 8 Vera Rubin GPUs of one rack (catalogue nvlink6: 36 x 33.4 = 1202.4 GB/s a GPU), newest
    # tables (2.30). search.cc: the one-node NVLS graph has one channel per head (minChannels = maxChannels =
    # min(NCCL_MAX_NVLS_ARITY, 8) = 8), each at the highest sm100SpeedArrayIntra speed with (8 + 1) s <=
    # 1202.4: its first, 90 GB/s. tuning.cc (cc >= 100 takes the Blackwell row): busBw = 8 x 90 x
    # nvlsEfficiency 0.74 x 7/8 x 2 = 932.4, algbw x 8/14 = 532.8 GB/s; the ring graph 30 x 40 GB/s = 1200
    # busBw, algbw 685.7. NCCL runs the ring at every size, though NVLS runs at 1202.4 x 0.74 x 7/8 = 778.6
    # (busbw 1362.6 less its fill): the 90 GB/s ceiling of the NVLS graph's channels does not grow with
    # the NVLink rate; the ring graph's does.
    spec = preset("rubin-nvl72")
    comm = Communicator.from_gpus(spec, list(range(8)))
    picked = formula_collective("all_reduce", 16 * GiB, spec, comm)
    nvls = formula_collective("all_reduce", 16 * GiB, spec, comm, algorithm="nvls")
    assert picked.algorithm == "ring"
    assert picked.busbw_bytes_per_s == pytest.approx(1200e9, rel=0.01)
    assert nvls.busbw_bytes_per_s > picked.busbw_bytes_per_s
    assert "8 channels (one per head) of 90 GB/s" in picked.explanation
    assert "at 532.8 GB/s algbw" in picked.explanation


def test_a_miss_gives_both_figures_and_its_gap() -> None:
    # the earlier round's rule: "measured vs predicted", and the gap in per cent or why none is asserted
    assert [key for key, why in MISSED.items() if not _gives_its_gap(why)] == []


#: Public figures the model misses (measured, predicted, what is missing); not asserted.
MISSED = {
    "marin #6736, v5p-8 / v6e-8 ppermute at 1 MiB a device": (
        "time 16.94 / 17.45 us vs 12.65 us (one link + 1 us hop): -25 / -28 %. The fits' intercepts, 4.55 "
        "us (v5p) and 2.29 us (v6e), are a fixed cost a call inside a compiled loop (no host launch) that "
        "the model's 1 us hop (scaling book) does not carry; the Ironwood rows of the earlier round show "
        "the same (~11 us). One sweep's intercept is not a sourced constant, so none is added "
        f"({MARIN})"
    ),
    "marin #6736, v5p-8 / v6e-8 ppermute at 1-16 KiB a device": (
        '"~4.5-5.5 us" (v5p) and "~5.6-5.9 us" (v6e) vs 1.01-1.18 us: -75 to -82 %, the same per-call cost '
        f"({MARIN})"
    ),
    "accelerator-microbenchmarks #71, tpu7x 2x2x4 psum over 32 devices (16 chips), 2 / 4 MiB a device": (
        "step time p50 123.76 / 129.91 us (achieved_bw 31.77 / 60.54 GB/s, the benchmark's input x 2 (rank "
        "- 2) / rank / t, Ironwood/src/benchmark_collectives.py) vs 24.56 / 39.13 us for an all_reduce of 2"
        " / 4 MiB over the 16 chips of the slice: -80 / -70 %. Missing: the ~100 us fixed cost a psum of "
        "the 1-D mesh of 32 devices pays (two TensorCores a chip in one replica group); the issue, 'only "
        f"achieving 1/10 of the bandwidth', is open ({AMB71})"
    ),
    "accelerator-microbenchmarks #73, tpu7x 2x2x4 all_to_all": (
        '"achieved_bw_1d/achieved_bw_2d=68GB/s, achieved_bw_3d=43GB/s" vs 84.3 GB/s busbw for an all_to_all'
        " over the 16 chips at 1 GiB (the 3-D case, +96 %); not asserted: the summary gives no size, and "
        "the 1-D/2-D groups are subsets of the 2x2x8 device mesh whose chips the issue does not list "
        f"({AMB73})"
    ),
    "aicr vr200/rke2 runtime-nvls.yaml, Vera Rubin NVL72, 2 trays x 4 GPUs, all_reduce 16 GiB": (
        '"744.71 GB/s busbw at the 16 GiB message size" vs 1357.0 forced NVLS (1199.7 with the model\'s '
        "own choice, ring, NCCL's tuner's: its NVLS graph's 8 channels of at most 90 GB/s price NVLS at "
        "532.8 GB/s algbw, under the ring's 685.7): +82 %. The run is pre-GA hardware (R615 driver, DRA "
        "driver 0.5.0-dev) on NGC pytorch:25.06, a CUDA 12 image that runs on Rubin through PTX JIT; NCCL "
        "has no Rubin entry (topo.h gives every cudaCompCap >= 100 SM100_NVLINK_BW, 40.1 GB/s a link, up to"
        " v2.30.7-1), while the catalogue's nvlink6 is the preliminary spec sheet (3,000 GB/s a GPU). The "
        "figure sits below GB200's on 8 ranks (814.9). Not fixed: no measured Rubin NVLink rate is "
        f"published yet ({AICR_VR200})"
    ),
    "aicr #1256, GB300 p6e-gb300r x 2, all_reduce 16 GiB over the network (NVLS and MNNVL off)": (
        '"nccl-all-reduce-bw-net 44.04 GB/s busbw" with "1 EFA attached of a maximum of 2" vs 74.9 (tree '
        "over one 400 Gb/s port a tray, NVLS off), +70 %. Not asserted: the issue calls it 'not a GB300 "
        "scale-out figure', and the recipe describes p6e-gb300r's fabric as ConnectX RoCE VFs, not EFA; the"
        f" port's rate is not stated ({AICR_1256})"
    ),
    "aicr #2784, GB200 NVLS baseline": (
        '"puts GB200 NVLS around 770" (NVIDIA beacon-v2 baselines) vs 814.9 on 8 ranks and 1007.9 on 72 at '
        f"16 GiB; not asserted: neither the rank count nor the size is given ({AICR_2784})"
    ),
    "nebius-solutions-library #1135, GB300 soak test (PyTorch all_reduce), 1 and 2 trays": (
        '"single-node NVLink 556 GB/s", "2-node MNNVL/NVLink 599 GB/s", "2-node InfiniBand GDR (4 rails) '
        '246 GB/s" vs 720.6 (ring, 4 ranks), 812.0 (NVLS, 8 ranks) and 392.1 (ring over the 4 ConnectX-8 '
        "of a tray at 800G on the fabric's default Quantum-X800 leaf; 340.9 if 400G leaf ports cap them) at "
        "8 GiB: +30 / +36 / +59 %. A gap of a third or more on NVLink, MNNVL and InfiniBand alike points to "
        "the harness (a soak loop at an unstated size, busbw by its own timing; the rails' rate is not "
        f"stated), not to a fabric; not asserted ({NEBIUS})"
    ),
    "ROCm rccl-usage-tips, MI300X in CPX mode: all_reduce over the 8 XCDs of one OAM": (
        '"optimized CPX mode, which peaks at ~340 GB/s with a single OAM" (rccl-tests) and "~170 GB/s" / '
        '"~315 GB/s" with the PyTorch benchmark vs no prediction: the catalogue has no CPX partition, so '
        "the 8 XCDs and the Infinity Fabric of the IOD that joins them are not a domain the model can "
        f"build; not asserted ({RCCL_TIPS})"
    ),
}
