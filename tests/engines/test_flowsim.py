"""Tests of aifabric.engines.flowsim: hand-derived timelines, repeats, failures, invariants, determinism."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import sparse

from aifabric.engines.flowsim import FlowSimResult, Simulation, simulate_transfers
from aifabric.engines.maxmin import max_min_rates
from aifabric.errors import AifabricError, NoRoute

GB = 1e9  # bytes
GBPS = 1e9  # bytes/s
ONE_LINK = np.ones((1, 1))


# -- hand-derived timelines --------------------------------------------------------------------------------


def test_single_transfer_with_latency():
    # 0.25 s of latency, then 1 GB at 1 GB/s: ends at 1.25 s.
    res = simulate_transfers([GB], ONE_LINK, [GBPS], start_latency_s=0.25)
    assert res.transfer_end_s.tolist() == [1.25]
    assert res.makespan_s == 1.25
    assert res.stage_span_s(0, 0) == (0.0, 1.25)


def test_two_sequential_stages():
    # Stage 0: 1 GB on the 1 GB/s link, 0 -> 1 s. Stage 1 starts when it ends: 2 GB, 1 -> 3 s.
    res = simulate_transfers([GB, 2 * GB], np.ones((1, 2)), [GBPS], stage=[0, 1])
    assert res.transfer_end_s.tolist() == [1.0, 3.0]
    assert res.stage_keys == ((0, 0), (0, 1))
    assert res.stage_start_s.tolist() == [0.0, 1.0]
    assert res.stage_end_s.tolist() == [1.0, 3.0]


def test_two_jobs_share_a_link():
    # Jobs run concurrently: 1 GB and 2 GB share 1 GB/s, 0.5 GB/s each until the first is done at
    # 1 GB / 0.5 GB/s = 2 s; the second then has 2 - 1 = 1 GB left at 1 GB/s: 3 s.
    res = simulate_transfers([GB, 2 * GB], np.ones((1, 2)), [GBPS], job=[0, 1])
    assert res.transfer_end_s.tolist() == [2.0, 3.0]
    assert res.job_ids == (0, 1)
    assert res.job_end_time_s(0) == 2.0
    assert res.job_end_time_s(1) == 3.0
    assert res.makespan_s == 3.0
    assert res.link_bytes.tolist() == [3 * GB]
    assert res.link_peak_utilisation.tolist() == [1.0]
    assert (res.n_events, res.n_rate_solves) == (3, 2)  # t = 0 (start), 2 s, 3 s; solves at 0 and 2 s


def test_sprayed_transfer_uses_both_paths():
    # 2 GB sprayed half/half over two parallel 1 GB/s links: rate 2 GB/s (each link carries 0.5 r) -> 1 s.
    res = simulate_transfers([2 * GB], np.array([[0.5], [0.5]]), [GBPS, GBPS])
    assert res.transfer_end_s.tolist() == [1.0]
    assert res.link_bytes.tolist() == [GB, GB]


def test_group_moves_in_lock_step():
    # m0: 1 GB on link 0, m1: 2 GB on link 1, one group; x: 1 GB on link 0, alone. Links 1 GB/s.
    # Group rate r = m1's rate; m0 moves at r/2, so the group column is 0.5 on link 0 and 1 on link 1.
    # Link 0: weights 0.5 (group) + 1 (x) -> level 1/1.5 = 2/3; link 1: 1 -> level 1. So r = x = 2/3.
    # x ends at 1 GB / (2/3) = 1.5 s; m1 has moved 1 GB, m0 0.5 GB (half each).
    # Then the group alone: r = 1 (link 1), m0 at 0.5: 1 GB left for m1 -> ends at 2.5 s, m0 with it.
    a = np.array([[1, 0, 1], [0, 1, 0]], dtype=float)
    grouped = simulate_transfers([GB, 2 * GB, GB], a, [GBPS, GBPS], group=[0, 0, 1])
    assert grouped.transfer_end_s.tolist() == pytest.approx([2.5, 2.5, 1.5], rel=1e-12)
    # Link 0 peak: 0.5 * 2/3 + 2/3 = 1; link 1 peak: r = 1 in the second phase.
    assert grouped.link_peak_utilisation.tolist() == pytest.approx([1.0, 1.0], rel=1e-12)
    # Without the group: m0 and x share link 0 at 0.5 -> 2 s each; m1 alone on link 1 -> 2 s.
    independent = simulate_transfers([GB, 2 * GB, GB], a, [GBPS, GBPS])
    assert independent.transfer_end_s.tolist() == [2.0, 2.0, 2.0]


def test_group_ids_are_scoped_to_their_stage():
    # Same group id 0 in two stages: two separate groups, run one after the other (1 s each).
    res = simulate_transfers([GB, GB], np.ones((1, 2)), [GBPS], stage=[0, 1], group=[0, 0])
    assert res.transfer_end_s.tolist() == [1.0, 2.0]


def test_group_waits_for_its_largest_latency():
    # Two 1 GB members on separate 1 GB/s links, latencies 0.1 s and 0.3 s: the group starts at 0.3 s
    # and both members end at 1.3 s.
    res = simulate_transfers([GB, GB], np.eye(2), [GBPS, GBPS], group=[7, 7], start_latency_s=[0.1, 0.3])
    assert res.transfer_end_s.tolist() == pytest.approx([1.3, 1.3], rel=1e-15)


def test_explicit_dependency_across_jobs():
    # Job 1's only stage waits for job 0's stage 0 (1 GB on link 0: 0 -> 1 s); job 1 then moves 1 GB on
    # link 1: 1 -> 2 s. Job 0's stage 1 (default chain) runs 1 -> 2 s on link 0 concurrently.
    res = simulate_transfers(
        [GB, GB, GB],
        np.array([[1, 1, 0], [0, 0, 1]], dtype=float),
        [GBPS, GBPS],
        job=[0, 0, 1],
        stage=[0, 1, 0],
        stage_deps={(1, 0): [(0, 0)]},
    )
    assert res.stage_span_s(1, 0) == (1.0, 2.0)
    assert res.stage_span_s(0, 1) == (1.0, 2.0)
    assert res.transfer_end_s.tolist() == [1.0, 2.0, 2.0]


def test_zero_byte_transfers_finish_after_their_latency():
    # A 0-byte transfer needs no route: it ends at stage start + latency. Stage 1 starts then.
    res = simulate_transfers(
        [0.0, GB],
        sparse.csc_matrix(([1.0], ([0], [1])), shape=(1, 2)),
        [GBPS],
        stage=[0, 1],
        start_latency_s=0.5,
    )
    assert res.transfer_end_s.tolist() == [0.5, 2.0]


# -- repeats ------------------------------------------------------------------------------------------------


def test_repeat_alone_is_fast_forwarded_exactly():
    # One repetition = 0.1 s latency + 1 GB at 1 GB/s = 1.1 s; three back to back: 3.3 s. The stage runs
    # alone, so repetitions 2 and 3 are extrapolated from the first.
    res = simulate_transfers([GB], ONE_LINK, [GBPS], start_latency_s=0.1, stage_repeat={(0, 0): 3})
    assert res.transfer_end_s.tolist() == pytest.approx([3.3], rel=1e-15)
    assert res.n_fast_forwarded_repeats == 2
    assert res.link_bytes.tolist() == [3 * GB]


def test_repeat_sharing_the_network_is_simulated():
    # Job 0 repeats 1 GB three times; job 1 moves 1 GB once, same 1 GB/s link.
    # Rep 1 of job 0 and job 1 share the link at 0.5 GB/s: both end at 2 s. Multiplying that by 3 would
    # say 6 s; instead rep 2 is simulated (job 1 is gone, 1 GB/s): 2 -> 3 s. Rep 2 ran alone, so rep 3 is
    # fast-forwarded: 3 -> 4 s.
    res = simulate_transfers([GB, GB], np.ones((1, 2)), [GBPS], job=[0, 1], stage_repeat={(0, 0): 3})
    assert res.job_end_s.tolist() == [4.0, 2.0]
    assert res.n_fast_forwarded_repeats == 1


def test_recurring_set_of_moving_transfers_reuses_its_rates():
    # Job 0: 1 GB repeated twice; job 1: 3 GB once; one 1 GB/s link, no latency.
    # 0 -> 2 s: both at 0.5 GB/s; job 0's first repetition ends, job 1 has 2 GB left.
    # 2 -> 4 s: the second repetition starts at once: the same two transfers move, so the allocation
    # (0.5, 0.5) is reused without a solve; job 0 ends at 4 s, job 1 has 1 GB left.
    # 4 -> 5 s: job 1 alone at 1 GB/s (a new set: solved).
    res = simulate_transfers([GB, 3 * GB], np.ones((1, 2)), [GBPS], job=[0, 1], stage_repeat={(0, 0): 2})
    assert res.job_end_s.tolist() == [4.0, 5.0]
    assert (res.n_rate_solves, res.n_rate_reuses) == (2, 1)


def test_repeat_then_next_stage():
    # Stage 0: 0.5 GB, repeat 4 -> 2 s; stage 1: 1 GB -> 3 s.
    res = simulate_transfers([0.5 * GB, GB], np.ones((1, 2)), [GBPS], stage=[0, 1], stage_repeat={(0, 0): 4})
    assert res.stage_end_s.tolist() == [2.0, 3.0]


# -- loud failures and argument checks ---------------------------------------------------------------------


def test_transfer_without_a_link_raises_no_route():
    with pytest.raises(NoRoute, match="transfers 1 have bytes to move but cross no link"):
        simulate_transfers([GB, GB], np.array([[1.0, 0.0]]), [GBPS])


def test_transfer_over_a_dead_link_raises_no_route():
    # Link 1 has capacity 0 (failed): transfer 0 would have rate 0 forever.
    with pytest.raises(NoRoute, match="link 1"):
        simulate_transfers([GB], np.array([[1.0], [1.0]]), [GBPS, 0.0])
    assert issubclass(NoRoute, AifabricError)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"stage": [0, 1], "stage_deps": {(0, 0): [(0, 1)]}}, "cycle"),
        ({"stage_deps": {(0, 5): []}}, "has no transfers"),
        ({"stage_deps": {(0, 0): [(3, 3)]}}, "has no transfers"),
        ({"stage_repeat": {(0, 0): 0}}, "positive integer"),
        ({"stage_repeat": {(0, 0): 1.5}}, "positive integer"),
        ({"stage_repeat": {(9, 0): 2}}, "has no transfers"),
        ({"start_latency_s": -1.0}, "start_latency_s must be >= 0"),
        ({"start_latency_s": [0.0]}, "start_latency_s must have 2"),
        ({"group": [0.5, 1]}, "integers"),
        ({"job": [0]}, "job must have 2"),
    ],
)
def test_bad_arguments_raise_value_error(kwargs, match):
    with pytest.raises(ValueError, match=match):
        simulate_transfers([GB, GB], np.ones((1, 2)), [GBPS], **kwargs)


def test_only_infinite_links_is_unbounded():
    with pytest.raises(ValueError, match="infinite capacity"):
        simulate_transfers([GB], ONE_LINK, [np.inf])


def test_result_is_frozen_and_read_only():
    res = simulate_transfers([GB], ONE_LINK, [GBPS])
    assert isinstance(res, FlowSimResult)
    with pytest.raises(AttributeError):
        res.makespan_s = 0.0  # type: ignore[misc]
    with pytest.raises(ValueError):
        res.transfer_end_s[0] = 0.0
    with pytest.raises(KeyError):
        res.stage_span_s(0, 9)


def test_no_transfers():
    res = simulate_transfers(np.zeros(0), sparse.csr_matrix((2, 0)), [GBPS, GBPS])
    assert res.makespan_s == 0.0
    assert res.transfer_end_s.shape == (0,)


def test_simulate_transfers_declares_the_simulation_parameters():
    # simulate_transfers is Simulation(...).run() and restates its signature: names, kinds, defaults must
    # agree.
    assert list(inspect.signature(simulate_transfers).parameters.values()) == list(
        inspect.signature(Simulation).parameters.values()
    )


# -- random instances: invariants and determinism ----------------------------------------------------------


def random_workload(seed: int, n_links: int = 40, n_transfers: int = 300) -> dict:
    """Jobs x stages x ring-like groups over random 2-4 link paths, some sprayed, with latencies."""
    rng = np.random.default_rng(seed)
    hops = rng.integers(2, 5, n_transfers)
    cols = np.repeat(np.arange(n_transfers), hops)
    rows = np.concatenate([rng.choice(n_links, h, replace=False) for h in hops])
    weights = np.where(rng.random(n_transfers) < 0.2, 0.5, 1.0)[cols]
    job, stage = rng.integers(0, 4, n_transfers), rng.integers(0, 3, n_transfers)
    present = set(zip(job.tolist(), stage.tolist(), strict=True))
    return {
        "bytes_per_transfer": rng.choice([0.0, 1e6, 64e6, 256e6], n_transfers, p=[0.05, 0.3, 0.35, 0.3]),
        "incidence": sparse.csc_matrix((weights, (rows, cols)), shape=(n_links, n_transfers)),
        "capacity_bytes_per_s": rng.choice([25e9, 50e9, 100e9], n_links),
        "job": job,
        "stage": stage,
        "group": rng.integers(0, 6, n_transfers),
        "start_latency_s": rng.choice([0.0, 5e-6, 20e-6], n_transfers),
        "stage_repeat": {key: n for key, n in {(0, 0): 3, (1, 2): 2}.items() if key in present},
    }


def test_deterministic_across_runs():
    w = random_workload(seed=3)
    first, second = simulate_transfers(**w), simulate_transfers(**w)
    for name in ("transfer_end_s", "stage_start_s", "stage_end_s", "job_end_s", "link_peak_utilisation"):
        np.testing.assert_array_equal(getattr(first, name), getattr(second, name))
    assert (first.n_events, first.n_rate_solves) == (second.n_events, second.n_rate_solves)


def check_invariants(w: dict, res: FlowSimResult) -> None:
    a = sparse.csc_matrix(w["incidence"])
    size = np.asarray(w["bytes_per_transfer"])
    cap = np.asarray(w["capacity_bytes_per_s"])
    sim = Simulation(**w)  # only for the stage index of each transfer and the repeat counts
    repeat_t = sim.repeat[sim.stage_of_g[sim.group_of_t]]
    # Bytes are conserved: each link carries sum_m A[l, m] * bytes_m * repeats.
    np.testing.assert_allclose(res.link_bytes, a @ (size * repeat_t), rtol=1e-12)
    assert np.all(res.link_peak_utilisation <= 1 + 1e-9)
    # No link can carry its bytes faster than its capacity: makespan >= link bytes / capacity.
    assert res.makespan_s >= np.max(res.link_bytes / cap) * (1 - 1e-9)
    # Every stage ends after it starts, and after the stages it depends on.
    assert np.all(res.stage_end_s >= res.stage_start_s)
    for s, deps in enumerate(sim.deps):
        for d in deps:
            assert res.stage_start_s[s] >= res.stage_end_s[d]
    # A transfer ends within its stage's span, and the last transfer ends with the makespan.
    stage_t = sim.stage_of_g[sim.group_of_t]
    assert np.all(res.transfer_end_s <= res.stage_end_s[stage_t] * (1 + 1e-12))
    assert np.all(res.transfer_end_s >= res.stage_start_s[stage_t])
    assert res.transfer_end_s.max() == pytest.approx(res.makespan_s, rel=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_invariants_on_random_workloads(seed):
    w = random_workload(seed)
    check_invariants(w, simulate_transfers(**w))


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(4, 12), st.integers(1, 40))
def test_property_invariants(seed, n_links, n_transfers):
    w = random_workload(seed, n_links=n_links, n_transfers=n_transfers)
    check_invariants(w, simulate_transfers(**w))


def test_single_stage_equals_one_max_min_solve_when_sizes_are_equal():
    # Equal-size transfers on a symmetric instance finish together at bytes / (max-min rate):
    # 4 transfers on 2 links of 2 GB/s, 2 per link -> 1 GB/s each -> 3 GB take 3 s.
    a = np.array([[1, 1, 0, 0], [0, 0, 1, 1]], dtype=float)
    res = simulate_transfers(np.full(4, 3 * GB), a, [2 * GBPS, 2 * GBPS])
    assert res.transfer_end_s.tolist() == [3.0] * 4
    assert res.n_rate_solves == 1


def naive_fluid(a: np.ndarray, size: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Oracle for one stage of independent transfers: solve, jump to the next finish, repeat."""
    end = np.where(size > 0, np.nan, 0.0)
    left, now = size.astype(float).copy(), 0.0
    active = size > 0
    while active.any():
        rate = np.zeros(size.size)
        rate[active] = max_min_rates(a[:, active], capacity)
        dt = np.min(left[active] / rate[active])
        now += dt
        left[active] -= rate[active] * dt
        done = active & (left <= 1e-9 * size)
        end[done] = now
        active &= ~done
    return end


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(4, 10), st.integers(1, 25))
def test_property_one_stage_matches_naive_fluid_loop(seed, n_links, n_transfers):
    w = random_workload(seed, n_links=n_links, n_transfers=n_transfers)
    a = w["incidence"].toarray()
    size, capacity = w["bytes_per_transfer"], w["capacity_bytes_per_s"]
    res = simulate_transfers(size, a, capacity)
    np.testing.assert_allclose(res.transfer_end_s, naive_fluid(a, size, capacity), rtol=1e-8)
