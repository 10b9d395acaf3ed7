"""DCQCN on one bottleneck: the fluid model of Zhu et al., its fixed point and its stability.

The model (CoNEXT'16, Fig. "DCQCN fluid model", the per-flow extension of the SIGCOMM'15 model) counts rates
in packets/s and queues in packets, because marking is per packet. With ``p = RED(q(t - tau*))`` and
``R_d = R_C(t - tau*)`` for each flow:

    dq/dt   = sum_i R_C_i - C                                                  (q >= 0)
    da/dt   = g / tau' * [(1 - (1 - p)^(tau' R_d)) - a]
    dR_T/dt = -(R_T - R_C) / tau * (1 - (1 - p)^(tau R_d))
              + R_AI R_d (1 - p)^(F B) b + R_AI R_d (1 - p)^(F T R_d) d
    dR_C/dt = -R_C a / (2 tau) * (1 - (1 - p)^(tau R_d)) + (R_T - R_C) / 2 * R_d * (b + d)

with ``b = p / ((1 - p)^-B - 1)`` (byte-counter events per packet) and ``d = p / ((1 - p)^(-T R_d) - 1)``
(timer events per packet); both tend to ``1/B`` and ``1/(T R_d)`` as p -> 0. Flows start at line rate
(DCQCN has no slow start) and never exceed it.

Setting the derivatives to zero gives the fixed point: equal rates ``C/N`` and the marking probability
``p*`` that solves

    a^2 alpha* / ((b + d)(c + e)) = tau^2 R_AI R*,   R* = C / N,

with ``a = 1 - (1 - p)^(tau R*)``, ``alpha* = 1 - (1 - p)^(tau' R*)``, ``c = (1 - p)^(F B) b`` and
``e = (1 - p)^(F T R*) d``; the queue follows from the RED profile, ``q* = Kmin + p*/Pmax (Kmax - Kmin)``
(pinned at Kmax when ``p* > Pmax``). :func:`fixed_point` solves it exactly (Brent's method on log p);
:func:`taylor_marking_probability` is the paper's closed-form approximation, which overestimates p*.

References
----------
.. [1] Y. Zhu, M. Ghobadi, V. Misra and J. Padhye, "ECN or Delay: Lessons Learnt from Analysis of DCQCN and
   TIMELY", CoNEXT 2016, doi:10.1145/2999572.2999593; model source jitupadhye-zz/rdma@e7e9160
   ``conext2016/dcqcn-model.tex``, ``dcqcn-stability.tex``, ``fluidmodel/dcqcn/dcqcn2.m``.
.. [2] Y. Zhu et al., "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015,
   doi:10.1145/2785956.2787484.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq

from aifabric.errors import ConfigError
from aifabric.transport.params import DcqcnParams

__all__ = [
    "DcqcnFixedPoint",
    "DcqcnTrace",
    "dcqcn_derivatives",
    "fixed_point",
    "queue_oscillation",
    "red_probability",
    "simulate_dcqcn",
    "taylor_marking_probability",
]

_P_FLOOR = 1e-12  # p is floored here so that b and d take their p -> 0 limits without 0/0


def red_probability(queue_bytes: np.ndarray | float, kmin: float, kmax: float, pmax: float) -> np.ndarray:
    """ECN marking probability of a RED profile (DCQCN's CP): 0 up to Kmin, linear to Pmax at Kmax, then 1.

    >>> red_probability(np.array([0.0, 102.5e3, 300e3]), 5e3, 200e3, 0.1).round(3).tolist()
    [0.0, 0.05, 1.0]
    """
    q = np.asarray(queue_bytes, dtype=np.float64)
    ramp = np.clip((q - kmin) / (kmax - kmin), 0.0, 1.0) * pmax
    return np.where(q > kmax, 1.0, ramp)


def dcqcn_derivatives(
    p: np.ndarray, rc_delayed: np.ndarray, rt: np.ndarray, rc: np.ndarray, alpha: np.ndarray, prm: DcqcnParams
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(dR_T/dt, dR_C/dt, dalpha/dt)`` of the CoNEXT'16 fluid model (module docstring), per flow.

    Parameters
    ----------
    p : ndarray
        Marking probability each flow saw, taken at ``t - tau*`` (per packet, in [0, 1]).
    rc_delayed : ndarray
        ``R_C(t - tau*)``, bytes/s.
    rt, rc : ndarray
        Target and current rate now, bytes/s.
    alpha : ndarray
        The reaction point's alpha now.
    prm : DcqcnParams

    Returns
    -------
    tuple of ndarray
        Rates' derivatives in bytes/s^2 and alpha's in 1/s.
    """
    pkt = prm.packet_bytes
    rd = np.maximum(rc_delayed / pkt, 1e-9)  # packets/s
    rt_p, rc_p = rt / pkt, rc / pkt
    r_ai = prm.r_ai_bytes_per_s / pkt
    b_pk = prm.byte_counter_bytes / pkt
    tau, tau_a, t_rate, f = (
        prm.cnp_interval_s,
        prm.alpha_interval_s,
        prm.rate_timer_s,
        prm.fast_recovery_steps,
    )
    pf = np.clip(p, _P_FLOOR, 1.0 - 1e-12)
    ln1p = np.log1p(-pf)
    with np.errstate(over="ignore"):  # (1 - p)^-B overflows to inf for large p: b, d -> 0, the right limit
        a = -np.expm1(tau * rd * ln1p)
        a_alpha = -np.expm1(tau_a * rd * ln1p)
        b = pf / np.expm1(-b_pk * ln1p)
        d = pf / np.expm1(-t_rate * rd * ln1p)
        c = np.exp(f * b_pk * ln1p) * b
        e = np.exp(f * t_rate * rd * ln1p) * d
    d_alpha = prm.g / tau_a * (a_alpha - alpha)
    d_rt = -(rt_p - rc_p) / tau * a + r_ai * rd * (c + e)
    d_rc = -rc_p * alpha / (2 * tau) * a + (rt_p - rc_p) / 2 * rd * (b + d)
    return d_rt * pkt, d_rc * pkt, d_alpha


@dataclass(frozen=True)
class DcqcnFixedPoint:
    """The fixed point of N DCQCN flows on one bottleneck.

    Attributes
    ----------
    n_flows : int
    marking_probability : float
        p*, per packet (may exceed Pmax: the queue is then pinned at Kmax).
    rate_bytes_per_s : float
        R* = C / N per flow.
    queue_bytes : float
        q* from the RED profile.
    alpha : float
        alpha* = 1 - (1 - p*)^(tau' R*).
    pinned_at_kmax : bool
        True when p* > Pmax.
    """

    n_flows: int
    marking_probability: float
    rate_bytes_per_s: float
    queue_bytes: float
    alpha: float
    pinned_at_kmax: bool


def _check_n(n_flows: int) -> int:
    if isinstance(n_flows, bool) or int(n_flows) != n_flows or n_flows < 1:
        raise ConfigError(f"n_flows must be an integer >= 1, got {n_flows!r}")
    return int(n_flows)


def fixed_point(prm: DcqcnParams, n_flows: int) -> DcqcnFixedPoint:
    """Exact fixed point of the fluid model for ``n_flows`` equal flows (module docstring, [1]_ Sec. 4).

    The left-hand side of the fixed-point equation grows monotonically with p, so its root is bracketed on a
    log grid from 1e-12 to 1 and refined with Brent's method.

    Raises
    ------
    ConfigError
        If ``n_flows`` is not a positive integer.

    Examples
    --------
    The reference's table (congestion-control.md Sec. 1.3): 40 Gb/s, 1 KB packets, 10 flows, Pmax 10 %
    gives p* = 6.0e-3 and q* = 16.8 KB.

    >>> from aifabric.transport.params import dcqcn_preset
    >>> fp = fixed_point(dcqcn_preset("conext16"), 10)
    >>> round(fp.marking_probability, 4), round(fp.queue_bytes / 1e3, 1)
    (0.006, 16.8)
    """
    n = _check_n(n_flows)
    pkt = prm.packet_bytes
    r = prm.capacity_bytes_per_s / pkt / n
    r_ai = prm.r_ai_bytes_per_s / pkt
    b_pk = prm.byte_counter_bytes / pkt
    tau, tau_a, t_rate, f = (
        prm.cnp_interval_s,
        prm.alpha_interval_s,
        prm.rate_timer_s,
        prm.fast_recovery_steps,
    )

    def em1(x: float) -> float:
        try:
            return math.expm1(x)
        except OverflowError:
            return math.inf

    def gap(log_p: float) -> float:
        p = math.exp(log_p)
        ln1p = math.log1p(-p)
        a = -math.expm1(tau * r * ln1p)
        al = -math.expm1(tau_a * r * ln1p)
        b = p / em1(-b_pk * ln1p)
        c = math.exp(f * b_pk * ln1p) * b
        d = p / em1(-t_rate * r * ln1p)
        e = math.exp(f * t_rate * r * ln1p) * d
        den = (b + d) * (c + e)
        if den <= 0:
            return math.inf
        return math.log(a * a * al) - math.log(den) - math.log(tau * tau * r_ai * r)

    grid = np.log(np.logspace(-12, math.log10(0.999), 400))
    values = np.array([gap(float(x)) for x in grid])
    cross = np.flatnonzero((values[:-1] < 0) & (values[1:] >= 0))
    if not cross.size:  # pragma: no cover - the equation always has a root for positive parameters
        raise ConfigError("dcqcn: no fixed point in p in [1e-12, 1); check the parameters")
    i = int(cross[0])
    p = math.exp(brentq(gap, float(grid[i]), float(grid[i + 1]), xtol=1e-14, rtol=1e-12))
    pinned = p > prm.pmax
    q = prm.kmax_bytes if pinned else prm.kmin_bytes + p / prm.pmax * (prm.kmax_bytes - prm.kmin_bytes)
    alpha = -math.expm1(tau_a * r * math.log1p(-p))
    return DcqcnFixedPoint(n, p, prm.capacity_bytes_per_s / n, q, alpha, pinned)


def taylor_marking_probability(prm: DcqcnParams, n_flows: int) -> float:
    """The paper's closed-form approximation ``p* ~ cbrt(R_AI N^2 / (tau' C^2) (1/B + N/(T C))^2)``.

    Rates and B in packets ([1]_ Sec. 4, Taylor expansion around p = 0). It overestimates the exact root
    (:func:`fixed_point`) by 15-60 % on the reference's cases.

    Raises
    ------
    ConfigError
        If ``n_flows`` is not a positive integer.
    """
    n = _check_n(n_flows)
    pkt = prm.packet_bytes
    c = prm.capacity_bytes_per_s / pkt
    b = prm.byte_counter_bytes / pkt
    r_ai = prm.r_ai_bytes_per_s / pkt
    return float(
        np.cbrt(r_ai * n * n / (prm.alpha_interval_s * c * c) * (1 / b + n / (prm.rate_timer_s * c)) ** 2)
    )


@dataclass(frozen=True)
class DcqcnTrace:
    """A simulated run of the fluid model, sampled every ``sample_s``.

    Attributes
    ----------
    time_s : ndarray, shape (n_samples,)
    queue_bytes : ndarray, shape (n_samples,)
    rate_bytes_per_s : ndarray, shape (n_samples, n_flows)
        R_C of every flow.
    alpha : ndarray, shape (n_samples, n_flows)
    """

    time_s: np.ndarray
    queue_bytes: np.ndarray
    rate_bytes_per_s: np.ndarray
    alpha: np.ndarray

    def tail(self, fraction: float = 0.25) -> slice:
        """Slice of the last ``fraction`` of the samples (the steady-state window)."""
        n = self.time_s.size
        return slice(max(0, int(n * (1 - fraction))), n)


def simulate_dcqcn(
    prm: DcqcnParams,
    n_flows: int,
    duration_s: float,
    *,
    dt_s: float = 1e-6,
    sample_s: float = 1e-5,
    start_rates_bytes_per_s: np.ndarray | None = None,
) -> DcqcnTrace:
    """Integrate the delay ODE (module docstring) with an explicit Euler step and a history buffer.

    The delay is ``round(tau* / dt)`` steps. Every flow starts with ``R_T = R_C`` at line rate unless
    ``start_rates_bytes_per_s`` is given, alpha = 1 (DCQCN's value after the first CNP) and an empty queue.
    Rates stay within [packet / tau, C]. Cost: ``duration / dt`` vectorised steps (1 s of 1 us steps is ~8 s).

    Raises
    ------
    ConfigError
        If ``n_flows`` is not a positive integer, a time is not positive, or ``dt_s`` is not below the
        model's shortest time constant (tau).
    """
    n = _check_n(n_flows)
    if not (duration_s > 0 and dt_s > 0 and sample_s > 0):
        raise ConfigError(f"duration_s, dt_s and sample_s must be > 0, got {duration_s}, {dt_s}, {sample_s}")
    if dt_s > prm.cnp_interval_s / 10:
        raise ConfigError(f"dt_s must be <= tau / 10 = {prm.cnp_interval_s / 10:g} s, got {dt_s!r}")
    line = prm.capacity_bytes_per_s
    rc = np.full(n, line) if start_rates_bytes_per_s is None else np.array(start_rates_bytes_per_s, float)
    if rc.shape != (n,):
        raise ConfigError(f"start_rates_bytes_per_s must have {n} entries, got shape {rc.shape}")
    rt = rc.copy()
    alpha = np.ones(n)
    q = 0.0
    delay = max(1, round(prm.feedback_delay_s / dt_s))
    hist_q = np.zeros(delay)
    hist_rc = np.tile(rc, (delay, 1))
    steps = int(math.ceil(duration_s / dt_s))
    every = max(1, round(sample_s / dt_s))
    n_samples = steps // every + 1
    out_t, out_q = np.empty(n_samples), np.empty(n_samples)
    out_r, out_a = np.empty((n_samples, n)), np.empty((n_samples, n))
    floor = prm.packet_bytes / prm.cnp_interval_s
    k = 0
    for step in range(steps + 1):
        if step % every == 0 and k < n_samples:
            out_t[k], out_q[k], out_r[k], out_a[k] = step * dt_s, q, rc, alpha
            k += 1
        slot = step % delay
        q_old, rc_old = hist_q[slot], hist_rc[slot].copy()
        hist_q[slot], hist_rc[slot] = q, rc
        p = red_probability(q_old, prm.kmin_bytes, prm.kmax_bytes, prm.pmax)
        d_rt, d_rc, d_alpha = dcqcn_derivatives(np.full(n, float(p)), rc_old, rt, rc, alpha, prm)
        q = max(0.0, q + (rc.sum() - line) * dt_s)
        rt = np.clip(rt + d_rt * dt_s, floor, line)
        rc = np.clip(rc + d_rc * dt_s, floor, line)
        alpha = np.clip(alpha + d_alpha * dt_s, 0.0, 1.0)
    return DcqcnTrace(out_t[:k], out_q[:k], out_r[:k], out_a[:k])


def queue_oscillation(trace: DcqcnTrace, fraction: float = 0.25) -> float:
    """Peak-to-peak queue swing over the last ``fraction`` of the run, divided by the mean queue there.

    A stable fixed point gives a swing that decays to ~0; an unstable one a sustained limit cycle (the
    swing stays of the order of the mean or above). 0.0 when the queue is empty throughout.
    """
    q = trace.queue_bytes[trace.tail(fraction)]
    mean = float(q.mean()) if q.size else 0.0
    return float((q.max() - q.min()) / mean) if mean > 0 else 0.0
