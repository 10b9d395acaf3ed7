"""Tests of aifabric.engines.maxmin: hand-derived cases, input checks, invariants and properties."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import sparse

from aifabric.engines import maxmin
from aifabric.engines.maxmin import max_min_rates, validate_max_min

INF = np.inf

# Bertsekas & Gallager-style textbook case: links of capacity 1 and 2; flows cross {0}, {0,1}, {1}, {1}.
TEXTBOOK_A = np.array([[1, 1, 0, 0], [0, 1, 1, 1]], dtype=float)
TEXTBOOK_C = np.array([1.0, 2.0])


def reference_max_min(a: np.ndarray, capacity: np.ndarray, cap: np.ndarray) -> np.ndarray:
    """Independent, naive dense water-filling (a loop, no frontier, no incremental state): the oracle."""
    n_flows = a.shape[1]
    rate = np.zeros(n_flows)
    active = np.ones(n_flows, dtype=bool)
    idle = (a > 0).sum(axis=0) == 0
    rate[idle] = cap[idle]
    active[idle] = False
    while active.any():
        weight = a[:, active].sum(axis=1)
        residual = capacity - a @ rate
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(weight > 0, residual / weight, INF)
        step = min(share.min(), (cap[active] - rate[active]).min())
        rate[active] += step
        full = (weight > 0) & np.isfinite(capacity) & (capacity - a @ rate <= 1e-12 * np.maximum(capacity, 1))
        frozen = active & (((a[full] > 0).any(axis=0)) | (rate >= cap * (1 - 1e-12) - 1e-12))
        active &= ~frozen
    return rate


# -- hand-derived cases -----------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", [sparse.csr_matrix, sparse.csc_matrix, sparse.csr_array, np.asarray])
def test_textbook_two_links(fmt):
    # Round 1: link 0 saturates at 1/2 (2 flows on capacity 1), link 1 would at 2/3 -> flows 0, 1 = 0.5.
    # Round 2: link 1 has 2 - 0.5 = 1.5 left for flows 2, 3 -> 0.75 each. All steps exact in binary.
    rates = max_min_rates(fmt(TEXTBOOK_A), TEXTBOOK_C)
    assert rates.tolist() == [0.5, 0.5, 0.75, 0.75]
    assert validate_max_min(TEXTBOOK_A, TEXTBOOK_C, rates) == []


def test_sprayed_flow_weighted_incidence():
    # Links 0, 1 of capacity 1. Flow a is sprayed half/half over links 0 and 1; b on link 0; c, d on link 1.
    # Summed weights: link 0 = 0.5 + 1 = 1.5 (level 1/1.5 = 0.667); link 1 = 0.5 + 1 + 1 = 2.5 (level 0.4).
    # Round 1: link 1 saturates at 0.4 -> a, c, d = 0.4.  Round 2: link 0 has 1 - 0.5 * 0.4 = 0.8 left for b.
    a = np.array([[0.5, 1, 0, 0], [0.5, 0, 1, 1]])
    rates = max_min_rates(sparse.csc_matrix(a), [1.0, 1.0])
    np.testing.assert_allclose(rates, [0.4, 0.8, 0.4, 0.4], rtol=1e-15)
    np.testing.assert_allclose(a @ rates, [1.0, 1.0], rtol=1e-15)


def test_sprayed_flow_alone_gets_both_paths():
    # One flow at 1/2 on each of two parallel 50 GB/s links: each link saturates at 0.5 r = 50e9 -> r = 100e9.
    rates = max_min_rates(np.array([[0.5], [0.5]]), [50e9, 50e9])
    assert rates.tolist() == [100e9]


def test_demand_cap_ties_with_a_link():
    # Textbook case with flow 2 capped at 0.5: link 0 saturates at 0.5 and flow 2 hits its cap at 0.5 in
    # the same round. Flow 3 then has link 1 alone: 2 - 0.5 (flow 1) - 0.5 (flow 2) = 1.0.
    cap = np.array([INF, INF, 0.5, INF])
    rates = max_min_rates(TEXTBOOK_A, TEXTBOOK_C, demand_cap_bytes_per_s=cap)
    assert rates.tolist() == [0.5, 0.5, 0.5, 1.0]
    assert validate_max_min(TEXTBOOK_A, TEXTBOOK_C, rates, demand_cap_bytes_per_s=cap) == []


def test_demand_caps_below_every_link():
    # Flow 0 capped at 0.1, flow 1 at 0.2. Round 1: lowest level is flow 0's cap 0.1 (links: 0.5, 2/3).
    # Round 2: flow 1's cap 0.2 (link 0 now (1 - 0.1)/1 = 0.9, link 1 still 2/3).
    # Round 3: link 1 has 2 - 0.2 = 1.8 for flows 2, 3 -> 0.9 each. Link 0 keeps 0.7 unused.
    cap = np.array([0.1, 0.2, INF, INF])
    rates = max_min_rates(TEXTBOOK_A, TEXTBOOK_C, demand_cap_bytes_per_s=cap)
    np.testing.assert_allclose(rates, [0.1, 0.2, 0.9, 0.9], rtol=1e-15)


def test_flow_crossing_no_link_gets_its_cap_or_raises():
    a = np.array([[1.0, 0.0]])
    assert max_min_rates(a, [3.0], demand_cap_bytes_per_s=[INF, 7.0]).tolist() == [3.0, 7.0]
    with pytest.raises(ValueError, match="flows 1 cross no link"):
        max_min_rates(a, [3.0])


def test_infinite_capacity_needs_a_cap():
    a = np.array([[1.0, 1.0]])
    assert max_min_rates(a, [INF], demand_cap_bytes_per_s=[2.0, 5.0]).tolist() == [2.0, 5.0]
    with pytest.raises(ValueError, match="infinite capacity"):
        max_min_rates(a, [INF], demand_cap_bytes_per_s=[2.0, INF])


def test_zero_capacity_link_blocks_only_its_flows():
    # Link 0 is down: flows 0 and 1 cross it and get 0. Flow 2 then has link 1 to itself.
    a = np.array([[1, 1, 0], [0, 1, 1]], dtype=float)
    assert max_min_rates(a, [0.0, 4.0]).tolist() == [0.0, 0.0, 4.0]


def test_duplicate_entries_add_and_input_is_not_modified():
    # COO with (0, 0) twice at 0.5 each = weight 1.0, plus an explicit zero that must be ignored.
    coo = sparse.coo_matrix(([0.5, 0.5, 0.0], ([0, 0, 0], [0, 0, 1])), shape=(1, 2))
    csr = coo.tocsr()
    before = (csr.data.copy(), csr.indices.copy())
    rates = max_min_rates(csr, [2.0], demand_cap_bytes_per_s=[INF, 1.0])
    assert rates.tolist() == [2.0, 1.0]
    np.testing.assert_array_equal(csr.data, before[0])
    np.testing.assert_array_equal(csr.indices, before[1])


def test_empty_instance():
    assert max_min_rates(sparse.csr_matrix((3, 0)), np.ones(3)).shape == (0,)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"incidence": np.array([[-1.0]])}, "finite and >= 0"),
        ({"incidence": np.array([[np.nan]])}, "finite and >= 0"),
        ({"incidence": np.ones(3)}, "2-D"),
        ({"capacity_bytes_per_s": [1.0, 2.0]}, "capacity_bytes_per_s must have 1"),
        ({"capacity_bytes_per_s": [np.nan]}, "capacity_bytes_per_s must be >= 0"),
        ({"capacity_bytes_per_s": [-1.0]}, "capacity_bytes_per_s must be >= 0"),
        ({"demand_cap_bytes_per_s": [-1.0]}, "demand_cap_bytes_per_s must be >= 0"),
        ({"tol": -1.0}, "tol"),
    ],
)
def test_bad_arguments_raise_value_error(kwargs, match):
    args = {"incidence": np.array([[1.0]]), "capacity_bytes_per_s": [1.0]} | kwargs
    incidence, capacity = args.pop("incidence"), args.pop("capacity_bytes_per_s")
    with pytest.raises(ValueError, match=match):
        max_min_rates(incidence, capacity, **args)


# -- validate_max_min catches bad allocations -------------------------------------------------------------


def test_validate_reports_overload_and_missing_bottleneck():
    # Flow 0 pushed to 0.6: link 0 carries 1.1 > 1, and flow 1 (0.5) is now below the largest rate on
    # both of its links (0.6 on link 0, 0.75 on link 1), so it has no bottleneck either.
    over = validate_max_min(TEXTBOOK_A, TEXTBOOK_C, [0.6, 0.5, 0.75, 0.75])
    assert over == [
        "link 0: load 1.1 B/s exceeds capacity 1 B/s",
        "flow 1: rate 0.5 B/s has no bottleneck (no saturated link where it is the largest) and no cap",
    ]
    # All zero: feasible, but no link is saturated, so nobody has a bottleneck.
    assert len(validate_max_min(TEXTBOOK_A, TEXTBOOK_C, np.zeros(4))) == 4
    capped = validate_max_min(
        TEXTBOOK_A, TEXTBOOK_C, [0.5, 0.5, 0.75, 0.75], demand_cap_bytes_per_s=[0.4, INF, INF, INF]
    )
    assert capped[0].startswith("flow 0: rate 0.5 B/s exceeds its demand cap 0.4")
    assert validate_max_min(TEXTBOOK_A, TEXTBOOK_C, [np.nan, 0.5, 0.75, 0.75]) == [
        "flow 0: rate nan B/s is not finite and >= 0"
    ]


# -- a larger instance that exercises the frontier rebuilds ------------------------------------------------


def random_instance(n_links: int, n_flows: int, seed: int) -> tuple[sparse.csr_matrix, np.ndarray]:
    """Each flow crosses 4-6 distinct random links (weight 1, or 1/2 for a tenth, "sprayed"); capacities
    400 or 800 Gb/s (50e9 / 100e9 bytes/s)."""
    rng = np.random.default_rng(seed)
    hops = rng.integers(4, 7, n_flows)
    cols = np.repeat(np.arange(n_flows), hops)
    rows = np.concatenate([rng.choice(n_links, h, replace=False) for h in hops])
    weights = np.where(rng.random(n_flows) < 0.1, 0.5, 1.0)[cols]
    a = sparse.csr_matrix((weights, (rows, cols)), shape=(n_links, n_flows))
    return a, rng.choice([50e9, 100e9], n_links)


def test_random_instance_with_many_levels_is_max_min_fair():
    a, capacity = random_instance(3000, 9000, seed=1)
    rates = max_min_rates(a, capacity)
    assert validate_max_min(a, capacity, rates, 1e-7) == []
    assert np.all(a @ rates <= capacity * (1 + 1e-12))


# -- properties on random small instances ------------------------------------------------------------------


@st.composite
def instances(draw, with_caps: bool = True):
    n_links = draw(st.integers(1, 6))
    n_flows = draw(st.integers(1, 8))
    mask = draw(st.lists(st.booleans(), min_size=n_links * n_flows, max_size=n_links * n_flows))
    weight = draw(
        st.lists(
            st.sampled_from([1.0, 0.5, 0.25, 1 / 3, 0.7]),
            min_size=n_links * n_flows,
            max_size=n_links * n_flows,
        )
    )
    a = (np.array(mask) * np.array(weight)).reshape(n_links, n_flows)
    capacity = np.array(draw(st.lists(st.floats(0.1, 100.0), min_size=n_links, max_size=n_links)))
    cap_choice = st.one_of(st.just(INF), st.floats(0.0, 50.0)) if with_caps else st.just(INF)
    cap = np.array(draw(st.lists(cap_choice, min_size=n_flows, max_size=n_flows)))
    # A flow crossing no link needs a finite cap.
    cap[(a.sum(axis=0) == 0) & ~np.isfinite(cap)] = 1.0
    return a, capacity, cap


FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(instances())
def test_property_feasible_and_every_flow_has_a_bottleneck(inst):
    a, capacity, cap = inst
    rates = max_min_rates(sparse.csc_matrix(a), capacity, demand_cap_bytes_per_s=cap)
    assert np.all(a @ rates <= capacity * (1 + 1e-12))
    assert validate_max_min(a, capacity, rates, 1e-7, demand_cap_bytes_per_s=cap) == []


@FAST
@given(instances())
def test_property_matches_naive_reference(inst):
    # The max-min fair allocation is unique, so any correct algorithm must return the same vector.
    a, capacity, cap = inst
    rates = max_min_rates(a, capacity, demand_cap_bytes_per_s=cap)
    np.testing.assert_allclose(rates, reference_max_min(a, capacity, cap), rtol=1e-9, atol=1e-12)


@FAST
@given(instances(), st.floats(1e-3, 1e3))
def test_property_scaling_capacities_scales_rates(inst, factor):
    # Max-min is positively homogeneous: the feasible set scales by c, so the allocation does.
    a, capacity, cap = inst
    rates = max_min_rates(a, capacity, demand_cap_bytes_per_s=cap)
    scaled = max_min_rates(a, capacity * factor, demand_cap_bytes_per_s=cap * factor)
    np.testing.assert_allclose(scaled, rates * factor, rtol=1e-9, atol=1e-12)


@FAST
@given(instances(), st.data())
def test_property_more_capacity_never_lowers_the_minimum_rate(inst, data):
    # Max-min is the leximin optimum; a larger feasible set can only raise the sorted rate vector
    # lexicographically, so its first entry (the minimum rate) cannot drop. (Single flows *can* drop.)
    a, capacity, cap = inst
    link = data.draw(st.integers(0, a.shape[0] - 1))
    more = capacity.copy()
    more[link] *= data.draw(st.floats(1.0, 10.0))
    before = max_min_rates(a, capacity, demand_cap_bytes_per_s=cap)
    after = max_min_rates(a, more, demand_cap_bytes_per_s=cap)
    assert after.min() >= before.min() * (1 - 1e-12)


@FAST
@given(instances(), st.randoms(use_true_random=False))
def test_property_flow_order_does_not_matter(inst, rnd):
    a, capacity, cap = inst
    perm = np.array(rnd.sample(range(a.shape[1]), a.shape[1]))
    rates = max_min_rates(a, capacity, demand_cap_bytes_per_s=cap)
    permuted = max_min_rates(a[:, perm], capacity, demand_cap_bytes_per_s=cap[perm])
    np.testing.assert_allclose(permuted, rates[perm], rtol=1e-12, atol=1e-15)


@settings(max_examples=100, deadline=None)
@given(instances())
def test_property_tiny_frontier_gives_the_same_answer(inst):
    # Force a 1-link frontier so that every round goes through the frontier-rebuild path.
    a, capacity, cap = inst
    expected = reference_max_min(a, capacity, cap)
    saved = maxmin._frontier_size
    maxmin._frontier_size = lambda n_links: 1
    try:
        rates = max_min_rates(a, capacity, demand_cap_bytes_per_s=cap)
    finally:
        maxmin._frontier_size = saved
    np.testing.assert_allclose(rates, expected, rtol=1e-9, atol=1e-12)


@FAST
@given(instances(with_caps=False), st.data())
def test_property_warm_start_after_a_flow_leaves_equals_cold_solve(inst, data):
    # The fluid simulator's warm start: when flow f leaves, flows slower than f keep their rates and the
    # filling restarts at f's rate. It must give the cold solve's answer.
    a, capacity, _ = inst
    n_flows = a.shape[1]
    if n_flows < 2:
        return
    before = max_min_rates(a, capacity, demand_cap_bytes_per_s=np.where(a.sum(axis=0) > 0, INF, 1.0))
    leaver = data.draw(st.integers(0, n_flows - 1))
    stay = np.delete(np.arange(n_flows), leaver)
    a_left, cap_left = a[:, stay], np.where(a[:, stay].sum(axis=0) > 0, INF, 1.0)
    cold = max_min_rates(a_left, capacity, demand_cap_bytes_per_s=cap_left)
    a_csr, a_csc = maxmin._as_incidence(a_left)
    old = before[stay]
    keep = np.where(old < before[leaver], old, np.nan)
    warm = maxmin._water_fill(
        maxmin._Incidence.from_scipy(a_csr, a_csc),
        capacity,
        cap_left,
        1e-9,
        keep=keep,
        start_level=before[leaver],
    )
    np.testing.assert_allclose(warm, cold, rtol=1e-9, atol=1e-12)
