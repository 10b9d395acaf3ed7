"""Sprayed traffic aggregated on groups of equally loaded links (routing.SprayGroups) against per-path
spraying: the same incidence once folded, the same max-min rates, the same fluid completion times, and
no link above its capacity, on small random Clos fabrics (two and three tiers, one or two planes)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from tests.clusters import small_clos

from aifabric.cluster.presets import preset
from aifabric.cluster.topology import Topology, build_topology
from aifabric.collectives.traffic import pattern_plan
from aifabric.engines.fabric import link_capacity, routing_bytes, simulate_plans
from aifabric.engines.flowsim import simulate_transfers
from aifabric.engines.maxmin import max_min_rates
from aifabric.engines.routing import route, spray_groups

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def fabrics_and_pairs(draw: st.DrawFn) -> tuple[Topology, np.ndarray, np.ndarray]:
    topo = small_clos(
        draw(st.sampled_from([8, 16])),
        draw(st.sampled_from([2, 3])),
        draw(st.sampled_from([2, 4, 8, 16])),
        draw(st.sampled_from([1, 2])),
        draw(st.booleans()),
        draw(st.sampled_from([1.0, 2.0])),
    )
    assume(topo is not None)
    assert topo is not None
    n = topo.spec.n_gpus
    m = draw(st.integers(1, 60))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    src = rng.integers(0, n, m)
    dst = (src + rng.integers(1, n, m)) % n  # never src itself
    return topo, src, dst


@FAST
@given(fabrics_and_pairs())
def test_folded_group_incidence_is_the_per_path_incidence(
    case: tuple[Topology, np.ndarray, np.ndarray],
) -> None:
    topo, src, dst = case
    groups = spray_groups(topo)
    assume(groups is not None)
    paths = route(topo, src, dst, policy="spray")
    agg = route(topo, src, dst, policy="spray", aggregate=True)
    assert agg.groups is not None and agg.incidence.shape == (agg.groups.n_rows, paths.incidence.shape[1])
    folded = (agg.groups.fold_matrix() @ agg.incidence).toarray()
    np.testing.assert_allclose(folded, paths.incidence.toarray(), rtol=1e-12, atol=1e-15)
    assert agg.incidence.nnz <= paths.incidence.nnz


@FAST
@given(fabrics_and_pairs(), st.integers(0, 2**32 - 1))
def test_max_min_rates_agree_and_no_link_is_over_capacity(
    case: tuple[Topology, np.ndarray, np.ndarray], seed: int
) -> None:
    topo, src, dst = case
    paths = route(topo, src, dst, policy="spray")
    agg = route(topo, src, dst, policy="spray", aggregate=True)
    assume(agg.groups is not None)
    assert agg.groups is not None
    # unequal capacities inside groups too: a group's capacity is n_g x its slowest member
    cap = link_capacity(topo) * np.random.default_rng(seed).uniform(0.5, 1.5, topo.n_links)
    r_paths = max_min_rates(paths.incidence, cap)
    r_agg = max_min_rates(agg.incidence, agg.groups.capacity(cap))
    np.testing.assert_allclose(r_agg, r_paths, rtol=1e-9)
    load = agg.groups.fold(agg.incidence @ r_agg)
    assert (load <= cap * (1 + 1e-9)).all()


@FAST
@given(fabrics_and_pairs(), st.integers(0, 2**32 - 1))
def test_fluid_completion_times_agree(case: tuple[Topology, np.ndarray, np.ndarray], seed: int) -> None:
    topo, src, dst = case
    paths = route(topo, src, dst, policy="spray")
    agg = route(topo, src, dst, policy="spray", aggregate=True)
    assume(agg.groups is not None)
    assert agg.groups is not None
    size = np.random.default_rng(seed).uniform(1e5, 1e7, src.size)
    cap = link_capacity(topo)
    by_path = simulate_transfers(size, paths.incidence, cap)
    by_group = simulate_transfers(size, agg.incidence, agg.groups.capacity(cap))
    np.testing.assert_allclose(by_group.transfer_end_s, by_path.transfer_end_s, rtol=1e-9)
    np.testing.assert_allclose(agg.groups.fold(by_group.link_bytes), by_path.link_bytes, rtol=1e-9)


def test_a_failed_fabric_link_falls_back_to_per_path_spraying() -> None:
    topo = small_clos(16, 3, 16, 1, True, 1.0)
    assert topo is not None and topo.shape is not None and topo.shape.tiers == 3
    alive = np.ones(topo.n_links, bool)
    assert spray_groups(topo, alive) is not None  # nothing failed
    alive[topo.leaf_uplinks[0, 0, 0]] = False
    assert spray_groups(topo, alive) is None
    r = route(
        topo,
        np.array([0]),
        np.array([topo.spec.n_gpus - 1]),
        policy="spray",
        link_alive=alive,
        aggregate=True,
    )
    assert r.groups is None and r.incidence.shape[0] == topo.n_links


def test_plans_report_per_link_bytes_and_the_flows_of_a_grouped_link() -> None:
    # Permutation on a three-tier fabric: the bytes of every link are those of per-path spraying, and the
    # most loaded fabric links are named with their flows, as without aggregation.
    topo = small_clos(16, 3, 16, 1, True, 1.0)
    assert topo is not None
    plan = pattern_plan("permutation", np.arange(topo.spec.n_gpus), 1e6, seed=3)
    res = simulate_plans(topo, [plan], engine="flow", routing="spray", top=400)
    st0 = plan.stages[0]
    paths = route(topo, st0.src, st0.dst, policy="spray", pxn=False)
    np.testing.assert_allclose(res.link_bytes, paths.incidence @ st0.bytes_, rtol=1e-12)
    fabric_top = [t for t in res.top_links if t.tier in ("leaf-spine", "spine-core") and t.utilisation > 0]
    assert fabric_top and all(t.flows for t in fabric_top)
    for t in fabric_top:  # the flows named are those per-path spraying puts on the link
        crossing = paths.incidence.tocsr()[t.link].indices
        assert (
            t.n_flows == np.unique(np.column_stack([st0.src[crossing], st0.dst[crossing]]), axis=0).shape[0]
        )
    assert (res.link_utilisation <= 1 + 1e-9).all()


def test_memory_estimate_of_aggregated_spraying_drops_the_path_terms() -> None:
    # 8,192 GPUs, three tiers: per-path spraying counts u1 u2 = 1,024 paths per cross-pod transfer.
    topo = build_topology(preset("dgx-h100-superpod", nodes=1024, **{"scale_out.tiers": 3}))
    per_path = routing_bytes(topo, 8192, 8192, 8192, routing="spray", engine="flow")
    grouped = routing_bytes(topo, 8192, 8192, 8192, routing="spray", engine="flow", aggregated=True)
    assert grouped == pytest.approx(1.5 * 8192 * (600 + 600))  # per transfer: 600 B + one row's 600 B
    assert per_path > 500 * grouped
