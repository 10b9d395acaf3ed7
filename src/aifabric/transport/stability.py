"""DCQCN stability on one bottleneck: the phase margin of the linearised fluid model (CoNEXT'16 Sec. 4.2).

The fluid model of :mod:`aifabric.transport.dcqcn` is linearised around its fixed point
(:func:`~aifabric.transport.dcqcn.fixed_point`) for N equal flows. Per flow the state is
``x = (R_T, R_C, alpha)`` (packets/s, packets/s, 1); the derivative ``f`` of
:func:`~aifabric.transport.dcqcn.dcqcn_derivatives` depends on ``x`` now, on ``R_C(t - tau*)`` and on the
marking probability ``p(t - tau*)``. Its Jacobians at the fixed point, by central differences, are

    J = df/dx,   j_d = df/dR_C(t - tau*),   j_p = df/dp                       (3 x 3, 3, 3)

and one flow's response of ``R_C`` to the delayed marking probability is

    G(s) = e_RC^T (s I - J - j_d e_RC^T e^(-s tau*))^-1 j_p.

The loop closes through the queue (``dq/dt = N R_C - C``, so ``dq = N dR_C / s``) and the RED slope
``K = Pmax / (Kmax - Kmin)`` (per packet), delayed by ``tau*``. Breaking it at the marking probability,

    L(s) = -N K G(s) e^(-s tau*) / s,

whose Bode phase at the gain crossover ``|L(j w_c)| = 1`` gives the phase margin
``PM = 180 deg + arg L(j w_c)`` (the lowest over all crossovers). ``PM > 0`` is stable (Bode criterion;
``L`` has no right-half-plane pole: ``J`` is Hurwitz at the fixed points tested). This is the analysis of
the paper's Appendix A (characteristic equation of R_C, Laplace transform, phase margin), done on the exact
model instead of its Taylor-simplified linearisation, so the margins differ in value from the paper's
figure, not in shape: non-monotonic in N, a dip of instability at tens of microseconds of delay
(unstable at N = 10 with tau* = 85 us, stable at N = 2 and N = 64), and stable everywhere with
R_AI = 10 Mb/s and Kmax = 1000 KB.

The paper's own figure comes from a different linearisation: :func:`paper_open_loop` is the authors'
characteristic equation of ``R_C`` (Appendix A), with the closed-form Taylor ``p*`` and every ``(1 - p)^x``
expanded to first order in p. It reproduces the published phase margins (``pm_rai40_delay100.txt``: below
zero up to N = 34, +1.28 deg at N = 36) to 0.05 deg. That expansion is not valid at the fixed point: the
byte counter's term ``p / ((1 - p)^-B - 1)`` with ``B = 10 MB = 10^4`` packets is ``~ p e^(-p B)``, with
``p* B`` between 20 and 300, not ``1/B - p/2``; and the Taylor ``p*`` is 15-60 % high. The exact
linearisation (:func:`phase_margin`) keeps the paper's shape (the dip, the rise with N, the stable
regions) but crosses zero at 100 us near N = 25 instead of 36.

When ``p* > Pmax`` the fixed point sits on RED's jump to 1 at Kmax: the slope is infinite, the model
cannot be linearised, and the margin is reported as ``-inf`` (the queue hits Kmax and oscillates).

References
----------
.. [1] Y. Zhu, M. Ghobadi, V. Misra and J. Padhye, "ECN or Delay: Lessons Learnt from Analysis of DCQCN and
   TIMELY", CoNEXT 2016, doi:10.1145/2999572.2999593; jitupadhye-zz/rdma@e7e9160
   ``conext2016/dcqcn-stability.tex``, ``conext2016/appendix.tex``, phase-margin data
   ``conext2016/figures/pm_rai40_delay{50,100}.txt`` and the script that made them,
   ``fluidmodel/dcqcn/stability.m``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from aifabric.errors import ConfigError
from aifabric.transport.dcqcn import dcqcn_derivatives, fixed_point, taylor_marking_probability
from aifabric.transport.params import DcqcnParams

__all__ = [
    "DcqcnMargin",
    "MarginSweep",
    "margin_sweep",
    "open_loop",
    "paper_open_loop",
    "paper_phase_margin",
    "paper_stability_map",
    "phase_margin",
    "stability_map",
    "unstable_runs",
]


@dataclass(frozen=True)
class DcqcnMargin:
    """Phase margin of N DCQCN flows on one bottleneck.

    Attributes
    ----------
    n_flows : int
    feedback_delay_s : float
        tau*, seconds.
    phase_margin_deg : float
        ``180 + arg L(j w_c)`` in degrees; ``-inf`` when the fixed point is pinned at Kmax.
    crossover_rad_per_s : float
        w_c (NaN when pinned).
    stable : bool
        ``phase_margin_deg > 0``.
    """

    n_flows: int
    feedback_delay_s: float
    phase_margin_deg: float
    crossover_rad_per_s: float
    stable: bool


def _jacobians(prm: DcqcnParams, n_flows: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """``(J, j_d, j_p, K)`` at the fixed point, in packets (module docstring)."""
    fp = fixed_point(prm, n_flows)
    pkt = prm.packet_bytes
    p = fp.marking_probability
    rc = fp.rate_bytes_per_s
    # R_T* from dR_C/dt = 0: R_T - R_C = alpha a / (tau (b + d)); obtained from the same function by
    # evaluating the (R_T - R_C)-free and unit-gap terms, so no second copy of a, b, d is kept here.
    _, drc_zero, _ = dcqcn_derivatives(
        np.array([p]), np.array([rc]), np.array([rc]), np.array([rc]), np.array([fp.alpha]), prm
    )
    _, drc_unit, _ = dcqcn_derivatives(
        np.array([p]), np.array([rc]), np.array([rc + pkt]), np.array([rc]), np.array([fp.alpha]), prm
    )
    rt = rc - float(drc_zero[0]) / float(drc_unit[0] - drc_zero[0]) * pkt
    x0 = np.array([rt, rc, fp.alpha, rc, p])  # R_T, R_C, alpha, R_C(t - tau*), p(t - tau*)
    scale = np.array([pkt, pkt, 1.0, pkt, 1.0])  # rates to packets/s

    def f(x: np.ndarray) -> np.ndarray:
        d_rt, d_rc, d_a = dcqcn_derivatives(
            np.array([x[4]]), np.array([x[3]]), np.array([x[0]]), np.array([x[1]]), np.array([x[2]]), prm
        )
        return np.array([d_rt[0] / pkt, d_rc[0] / pkt, d_a[0]])

    jac = np.empty((3, 5))
    for k in range(5):
        h = 1e-6 * (abs(x0[k]) if x0[k] != 0 else 1.0)
        if k == 4:
            h = min(h, 0.5 * p)
        up, down = x0.copy(), x0.copy()
        up[k] += h
        down[k] -= h
        jac[:, k] = (f(up) - f(down)) / (2 * h) * scale[k]
    slope = prm.pmax / ((prm.kmax_bytes - prm.kmin_bytes) / pkt)
    return jac[:, :3], jac[:, 3], jac[:, 4], slope


def open_loop(prm: DcqcnParams, n_flows: int, omega_rad_per_s: np.ndarray) -> np.ndarray:
    """``L(j w)`` of the linearised loop (module docstring) at the angular frequencies given.

    Parameters
    ----------
    prm : DcqcnParams
        Its ``feedback_delay_s`` is tau*.
    n_flows : int
    omega_rad_per_s : ndarray
        Angular frequencies, rad/s, > 0.

    Returns
    -------
    ndarray of complex, same shape as ``omega_rad_per_s``.

    Raises
    ------
    ConfigError
        If ``n_flows`` is not a positive integer, or the fixed point is pinned at Kmax (no slope).
    """
    fp = fixed_point(prm, n_flows)
    if fp.pinned_at_kmax:
        raise ConfigError(
            f"n_flows: the fixed point of {n_flows} flows has p* = {fp.marking_probability:.3g} > "
            f"pmax = {prm.pmax:g} (queue pinned at Kmax): no linearisation"
        )
    jac, j_d, j_p, slope = _jacobians(prm, n_flows)
    w = np.asarray(omega_rad_per_s, dtype=np.float64)
    s = 1j * w.reshape(-1)
    delay = np.exp(-s * prm.feedback_delay_s)
    e_rc = np.array([0.0, 1.0, 0.0])
    mats = s[:, None, None] * np.eye(3) - jac[None] - delay[:, None, None] * np.outer(j_d, e_rc)[None]
    rhs = np.broadcast_to(j_p.astype(complex)[:, None], (s.size, 3, 1))
    g = np.linalg.solve(mats, rhs)[:, 1, 0]
    return (-n_flows * slope * g * delay / s).reshape(w.shape)


def phase_margin(prm: DcqcnParams, n_flows: int) -> DcqcnMargin:
    """Phase margin of the linearised DCQCN loop (module docstring) for ``n_flows`` equal flows.

    The Bode plot is sampled on 4,000 log-spaced frequencies from 1 to 1e8 rad/s (0.16 Hz to 16 MHz, around
    the loop's time constants, microseconds to seconds); the phase is unwrapped from the low-frequency
    integrator (-90 deg), the outer delay's ``-w tau*`` added exactly, and every gain crossover is refined
    by linear interpolation in log w (:func:`_crossovers`).

    Raises
    ------
    ConfigError
        If ``n_flows`` is not a positive integer.

    Examples
    --------
    dcqcn-stability.tex: at tau* = 85 us, N = 10 is unstable, N = 64 stable (the model code's parameters,
    catalogue preset ``conext16-code``).

    >>> from aifabric.transport.params import dcqcn_preset
    >>> slow = dcqcn_preset("conext16-code").with_(feedback_delay_s=85e-6)
    >>> phase_margin(slow, 10).stable, phase_margin(slow, 64).stable
    (False, True)
    """
    fp = fixed_point(prm, n_flows)
    tau = prm.feedback_delay_s
    if fp.pinned_at_kmax:
        return DcqcnMargin(n_flows, tau, -math.inf, math.nan, False)
    w = np.logspace(0, 8, 4000)
    phase_deg, omegas = _crossovers(w, open_loop(prm, n_flows, w), tau)
    margins = 180.0 + phase_deg - np.degrees(omegas * tau)
    if not margins.size:  # the gain never falls through 0 dB in range: no crossover, infinite margin
        return DcqcnMargin(n_flows, tau, math.inf, math.nan, True)
    k = int(np.argmin(margins))
    pm = float(margins[k])
    return DcqcnMargin(n_flows, tau, pm, float(omegas[k]), pm > 0)


def _crossovers(w: np.ndarray, loop: np.ndarray, delay_s: float) -> tuple[np.ndarray, np.ndarray]:
    """Every gain crossover of ``loop`` sampled at ``w`` (rad/s): ``(arg L0(j w_c) in degrees, w_c)``.

    ``loop`` carries the feedback delay as an outer factor, ``L = L0 e^(-j w tau*)``; ``L0``'s phase is
    unwrapped from its integrator (-90 deg at low frequency) and each crossover is refined by linear
    interpolation in log w. The outer delay's own phase, ``-w_c tau*``, is left to the caller, exact: a
    pure delay leaves the gain unchanged and takes ``w_c tau*`` off the margin (CoNEXT'16 Sec. 4), and is
    never sampled, so it cannot alias between samples. :func:`open_loop`'s ``L0`` still holds tau* inside
    its rate-decrease feedback (the delayed term of its matrix); :func:`paper_open_loop`'s is delay-free.
    """
    gain_db = 20 * np.log10(np.abs(loop))
    phase = np.degrees(np.unwrap(np.angle(loop * np.exp(1j * w * delay_s))))
    phase += -360.0 * np.round((phase[0] + 90.0) / 360.0)  # the integrator's -90 deg at low frequency
    cross = np.flatnonzero((gain_db[:-1] >= 0) & (gain_db[1:] < 0))
    frac = gain_db[cross] / (gain_db[cross] - gain_db[cross + 1])
    lw = np.log(w)
    at = phase[cross] + frac * (phase[cross + 1] - phase[cross])
    return at, np.exp(lw[cross] + frac * (lw[cross + 1] - lw[cross]))


def paper_open_loop(prm: DcqcnParams, n_flows: int, omega_rad_per_s: np.ndarray) -> np.ndarray:
    """``L(j w)`` of the authors' linearisation (module docstring), packets and packets/s throughout.

    At ``p = p*`` (Taylor closed form), ``R = C/N``, ``alpha* = 1 - (1 - p)^(tau' R)``,
    ``R_T* = R (1 + (c + e) tau R_AI / a)`` and ``A = 1/B + 1/(T R)``, ``h = 1/2 + A/4``, ``K = N Pmax /
    (Kmax - Kmin)``, the Laplace transform of Appendix A's ``d dR_C / dt`` reads

        s R_C = e^(-s tau*) (k_p p + k_d R_C) + k_c R_C + k_t R_T + k_a alpha,

    ``k_p = -R^2 alpha/2 - h R R_T + h R^2``, ``k_d = -p R alpha/2 - A R/2 + h p R``,
    ``k_c = k_d + A R_T/2 - h p R_T``, ``k_t = A R/2 - h p R``, ``k_a = -p R^2/2``; with the queue
    ``p = K R_C / s``, ``alpha = g R e^(-s tau*) p / (s + g R)`` and
    ``(s + p R) R_T = (p R + A R_AI) R_C + e^(-s tau*) (u R_C + v K R_C / s)``,
    ``u = -p R_T + p R + A R_AI - (1 + 2F + A/2) R_AI p``, ``v = -R R_T + R^2 - (1 + 2F + A/2) R_AI R``.
    Collecting the delayed terms on the right,

        L(s) = e^(-s tau*) [(s + pR)(K k_p + s k_d + K k_a g R / (s + g R)) + k_t (s u + K v)]
               / (s [(s + p R)(k_c - s) + k_t (p R + A R_AI)]).

    Raises
    ------
    ConfigError
        If ``n_flows`` is not a positive integer.
    """
    p = taylor_marking_probability(prm, n_flows)  # checks n_flows
    n = int(n_flows)
    pkt = prm.packet_bytes
    r = prm.capacity_bytes_per_s / pkt / n
    r_ai, b_pk = prm.r_ai_bytes_per_s / pkt, prm.byte_counter_bytes / pkt
    tau, t_rate, f, g = prm.cnp_interval_s, prm.rate_timer_s, prm.fast_recovery_steps, prm.g
    ln1p = math.log1p(-p)
    a = -math.expm1(tau * r * ln1p)
    with np.errstate(over="ignore"):  # (1 - p)^-B overflows for large p B: the term -> 0
        c = math.exp(f * b_pk * ln1p) * p / float(np.expm1(-b_pk * ln1p))
        e = math.exp(f * t_rate * r * ln1p) * p / float(np.expm1(-t_rate * r * ln1p))
    rt = r * (1 + (c + e) * tau * r_ai / a)
    alpha = -math.expm1(prm.alpha_interval_s * r * ln1p)
    big_a = 1 / b_pk + 1 / (t_rate * r)
    h = 0.5 + big_a / 4
    k = n * prm.pmax / ((prm.kmax_bytes - prm.kmin_bytes) / pkt)
    k_p = -0.5 * r * r * alpha - h * r * rt + h * r * r
    k_d = -0.5 * p * r * alpha - big_a / 2 * r + h * p * r
    k_c = k_d + big_a / 2 * rt - h * p * rt
    k_t = big_a / 2 * r - h * p * r
    k_a = -0.5 * p * r * r
    step = 1 + 2 * f + big_a / 2
    u = -p * rt + p * r + big_a * r_ai - step * r_ai * p
    v = -r * rt + r * r - step * r_ai * r
    s = 1j * np.asarray(omega_rad_per_s, dtype=np.float64)
    num = (s + p * r) * (k * k_p + s * k_d + k * k_a * g * r / (s + g * r)) + k_t * (s * u + k * v)
    den = s * ((s + p * r) * (k_c - s) + k_t * (p * r + big_a * r_ai))
    return np.asarray(np.exp(-s * prm.feedback_delay_s) * num / den)


def paper_phase_margin(prm: DcqcnParams, n_flows: int) -> float:
    """Phase margin (degrees) of :func:`paper_open_loop`, as the published figure computes it.

    ``180 deg + arg L(j w_c)`` at each gain crossover of 4,000 log-spaced frequencies from 1 to 1e8 rad/s
    (refined by interpolation in log w), the lowest one; ``inf`` without a crossover. No pinning at Kmax:
    the figure ignores it. The published script wraps the margin to [-180, 180); here the wrap is taken
    before the delay's phase ``-w_c tau*`` is added (the authors' ``L`` is a delay-free rational function
    times ``e^(-s tau*)``, so ``w_c`` does not depend on tau*): the two agree wherever the margin lies in
    that range, as every published point does, and a long delay gives a margin below -180 deg, not a
    wrapped positive one (500 us, N = 1: -206.8 deg, not +153.2).

    Raises
    ------
    ConfigError
        If ``n_flows`` is not a positive integer.
    """
    w = np.logspace(0, 8, 4000)
    phase_deg, omegas = _crossovers(w, paper_open_loop(prm, n_flows, w), prm.feedback_delay_s)
    # the script's wrap applies to the delay-free loop, whose phase is unchanged by tau*; the delay's
    # -w_c tau* then only lowers the margin
    margins = (phase_deg + 360.0) % 360.0 - 180.0 - np.degrees(omegas * prm.feedback_delay_s)
    return float(margins.min()) if margins.size else math.inf


def stability_map(prm: DcqcnParams, flows: list[int], delays_s: list[float]) -> np.ndarray:
    """Phase margins (degrees) over a grid, shape ``(len(delays_s), len(flows))``: the paper's Fig. 10."""
    return np.array(
        [[phase_margin(prm.with_(feedback_delay_s=d), n).phase_margin_deg for n in flows] for d in delays_s]
    )


def paper_stability_map(prm: DcqcnParams, flows: list[int], delays_s: list[float]) -> np.ndarray:
    """:func:`paper_phase_margin` over a grid, degrees, shape ``(len(delays_s), len(flows))``."""
    return np.array([[paper_phase_margin(prm.with_(feedback_delay_s=d), n) for n in flows] for d in delays_s])


def unstable_runs(flows: list[int], margins_deg: np.ndarray) -> list[tuple[int, int]]:
    """The runs of consecutive entries of ``flows`` whose margin is not positive (unstable, or pinned at
    Kmax: ``-inf``), as ``(first N, last N)``, in order.

    >>> unstable_runs([1, 2, 3, 4, 5], np.array([1.0, -2.0, -1.0, 0.5, -0.1]))
    [(2, 3), (5, 5)]
    """
    bad = ~(np.asarray(margins_deg) > 0)
    runs: list[tuple[int, int]] = []
    for i in np.flatnonzero(bad).tolist():
        if runs and i > 0 and bad[i - 1]:
            runs[-1] = (runs[-1][0], flows[i])
        else:
            runs.append((flows[i], flows[i]))
    return runs


@dataclass(frozen=True)
class MarginSweep:
    """Phase margins of N = 1 .. ``max_flows`` DCQCN flows on one bottleneck at several feedback delays.

    Attributes
    ----------
    flows : list of int
        N, 1 .. max_flows.
    delays_s : list of float
        tau*, seconds.
    exact_deg, paper_deg : ndarray, shape (len(delays_s), len(flows))
        :func:`phase_margin` (exact linearisation; ``-inf`` pinned at Kmax) and :func:`paper_phase_margin`
        (the authors' Taylor linearisation), degrees.
    """

    flows: list[int]
    delays_s: list[float]
    exact_deg: np.ndarray
    paper_deg: np.ndarray

    def stable_from(self, margins_deg: np.ndarray) -> int | None:
        """The least N from which every larger N of the sweep is stable (None: the largest is not)."""
        runs = unstable_runs(self.flows, margins_deg)
        if not runs:
            return self.flows[0]
        last = runs[-1][1]
        return None if last == self.flows[-1] else last + 1


def margin_sweep(prm: DcqcnParams, max_flows: int, delays_s: list[float]) -> MarginSweep:
    """Both linearisations' phase margins for N = 1 .. ``max_flows`` at each delay (the paper's Fig. 10
    axes: flows and control-loop delay).

    Raises
    ------
    ConfigError
        If ``max_flows`` < 1 or a delay is outside [0, 1) s (:class:`DcqcnParams`).
    """
    if max_flows < 1:
        raise ConfigError(f"max_flows: must be >= 1, got {max_flows}")
    flows = list(range(1, int(max_flows) + 1))
    return MarginSweep(
        flows, list(delays_s), stability_map(prm, flows, delays_s), paper_stability_map(prm, flows, delays_s)
    )
