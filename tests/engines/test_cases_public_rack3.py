"""The formula engine against a fourth set of public rack-scale and superchip collective figures (blind).

GB200 NVL72 on OCI (OguzPastirmaci/misc, ``oke-gb200/README.md``): two BM.GPU.GB200.4 trays of one NVLink
domain (one ``nvidia.com/gpu.clique``, an IMEX ComputeDomain) on OKE, ``all_reduce_perf -b 8 -e 32G`` over
the 8 GPUs with ``NCCL_MNNVL_ENABLE=1 NCCL_NVLS_ENABLE=1``, image ``nccl-tests:pytorch-25.03-nccl-2.26.6-1``
(NCCL 2.26.6): the sweep's out-of-place rows. The model runs 8 ranks of the catalogue's GB200 NVL72 rack.

GB300 NVL72 on Azure (Azure/ai-infrastructure-on-azure, ``skills/ai-infra/references/sku_baselines.md``):
Standard_ND128isr_GB300_v6's expected ``all_reduce`` busbw at 16 G, "intra-rack, MNNVL" (a full rack, 18
nodes, 72 GPUs) ~937 GB/s and "inter-rack, IB-only" ~200 GB/s, "IB ports 4 x 400 Gb/s (ib0-ib3)" a node,
"InfiniBand NDR 400 Gb/s across racks". NCCL's release is not stated: newest tables.

GH200 on CSCS Alps (HPE Cray EX254n, 4 GH200 a node meshed by NVLink, one 200 Gb/s Slingshot 11 NIC each,
NCCL through aws-ofi-nccl): eth-cscs/cscs-docs ``image-nccl-tests.md`` prints ``all_reduce_perf -b 8 -e
128M`` on 2 nodes x 4 GPUs (image nccl-tests 2.17.1, CUDA 12.8.1; NCCL's release not printed: newest
tables); eth-cscs/cscs-reframe-tests ``xccl_tests.py`` holds the regression references the centre checks
every GPU vCluster against: ``all_reduce`` 150 GB/s +-10 % and ``sendrecv`` 24 GB/s +-5 % at 1 GiB on 2
nodes, one rank a GPU; NVIDIA/nccl-tests #369 prints a 2-node x 1-GPU ``all_reduce`` sweep on a Cray EX
GH200 system over Slingshot 11 (nccl-library 22902: NCCL 2.29.2).

TPU v5p (beshrislambouli/TPU-Collectives): Pallas reduce-scatter / all-gather kernels on a 2x2 v5p mesh,
"Bandwidth-aware implementation (~92 GB/s per ICI link)".

Tolerance: the blind check's bar, busbw 10 % at >= 64 MiB and 15 % at 8-32 MiB, time 15 % at small sizes.
None of these documents is a calibration source of the catalogue. Figures the model misses are in
``MISSED`` (measured, predicted, the missing mechanism); not asserted.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.engines.test_cases_public import Point  # one public row, as the other blind checks have it
from tests.engines.test_cases_public_amd_tpu2 import _gives_its_gap  # the same rule for a miss
from tests.engines.test_cases_public_multi5 import _bw, _table
from tests.engines.test_cases_public_rack2 import gb300_rack, tpu_host

from aifabric.cluster.presets import preset
from aifabric.cluster.spec import ClusterSpec
from aifabric.collectives.communicator import Communicator
from aifabric.engines.formula import formula_collective

MiB = 2**20
GiB = 2**30

OKE = (
    "https://github.com/OguzPastirmaci/misc/blob/134e86c3236e6e3fc3873f1bdd3b5d151a44fd64/oke-gb200/README.md"
)
AZURE = (
    "https://github.com/Azure/ai-infrastructure-on-azure/blob/6ac01e70bb7c566cc18ec6756ca5aa4b5e427968/"
    "skills/ai-infra/references/sku_baselines.md"
)
CSCS_DOCS = (
    "https://github.com/eth-cscs/cscs-docs/blob/1e919521bd3c904e13d1c7f4da036e2bf3962ed2/"
    "docs/software/container-engine/guidelines-images/image-nccl-tests.md"
)
REFRAME = (
    "https://github.com/eth-cscs/cscs-reframe-tests/blob/04e81c581d8ded2ec91003655071893fd1d33602/"
    "checks/microbenchmarks/xccl/xccl_tests.py"
)
NT369 = "https://github.com/NVIDIA/nccl-tests/issues/369"
PALLAS = (
    "https://github.com/beshrislambouli/TPU-Collectives/blob/2b212be26b04816dc198b748dc62349785734504/"
    "README.md"
)
RAPIDS833 = "https://github.com/rapidsai/rapidsmpf/issues/833"


def gb300_trays(trays: int) -> ClusterSpec:
    """``trays`` GB300 compute trays with MNNVL off ("IB-only"): each tray its own NVLink domain of 4 GPUs,
    one ConnectX-8 a GPU trained to the 400 Gb/s NDR ports the SKU table states, on the fabric's default
    leaf for that rate (QM9700)."""
    so = {"nic": "connectx-8", "nic_speed": "400 Gb/s", "fabric": "infiniband"}
    spec: dict[str, Any] = {"accelerator": "gb300", "gpus_per_node": 4, "gpus": 4 * trays, "name": "nd-gb300"}
    return ClusterSpec.model_validate(spec | {"scale_up": {"kind": "nvswitch", "gpus": 4}, "scale_out": so})


#: 8 GPUs (two trays) of one GB200 NVL72 NVLink domain, NCCL 2.26.6 (the OKE image's tag)
NVL72 = preset("gb200-nvl72", gpus=72)
OKE_OPTS = (("comm", Communicator.from_gpus(NVL72, list(range(8)))), ("nccl_version", "2.26.6"))
#: Alps: 2 nodes x 4 GH200, every GPU a rank; and one GPU of each node (nccl-tests #369, NCCL 2.29.2)
ALPS = preset("gh200-quad", nodes=2)
ALPS_8 = (("comm", Communicator.from_gpus(ALPS, list(range(8)))),)
#: the image the CSCS docs run: "Libfabric 1.22.0", whose cxi provider sends up to 4097 B eagerly and the
#: rest by rendezvous (transports.yaml slingshot-cxi); ReFrame and nccl-tests #369 name no libfabric
CSCS_IMAGE = ALPS.with_changes(**{"scale_out.libfabric_version": "1.22.0"})
ALPS_2 = (("comm", Communicator.from_gpus(ALPS, [0, 4])), ("nccl_version", "2.29.2"))
#: a 2x2x1 v5p slice, 4 chips on one host (the Pallas repository's "2x2 TPU v5p mesh")
V5P = tpu_host("tpu-v5p", [2, 2, 1])


def _oke(size: int, time_us: float, busbw: float) -> Point:
    """An out-of-place all_reduce row of the OKE sweep, its busbw asserted."""
    return _bw(OKE, NVL72, "all_reduce", size, time_us, busbw, OKE_OPTS)


def _time(url: str, spec: ClusterSpec, size: int, time_us: float, opts: Any) -> Point:
    """A small all_reduce row, its time asserted."""
    return Point(url, spec, "all_reduce", size, time_us * 1e-6, 0.0, True, tuple(opts))


def _alps(size: int, time_us: float, busbw: float) -> Point:
    """A busbw row of the CSCS docs' 2 x 4 GH200 sweep."""
    return _bw(CSCS_DOCS, CSCS_IMAGE, "all_reduce", size, time_us, busbw, ALPS_8)


