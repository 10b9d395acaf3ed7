"""Folded all-to-alls (engines.fabric.fold_transfers): PXN transfers split at their relay and identical
transfers counted once give the engines the same link bytes and times as the per-pair transfers, and
8x fewer transfers on DGX H100 nodes (issue 12, "Speed": the global all-to-all)."""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from aifabric.cluster.presets import preset
from aifabric.cluster.topology import Topology, build_topology
from aifabric.collectives.algorithms import build_plan
from aifabric.collectives.plan import CommPlan
from aifabric.engines.fabric import fold_transfers, link_capacity, simulate_plans
from aifabric.engines.flowsim import simulate_transfers
from aifabric.engines.routing import route, spray_groups
from aifabric.errors import ConfigError

FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@functools.lru_cache(maxsize=32)
def _topology(tiers: int, nodes: int, planes: int, rail: bool, over: float) -> Topology | None:
    overrides = {
        "scale_out.tiers": tiers,
        "scale_out.radix": 8,
        "scale_out.planes": planes,
        "scale_out.rail_optimized": rail,
        "scale_out.oversubscription": [1.0, over] if tiers == 3 else [over],
    }
    try:
        return build_topology(preset("dgx-h100-superpod", nodes=nodes, **overrides))
    except (ConfigError, ValueError):
        return None


@st.composite
def all_to_alls(draw: st.DrawFn) -> tuple[Topology, list[CommPlan]]:
    """One or two concurrent direct all-to-alls on random GPU subsets of a small Clos."""
    topo = _topology(
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
    topo = _topology(2, 4, 1, True, 1.0)
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
    topo = _topology(2, 4, 1, True, 1.0)
    assert topo is not None
    plan = build_plan("all_to_all", 1e6, topo.spec, np.arange(32), algorithm="direct")
    st_ = plan.stages[0]
    r = route(topo, st_.src, st_.dst, policy="ecmp", seed=3, pxn=True)
    want = r.incidence @ (st_.bytes_[r.parent] * r.share)
    res = simulate_plans(topo, [plan], engine="links", routing="ecmp", seed=3, top=0)
    np.testing.assert_allclose(res.link_bytes, want, rtol=1e-12)
