"""Folded all-to-alls (engines.fabric.fold_transfers): PXN transfers split at their relay and identical
transfers counted once give the engines the same link bytes and times as the per-pair transfers, and
8x fewer transfers on DGX H100 nodes (issue 12, "Speed": the global all-to-all). Uniform all-to-alls
routed from their ranks (engines.allpairs), without their n (n - 1) pairs, give the same rates, times,
link bytes and peak utilisation as the pair-by-pair fold, and a global all-to-all of 4,096 GPUs runs
within 1 GiB."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from tests.clusters import small_clos

from aifabric.budget import set_memory_limit
from aifabric.cluster.presets import preset
from aifabric.cluster.topology import Topology, build_topology
from aifabric.collectives.algorithms import build_plan
from aifabric.collectives.plan import AllPairsStage, CommPlan, Stage
from aifabric.engines.allpairs import all_pairs_columns, all_pairs_entries
from aifabric.engines.fabric import (
    all_pairs_bytes,
    fold_transfers,
    ideal_time,
    link_capacity,
    simulate_plans,
)
from aifabric.engines.flowsim import simulate_transfers
from aifabric.engines.routing import route, spray_groups
from aifabric.errors import ConfigError

FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def all_to_alls(draw: st.DrawFn) -> tuple[Topology, list[CommPlan]]:
    """One or two concurrent direct all-to-alls on random GPU subsets of a small Clos."""
    topo = small_clos(
        8,
        draw(st.sampled_from([2, 3])),
        draw(st.sampled_from([2, 4, 8])),
        draw(st.sampled_from([1, 2])),
        draw(st.booleans()),
        draw(st.sampled_from([1.0, 2.0])),
    )
    assume(topo is not None)
    assert topo is not None
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    plans = []
    for j in range(draw(st.integers(1, 2))):
        n = draw(st.integers(2, min(24, topo.spec.n_gpus)))
        gpus = np.sort(rng.choice(topo.spec.n_gpus, n, replace=False))
        size = float(draw(st.sampled_from([1e6, 3e6])))
        plan = build_plan("all_to_all", size, topo.spec, gpus, algorithm="direct")
        plans.append(dataclasses.replace(plan, job=f"a2a{j}"))
    return topo, plans


def _per_pair(topo: Topology, plans: list[CommPlan]) -> tuple[np.ndarray, np.ndarray]:
    """Reference without folding: every pair routed (spray, PXN), one flow group per job; returns the
    job times (plus each plan's latency, as simulate_plans charges it) and the link bytes."""
    src = np.concatenate([p.stages[0].src for p in plans])
    dst = np.concatenate([p.stages[0].dst for p in plans])
    byt = np.concatenate([p.stages[0].bytes_ for p in plans])
    job = np.concatenate([np.full(p.stages[0].n_transfers, j) for j, p in enumerate(plans)])
    groups = spray_groups(topo)
    r = route(topo, src, dst, policy="spray", pxn=True, aggregate=groups is not None)
    cap = link_capacity(topo)
    res = simulate_transfers(
        byt[r.parent] * r.share,
        r.incidence,
        cap if groups is None else groups.capacity(cap),
        job=job[r.parent],
        group=np.zeros(r.parent.size, np.int64),
    )
    times = np.array([res.job_end_time_s(j) + (p.latency_s or 0.0) for j, p in enumerate(plans)])
    link_bytes = np.asarray(res.link_bytes)
    return times, (link_bytes if groups is None else groups.fold(link_bytes))


@FAST
@given(all_to_alls())
def test_folded_all_to_alls_give_the_per_pair_times_and_link_bytes(
    case: tuple[Topology, list[CommPlan]],
) -> None:
    topo, plans = case
    times, link_bytes = _per_pair(topo, plans)
    flow = simulate_plans(topo, plans, engine="flow", routing="spray", top=0)
    np.testing.assert_allclose(list(flow.job_time_s.values()), times, rtol=1e-9)
    np.testing.assert_allclose(flow.link_bytes, link_bytes, rtol=1e-9, atol=1e-6)
    links = simulate_plans(topo, plans, engine="links", routing="spray", top=0)
    np.testing.assert_allclose(links.link_bytes, link_bytes, rtol=1e-9, atol=1e-6)
    # no link above its capacity: the peak rate over each link is at most its capacity
    assert flow.link_peak_utilisation is not None
    assert (flow.link_peak_utilisation <= 1 + 1e-9).all()


def test_a_full_node_all_to_all_folds_to_nvlink_hops_and_one_transfer_per_rail() -> None:
    # 4 DGX H100 nodes (g = 8, N = 4, n = 32): N g (g-1) = 224 NVLink hops (count N = 4: one per
    # destination node plus the node's own pair) and N (N-1) g = 96 network transfers (count g = 8),
    # 320 instead of n (n-1) = 992; the counts add up to the per-pair hop uses (hand derivation).
    topo = small_clos(8, 2, 4, 1, True, 1.0)
    assert topo is not None
    plan = build_plan("all_to_all", 1e6, topo.spec, np.arange(32), algorithm="direct")
    st_ = plan.stages[0]
    n = st_.n_transfers
    fs = fold_transfers(
        topo, st_.src, st_.dst, st_.bytes_, st_.group, np.zeros(n, np.int64), np.ones(n, bool)
    )
    node_s, node_d = fs.src // 8, fs.dst // 8
    assert n == 992 and fs.src.size == 320
    assert (fs.count[node_s == node_d] == 4).all() and (node_s == node_d).sum() == 224
    assert (fs.count[node_s != node_d] == 8).all() and (node_s != node_d).sum() == 96
    assert (topo.rail_of(fs.src[node_s != node_d]) == topo.rail_of(fs.dst[node_s != node_d])).all()


def test_ecmp_is_not_folded() -> None:
    # per-flow hashing puts each pair on its own path, so folding would not be exact: under ECMP every
    # pair is routed as it is (link bytes of the per-pair routes, same hash seed)
    topo = small_clos(8, 2, 4, 1, True, 1.0)
    assert topo is not None
    plan = build_plan("all_to_all", 1e6, topo.spec, np.arange(32), algorithm="direct")
    st_ = plan.stages[0]
    r = route(topo, st_.src, st_.dst, policy="ecmp", seed=3, pxn=True)
    want = r.incidence @ (st_.bytes_[r.parent] * r.share)
    res = simulate_plans(topo, [plan], engine="links", routing="ecmp", seed=3, top=0)
    np.testing.assert_allclose(res.link_bytes, want, rtol=1e-12)


def _as_pairs(plan: CommPlan) -> CommPlan:
    """The plan with its all-pairs stages as pair arrays (the fold of engines.fabric.fold_transfers)."""
    stages = tuple(s.pairs if isinstance(s, AllPairsStage) else s for s in plan.stages)
    return dataclasses.replace(plan, stages=stages)


@FAST
@given(
    all_to_alls(),
    st.booleans(),
    st.booleans(),
    st.sampled_from(["spray", "ecmp", "qp", "pinning", "spray-blind"]),
)
def test_ranks_give_the_pair_by_pair_fold(
    case: tuple[Topology, list[CommPlan]], pxn: bool, with_ring: bool, routing: str
) -> None:
    # spray: from the ranks on spray groups; per-flow policies: pairs hashed in chunks and summed per leaf
    # pair, the same hashes (seed) as the unaggregated routes, so ECMP keeps its unevenness
    topo, plans = case
    assume(spray_groups(topo) is not None)
    plans = [dataclasses.replace(p, pxn=pxn) for p in plans]
    if with_ring:  # a pair stage of another job in the same stage: columns stay in member order
        ring = build_plan("all_reduce", 4e6, topo.spec, np.arange(topo.spec.n_gpus), algorithm="ring")
        plans.append(dataclasses.replace(ring, job="ring"))
    pairs = [_as_pairs(p) for p in plans]
    for engine in ("flow", "links"):
        got = simulate_plans(topo, plans, engine=engine, routing=routing, seed=11, top=1)
        want = simulate_plans(topo, pairs, engine=engine, routing=routing, seed=11, top=1)
        np.testing.assert_allclose(list(got.job_time_s.values()), list(want.job_time_s.values()), rtol=1e-9)
        np.testing.assert_allclose(got.link_bytes, want.link_bytes, rtol=1e-9, atol=1e-6)
        np.testing.assert_allclose(got.ideal_time_s, want.ideal_time_s, rtol=1e-9)
        if engine == "flow":
            assert got.link_peak_utilisation is not None and want.link_peak_utilisation is not None
            np.testing.assert_allclose(
                got.link_peak_utilisation, want.link_peak_utilisation, rtol=1e-9, atol=1e-12
            )
            assert (got.link_peak_utilisation <= 1 + 1e-9).all()  # no link over its capacity
    assert ideal_time(topo, plans) == pytest.approx(ideal_time(topo, pairs), rel=1e-9)


@FAST
@given(all_to_alls(), st.booleans())
def test_columns_sum_to_the_pair_routes(case: tuple[Topology, list[CommPlan]], pxn: bool) -> None:
    # the all-to-all is one flow group whose column (the load per unit of its rate, which sets its max-min
    # rate) is the sum of its pairs' columns; each pair carries the same bytes
    topo, plans = case
    groups = spray_groups(topo)
    assume(groups is not None)
    assert groups is not None
    stage = plans[0].stages[0]
    assert isinstance(stage, AllPairsStage)
    ref = route(topo, stage.src, stage.dst, policy="spray", pxn=pxn, aggregate=True).incidence
    cols = all_pairs_columns(topo, groups, stage.ranks, pxn=pxn).incidence
    np.testing.assert_allclose(cols.sum(axis=1), ref.sum(axis=1), rtol=1e-12, atol=1e-12)
    assert cols.nnz <= all_pairs_entries(topo, stage.ranks, pxn=pxn)


def test_full_dgx_nodes_load_by_hand() -> None:
    # 4 DGX H100 nodes (g = 8, N = 4, n = 32, b bytes per pair), PXN: each GPU's NVLink up-link carries its
    # g - 1 pairs inside the node and (g - 1)(N - 1) relay hops, N (g - 1) b in all; each NIC up-link carries
    # g pairs to each of the N - 1 ranks of its rail in other nodes, (n - g) b (hand derivation)
    topo = small_clos(8, 2, 4, 1, True, 1.0)
    assert topo is not None
    b = 1e6 / 32
    plan = build_plan("all_to_all", 1e6, topo.spec, np.arange(32), algorithm="direct")
    res = simulate_plans(topo, [plan], engine="links", routing="spray", top=0)
    gpus = np.arange(32)
    np.testing.assert_allclose(res.link_bytes[topo.gpu_up[gpus]], 4 * 7 * b, rtol=1e-12)
    np.testing.assert_allclose(res.link_bytes[topo.nic_up[0, gpus]], 24 * b, rtol=1e-12)
    np.testing.assert_allclose(res.link_bytes[topo.nic_down[0, gpus]], 24 * b, rtol=1e-12)


def test_pairs_are_built_only_when_read_and_in_direct_order() -> None:
    spec = preset("dgx-h100-superpod", nodes=2)
    stage = build_plan("all_to_all", 8e6, spec, np.array([3, 9, 12]), algorithm="direct").stages[0]
    assert isinstance(stage, AllPairsStage) and stage.n_transfers == 6 and "pairs" not in vars(stage)
    pairs = stage.pairs
    assert isinstance(pairs, Stage)
    assert pairs.src.tolist() == [3, 3, 9, 9, 12, 12] and pairs.dst.tolist() == [9, 12, 3, 12, 3, 9]
    assert (stage.bytes_ == 8e6 / 3).all() and stage.bytes_total == pytest.approx(6 * 8e6 / 3)


def test_a_global_all_to_all_of_4096_gpus_runs_within_1_gib() -> None:
    # its 16.8M pairs needed 5.3 GB folded pair by pair; from its ranks: 30,720 columns, ~0.2M entries
    spec = preset("dgx-h100-superpod", nodes=512, **{"scale_out.tiers": 3})
    topo = build_topology(spec)
    plan = build_plan("all_to_all", 2**26, spec, np.arange(4096), algorithm="direct")
    assert all_pairs_bytes(topo, np.arange(4096), pxn=True) < 0.1 * 2**30
    set_memory_limit("1GiB")
    try:
        res = simulate_plans(topo, [plan], engine="flow", routing="spray", seed=1, top=1)
        set_memory_limit("1MiB")  # the estimate follows the path: refused with its figure
        with pytest.raises(ConfigError, match=r"^ranks: routing 1 all_to_all stage\(s\) of 16,773,120 pairs"):
            simulate_plans(topo, [plan], engine="flow", routing="spray", seed=1)
    finally:
        set_memory_limit(None)
    # every NIC up-link carries (n - g) pairs of 64 MiB / n, at most its NCCL-scaled capacity
    nic = topo.nic_up[0, np.arange(4096)]
    np.testing.assert_allclose(res.link_bytes[nic], (4096 - 8) * 2**26 / 4096, rtol=1e-12)
    assert res.efficiency == pytest.approx(1.0, abs=1e-6)