def _nt369(size: int, time_us: float, busbw: float) -> Point:
    """A busbw row of nccl-tests #369's 2 x 1 GH200 sweep."""
    return _bw(NT369, ALPS, "all_reduce", size, time_us, busbw, ALPS_2)


#: the CSCS docs' small rows (size B, out-of-place time us), and nccl-tests #369's
CSCS_SMALL = ((8, 17.93), (64, 19.27), (128, 18.86), (256, 18.83), (512, 19.72), (1024, 20.35), (2048, 22.07))
CSCS_SMALL += ((4096, 31.97), (8192, 37.21))
NT369_SMALL = ((8, 17.49), (1024, 18.94), (8192, 21.04))

POINTS = {
    # OguzPastirmaci/misc oke-gb200: "4194304 ... 52.72 79.55 139.22": NVLS/Simple 51.92 us (-1.5 %)
    "OKE GB200 2 trays MNNVL 4 MiB time": _time(OKE, NVL72, 4 * MiB, 52.72, OKE_OPTS),
    # "8388608 ... 67.94 123.47 216.07": NVLS 241.1 (+11.6 %); "16777216 ... 102.8 163.15 285.52": 303.3
    # (+6.2 %)
    "OKE GB200 2 trays MNNVL 8 MiB": _oke(8 * MiB, 67.94, 216.07),
    "OKE GB200 2 trays MNNVL 16 MiB": _oke(16 * MiB, 102.8, 285.52),
    # "134217728 ... 386.9 346.95 607.15": NVLS 611.7 (+0.8 %); 256 MiB 672.13: 699.9 (+4.1 %); 512 MiB
    # 714.65: 754.3 (+5.6 %); 1 GiB 738.61: 784.8 (+6.3 %)
    "OKE GB200 2 trays MNNVL 128 MiB": _oke(128 * MiB, 386.9, 607.15),
    "OKE GB200 2 trays MNNVL 256 MiB": _oke(256 * MiB, 698.9, 672.13),
    "OKE GB200 2 trays MNNVL 512 MiB": _oke(512 * MiB, 1314.7, 714.65),
    "OKE GB200 2 trays MNNVL 1 GiB": _oke(GiB, 2544.0, 738.61),
    # "2147483648 ... 4557.5 471.20 824.59": 788.9 (-4.3 %); 4 GiB 833.71: 803.2 (-3.7 %); 8 GiB 840.41: 810.5
    # (-3.6 %); 16 GiB 845.72: 814.2 (-3.7 %); "34359738368 ... 70981 484.07 847.12": 816.0 (-3.7 %)
    "OKE GB200 2 trays MNNVL 2 GiB": _oke(2 * GiB, 4557.5, 824.59),
    "OKE GB200 2 trays MNNVL 4 GiB": _oke(4 * GiB, 9015.4, 833.71),
    "OKE GB200 2 trays MNNVL 8 GiB": _oke(8 * GiB, 17887, 840.41),
    "OKE GB200 2 trays MNNVL 16 GiB": _oke(16 * GiB, 35549, 845.72),
    "OKE GB200 2 trays MNNVL 32 GiB": _oke(32 * GiB, 70981, 847.12),
    # Azure sku_baselines.md, ND GB300 v6: "NCCL all_reduce busbw (intra-rack, MNNVL, 16 G) | ~937 GB/s";
    # NVLS over the 72 GPUs of the rack: 1007.9 (+7.6 %)
    "Azure GB300 rack MNNVL 16 GiB": _table(AZURE, gb300_rack(), "all_reduce", 16 * GiB, 937.0),
    # "NCCL all_reduce busbw (inter-rack, IB-only, 16 G) | ~200 GB/s", read on two racks (36 trays, the
    # baselines "assume a full rack"): the tray's 4 NICs at 400 Gb/s, 4 x 48.7 GB/s of payload, NVLS tree
    # 194.8 (-2.6 %); ring 195-196 at 4-18 trays
    "Azure GB300 2 racks IB-only 16 GiB": _table(AZURE, gb300_trays(36), "all_reduce", 16 * GiB, 200.0),
    # cscs-docs image-nccl-tests.md, 2 x 4 GH200, tree/LL over the Slingshot NICs: "8 ... 17.93" 20.41 us
    # (+13.8 %); "64 ... 19.27" 20.45 (+6.1 %); "128 ... 18.86" 20.51 (+8.7 %); "256 ... 18.83" 20.61
    # (+9.5 %); "512 ... 19.72" 20.82 (+5.6 %); "1024 ... 20.35" 21.33 (+4.8 %); "2048 ... 22.07" 22.50
    # (+2.0 %); "4096 ... 31.97" 31.70 (-0.8 %) and "8192 ... 37.21" 31.70 (-14.8 %): from 4 KiB LL's 8192
    # wire bytes on one channel pass the 4097 B eager limit and both tree steps wait a 3.25 us rendezvous
    # round trip (25.20 without it, -21/-32 %)
    **{f"CSCS GH200 2x4 {s} B time": _time(CSCS_DOCS, CSCS_IMAGE, s, t, ALPS_8) for s, t in CSCS_SMALL},
    # "67108864 ... 1090.5 61.54 107.69": tree/LL128 110.7 (+2.8 %); "134217728 ... 1916.4 70.04 122.57":
    # tree/Simple 125.7 (+2.6 %)
    "CSCS GH200 2x4 64 MiB": _alps(64 * MiB, 1090.5, 107.69),
    "CSCS GH200 2x4 128 MiB": _alps(128 * MiB, 1916.4, 122.57),
    # cscs-reframe-tests xccl_tests.py, reference_per_test: all_reduce "(150.0, -0.10, 0.10, 'GB/s')" at
    # "--minbytes 1024M --maxbytes 1024M" on 2 nodes: tree 144.2 (-3.9 %); sendrecv "(24.0, -0.05, 0.05)" with
    # NCCL_NCHANNELS_PER_NET_PEER=4 (the model lets one channel fill the NIC): 24.2 (+0.8 %)
    "ReFrame GH200 2x4 all_reduce 1 GiB": _table(REFRAME, ALPS, "all_reduce", GiB, 150.0, ALPS_8),
    "ReFrame GH200 2x4 sendrecv 1 GiB": _table(REFRAME, ALPS, "send_recv", GiB, 24.0, ALPS_8),
    # nccl-tests #369, 2 x 1 GH200, NCCL 2.29.2, ring over one NIC a node: "8 ... 17.49" 16.60 us (-5.1 %);
    # "1024 ... 18.94" 17.02 (-10.1 %); "8192 ... 21.04" 19.96 (-5.1 %); "33554432 ... 1587.57 21.14 21.14"
    # 23.2 (+9.9 %); "67108864 ... 3003.09 22.35" 23.7 (+6.1 %); "134217728 ... 5869.38 22.87" 24.0 (+4.7 %);
    # no libfabric named: the newest recorded, 18433 B eager, so the 8 KiB row's 8192 LL wire bytes go eagerly
    **{f"nccl-tests 369 GH200 2x1 {s} B time": _time(NT369, ALPS, s, t, ALPS_2) for s, t in NT369_SMALL},
    "nccl-tests 369 GH200 2x1 32 MiB": _nt369(32 * MiB, 1587.57, 21.14),
    "nccl-tests 369 GH200 2x1 64 MiB": _nt369(64 * MiB, 3003.09, 22.35),
    "nccl-tests 369 GH200 2x1 128 MiB": _nt369(128 * MiB, 5869.38, 22.87),
}


