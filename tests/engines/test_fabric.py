"""The links and flow engines on real topologies: agreement, oversubscription, ECMP statistics, Meta's
story."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.clusters import leaf_of_radix

from aifabric.cluster.placement import place_jobs
from aifabric.cluster.presets import preset
from aifabric.cluster.topology import build_topology
from aifabric.collectives.algorithms import build_plan
from aifabric.collectives.plan import CommPlan, Stage
from aifabric.collectives.traffic import pattern_plan
from aifabric.engines.api import collective_time
from aifabric.engines.fabric import simulate_plans
from aifabric.engines.failures import parse_failures
from aifabric.engines.routing import route
from aifabric.errors import ConfigError, NoRoute


@pytest.mark.parametrize("algo", ["ring", "hierarchical"])
def test_three_engines_agree_on_non_blocking_fabric_with_spraying(algo):
    # 4 nodes x 8 H100, 32 GB: latency terms < 0.5 %, so the bandwidth models must agree within 1 %
    spec = preset("dgx-h100-superpod", nodes=4)
    t = {
        eng: collective_time(
            "all_reduce",
            32e9,
            spec,
            engine=eng,
            algorithm=algo,
            **({} if eng == "formula" else {"routing": "spray"}),
        ).time_s
        for eng in ("formula", "links", "flow")
    }
    assert t["links"] == pytest.approx(t["formula"], rel=0.01)
    assert t["flow"] == pytest.approx(t["formula"], rel=0.01)


def _cross_su_plan(spec, nodes_per_su):
    """Every GPU of SU 0 sends 1 GB to the same GPU index of SU 1: all traffic crosses the spines."""
    g = spec.gpus_per_node
    src = np.arange(nodes_per_su * g)
    dst = src + nodes_per_su * g
    return CommPlan(
        "permutation",
        "direct",
        1e9 * src.size,
        src.size,
        (Stage(src, dst, np.full(src.size, 1e9), np.arange(src.size), 1, "cross"),),
    )


def test_two_to_one_oversubscribed_spine_doubles_cross_spine_time():
    # Non-blocking: 32 down / 32 up per leaf; 2:1: 42 down / 21 up (by hand, see test_topology).
    # 42 flows over 21 uplinks get half a NIC each: twice the time of the NIC-bound transfer.
    times = {}
    for ratio, per_su in ((1, 32), (2, 42)):
        spec = preset("dgx-h100-superpod", nodes=2 * per_su, **{"scale_out.oversubscription": [ratio]})
        topo = build_topology(spec)
        res = simulate_plans(topo, [_cross_su_plan(spec, per_su)], engine="flow", routing="spray")
        times[ratio] = res.time_s
    nic = 50e9 * 0.983
    assert times[1] == pytest.approx(1e9 / nic, rel=1e-3)
    assert times[2] / times[1] == pytest.approx(2.0, rel=0.01)


def _bins_topology(n):
    """A leaf with n uplinks: 2 SUs of n nodes, radix 2n (n down, n up), on a switch that has the ports."""
    return build_topology(preset("dgx-h100-superpod", nodes=2 * n, **leaf_of_radix(2 * n)))


@pytest.mark.parametrize("n,expected", [(8, 2.59), (64, 3.95)])
def test_ecmp_max_load_is_balls_into_bins(n, expected):
    # fabric-models.md sec. 1.1 (Monte Carlo, 5,000 trials): E[max] 2.59 (8 on 8), 3.95 (64 on 64)
    topo = _bins_topology(n)
    src = np.arange(n) * 8  # rail 0 of the n nodes of SU 0
    dst = src + n * 8  # rail 0 of SU 1
    up = topo.leaf_uplinks[0, topo.leaf_of_gpu[0]]
    maxima = []
    for seed in range(600):
        r = route(topo, src, dst, policy="ecmp", seed=seed)
        load = r.incidence.tocsr()[up] @ r.share
        maxima.append(load.max())
    assert np.mean(maxima) == pytest.approx(expected, rel=0.05)


def test_more_queue_pairs_narrow_the_gap_to_spraying():
    topo = _bins_topology(64)
    src = np.arange(64) * 8
    dst = src + 64 * 8
    up = topo.leaf_uplinks[0, topo.leaf_of_gpu[0]]
    eff = []
    for k in (1, 2, 4, 8, 16):
        maxima = []
        for seed in range(60):
            r = route(topo, src, dst, policy="qp" if k > 1 else "ecmp", qps=k, seed=seed)
            maxima.append((r.incidence.tocsr()[up] @ r.share).max())
        eff.append(1.0 / np.mean(maxima))  # mean load is 1 flow per uplink
    assert all(b > a for a, b in zip(eff, eff[1:], strict=False))
    # fabric-models.md V3: 0.25 / 0.43 / 0.61 for k = 1 / 4 / 16 (64 on 64)
    assert eff[0] == pytest.approx(0.25, abs=0.03)
    assert eff[2] == pytest.approx(0.43, abs=0.04)
    assert eff[4] == pytest.approx(0.61, abs=0.05)
    spray = route(topo, src, dst, policy="spray")
    assert (spray.incidence.tocsr()[up] @ spray.share).max() == pytest.approx(1.0)


@pytest.fixture(scope="module")
def meta_fabric():
    spec = preset("dgx-h100-superpod", nodes=128)  # rail-optimised, two tiers, 1,024 GPUs
    return spec, build_topology(spec)


def _jobs_efficiency(spec, topo, placement, routing, seed=1, jobs=16):
    placed = place_jobs(topo, [spec.n_nodes // jobs] * jobs, policy=placement, seed=seed)
    plans = [build_plan("all_reduce", 4e9, spec, g) for g in placed]
    res = simulate_plans(topo, plans, engine="flow", routing=routing, seed=seed)
    return float(np.mean([res.ideal_time_s / t for t in res.job_time_s.values()]))


def test_meta_story_in_shape(meta_fabric):
    # Meta (SIGCOMM'24 / blog 2024-08-05): ECMP poor on low-entropy AI traffic; path pinning fine on whole
    # racks, > 30 % worse on fragmented allocations; QP scaling + better hash up to +40 % for AllReduce;
    # Ultra Ethernet sprays packets. Sixteen 64-GPU all-reduce jobs share the fabric.
    spec, topo = meta_fabric
    ecmp = _jobs_efficiency(spec, topo, "fragmented", "ecmp")
    qp = _jobs_efficiency(spec, topo, "fragmented", "qp")
    pin_packed = _jobs_efficiency(spec, topo, "packed", "pinning")
    pin_frag = _jobs_efficiency(spec, topo, "fragmented", "pinning")
    spray = _jobs_efficiency(spec, topo, "fragmented", "spray")
    assert ecmp < 0.5  # per-flow ECMP loses a large fraction of the bandwidth
    assert qp / ecmp > 1.3  # QP scaling wins back tens of percent
    assert pin_packed > 0.99  # pinning is fine on whole racks
    assert pin_frag < 0.7  # ... and loses more than 30 % fragmented
    assert spray > 0.99  # spraying reaches the ideal


def test_same_seed_same_result(meta_fabric):
    spec, topo = meta_fabric
    a = _jobs_efficiency(spec, topo, "fragmented", "ecmp", seed=5, jobs=8)
    b = _jobs_efficiency(spec, topo, "fragmented", "ecmp", seed=5, jobs=8)
    assert a == b


@settings(max_examples=25, deadline=None)
@given(
    pattern=st.sampled_from(["permutation", "incast", "uniform"]),
    routing=st.sampled_from(["ecmp", "pinning", "qp", "spray", "adaptive", "spray-blind", "reps"]),
    seed=st.integers(0, 1000),
    nodes=st.sampled_from([4, 8, 16]),
)
def test_no_link_carries_more_than_its_capacity(pattern, routing, seed, nodes):
    spec = preset("dgx-h100-superpod", nodes=nodes, **{"scale_out.radix": 16})
    topo = build_topology(spec)
    gpus = np.arange(spec.n_gpus)
    plan = pattern_plan(pattern, gpus, 1e6, seed=seed)
    res = simulate_plans(topo, [plan], engine="flow", routing=routing, seed=seed, compute_ideal=False)
    assert res.link_peak_utilisation.max() <= 1 + 1e-6


@settings(max_examples=12, deadline=None)
@given(
    engine=st.sampled_from(["links", "flow"]),
    routing=st.sampled_from(["ecmp", "spray", "reps"]),
    seed=st.integers(0, 1000),
)
def test_the_ideal_bounds_every_engine_and_routing_from_below(engine, routing, seed):
    # a packed permutation mixes NVSwitch pairs (2 x 600 ns) with NIC pairs (260 ns, 520 ns across
    # leaves): no engine finishes a stage before its busiest link's bytes after the shortest latency
    spec = preset("dgx-h100-superpod", nodes=8, **{"scale_out.radix": 16})
    plan = pattern_plan("permutation", np.arange(spec.n_gpus), 64e6, seed=seed)
    res = simulate_plans(build_topology(spec), [plan], engine=engine, routing=routing, seed=seed)
    assert res.time_s >= res.ideal_time_s * (1 - 1e-12)


def test_failures_reroute_and_disconnect_clearly(meta_fabric):
    spec, topo = meta_fabric
    alive = parse_failures(topo, "fabric:0.1", seed=2)
    plan = build_plan("all_reduce", 1e9, spec, np.arange(spec.n_gpus))
    res = simulate_plans(topo, [plan], engine="links", routing="ecmp", link_alive=alive)
    assert res.time_s >= res.ideal_time_s
    # a dead NIC cable disconnects its GPU: the error names the unreachable pair
    dead = parse_failures(topo, f"link:{int(topo.nic_up[0, 8])}")
    with pytest.raises(NoRoute, match=r"GPU \d+ cannot reach GPU \d+"):
        simulate_plans(topo, [plan], engine="flow", routing="ecmp", link_alive=dead)


def test_bad_names():
    topo = build_topology(preset("dgx-h100-superpod", nodes=4))
    with pytest.raises(ConfigError, match="routing.*'magic'"):
        route(topo, np.array([0]), np.array([9]), policy="magic")
    with pytest.raises(ConfigError, match="placement.*'scattered'"):
        place_jobs(topo, [2], policy="scattered")
    with pytest.raises(ConfigError, match="--fail"):
        parse_failures(topo, "spine:x")
    # "1.0" reads as every cable (a fraction) or one cable (a count): refused, not taken as one cable
    with pytest.raises(ConfigError, match=r"'fabric:1.0': a share is a fraction in \[0, 1\) or a percentage"):
        parse_failures(topo, "fabric:1.0")
    assert (~parse_failures(topo, "fabric:1")).sum() == 2  # one cable: its two directed links


@pytest.mark.parametrize("nodes", [16, 512])
def test_aggregated_ideal_equals_links_engine_with_spraying(nodes):
    # the per-switch aggregation of ideal_time is exact on a healthy Clos (two and three tiers)
    from aifabric.engines.fabric import ideal_time

    spec = preset("dgx-h100-superpod", nodes=nodes)
    topo = build_topology(spec)
    jobs = place_jobs(topo, [nodes // 4] * 4, policy="random", seed=4)
    plans = [build_plan("all_reduce", 1e9, spec, g) for g in jobs] + [
        pattern_plan("uniform", jobs[0][:32], 1e6)
    ]
    sprayed = simulate_plans(topo, plans, engine="links", routing="spray", compute_ideal=False).time_s
    assert ideal_time(topo, plans) == pytest.approx(sprayed, rel=1e-9)


def test_flow_engine_refuses_millions_of_independent_flows_with_advice():
    from aifabric.engines.fabric import MAX_FLOW_GROUPS

    spec = preset("dgx-h100-superpod", nodes=64)
    topo = build_topology(spec)
    plan = pattern_plan("uniform", np.arange(spec.n_gpus), 1e6)  # 512 x 511 flows, each its own group
    assert sum(s.n_transfers for s in plan.stages) > MAX_FLOW_GROUPS
    with pytest.raises(ConfigError, match="use --engine links"):
        simulate_plans(topo, [plan], engine="flow", routing="ecmp")
