"""DCQCN stability from the linearised fluid model, against the shape of CoNEXT'16's phase-margin figure."""

from __future__ import annotations

import math

import numpy as np
import pytest

from aifabric.errors import ConfigError
from aifabric.transport.dcqcn import fixed_point, queue_oscillation, simulate_dcqcn
from aifabric.transport.params import dcqcn_preset
from aifabric.transport.stability import open_loop, paper_phase_margin, phase_margin, stability_map

# The model code as the authors ran it (dcqcn2.m: Kmax 2000 KB, Pmax 0.1), catalogue preset conext16-code.
CODE = dcqcn_preset("conext16-code")


def test_85us_unstable_at_10_flows_stable_at_2_and_64() -> None:
    """dcqcn-stability.tex: "when the delay is large (85us), the protocol is unstable for 10 flows. It is,
    however, stable for 2 and 64 flows"."""
    slow = CODE.with_(feedback_delay_s=85e-6)
    margins = {n: phase_margin(slow, n) for n in (2, 10, 64)}
    assert margins[2].stable and margins[64].stable
    assert not margins[10].stable
    # measured: +0.3, -3.2 and +17.5 degrees (crossovers near 2-5 krad/s)
    assert margins[10].phase_margin_deg < 0 < margins[2].phase_margin_deg < margins[64].phase_margin_deg


def test_phase_margin_is_non_monotonic_in_flows_and_falls_with_delay() -> None:
    """The paper's figure (pm_rai40_delay{50,100}.txt): the margin dips, then rises with N ("increasingly
    stable with larger number of flows"); at 100 us it is negative for small N and positive for large N.
    Paper: below 0 for N = 2..34, above from 36. The exact linearisation of the same model: below 0 for
    N = 2..24, above from 25 (-0.17 deg at 24, +0.25 at 25). The gap is the paper's first-order Taylor
    expansion in p (next test). At 4 us every N is stable."""
    flows = [2, 6, 10, 16, 30, 64, 100]
    pm = stability_map(CODE, flows, [4e-6, 50e-6, 100e-6])
    assert (pm[0] > 0).all()
    dip = int(np.argmin(pm[2]))
    assert 0 < dip < len(flows) - 1  # the minimum is inside the range: non-monotonic
    assert (pm[2, : flows.index(16) + 1] < 0).all() and (pm[2, flows.index(64) :] > 0).all()
    assert (np.diff(pm, axis=0) < 0).all()  # more delay, less margin, for every N
    slow = CODE.with_(feedback_delay_s=100e-6)
    assert phase_margin(slow, 24).phase_margin_deg < 0 < phase_margin(slow, 25).phase_margin_deg


# The published phase margins, degrees (jitupadhye-zz/rdma@e7e9160 conext2016/figures/pm_rai40_delay100.txt
# and pm_rai40_delay50.txt: 40 Gb/s, R_AI 40 Mb/s, Kmin/Kmax 5/200 KB, Pmax 1 %, fluidmodel/dcqcn/stability.m)
PUBLISHED = {
    100e-6: {2: -10.099, 10: -17.925, 34: -0.21667, 36: 1.2794, 64: 15.625, 100: 23.142},
    50e-6: {2: 8.2626, 10: -6.5844, 20: -0.95129, 36: 12.581, 64: 29.548, 100: 39.811},
}


@pytest.mark.parametrize("delay", sorted(PUBLISHED))
def test_the_authors_linearisation_reproduces_the_published_figure(delay: float) -> None:
    """The authors' characteristic equation (Appendix A: Taylor p*, (1 - p)^x to first order in p) gives
    the figure's numbers to 0.05 deg; the zero crossing at 100 us lies between N = 34 and 36, as
    published. The exact linearisation (test above) crosses at 25: with B = 10^4 packets, p* B is
    20-300, where p / ((1 - p)^-B - 1) ~ p e^(-p B), not the 1/B - p/2 of the expansion."""
    figure = dcqcn_preset("conext16").with_(pmax=0.01, feedback_delay_s=delay)
    for n, published in PUBLISHED[delay].items():
        assert paper_phase_margin(figure, n) == pytest.approx(published, abs=0.05), n
    if delay == 100e-6:
        assert paper_phase_margin(figure, 34) < 0 < paper_phase_margin(figure, 35)


def test_smaller_additive_increase_stabilises_every_n_at_100us() -> None:
    """The fix of dcqcn-stability.tex: a smaller R_AI (10 Mb/s) "stabilizes the system"; with it every
    N in 2..100 has a positive margin at tau* = 100 us (the paper: with R_AI = 10 Mb/s and a larger Kmax,
    "always stable even when the control signal delay reaches 100us")."""
    flows = [2, 4, 10, 16, 30, 64, 100]
    default = stability_map(CODE, flows, [100e-6])[0]
    fixed = stability_map(CODE.with_(r_ai_bytes_per_s=10e6 / 8), flows, [100e-6])[0]
    assert (fixed > 0).all() and (default < 0).any()
    assert fixed.min() > default.min()  # measured: worst case +0.4 (N = 16) instead of -5.9 degrees


def test_linear_verdict_agrees_with_the_nonlinear_fluid_model() -> None:
    """The delay ODE itself (not its linearisation) at tau* = 85 us: N = 64 settles on the fixed point,
    N = 10 keeps a limit cycle (its margin is negative)."""
    slow = CODE.with_(feedback_delay_s=85e-6)
    settled = simulate_dcqcn(slow, 64, 0.1, dt_s=4.25e-6, sample_s=2.55e-5)
    assert queue_oscillation(settled, 0.2) < 0.01
    assert settled.queue_bytes[settled.tail(0.2)].mean() == pytest.approx(
        fixed_point(slow, 64).queue_bytes, rel=0.02
    )
    cycling = simulate_dcqcn(slow, 10, 0.1, dt_s=4.25e-6, sample_s=2.55e-5)
    assert queue_oscillation(cycling, 0.2) > 0.5


def test_open_loop_starts_as_an_integrator() -> None:
    """At low frequency L(jw) ~ k / (jw): gain falls 20 dB per decade and the phase is -90 degrees."""
    w = np.array([1.0, 10.0])
    loop = open_loop(CODE, 10, w)
    assert 20 * math.log10(abs(loop[0]) / abs(loop[1])) == pytest.approx(20.0, abs=0.5)
    assert math.degrees(np.angle(loop[0])) == pytest.approx(-90.0, abs=2.0)


def test_pinned_fixed_point_has_no_margin() -> None:
    """Pmax 1 % on 5-200 KB: 64 flows drive p* above Pmax (congestion-control.md Sec. 1.3 table)."""
    pinned = dcqcn_preset("conext16").with_(pmax=0.01)
    m = phase_margin(pinned, 64)
    assert m.phase_margin_deg == -math.inf and not m.stable
    with pytest.raises(ConfigError, match="pinned"):
        open_loop(pinned, 64, np.array([1.0]))
    with pytest.raises(ConfigError, match="n_flows"):
        phase_margin(CODE, 0)
