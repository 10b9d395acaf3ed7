"""The algorithm registry: one declaration per algorithm, read by the engines and the CLI."""

import inspect
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aifabric.cli.collective import AlgoChoice, ProtoChoice
from aifabric.cluster.presets import preset
from aifabric.collectives.algorithms import (
    ALGORITHMS,
    Algorithm,
    applicable,
    build_plan,
    default_plan_algorithm,
    plan_algorithms,
)
from aifabric.collectives.communicator import Communicator
from aifabric.collectives.ops import Collective
from aifabric.collectives.tiers import Protocol, call_bandwidth, tier_model

SPEC = preset("h100-ib-2node")


def test_every_algorithm_is_declared_once_with_a_cost_function():
    assert set(ALGORITHMS) == set(Algorithm)
    for algo, entry in ALGORITHMS.items():
        assert entry.algorithm is algo
        assert entry.ops, algo
        assert callable(entry.cost), algo


def test_every_cost_function_documents_its_formula_with_a_doctest():
    for entry in ALGORITHMS.values():
        doc = inspect.getdoc(entry.cost) or ""
        assert ">>>" in doc, entry.algorithm
        assert re.search(r"T\s*=|algbw\s*=", doc), entry.algorithm


def test_every_algo_choice_of_the_cli_is_in_the_registry_and_has_a_cost_function():
    assert {c.value for c in AlgoChoice} == {a.value for a in ALGORITHMS}
    assert {c.value for c in ProtoChoice} == {p.value for p in Protocol}
    for choice in AlgoChoice:
        assert callable(ALGORITHMS[Algorithm(choice.value)].cost)


def test_every_collective_has_an_algorithm_and_a_default_plan():
    for op in Collective:
        assert any(op in e.ops for e in ALGORITHMS.values()), op
        assert ALGORITHMS[default_plan_algorithm(op)].plan is not None


def test_plans_exist_for_the_algorithms_that_declare_one():
    assert set(plan_algorithms()) == {
        Algorithm.RING,
        Algorithm.HIERARCHICAL,
        Algorithm.FLAT_RING,
        Algorithm.DIRECT,
        Algorithm.CHAIN,
        Algorithm.P2P,
    }
    gpus = np.arange(16)
    for algo in plan_algorithms():
        op = next(iter(sorted(ALGORITHMS[algo].ops, key=lambda o: o.value)))
        ranks = gpus[[0, 8]] if op is Collective.SEND_RECV else gpus
        plan = build_plan(op, 1e6, SPEC, ranks, algorithm=algo)
        assert plan.algorithm == algo.value and plan.stages
        assert plan.latency_s is not None and plan.latency_s > 0


def test_build_plan_refuses_an_algorithm_without_a_plan_or_for_another_collective():
    with pytest.raises(ValueError, match="no transfer-level decomposition"):
        build_plan("all_reduce", 1e6, SPEC, np.arange(16), algorithm="tree")
    with pytest.raises(ValueError, match="does not apply to all_to_all"):
        build_plan("all_to_all", 1e6, SPEC, np.arange(16), algorithm="ring")
    with pytest.raises(ValueError, match="algorithm: unknown 'butterfly'"):
        build_plan("all_reduce", 1e6, SPEC, np.arange(16), algorithm="butterfly")


def test_applicability_rules():
    tm = tier_model(SPEC)
    one = Communicator.contiguous(SPEC, 8)
    two = Communicator.contiguous(SPEC)
    names = lambda op, comm: [e.algorithm.value for e in applicable(op, comm, tm)]  # noqa: E731
    assert names(Collective.ALL_REDUCE, one) == ["ring", "nvls"]
    assert names(Collective.ALL_REDUCE, two) == ["ring", "hierarchical", "flat_ring", "tree", "nvls_tree"]
    assert names(Collective.ALL_TO_ALL, two) == ["direct"]
    assert names(Collective.BROADCAST, two) == ["chain"]
    spread = Communicator.from_gpus(SPEC, [0, 8])  # one GPU per node: NCCL's PAT applies (nNodes == nRanks)
    assert names(Collective.ALL_GATHER, spread) == ["ring", "flat_ring", "pat"]
    assert names(Collective.ALL_GATHER, two) == ["ring", "flat_ring"]
    tpu = preset("tpu-v5p-pod")
    on_torus = applicable(Collective.ALL_REDUCE, Communicator.contiguous(tpu), tier_model(tpu))
    assert [e.algorithm for e in on_torus] == [Algorithm.TORUS]  # exclusive: no NCCL algorithm on ICI


def test_call_bandwidth_runs_on_the_channels_of_the_size():
    # Two H100 nodes (2.30): 16 communicator channels (tests/catalog/test_nccl_search.py). Tree/LL at 4 KiB:
    # enqueue.cc gives floor(4096 / (512 threads x 8)) = 1 channel, which carries llMaxBw / 16 =
    # 39 GB/s / 16 = 2.4375 GB/s (llMaxBw: Intel CPU row, 2 nodes). At 64 KiB: 16 channels, the full 39.
    spec = preset("h100-ib-2node", nodes=2)
    tm = tier_model(spec)
    assert tm.channels == (24, 16)
    small = call_bandwidth(tm, "tree", "all_reduce", Protocol.LL, 4096, 16, 2, 89.8e9)
    full = call_bandwidth(tm, "tree", "all_reduce", Protocol.LL, 2**16, 16, 2, 39e9)
    assert (small, full) == (pytest.approx(39e9 / 16), pytest.approx(39e9))
    # Ring Simple has no per-channel cap in tuning.cc: unchanged at any size.
    assert call_bandwidth(tm, "ring", "all_reduce", Protocol.SIMPLE, 4096, 16, 2, 300e9) == 300e9
    # Textbook figures (line_rate) ignore NCCL's channels.
    lr = tier_model(spec, efficiency="line_rate")
    assert call_bandwidth(lr, "tree", "all_reduce", Protocol.LL, 4096, 16, 2, 89.8e9) == 89.8e9


@settings(derandomize=True, max_examples=40, deadline=None)
@given(size=st.integers(min_value=1, max_value=1 << 32), extra=st.integers(min_value=1, max_value=1 << 28))
def test_call_bandwidth_never_falls_with_size(size, extra):
    # More bytes never run on fewer channels, so the call's bandwidth never drops with size.
    tm = tier_model(preset("h100-ib-2node", nodes=4))
    for algo, proto in (("tree", Protocol.LL), ("tree", Protocol.LL128), ("ring", Protocol.LL)):
        a = call_bandwidth(tm, algo, "all_reduce", proto, size, 32, 4, 100e9)
        b = call_bandwidth(tm, algo, "all_reduce", proto, size + extra, 32, 4, 100e9)
        assert 0 < a <= b <= 100e9