def _tolerance(point: Point) -> float:
    """The blind check's bar: 10 % on busbw at >= 64 MiB, else 15 % (busbw at mid sizes, time when small)."""
    return 0.10 if not point.latency and point.size >= 64 * MiB else 0.15


@pytest.mark.parametrize("key", sorted(POINTS))
def test_public_rack3_point(key: str) -> None:
    point = POINTS[key]
    assert abs(point.relative_error()) <= _tolerance(point), f"{key}: {point.relative_error():+.1%}"


def test_pallas_collectives_reach_one_ici_link_each_way() -> None:
    # TPU-Collectives README: "Bandwidth-aware implementation (~92 GB/s per ICI link)" for its reduce-scatter
    # and all-gather on the 2x2 v5p mesh. The model gathers over the slice's 2 links a chip at the
    # catalogue's 9e10 B/s (tpu-v5p-ici, the JAX scaling book's one-way rate): busbw / 2 = 90.0 GB/s a link
    # at 4 GiB (-2.2 %). Both sit under the wire's 100 GB/s a link each way (Cloud TPU v5p docs: 1,200 GBps
    # bidirectional a chip over 6 links), which no kernel can pass
    line_rate = V5P.scaleup_link.per_gpu_per_direction_bytes_per_s / V5P.scaleup_link.links_per_gpu
    assert line_rate == pytest.approx(100e9)
    for op in ("all_gather", "reduce_scatter"):
        per_link = formula_collective(op, 4 * GiB, V5P).busbw_bytes_per_s / 2
        assert per_link == pytest.approx(92e9, rel=0.10), PALLAS
        assert per_link < line_rate
    assert line_rate > 92e9


