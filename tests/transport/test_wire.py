"""``--transport`` over the flow engine's links: path decomposition, IB vs RoCE, refusals."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse

from aifabric.cluster.presets import preset
from aifabric.engines.api import collective_time
from aifabric.engines.routing import route
from aifabric.engines.scenario import run_scenario
from aifabric.errors import ConfigError
from aifabric.transport.wire import decompose_paths, fluid_work, run_transport

SPEC = preset("dgx-h100-superpod", nodes=4)  # 32 GPUs, 8 rails: non-blocking rail-optimised leaves


def test_sprayed_columns_decompose_into_whole_paths_of_total_weight_one() -> None:
    sc = run_scenario("permutation", 1e6, SPEC, engine="links", routing="spray")
    topo = sc.topology
    src = np.arange(0, 32, 3)
    dst = (src + 9) % 32
    r = route(topo, src, dst, policy="spray", seed=0)
    inc = r.incidence.tocsc()
    for c in range(inc.shape[1]):
        lo, hi = inc.indptr[c], inc.indptr[c + 1]
        paths = decompose_paths(inc.indices[lo:hi], inc.data[lo:hi], topo.link_src, topo.link_dst)
        assert sum(w for _, w in paths) == pytest.approx(1.0)
        for path, _ in paths:  # consecutive links meet at a node
            assert (topo.link_dst[path[:-1]] == topo.link_src[path[1:]]).all()


def test_ib_and_roce_agree_on_a_sprayed_permutation_and_differ_under_congestion() -> None:
    """Sprayed permutation on the non-blocking fabric: no queue, so credits and PFC never act and both
    transports take the same time (measured 83.0 us for 4 MB per flow, the max-min engine 81.9 us). Uniform
    random traffic with ECMP collides on links: PFC's XOFF/XON hysteresis and IB's credits throttle
    differently (measured 2.738 ms IB, whose credit buffer is floored at two steps of the fastest link, vs
    2.762 ms RoCE+PFC; max-min 2.523 ms)."""
    times, pauses = {}, {}
    for name in ("ib", "roce-pfc"):
        for pattern, routing in (("permutation", "spray"), ("uniform", "ecmp")):
            res = run_scenario(pattern, 4e6, SPEC, engine="flow", routing=routing, transport=name).result
            times[name, pattern] = res.time_s
            pauses[name, pattern] = float(res.meta["transport"].link_pause_s.sum())
    assert times["ib", "permutation"] == pytest.approx(times["roce-pfc", "permutation"], rel=1e-9)
    assert pauses["ib", "permutation"] == pauses["roce-pfc", "permutation"] == 0.0
    assert abs(times["ib", "uniform"] / times["roce-pfc", "uniform"] - 1) > 0.005
    assert pauses["ib", "uniform"] > 0 and pauses["roce-pfc", "uniform"] > 0
    maxmin = run_scenario("uniform", 4e6, SPEC, engine="flow", routing="ecmp").result.time_s
    assert min(times["ib", "uniform"], times["roce-pfc", "uniform"]) >= maxmin


def test_an_uncongested_collective_matches_the_max_min_engine() -> None:
    """A sprayed ring all-reduce meets no queue: the fluid model and max-min rates agree within 2 %."""
    flow = collective_time("all_reduce", 16e6, SPEC, engine="flow", routing="spray", algorithm="ring")
    fluid = collective_time(
        "all_reduce", 16e6, SPEC, engine="flow", routing="spray", algorithm="ring", transport="roce-pfc"
    )
    assert fluid.time_s == pytest.approx(flow.time_s, rel=0.02)
    assert "transport roce-pfc (fluid queue model)" in fluid.explanation


def test_engines_that_do_not_use_a_transport_refuse_it() -> None:
    with pytest.raises(ValueError, match="transport: the formula engine does not take"):
        collective_time("all_reduce", 1e6, SPEC, transport="ib")
    with pytest.raises(ValueError, match="transport: the links engine does not take"):
        collective_time("all_reduce", 1e6, SPEC, engine="links", transport="ib")
    with pytest.raises(ConfigError, match="transport: the links engine does not use"):
        run_scenario("permutation", 1e6, SPEC, engine="links", transport="ib")
    with pytest.raises(ConfigError, match="transport: unknown 'tcp'"):
        run_scenario("permutation", 1e6, SPEC, engine="flow", transport="tcp")


def _one_link_run(**kw: object) -> object:
    """1 MB over one 400 Gb/s link: 20 us alone, 40 steps of 0.5 us x 1 (flow, hop) entry."""
    inc = sparse.csc_matrix(np.ones((1, 1)))
    one = np.zeros(1, dtype=np.int64)
    return run_transport(
        "ib",
        inc,
        np.array([1e6]),
        np.array([50e9]),
        one,
        one + 1,
        job=one,
        stage=one,
        repeat=lambda j, k: 1,
        n_jobs=1,
        latency_s=np.array([0.6e-6]),
        **kw,  # type: ignore[arg-type]
    )


def test_fluid_work_is_steps_times_entries_and_a_run_above_the_limit_is_refused() -> None:
    # 2 MB on a 3-hop path at 50 GB/s: 40 us = 80 steps of 0.5 us, x 3 entries
    assert fluid_work([[0, 1, 2]], np.array([2e6]), np.full(3, 50e9), 0.5e-6) == 240
    with pytest.raises(ConfigError, match=r"about 40 step x \(flow, hop\) updates .* limit 39"):
        _one_link_run(max_work=39)


def test_a_transport_run_reports_progress_to_the_flow_engine_bar() -> None:
    seen: list[tuple[int, int]] = []
    _one_link_run(progress=lambda done, total: seen.append((done, total)))
    assert seen and seen[-1] == (40, 40)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
