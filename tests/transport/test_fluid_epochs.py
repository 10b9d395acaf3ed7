"""The fluid model's quiet epochs (idle gaps and uncongested stretches taken in closed form) give the results
of stepping every ``dt``; and the FIFO completion time of a mouse behind a queue, by hand.

Tolerance, derived from the step: both runs put every event on the same grid of ``dt`` steps, so a flow's
end either agrees or differs by at least one step: ends must agree to well under one step (``dt / 2``).
An epoch holds a settled DCQCN sender's rate, which single steps let drift by at most ``_SETTLED`` (1e-6)
of the line rate: byte counts agree to that relative tolerance.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aifabric.transport import fluidnet
from aifabric.transport.fluidnet import FluidConfig, FluidResult, simulate_fluid
from aifabric.transport.scenarios import (
    Scenario,
    all_to_all,
    chained_ring,
    elephants_and_mice,
    incast,
    run_scenario,
    sprayed_permutation,
)

C400 = 50e9  # 400 Gb/s, bytes/s
DT = FluidConfig().dt_s
TRANSPORTS = ("ib", "roce-pfc", "roce-dcqcn")


def _both(
    monkeypatch: pytest.MonkeyPatch, *args: object, **kwargs: object
) -> tuple[FluidResult, FluidResult]:
    """(every step, with epochs) of one run; counts the single steps the second takes."""
    with monkeypatch.context() as m:
        m.setattr(fluidnet, "_JUMPS", False)
        fine = simulate_fluid(*args, **kwargs)  # type: ignore[arg-type]
    return fine, simulate_fluid(*args, **kwargs)  # type: ignore[arg-type]


def _same(fine: FluidResult, fast: FluidResult) -> None:
    assert fast.steps == fine.steps
    np.testing.assert_allclose(fast.flow_end_s, fine.flow_end_s, rtol=0, atol=DT / 2)
    np.testing.assert_allclose(fast.flow_start_s, fine.flow_start_s, rtol=0, atol=DT / 2)
    for name in ("link_pause_s", "link_peak_queue_bytes", "link_mean_queue_bytes", "trimmed_bytes"):
        np.testing.assert_allclose(
            getattr(fast, name), getattr(fine, name), rtol=1e-6, atol=1e-3, err_msg=name
        )
    assert fast.victims.tolist() == fine.victims.tolist()
    assert fast.congested_links.tolist() == fine.congested_links.tolist()
    if fine.trace is not None:
        assert fast.trace is not None
        np.testing.assert_allclose(fast.trace.time_s, fine.trace.time_s, rtol=1e-12)
        np.testing.assert_allclose(fast.trace.queue_bytes, fine.trace.queue_bytes, rtol=1e-6, atol=1e-3)
        rates = (fast.trace.throughput_bytes_per_s, fine.trace.throughput_bytes_per_s)
        np.testing.assert_allclose(*rates, rtol=1e-6, atol=1.0)
        flows = (fast.trace.flow_rate_bytes_per_s, fine.trace.flow_rate_bytes_per_s)
        np.testing.assert_allclose(*flows, rtol=1e-6, atol=1.0)


def _run_both(monkeypatch: pytest.MonkeyPatch, sc: Scenario, name: str) -> tuple[FluidResult, FluidResult]:
    cfg = FluidConfig(trace_link=sc.watch_link)
    with monkeypatch.context() as m:
        m.setattr(fluidnet, "_JUMPS", False)
        fine = run_scenario(sc, name, cfg)
    return fine, run_scenario(sc, name, cfg)


@pytest.mark.parametrize("name", [*TRANSPORTS, "receiver-driven", "uet-lossy"])
@pytest.mark.parametrize(
    "sc",
    [
        chained_ring(8, 6, 256 * 1024, C400),
        all_to_all(6, 256 * 1024, C400, serial=True),
        elephants_and_mice(3, 1e6, 3, 64e3, C400),  # congestion, then mice starting inside it
        incast(6, 300e3, C400),
        sprayed_permutation(4, 4, 4, 200e3, C400, seed=1),  # sub-flows share their NIC (a shared first hop)
    ],
    ids=["chained-ring", "serial-a2a", "mice", "incast", "sprayed"],
)
def test_epochs_give_the_single_step_results(
    monkeypatch: pytest.MonkeyPatch, sc: Scenario, name: str
) -> None:
    _same(*_run_both(monkeypatch, sc, name))


def test_desynchronised_chains_with_mixed_path_lengths(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chains over 1, 2 and 3 hops drift apart (their steps take different numbers of steps of dt): flows
    start and end inside epochs at different steps; a fourth flow with its own start crosses two chains'
    links without overloading them (half rate links carry one flow at a time)."""
    caps = [C400, C400, C400, C400, C400, 2 * C400]
    paths = [(0,)] * 4 + [(1, 2)] * 4 + [(3, 4, 5)] * 4 + [(1, 5)]
    sizes = [100e3, 70e3, 300e3, 55e3] * 3 + [20e3]
    after = [-1, 0, 1, 2, -1, 4, 5, 6, -1, 8, 9, 10, -1]
    start = [0.0] * 12 + [37.3e-6]
    for name in TRANSPORTS:
        fine, fast = _both(monkeypatch, paths, sizes, caps, name, after=after, start_s=start)
        _same(fine, fast)
        assert np.isfinite(fast.flow_end_s).all()
        with monkeypatch.context() as m:  # many flows waiting: the epoch is first bounded by the stepped ones
            m.setattr(fluidnet, "_FEW_PENDING", 0)
            _same(fine, simulate_fluid(paths, sizes, caps, name, after=after, start_s=start))