def test_ib_only_trays_are_bound_by_their_nics_however_many() -> None:
    # A physical invariant of the inter-rack baseline: with MNNVL off every byte between trays crosses a
    # tray's 4 NICs, so from 4 trays on (where NCCL's ring and NVLS tree both span the NICs) the busbw sits
    # at the 4 x 400 Gb/s of payload (4 x 48.7 = 194.9 GB/s), not at the NVLink rate, and does not grow
    # with the tray count (Azure's ~200 GB/s holds for any number of racks)
    bound = 4 * gb300_trays(4).nic_effective_bytes_per_s
    rates = [
        formula_collective("all_reduce", 16 * GiB, gb300_trays(n)).busbw_bytes_per_s for n in (4, 18, 36)
    ]
    assert all(r <= bound * (1 + 1e-9) for r in rates), rates
    assert min(rates) == pytest.approx(bound, rel=0.01)


def test_a_single_gpu_pair_across_alps_nodes_is_one_nic() -> None:
    # nccl-tests #369's 2 x 1 GH200: the ring's every byte crosses one 200 Gb/s Slingshot NIC a node, so the
    # busbw never passes the NIC's 25 GB/s line rate; the measured 22.87 GB/s at 128 MiB sits under it too
    r = formula_collective("all_reduce", GiB, ALPS, **dict(ALPS_2))
    assert r.busbw_bytes_per_s < 25e9
    assert POINTS["nccl-tests 369 GH200 2x1 128 MiB"].busbw < 25e9


