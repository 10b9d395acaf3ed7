"""Chained (triggered) transfers in the fluid flow simulator: a ring whose every host chains its own
steps, a serial all-to-all (peer by peer), and the acknowledgement a chained step waits for.

Hand derivations: on a non-blocking star (one uplink and one downlink per host, all of capacity ``c``)
a step in which every host sends ``S`` to one other host, and receives from one, loads every link with
exactly one flow, so each flow runs at ``c`` and takes ``S / c``. A step starts ``L`` (start latency)
after it is triggered and triggers the next ``D`` (dependency delay: the acknowledgement's way back)
after it ends, so ``k`` chained steps take ``k (L + S / c) + (k - 1) D``.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import sparse
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.engines import flowsim
from aifabric.engines.flowsim import Simulation, simulate_transfers

CAP = 50e9  # 400 Gb/s, bytes/s
SIZE = 256 * 1024.0  # 256 KiB per ring neighbour (the chained ring)
LAT = 2e-6  # one way, s
ACK = 2e-6  # the acknowledgement's way back, s


def _star(src: np.ndarray, dst: np.ndarray, hosts: int) -> sparse.csc_matrix:
    """Incidence of transfers on a star: link h is host h's uplink, hosts + h its downlink."""
    m = src.size
    rows = np.concatenate([src, hosts + dst])
    cols = np.concatenate([np.arange(m), np.arange(m)])
    return sparse.csc_matrix((np.ones(2 * m), (rows, cols)), shape=(2 * hosts, m))


def test_chained_ring_of_128_hosts_255_steps() -> None:
    hosts, steps = 128, 255
    src = np.tile(np.arange(hosts), steps)
    dst = (src + 1) % hosts
    assert src.size == 32_640  # the triggered flows
    res = simulate_transfers(
        np.full(src.size, SIZE),
        _star(src, dst, hosts),
        np.full(2 * hosts, CAP),
        job=src,  # each host chains its own steps (htsim's send_done triggers)
        stage=np.repeat(np.arange(steps), hosts),
        start_latency_s=LAT,
        dependency_delay_s=ACK,
    )
    expected = steps * (LAT + SIZE / CAP) + (steps - 1) * ACK
    assert res.makespan_s == pytest.approx(expected, rel=1e-9)
    # the last step of every host ends together; every flow is alone on its two links, so rates are
    # updated locally at each event and no max-min solve runs at all
    assert res.job_end_s == pytest.approx(np.full(hosts, expected), rel=1e-9)
    assert res.n_rate_solves == 0 and res.n_local_updates > 0
    assert res.n_events <= 3 * steps + 1  # per step: triggered, starts moving (latency), ends


def test_serial_all_to_all_of_127_steps() -> None:
    hosts = 128
    shifts = np.arange(1, hosts)
    src = np.tile(np.arange(hosts), shifts.size)
    dst = (src + np.repeat(shifts, hosts)) % hosts  # step k: every host sends to the host k further on
    res = simulate_transfers(
        np.full(src.size, SIZE),
        _star(src, dst, hosts),
        np.full(2 * hosts, CAP),
        stage=np.repeat(shifts, hosts),  # one job: step k starts when step k - 1 is done everywhere
        start_latency_s=LAT,
        dependency_delay_s=ACK,
    )
    k = shifts.size
    assert res.makespan_s == pytest.approx(k * (LAT + SIZE / CAP) + (k - 1) * ACK, rel=1e-9)
    # each link carried one flow of every step
    assert res.link_bytes == pytest.approx(np.full(2 * hosts, k * SIZE))


def test_a_chained_step_waits_a_round_trip_not_a_one_way_latency() -> None:
    # 1 GB then 1 GB on a 1 GB/s link, 1 us each way: the second starts 1 us (the first one's ACK) after
    # the first ends, then moves 1 us later: 2 x (1 us + 1 s) + 1 us.
    res = simulate_transfers(
        [1e9, 1e9], np.ones((1, 2)), [1e9], stage=[0, 1], start_latency_s=1e-6, dependency_delay_s=1e-6
    )
    assert res.stage_span_s(0, 1)[0] == pytest.approx(1 + 2e-6, rel=1e-12)
    assert res.makespan_s == pytest.approx(2 * (1 + 1e-6) + 1e-6, rel=1e-12)
    one_way = simulate_transfers([1e9, 1e9], np.ones((1, 2)), [1e9], stage=[0, 1], start_latency_s=1e-6)
    assert res.makespan_s - one_way.makespan_s == pytest.approx(1e-6, rel=1e-9)


def test_stages_started_at_one_instant_share_one_event() -> None:
    # 64 one-transfer jobs of 3 chained stages each on private links: events at t = 0, 1, 2, 3 only
    jobs, stages = 64, 3
    job = np.repeat(np.arange(jobs), stages)
    stage = np.tile(np.arange(stages), jobs)
    a = sparse.csc_matrix((np.ones(job.size), (job, np.arange(job.size))), shape=(jobs, job.size))
    res = simulate_transfers(np.full(job.size, 1e9), a, np.full(jobs, 1e9), job=job, stage=stage)
    assert res.makespan_s == pytest.approx(3.0)
    assert res.n_events == stages + 1


