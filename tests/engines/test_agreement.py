"""The formula and links engines agree on a non-blocking fabric (DESIGN.md, issue 8 item 5).

Both charge the same latency (the algorithm's NCCL per-step latencies, Simple protocol: the links engine
runs Simple transfers, so the formula engine is asked for Simple) and the bandwidth of the same transfers:
within 2 % for every algorithm that has a plan, at 1 KiB, 1 MiB and 1 GiB, 8 to 4,096 GPUs. The pairwise
all_to_all stops at 64 GPUs here: its plan has n^2 transfers (16.7M at 4,096 GPUs) and the links engine
routes each one (README, "Where the engines differ").
"""

import pytest

from aifabric.cluster.presets import preset
from aifabric.collectives.algorithms import ALGORITHMS, Algorithm, plan_algorithms
from aifabric.engines.api import collective_time

SIZES = (1024, 2**20, 2**30)
GPUS = (8, 64, 512, 4096)


def _op(algo: Algorithm):
    return sorted(ALGORITHMS[algo].ops, key=lambda o: o.value)[0]


def _cases():
    for algo in plan_algorithms():
        for n in GPUS:
            if algo is Algorithm.DIRECT and n > 64:
                continue
            if algo in (Algorithm.HIERARCHICAL, Algorithm.FLAT_RING) and n == 8:
                continue  # these need several domains
            yield pytest.param(algo, n, id=f"{algo.value}-{n}")


@pytest.mark.parametrize("algo,n", list(_cases()))
def test_formula_and_links_agree_within_2_percent(algo, n):
    spec = preset("dgx-h100-superpod", nodes=max(1, n // 8))
    op = _op(algo)
    ranks = [0, n - 1] if algo is Algorithm.P2P else n
    for size in SIZES:
        f = collective_time(op, size, spec, ranks=ranks, algorithm=algo, protocol="Simple")
        links = collective_time(op, size, spec, ranks=ranks, algorithm=algo, engine="links")
        assert links.time_s == pytest.approx(f.time_s, rel=0.02), (algo, n, size)


def test_4096_gpu_ring_latency_is_the_same_in_both_engines():
    # 512 nodes x 8: 2 x 4,095 ring steps, 2 x 511 across the network (NCCL tuning.cc, Simple):
    # 8.4 + (8,190 - 1,022) x 3.4 + 1,022 x 14 = 38,687.6 us at 1 KiB (no plateau factor below 64 B/chunk)
    spec = preset("dgx-h100-superpod", nodes=512)
    f = collective_time("all_reduce", 1024, spec, algorithm="ring", protocol="Simple")
    links = collective_time("all_reduce", 1024, spec, algorithm="ring", engine="links")
    assert f.latency_s * 1e6 == pytest.approx(8.4 + 7168 * 3.4 + 1022 * 14, rel=1e-9)
    assert links.time_s == pytest.approx(f.time_s, rel=0.02)


def test_fabric_says_when_nccl_would_run_an_algorithm_without_a_plan():
    # 2 x 8 H100 at 1 GiB: NCCL's tuner picks NVLS-tree (formula engine); the links engine runs a ring and
    # says so
    r = collective_time("all_reduce", 2**30, "h100-ib-2node", engine="links")
    assert r.algorithm == "ring"
    assert "NCCL's tuner would run nvls_tree here" in r.explanation


@pytest.mark.parametrize("algo", [Algorithm.RING, Algorithm.HIERARCHICAL])
@pytest.mark.parametrize("n", [16, 64])
def test_flow_engine_agrees_too(algo, n):
    # alone on a non-blocking fabric with spraying, max-min fair rates are the links engine's bound
    spec = preset("dgx-h100-superpod", nodes=n // 8)
    for size in SIZES:
        f = collective_time("all_reduce", size, spec, ranks=n, algorithm=algo, protocol="Simple")
        flow = collective_time("all_reduce", size, spec, ranks=n, algorithm=algo, engine="flow")
        assert flow.time_s == pytest.approx(f.time_s, rel=0.02), (algo, n, size)


def _other_ops():
    for algo in plan_algorithms():
        for op in sorted(ALGORITHMS[algo].ops, key=lambda o: o.value)[1:]:
            for n in GPUS:
                if algo is Algorithm.FLAT_RING and n == 8:
                    continue  # needs several domains
                yield pytest.param(algo, op, n, id=f"{algo.value}-{op.value}-{n}")


@pytest.mark.parametrize("algo,op,n", list(_other_ops()))
def test_every_collective_of_a_planned_algorithm_agrees_too(algo, op, n):
    # The test above runs each algorithm's first collective; its other ones (ring and flat_ring all_reduce
    # and reduce_scatter, chain reduce) are held to the same 2 % at the same sizes and GPU counts
    spec = preset("dgx-h100-superpod", nodes=max(1, n // 8))
    for size in SIZES:
        f = collective_time(op, size, spec, ranks=n, algorithm=algo, protocol="Simple")
        links = collective_time(op, size, spec, ranks=n, algorithm=algo, engine="links")
        assert links.time_s == pytest.approx(f.time_s, rel=0.02), (algo, op, n, size)
