"""DCQCN fluid model: fixed point against the CoNEXT'16 closed form, stability against the paper."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from aifabric.errors import ConfigError
from aifabric.transport.dcqcn import (
    fixed_point,
    queue_oscillation,
    red_probability,
    simulate_dcqcn,
    taylor_marking_probability,
)
from aifabric.transport.params import dcqcn_preset

PAPER = dcqcn_preset("conext16")


@pytest.mark.parametrize(
    ("n", "p_star", "q_kb"),
    # congestion-control.md Sec. 1.3 table [own calc, Appendix A.1]: 40G, 1 KB packets, Pmax 10 % column
    [(2, 7.8e-4, 6.5), (10, 6.0e-3, 16.8), (64, 5.9e-2, 120.2)],
)
def test_fixed_point_matches_reference_table(n: int, p_star: float, q_kb: float) -> None:
    fp = fixed_point(PAPER, n)
    assert fp.marking_probability == pytest.approx(p_star, rel=0.01)
    assert fp.queue_bytes / 1e3 == pytest.approx(q_kb, abs=0.05)
    assert fp.rate_bytes_per_s == pytest.approx(PAPER.capacity_bytes_per_s / n)


def test_fixed_point_with_pmax_one_percent_pins_many_flows_at_kmax() -> None:
    # Same table, Pmax 1 % column: 20.2 KB at N = 2, 122.6 KB at N = 10, pinned at Kmax for N = 64.
    prm = PAPER.with_(pmax=0.01)
    assert fixed_point(prm, 2).queue_bytes / 1e3 == pytest.approx(20.2, abs=0.05)
    assert fixed_point(prm, 10).queue_bytes / 1e3 == pytest.approx(122.6, abs=0.05)
    pinned = fixed_point(prm, 64)
    assert pinned.pinned_at_kmax and pinned.queue_bytes == prm.kmax_bytes


def test_fixed_point_of_400g_case() -> None:
    # Table row 400G, 4 KB packets, N = 10: p* = 1.3e-3, q* = 7.5 KB at Pmax 10 %.
    prm = PAPER.with_(capacity_bytes_per_s=50e9, packet_bytes=4000.0)
    fp = fixed_point(prm, 10)
    assert fp.marking_probability == pytest.approx(1.3e-3, rel=0.04)
    assert fp.queue_bytes / 1e3 == pytest.approx(7.5, abs=0.05)


@pytest.mark.parametrize("n", [2, 10, 64])
def test_taylor_closed_form_overestimates_the_exact_root(n: int) -> None:
    # The reference: "The Taylor formula overestimates p* by 15-60 %" (9.2e-4 / 7.8e-4 at N = 2, ...).
    ratio = taylor_marking_probability(PAPER, n) / fixed_point(PAPER, n).marking_probability
    assert 1.1 < ratio < 1.65


@pytest.mark.parametrize("n", [2, 10, 64])
def test_simulated_fluid_model_settles_on_the_closed_form_fixed_point(n: int) -> None:
    """tau* = 4 us (stable for every N, CoNEXT'16 dcqcn-stability.tex): within 2 % of rate and queue."""
    fp = fixed_point(PAPER, n)
    tr = simulate_dcqcn(PAPER, n, 0.07, dt_s=2e-6, sample_s=1e-4)
    tail = tr.tail(0.1)
    assert tr.queue_bytes[tail].mean() == pytest.approx(fp.queue_bytes, rel=0.02)
    assert tr.rate_bytes_per_s[tail].mean(axis=0) == pytest.approx(np.full(n, fp.rate_bytes_per_s), rel=0.02)
    # alpha relaxes with time constant tau'/g = 14 ms, so 70 ms leave it within a few per cent
    assert tr.alpha[tail].mean() == pytest.approx(fp.alpha, rel=0.05)
    assert queue_oscillation(tr, 0.1) < 0.01


def test_stability_boundary_in_shape() -> None:
    """CoNEXT'16: at tau* = 85 us the default parameters oscillate (N = 10 unstable), and R_AI = 10 Mb/s with
    Kmax = 1000 KB makes it "always stable even when the control signal delay reaches 100us"."""
    slow = PAPER.with_(feedback_delay_s=85e-6)
    unstable = simulate_dcqcn(slow, 10, 0.1, dt_s=2.5e-6, sample_s=2.5e-5)
    assert queue_oscillation(unstable, 0.3) > 1.0  # a limit cycle: the queue swings by more than its mean
    fixed = dcqcn_preset("conext16-stable").with_(feedback_delay_s=85e-6)
    stable = simulate_dcqcn(fixed, 10, 0.1, dt_s=2.5e-6, sample_s=2.5e-5)
    assert queue_oscillation(stable, 0.3) < 0.1
    assert stable.queue_bytes[stable.tail(0.3)].mean() == pytest.approx(
        fixed_point(fixed, 10).queue_bytes, rel=0.02
    )


@given(st.integers(1, 200))
def test_fixed_point_queue_grows_with_flows(n: int) -> None:
    # CoNEXT'16 Sec. 4: "q* grows with N" (Taylor form p* ~ N^(2/3)...); the exact root keeps the order.
    assert fixed_point(PAPER, n + 1).marking_probability > fixed_point(PAPER, n).marking_probability


@given(st.floats(0, 1e6))
def test_red_probability_is_a_probability(q: float) -> None:
    p = float(red_probability(q, PAPER.kmin_bytes, PAPER.kmax_bytes, PAPER.pmax))
    assert 0.0 <= p <= 1.0


def test_bad_input_is_refused() -> None:
    with pytest.raises(ConfigError, match="n_flows"):
        fixed_point(PAPER, 0)
    with pytest.raises(ConfigError, match="dt_s"):
        simulate_dcqcn(PAPER, 2, 0.01, dt_s=1e-4)
    with pytest.raises(ConfigError, match="pmax"):
        PAPER.with_(pmax=0.0)
    with pytest.raises(ConfigError, match="unknown"):
        dcqcn_preset("nope")