def test_a_miss_gives_both_figures_and_its_gap() -> None:
    # the earlier rounds' rule: "measured vs predicted", and the gap in per cent or why none is asserted
    assert [key for key, why in MISSED.items() if not _gives_its_gap(why)] == []


#: Public figures the model misses (measured, predicted, what is missing); not asserted.
MISSED = {
    "OKE GB200 2 trays MNNVL, all_reduce 8 B-2 MiB (NCCL 2.26.6)": (
        'time "8 ... 21.57" / "1024 ... 27.39" / "524288 ... 30.86" / "2097152 ... 35.89" us vs 15.00 / 15.31'
        " / 18.25 / 28.01 (ring/LL over the 8 ranks' NVLink, NCCL's tuning-table latencies): -30 / -44 / -41 "
        "/ -22 %. The measured floor (~21.6 us, growing to ~31 us by 512 KiB while the model stays flat) is "
        "that of a call crossing the NVSwitch trays between two compute trays (our reading); NCCL prices an "
        "MNNVL domain as one node with NVLink latencies, and no public figure gives the cross-tray hop, so "
        f"none is added ({OKE})"
    ),
    "OKE GB200 2 trays MNNVL, all_reduce 32 and 64 MiB": (
        'busbw "33554432 ... 368.17" and "67108864 ... 442.59" vs 442.5 / 574.3 (NVLS/Simple): +20 / +30 %. '
        "The model's NVLS reaches its plateau by 128 MiB through its fill term alone; the sweep climbs more "
        "slowly between 16 and 128 MiB (NCCL's NVLS chunking on 8 ranks of 2 trays, or a ring/NVLS switch the"
        f" log does not print); the 128 MiB row is back to +0.8 % ({OKE})"
    ),
    "CSCS GH200 2x4, all_reduce 16 and 32 B": (
        'time "16 ... 17.65" / "32 ... 17.54" us vs 20.41 / 20.43 (tree/LL): +15.7 / +16.5 %, just past the '
        "bar; the 8 B and 64 B-2 KiB rows are within it. The model's tree/LL floor over Slingshot is 2-3 us "
        f"high ({CSCS_DOCS})"
    ),
    "CSCS GH200 2x4, all_reduce 16 KiB-32 MiB": (
        'time "16384 ... 37.29" / "32768 ... 39.61" / "65536 ... 61.03" / "1048576 ... 164.3" / "8388608 '
        '... 344.5" / "33554432 ... 686.5" us vs 31.70 / 31.70 / 38.10 / 68.81 / 172.0 / 552.9: -15.0 / -20 '
        "/ -38 / -58 / -50 / -19 %. The model carries the cxi provider's rendezvous (one 3.25 us round trip "
        "a network step past libfabric 1.22's 4097 B eager limit: osu_latency on Alps, transports.yaml "
        "slingshot-cxi), which brings 4 and 8 KiB within the bar (asserted; 16 KiB sits on it); from 64 KiB "
        "the log runs 20-170 us slower still. CSCS's own tuner file runs tree/Simple at every size to 4 MiB "
        "and its env file turns LL128 off on Slingshot (cscs-docs nccl-assets, nccl_env_vars): LL and LL128 "
        "through the plugin cost more per step than NCCL's tables, by an amount no public figure sizes. At "
        f"64 and 128 MiB the bandwidth term dominates and the rows are within 2.8 % ({CSCS_DOCS})"
    ),
    "CSCS GH200 2x4 without the aws-ofi-nccl hook (NCCL's socket transport)": (
        'busbw "134217728 ... 43293 3.10 5.43" vs no prediction: the catalogue has no TCP-socket transport '
        f"over Slingshot's Ethernet personality; not asserted ({CSCS_DOCS})"
    ),
    "nccl-tests 369 GH200 2x1, all_reduce 64 KiB and 16 MiB": (
        'time "65536 ... 45.91" us vs 22.02 (-52 %); busbw "16777216 ... 18.83" vs 22.3 (+19 %): the same '
        "mid-size cost as the Alps 2 x 4 rows, beyond the rendezvous round trip the model carries (64 KiB's "
        "8192 LL wire bytes a step are under the newest libfabric's 18433 B eager limit). The run's 1 MiB "
        "row reports #wrong 96 (the "
        f"reporter's freshly built libfabric); the rows used have #wrong 0 ({NT369})"
    ),
    "cscs-reframe-tests, MI300A (Alps Beverin) RCCL all_reduce / sendrecv 1 GiB on 2 nodes": (
        "150 GB/s +-10 % / 24 GB/s +-5 % (the same references as GH200; RCCLTestsCE, rocm6.3.4, "
        "NCCL_MIN_NCHANNELS=32 for fewer than 8 GPUs) vs no prediction: the catalogue has no MI300A (4 APUs a"
        f" node on Infinity Fabric, one Slingshot NIC each); not asserted ({REFRAME})"
    ),
    "rapidsmpf #833, NCCL all-to-all on 64 GPUs of a GB200 NVL72": (
        '"NCCL achieves ~40GiB/s on 64 GPUs" vs 639.4 GB/s busbw for an all_to_all over 64 ranks of the '
        "domain at 64 MiB (716.0 at 1 GiB); not asserted: the figure is read off the issue's plot of the "
        "project's own bench_comm at unstated partition sizes, and its metric is not nccl-tests' busbw "
        f"({RAPIDS833})"
    ),
}
