"""NVLS all_gather / reduce_scatter on one NVSwitch domain (NCCL 2.19.1 on): the NVSwitch multicasts or
reduces, so the busy direction of each GPU's NVLink carries S instead of the ring's (n-1)/n S.

Sources: NVIDIA/nccl #1083 and #1506 (the maintainer: "NVLS: Send S/N, Receive S" for all_gather, "Send S,
Receive S/N" for reduce_scatter; "NVLink SHARP does not promise a bandwidth improvement over point-to-point
based operations for allgather and reduce scatter"); tuning.cc / enqueue.cc of the releases named.
"""

from __future__ import annotations

import pytest

from aifabric.catalog.nccl import nccl_release, nvls_gather_tuner_algbw
from aifabric.cluster.presets import preset
from aifabric.collectives.algorithms import ALGORITHMS, Algorithm
from aifabric.collectives.communicator import Communicator
from aifabric.collectives.nvls import nvls_gather_scatter_cost, nvls_gather_tuner_price
from aifabric.collectives.ops import Collective
from aifabric.collectives.tiers import Protocol, tier_model
from aifabric.engines.formula import formula_collective

MiB, GiB = 2**20, 2**30
NODE = preset("h100-ib-2node", nodes=1)  # 8 x H100 on NVSwitch, NVLink 370.8 GB/s per direction
GATHER_SCATTER = ("all_gather", "reduce_scatter")
NVLS = {"NCCL_ALGO": "NVLS"}


@pytest.mark.parametrize(
    ("version", "gpus", "gbps"),
    [
        # NVLS graph on 8 x H100: 8 channels x 40 GB/s (search.cc, catalog.nccl.nvls_search); 4 GPUs: 4 x 60
        ("2.18.3", 8, 0.0),  # tuning.cc 2.18: all_gather / reduce_scatter run ring only
        ("2.19.3", 8, 8 * 40 * 5 / 6),  # busBw x 5/6, the ratio every NVLS collective got
        ("2.23.4", 8, 8 * 40),  # the busBw-to-algBw ratio skipped for non-ring all_gather / reduce_scatter
        ("2.27.3", 8, 8 * 40),
        ("2.29.2", 8, 8 * 40 * 0.85 * 7 / 8 * 7 / 8),  # bwIntra e (nc-1)/nc (ppn-1)/ppn, no ratio
        ("2.29.2", 4, 4 * 60 * 0.85 * 3 / 4 * 3 / 4),
    ],
)
def test_tuner_price_follows_each_release(version: str, gpus: int, gbps: float) -> None:
    price = nvls_gather_tuner_algbw(nccl_release(version), "hopper", gpu_gbps=370.8, local_gpus=gpus)
    assert price == pytest.approx(gbps, rel=1e-9)


@pytest.mark.parametrize("version", ["2.19.3", "2.23.4", "2.27.3", "2.29.2"])
@pytest.mark.parametrize("gpus", [4, 8])
def test_the_rings_price_wins_on_default_channels(version: str, gpus: int) -> None:
    # Why the engine leaves NVLS out of the pick unless asked (AlgorithmSpec.asked_only): NCCL's tuner
    # prices the ring's all_gather at its busBw x n/(n-1), 370.8 x 8/7 = 423.8 GB/s (4 GPUs: 494.4), above
    # every release's NVLS price (at most 320), and charges NVLS the larger latency (25 us against the
    # ring's base + (n-1) hops), so NCCL runs the ring at every size (nccl #1670: "NCCL prefers using the
    # ring algorithm over NVLS for all-gather and reduce-scatter").
    tm = tier_model(NODE, nccl_version=version)
    ring_price = tm.intra_bytes_per_s * gpus / (gpus - 1)
    assert nvls_gather_tuner_price(tm, gpus) < 0.8 * ring_price


