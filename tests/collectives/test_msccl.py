"""RCCL's MSCCL all-pairs all_reduce kernels (catalogue rccl_msccl.yaml; aifabric.collectives.msccl).

Facts: ``git show rocm-6.2.0:tools/msccl-algorithms/allreduce-allpairs-8n-ll-1pass-op.xml`` opens with
``<algo name="allreduce_pairs" proto="LL" nchannels="2" nchunksperloop="16" ngpus="8" coll="allreduce"
inplace="0" outofplace="1" minBytes="0" maxBytes="25599">``; ``-ll-32tb-op`` 25600-65536 B (LL, 256 chunks),
``-ll-64tb-op`` 65537-524287 B (LL, 512), ``-simple-op`` 524288-16777216 B (Simple, 512); rocm-6.1.0 (RCCL
2.18.6) ships the in-place files only. ``src/misc/msccl/msccl_lifecycle.cc:297-303``: a kernel runs when
``count % nChunksPerLoop == 0`` and ``minBytes <= nBytes <= maxBytes``.

Measured: hisohara/ai-scripts rccl-smoketest README (AAC8, 8 x MI300X, a process per GPU, rccl-tests
out-of-place column, RCCL release not printed): 1 KiB 13.67 us, 8 KiB 13.76, 64 KiB 14.25, 256 KiB 17.46.
The step between 64 KiB and 256 KiB sits where RCCL 2.20.5's out-of-place kernels change from 4 to 8
channels (-ll-32tb-op ends at 65536 B); 2.18.6 has no out-of-place kernel, so these points are timed under
2.20.5's tables, the only recorded release whose kernels serve that column.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from tests.clusters import mi300x_node

from aifabric.catalog.rccl import MscclKernel, msccl_kernels
from aifabric.cluster.presets import preset
from aifabric.collectives.communicator import Communicator
from aifabric.collectives.cost import Algorithm
from aifabric.collectives.msccl import msccl_allpairs_cost, msccl_kernel
from aifabric.collectives.ops import Collective
from aifabric.collectives.ring import ring_cost
from aifabric.collectives.tiers import Protocol, tier_model
from aifabric.discovery.compare import compare_nccl_tests
from aifabric.engines.formula import formula_collective

MI300X = mi300x_node()
KiB, MiB = 2**10, 2**20
HISO = "https://github.com/hisohara/ai-scripts/blob/main/training/01_rccl-smoketest/README.md"


@pytest.mark.parametrize(
    ("size", "kernel"),
    [
        (1 * KiB, "allreduce-allpairs-8n-ll-1pass-op.xml"),
        (25599 - 25599 % 64, "allreduce-allpairs-8n-ll-1pass-op.xml"),
        (64 * KiB, "allreduce-allpairs-8n-ll-32tb-op.xml"),
        (256 * KiB, "allreduce-allpairs-8n-ll-64tb-op.xml"),
        (8 * MiB, "allreduce-allpairs-8n-simple-op.xml"),
        (16 * MiB, "allreduce-allpairs-8n-simple-op.xml"),
    ],
)
def test_rccl_2_20_5_runs_the_kernel_whose_range_holds_the_size(size: int, kernel: str) -> None:
    k = msccl_kernel("2.20.5", 8, size)
    assert k is not None and k.file == kernel


def test_no_kernel_where_the_count_does_not_divide_or_the_size_is_beyond_16_mib() -> None:
    assert msccl_kernel("2.20.5", 8, 16) is None  # 4 floats, nchunksperloop 16
    assert msccl_kernel("2.20.5", 8, 32 * MiB) is None  # above -simple-op's maxBytes 16777216
    assert msccl_kernel("2.20.5", 4, 1 * KiB) is None  # the files are for 8 GPUs
    assert msccl_kernel("2.18.6", 8, 1 * KiB) is None  # rocm-6.1.0: in-place files only


def test_the_catalogue_records_the_xml_structure() -> None:
    def shape(k: MscclKernel) -> tuple[str, int, int, int, int]:
        return k.protocol, k.channels, k.chunks_per_loop, k.peer_chunks, k.steps

    one, *_, simple = (k for k in msccl_kernels("2.20.5") if k.out_of_place)
    assert shape(one) == ("LL", 2, 16, 16, 1)
    assert shape(simple) == ("Simple", 8, 512, 64, 2)


def test_two_step_kernel_moves_the_rings_bytes_in_two_hops() -> None:
    # Invariant: reduce-scatter + all-gather of eighths over the 7 links of each GPU carries 2 (n-1)/n S
    # per GPU, the ring's bytes at the ring's bus bandwidth; only the hop count differs (2 vs 14).
    tm = tier_model(MI300X, nccl_version="2.20.5")
    comm = Communicator.contiguous(MI300X)
    size = 8 * MiB
    ms = msccl_allpairs_cost(Collective.ALL_REDUCE, Protocol.SIMPLE, size, comm, tm)
    ring = ring_cost(Collective.ALL_REDUCE, Protocol.SIMPLE, size, comm, tm)
    assert ms is not None and ring is not None
    assert sum(ms.bandwidth_s.values()) == pytest.approx(size * 2 * 7 / 8 / 336e9, rel=1e-9)
    assert ms.latency_s == pytest.approx((17 + 2 * 3.6) * 1e-6)
    assert ring.latency_s == pytest.approx((17 + 14 * 3.6) * 1e-6)


@pytest.mark.parametrize(("size", "measured_us"), [(1 * KiB, 13.67), (8 * KiB, 13.76), (64 * KiB, 14.25),
                                                   (256 * KiB, 17.46)])  # fmt: skip
def test_hisohara_small_all_reduce_under_rccl_2_20_5_runs_msccl(size: int, measured_us: float) -> None:
    # HISO rows "1024 256 float sum -1 13.67", "8192 ... 13.76", "65536 ... 14.25", "262144 ... 17.46":
    # msccl/LL 12.89 / 13.48 / 14.97 / 19.06 us (-5.7 / -2.0 / +5.0 / +9.2 %); RCCL 2.20.5's ring/LL would
    # be 23.8 / 27.8 / 41.5 / 41.5 us.
    r = formula_collective("all_reduce", size, MI300X, nccl_version="2.20.5")
    assert (r.algorithm, r.protocol) == ("msccl", "LL")
    assert abs(r.time_s / (measured_us * 1e-6) - 1) <= 0.15


def test_msccl_preempts_the_tuner_only_where_rccl_runs_it() -> None:
    # 16 B: the count (4) does not divide 16 chunks, RCCL's tuner picks (ring); 2.18.6: no out-of-place
    # kernel; without a stated RCCL release NCCL's tables run and there is no MSCCL; NVIDIA GPUs never.
    assert formula_collective("all_reduce", 16, MI300X, nccl_version="2.20.5").algorithm == "ring"
    assert formula_collective("all_reduce", KiB, MI300X, nccl_version="2.18.6").algorithm == "ring"
    assert formula_collective("all_reduce", KiB, MI300X).algorithm != Algorithm.MSCCL.value
    h100 = preset("h100-ib-2node", nodes=1)
    assert formula_collective("all_reduce", KiB, h100, nccl_version="2.20.5").algorithm != "msccl"
    assert formula_collective("all_gather", KiB, MI300X, nccl_version="2.20.5").algorithm == "ring"


def test_one_process_driving_the_8_gpus_turns_msccl_off() -> None:
    # ROCm/rccl rocm-6.2.0 src/misc/msccl/msccl_lifecycle.cc:63-77 mscclCommCompatible: two ranks of one host
    # with the same pidHash -> false, and mscclSchedulerInit (164-166) loads no algorithm; rccl-tests -g 8
    # (case 31: "nThread 1 nGpus 8", all 8 rank lines "Pid 37300") is such a run. The tuner then picks.
    one_process = dataclasses.replace(Communicator.contiguous(MI300X), ranks_per_process=8)
    for size in (KiB, 64 * KiB, 8 * MiB):
        r = formula_collective("all_reduce", size, MI300X, one_process, nccl_version="2.20.5")
        assert r.algorithm != Algorithm.MSCCL.value
        per_gpu = formula_collective("all_reduce", size, MI300X, nccl_version="2.20.5")
        assert per_gpu.algorithm == Algorithm.MSCCL.value  # a process per GPU (mpirun -np 8 ... -g 1)


def test_the_log_of_an_rccl_tests_g8_run_gives_a_communicator_of_one_process() -> None:
    # case 31 (AMD ROCm blog): "# nThread 1 nGpus 8 ..." and 8 rank lines on one host with one pid
    text = (
        Path(__file__).parents[1] / "discovery" / "data" / "case_31_mi300x_single_node_rccl.txt"
    ).read_text()
    table = compare_nccl_tests(text).tables[0]
    assert table.table.ranks_per_process == 8
    assert table.comm.ranks_per_process == 8


def test_rccl_2_21_5_runs_msccl_for_ranks_of_one_process() -> None:
    # ROCm/rccl release-staging/rocm-rel-6.3 (RCCL 2.21.5) msccl_lifecycle.cc:31
    # RCCL_PARAM(MscclEnableSingleProcess, "MSCCL_ENABLE_SINGLE_PROCESS", 1) and lines 82-88: with it set,
    # mscclCommCompatible returns true, so one process driving 8 GPUs (-g 8) runs the all-pairs kernels;
    # its -ll-32tb-op kernel now starts at minBytes 0 (the 1pass files are gone): 1 KiB runs it
    one_process = dataclasses.replace(Communicator.contiguous(MI300X), ranks_per_process=8)
    for size in (KiB, 64 * KiB, 8 * MiB):
        r = formula_collective("all_reduce", size, MI300X, one_process, nccl_version="2.21.5")
        assert r.algorithm == Algorithm.MSCCL.value
    kernel = msccl_kernel("2.21.5", 8, KiB)
    assert kernel is not None and kernel.file == "allreduce-allpairs-8n-ll-32tb-op.xml"