@settings(max_examples=15, deadline=None)
@given(
    hosts=st.integers(2, 5),
    steps=st.integers(1, 4),
    kib=st.lists(st.integers(1, 600), min_size=1, max_size=4),
    late=st.floats(0.0, 40e-6),
    name=st.sampled_from(TRANSPORTS),
)
def test_random_chains_match_single_steps(
    hosts: int, steps: int, kib: list[int], late: float, name: str
) -> None:
    """Any ring-like chain on one switch (sizes from 1 KiB, below one step's bytes, to 600 KiB; host 0
    starting late): the same as stepping every dt (property; monkeypatch cannot be used with given)."""
    sc = chained_ring(hosts, steps, 1024.0, C400)
    sizes = np.resize(np.array(kib, dtype=float) * 1024, len(sc.paths))
    start = np.where(np.arange(len(sc.paths)) == 0, late, 0.0)
    saved = fluidnet._JUMPS
    try:
        fluidnet._JUMPS = False
        fine = simulate_fluid(sc.paths, sizes, sc.capacity_bytes_per_s, name, start_s=start, after=sc.after)
    finally:
        fluidnet._JUMPS = saved
    fast = simulate_fluid(sc.paths, sizes, sc.capacity_bytes_per_s, name, start_s=start, after=sc.after)
    _same(fine, fast)


def test_a_chained_ring_takes_almost_no_single_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """A chained ring on a non-blocking switch never queues: it runs as epochs (a count of the steps the
    model takes one by one, not a wall-clock figure)."""
    taken = []
    fine_step = fluidnet._fine_step

    def counting(run: object, fl: object) -> None:
        taken.append(1)
        fine_step(run, fl)  # type: ignore[arg-type]

    monkeypatch.setattr(fluidnet, "_fine_step", counting)
    res = run_scenario(chained_ring(16, 31, 256 * 1024, C400), "roce-dcqcn")
    # by hand: a step sends 256 KiB at 50 GB/s in 11 steps of dt (10.49 rounded up), one more crosses the
    # switch: it ends 6 us after its start; the next starts 12 us (the ACK) later, on the grid of dt (a
    # start that lands on a step boundary in floating point may slip by one step)
    assert 31 * 18e-6 - 12e-6 <= res.makespan_s <= 31 * 18e-6 - 12e-6 + 30 * DT
    assert len(taken) < 0.02 * res.steps


def test_a_mouse_behind_a_growing_queue_waits_its_sojourn_in_fifo() -> None:
    """Two 2 MB elephants at line rate into one port of the same rate, no pause (XOFF above anything
    queued): the port's queue grows at C, holding C x t bytes beyond the step in transit. A 64 KB mouse
    from a third host starts at 20.25 us, hence in the step at 20.5 us: by hand it waits 50e9 x 20.5e-6 =
    1.025 MB / C = 20.5 us (the sojourn), then its own bytes take 64e3 / 50e9 = 1.28 us: FIFO FCT 21.78 us.
    The fluid FIFO, which drains the port in proportion to queued bytes, makes it ~3x longer (an upper
    bound)."""
    cfg = FluidConfig(pfc_xoff_bytes=1e9, pfc_xon_bytes=1e9)
    res = simulate_fluid(
        [(0, 3), (1, 3), (2, 3)],
        [2e6, 2e6, 64e3],
        [C400] * 4,
        "roce-pfc",
        start_s=[0, 0, 20.25e-6],
        config=cfg,
    )
    assert res.flow_sojourn_s[2] == pytest.approx(20.5e-6, rel=1e-9)
    assert res.fifo_fct_s[2] == pytest.approx(21.78e-6, rel=1e-9)
    assert res.flow_sojourn_s[:2].tolist() == [0.0, 0.0]  # the elephants met an empty port
    fluid_fct = res.flow_end_s[2] - res.flow_start_s[2]
    assert fluid_fct > 2 * res.fifo_fct_s[2]


@pytest.mark.parametrize("name", [*TRANSPORTS, "receiver-driven", "uet-lossy", "uet-rccc"])
def test_per_flow_round_trips_match_single_steps(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """Each flow with its own base RTT (0.7 to 13 us, as paths of 2 to 6 hops and the 12 us default give):
    a chained ring and an incast, every history read back by its own flow's delay; epochs and single steps
    agree (module tolerance)."""
    for sc in (chained_ring(6, 5, 256 * 1024, C400), incast(8, 64 * 1024, C400)):
        rtt = np.resize([0.7e-6, 13e-6, 2.1e-6, 4.4e-6], len(sc.paths))
        args = (sc.paths, sc.bytes_per_flow, sc.capacity_bytes_per_s, name)
        fine, fast = _both(monkeypatch, *args, after=sc.after, rtt_s=rtt)
        _same(fine, fast)
        assert np.isfinite(fast.flow_end_s).all()