def test_nccl_1506_nvls_all_gather_runs_when_asked_and_the_ring_otherwise() -> None:
    # nccl #1506 (8 x H100, 1 GiB): NVLS all_gather 300 GB/s busbw under NCCL_ALGO=NVLS, the ring 350 by
    # default (both asserted in tests/engines/test_cases_public_node2.py): NVLS runs where asked, and the
    # ring is NCCL's pick.
    assert formula_collective("all_gather", GiB, NODE, env=NVLS).algorithm == "nvls"
    assert formula_collective("all_gather", GiB, NODE).algorithm == "ring"


@pytest.mark.parametrize("op", GATHER_SCATTER)
@pytest.mark.parametrize("size", [64 * 2**10, MiB, 64 * MiB, GiB, 8 * GiB])
def test_nvls_never_beats_the_ring_on_one_switch(op: str, size: int) -> None:
    # S on the busy direction against the ring's (n-1)/n S, at NCCL's NVLS efficiency (0.85) against the
    # ring's whole NVLink, and a 25 us latency against the ring's few us: never faster (Sylvain Jeaugey,
    # nccl #1083: "the total operation time will be limited by the largest size which is higher with NVLS").
    nvls = formula_collective(op, size, NODE, env=NVLS)
    ring = formula_collective(op, size, NODE, env={"NCCL_ALGO": "Ring"})
    assert nvls.time_s > ring.time_s


def test_all_gather_and_reduce_scatter_move_the_same_bytes() -> None:
    # all_gather receives S, reduce_scatter sends S: the same time (nccl #1083's byte counts).
    comm, tm = Communicator.contiguous(NODE), tier_model(NODE)
    ag, rs = (
        nvls_gather_scatter_cost(op, Protocol.SIMPLE, GiB, comm, tm)
        for op in (Collective.ALL_GATHER, Collective.REDUCE_SCATTER)
    )
    assert ag is not None and rs is not None
    assert ag.time_s == rs.time_s


def test_line_rate_is_the_nvlink_itself() -> None:
    # efficiency="line_rate": no latency, no NVLS efficiency: T = S / B_i with NVLink 4's 450 GB/s per
    # direction (18 links x 25 GB/s), busbw = B_i (n-1)/n.
    r = formula_collective("all_gather", GiB, NODE, env=NVLS, efficiency="line_rate")
    assert tier_model(NODE, efficiency="line_rate").intra_bytes_per_s == pytest.approx(450e9)
    assert r.time_s == pytest.approx(GiB / 450e9, rel=1e-9)


def test_no_nvls_gather_across_nodes_above_the_arity_or_before_2_19() -> None:
    # tuning.cc zeroes NVLS all_gather / reduce_scatter across nodes without CollNet's iallgather; 2.18
    # costs them on the ring only (its "Never disable ring for non-allreduce operations" runs the ring).
    comm, tm = Communicator.contiguous(NODE), tier_model(NODE, nccl_version="2.18.3")
    assert nvls_gather_scatter_cost(Collective.ALL_GATHER, Protocol.SIMPLE, GiB, comm, tm) is None
    assert formula_collective("all_gather", GiB, NODE, env=NVLS, nccl_version="2.18.3").algorithm == "ring"
    two = preset("h100-ib-2node")
    comm2 = Communicator.contiguous(two)
    assert (
        nvls_gather_scatter_cost(Collective.ALL_GATHER, Protocol.SIMPLE, GiB, comm2, tier_model(two)) is None
    )


def test_the_registry_times_it_only_when_asked() -> None:
    entry = ALGORITHMS[Algorithm.NVLS]
    assert {Collective.ALL_GATHER, Collective.REDUCE_SCATTER} <= entry.ops
    assert entry.asked_only == frozenset({Collective.ALL_GATHER, Collective.REDUCE_SCATTER})
    for op in GATHER_SCATTER:
        for size in (MiB, 64 * MiB, GiB):
            assert formula_collective(op, size, NODE).algorithm == "ring"