def test_local_updates_equal_a_full_solve_when_paths_meet() -> None:
    # Two chains on a star; chain B's second step sends into the host chain A's steps send to, so
    # that event shares a link and needs a solve: both flows get half of the downlink.
    hosts = 4
    src, dst = np.array([0, 0, 1, 1]), np.array([2, 3, 3, 2])
    res = simulate_transfers(
        np.full(4, 1e9),
        _star(src, dst, hosts),
        np.full(2 * hosts, 1e9),
        job=[0, 0, 1, 1],
        stage=[0, 1, 0, 1],
    )
    # step 1 (t in [0, 1)): 0->2 and 1->3 alone on their links, 1 s each; step 2: 0->3 and 1->2, alone again
    assert res.transfer_end_s.tolist() == pytest.approx([1.0, 2.0, 1.0, 2.0])
    assert res.n_rate_solves == 0
    shared = simulate_transfers(
        np.full(4, 1e9),
        _star(np.array([0, 0, 1, 1]), np.array([2, 3, 3, 3]), hosts),
        np.full(2 * hosts, 1e9),
        job=[0, 0, 1, 1],
        stage=[0, 1, 0, 1],
    )
    # step 2: 0->3 and 1->3 share host 3's downlink: 0.5 GB/s each, 2 s
    assert shared.transfer_end_s.tolist() == pytest.approx([1.0, 3.0, 1.0, 3.0])
    assert shared.n_rate_solves >= 1


@pytest.mark.parametrize("delay", [-1e-6, float("nan"), float("inf")])
def test_bad_dependency_delay_is_refused(delay: float) -> None:
    with pytest.raises(ValueError, match="dependency_delay_s"):
        simulate_transfers([1.0], np.ones((1, 1)), [1.0], dependency_delay_s=delay)


def test_a_stage_waiting_for_itself_is_a_cycle() -> None:
    with pytest.raises(ValueError, match="cycle"):
        Simulation([1.0], np.ones((1, 1)), [1.0], stage_deps={(0, 0): [(0, 0)]})


def test_progress_reports_end_with_every_transfer_repetition_done(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(flowsim, "_PROGRESS_EVERY_S", 0.0)  # report at every event
    reports: list[tuple[int, int]] = []
    # 3 transfers: two in a stage repeated 4 times (fast-forwarded after the first), one after it
    res = Simulation(
        [1e9, 1e9, 1e9], np.eye(3), [1e9, 1e9, 1e9], stage=[0, 0, 1], stage_repeat={(0, 0): 4}
    ).run(lambda done, total: reports.append((done, total)))
    assert res.makespan_s == pytest.approx(5.0)
    assert reports[-1] == (2 * 4 + 1, 2 * 4 + 1)
    done = [d for d, _ in reports]
    assert done == sorted(done) and len(reports) >= 3


def test_fabric_cli_output_has_no_progress_bar_off_a_terminal() -> None:
    r = CliRunner().invoke(app, ["fabric", "permutation", "-c", "h100-ib-2node", "-s", "1MB", "--json"])
    assert r.exit_code == 0, r.output
    assert r.stderr == ""


@st.composite
def _chained_workloads(draw: st.DrawFn) -> dict[str, object]:
    """Random jobs of chained stages on a random sparse fabric: some transfers alone on their links,
    some sharing, unequal sizes and latencies."""
    n_links = draw(st.integers(2, 12))
    n = draw(st.integers(1, 30))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    a = (rng.random((n_links, n)) < draw(st.sampled_from([0.1, 0.3]))).astype(float)
    a[rng.integers(0, n_links, n), np.arange(n)] = 1.0  # every transfer crosses a link
    return {
        "bytes_per_transfer": rng.uniform(1e5, 1e7, n) * (rng.random(n) < 0.9),
        "incidence": a,
        "capacity_bytes_per_s": rng.uniform(1e9, 5e9, n_links),
        "job": rng.integers(0, 4, n),
        "stage": rng.integers(0, 4, n),
        "start_latency_s": rng.choice([0.0, 1e-6, 3e-6], n),
        "dependency_delay_s": float(rng.choice([0.0, 2e-6])),
    }


@settings(max_examples=60, deadline=None)
@given(_chained_workloads())
def test_local_rate_updates_equal_full_solves(workload: dict[str, object]) -> None:
    fast = Simulation(**workload).run()  # type: ignore[arg-type]
    with pytest.MonkeyPatch.context() as m:
        m.setattr(Simulation, "_solve_isolated", _consume)
        slow = Simulation(**workload).run()  # type: ignore[arg-type]
    assert slow.n_local_updates == 0
    np.testing.assert_allclose(fast.transfer_end_s, slow.transfer_end_s, rtol=1e-9)
    np.testing.assert_allclose(fast.link_peak_utilisation, slow.link_peak_utilisation, rtol=1e-9, atol=1e-12)
    assert (fast.link_peak_utilisation <= 1 + 1e-9).all()


def _consume(sim: Simulation) -> bool:
    """Stand-in for Simulation._solve_isolated that never updates locally (always a full solve)."""
    sim._joined, sim._left = [], []
    return False
