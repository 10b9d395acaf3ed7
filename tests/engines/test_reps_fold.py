"""Folding a transfer's sub-flows that share a path (issue 8, item 7: the cost of ``--routing reps``):
exact, so results are those of the unfolded sub-flows, and the memory estimate tracks REPS's real use."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import sparse

import aifabric.engines.fabric as fabric
from aifabric.cluster.presets import preset
from aifabric.cluster.topology import build_topology, cached_topology
from aifabric.collectives.traffic import pattern_plan
from aifabric.engines.fabric import BYTES_PER_REPS_SUBFLOW, routing_bytes, simulate_plans
from aifabric.engines.routing import ENTROPIES, equal_subflows


def test_equal_columns_of_one_transfer_fold_and_others_do_not():
    # columns 0, 1, 3 of transfer 0 cross links {0, 2}; column 2 crosses {1, 2}; column 4 (transfer 1)
    # crosses {0, 2} too but belongs to another transfer; column 5 has weight 0.5 on the same links
    rows = [0, 2, 0, 2, 1, 2, 0, 2, 0, 2, 0, 2]
    cols = [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]
    vals = [1.0] * 10 + [0.5, 0.5]
    inc = sparse.csc_matrix((vals, (rows, cols)), shape=(3, 6))
    keep, mult = equal_subflows(inc, np.array([0, 0, 0, 0, 1, 0]))
    assert keep.tolist() == [0, 2, 4, 5]
    assert mult.tolist() == [3.0, 1.0, 1.0, 1.0]


@settings(max_examples=30, derandomize=True, deadline=None)
@given(
    paths=st.lists(st.lists(st.integers(0, 5), min_size=1, max_size=3, unique=True), min_size=1, max_size=40),
    parents=st.data(),
)
def test_folded_columns_carry_the_same_load_per_transfer(paths, parents):
    # invariant: each transfer's load on each link (its columns weighted by multiplicity) is unchanged
    parent = np.array(parents.draw(st.lists(st.integers(0, 3), min_size=len(paths), max_size=len(paths))))
    rows = [r for p in paths for r in p]
    cols = [c for c, p in enumerate(paths) for _ in p]
    inc = sparse.csc_matrix((np.ones(len(rows)), (rows, cols)), shape=(6, len(paths)))
    keep, mult = equal_subflows(inc, parent)
    by_parent = sparse.csr_matrix((np.ones(parent.size), (np.arange(parent.size), parent)), (parent.size, 4))
    before = (inc @ by_parent).toarray()
    after = (inc[:, keep] @ sparse.diags(mult) @ by_parent[keep]).toarray()
    assert np.array_equal(before, after)
    assert mult.sum() == parent.size


@pytest.mark.parametrize("engine", ["flow", "links"])
def test_reps_results_are_those_of_the_unfolded_sub_flows(engine, monkeypatch):
    """A permutation and a uniform all-to-all on 8 nodes, REPS: completion time and link bytes identical
    with and without the fold (the fold only merges interchangeable columns)."""
    spec = preset("dgx-h100-superpod", nodes=8)
    topo = build_topology(spec)
    plans = [pattern_plan(p, np.arange(spec.n_gpus), 1e6, seed=1) for p in ("permutation", "uniform")]
    folded = [simulate_plans(topo, [p], engine=engine, routing="reps", seed=3) for p in plans]
    monkeypatch.setattr(
        fabric, "_fold_subflows", lambda r: (r.incidence.tocsc(), r.parent, r.share, np.ones(r.parent.size))
    )
    plain = [simulate_plans(topo, [p], engine=engine, routing="reps", seed=3) for p in plans]
    for a, b in zip(folded, plain, strict=True):
        assert a.time_s == pytest.approx(b.time_s, rel=1e-12)
        np.testing.assert_allclose(a.link_bytes, b.link_bytes, rtol=1e-12, atol=1e-6)
        assert [(x.link, x.n_flows) for x in a.top_links] == [(x.link, x.n_flows) for x in b.top_links]


def test_reps_estimate_is_per_entropy_value_not_per_path():
    # the 128-GPU all_to_all of the new-user trial: 16,256 pairs x 64 EVs x 320 B = 333 MB (measured peak
    # 197 MB, benchmarks/bench_reps.py); the former per-path formula gave 4.2 GB (21x)
    topo = cached_topology(preset("dgx-h100-superpod", nodes=16))
    t = 128 * 127
    est = routing_bytes(topo, t, 15360, 0, engine="flow", routing="reps")
    assert est == pytest.approx(BYTES_PER_REPS_SUBFLOW * ENTROPIES * t)
    assert est / 1e6 == pytest.approx(333, abs=1)
