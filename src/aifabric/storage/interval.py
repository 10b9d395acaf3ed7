"""How often to checkpoint: Young's optimum and the goodput it loses.

With a checkpoint costing ``delta`` seconds of lost training, failures arriving at rate 1/M (M the job's
mean time between failures) and a restart costing R, a run that checkpoints every ``tau`` seconds of work
loses, to first order, the fraction

    lost(tau) = delta / tau  +  tau / (2 M)  +  R / M

(checkpoint overhead + half an interval of work redone per failure + the restart). It is least at

    tau* = sqrt(2 delta M)            (Young 1974; Daly 2006 eq. 20 to first order)

where lost(tau*) = sqrt(2 delta / M) + R / M. Valid for delta << M and tau << M: the expansion counts at
most one failure per interval and none during a checkpoint or a restart. Daly's higher-order estimate
applies only for delta < 2 M and gives tau = M beyond, so an interval of M or more, one no longer than the
checkpoint itself, or a restart of M or more is outside the first-order model
(:func:`young_daly_outside`).

References
----------
.. [1] J. W. Young, "A first order approximation to the optimum checkpoint interval", CACM 17(9), 1974,
   doi:10.1145/361147.361115.
.. [2] J. T. Daly, "A higher order estimate of the optimum checkpoint interval for restart dumps", FGCS
   22(3), 2006, doi:10.1016/j.future.2004.11.016.

The job's MTBF from its parts (:func:`series_mtbf_s`): a synchronous job stops when any of its parts fails,
so with independent parts of constant failure rate (the exponential model Young assumes) the rates add,

    1 / M = sum_i n_i / M_i

(n_i parts of MTBF M_i each): 10,000 GPUs of 50,000 h fail every 5 h, and 1,250 nodes whose other parts
(2 NICs of 150,000 h, 2 PSUs of 100,000 h) fail every 30,000 h bring it to 4.14 h (the MTBF cascade of
V. J. Reddi et al., "Machine Learning Systems" vol. 2, appendix D "Reliability Foundations",
harvard-edge/cs249r_book, Tables D.1-D.2). Kokolis et al. ("Revisiting reliability in large-scale machine
learning research clusters", HPCA 2025, arXiv:2410.21680) project their clusters' job MTTF with nodes in
series the same way.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

__all__ = ["goodput_lost_fraction", "series_mtbf_s", "young_daly_interval_s", "young_daly_outside"]


def series_mtbf_s(parts: Iterable[tuple[float, float]]) -> float:
    """MTBF of a job that stops when any part fails: ``1 / sum(count / mtbf)`` over ``(count, mtbf_s)``
    pairs (module docstring); parts counted 0 times are left out.

    Raises
    ------
    ValueError
        If a count is < 0 or not finite, an MTBF is not > 0 and finite, or no part is counted.

    Examples
    --------
    100,000 GPUs that each fail once in 50,000 hours: one failure every half hour.

    >>> series_mtbf_s([(100_000, 50_000 * 3600.0)]) / 3600
    0.5
    """
    rate = 0.0
    for count, mtbf in parts:
        if not (math.isfinite(count) and count >= 0) or not (math.isfinite(mtbf) and mtbf > 0):
            raise ValueError(f"need a finite count >= 0 and a finite MTBF > 0, got {count!r}, {mtbf!r}")
        rate += count / mtbf
    if not rate > 0:
        raise ValueError("no part is counted: a job of nothing never fails")
    return 1.0 / rate


def young_daly_interval_s(checkpoint_s: float, mtbf_s: float) -> float:
    """Young's optimal checkpoint interval sqrt(2 delta M), seconds.

    Raises
    ------
    ValueError
        If ``checkpoint_s`` < 0 or ``mtbf_s`` <= 0.

    Examples
    --------
    A 30 s checkpoint on a job failing every 2.78 h (Llama 3: 466 interruptions in 54 days):

    >>> round(young_daly_interval_s(30.0, 54 * 86400 / 466) / 60, 1)  # minutes
    12.9
    """
    if checkpoint_s < 0 or not mtbf_s > 0:
        raise ValueError(f"need checkpoint_s >= 0 and mtbf_s > 0, got {checkpoint_s!r}, {mtbf_s!r}")
    return math.sqrt(2 * checkpoint_s * mtbf_s)


def goodput_lost_fraction(
    interval_s: float, checkpoint_s: float, mtbf_s: float, restart_s: float = 0.0
) -> float:
    """First-order fraction of time lost: delta / tau + tau / (2 M) + R / M (capped at 1).

    Raises
    ------
    ValueError
        If ``interval_s`` <= 0, ``mtbf_s`` <= 0 or a cost < 0.
    """
    if not interval_s > 0 or not mtbf_s > 0 or checkpoint_s < 0 or restart_s < 0:
        raise ValueError("need interval_s > 0, mtbf_s > 0 and costs >= 0")
    return min(1.0, checkpoint_s / interval_s + interval_s / (2 * mtbf_s) + restart_s / mtbf_s)


#: Where the first-order model stops holding, in the order checked: ``(test of (tau, delta, M, R), reason)``
#: (module docstring; Young 1974, Daly 2006 Sec. 3).
_OUTSIDE: tuple[tuple[Callable[[float, float, float, float], bool], str], ...] = (
    (lambda tau, delta, m, r: not tau > delta, "the interval is not longer than one checkpoint"),
    (lambda tau, delta, m, r: not tau < m, "the interval is not shorter than the MTBF"),
    (lambda tau, delta, m, r: not r < m, "a restart takes no less than the MTBF"),
)


def young_daly_outside(
    interval_s: float, checkpoint_s: float, mtbf_s: float, restart_s: float = 0.0
) -> str | None:
    """Why checkpointing every ``interval_s`` lies outside the first-order model, or None when inside it.

    The model assumes the checkpoint, the interval and the restart all short against the MTBF (module
    docstring): an interval no longer than one checkpoint, one of the MTBF or more (failures then land in
    most intervals, and the loss formula passes 100 %), or a restart no shorter than the MTBF is outside it.

    Raises
    ------
    ValueError
        If ``mtbf_s`` <= 0 or a time < 0.

    Examples
    --------
    An async checkpoint (120.6 ms to copy to host) every 12.35 s, its drain, on a job failing every second:

    >>> young_daly_outside(12.35, 0.1206, 1.0)
    'the interval is not shorter than the MTBF'
    >>> young_daly_outside(600.0, 30.0, 10_000.0) is None
    True
    """
    if interval_s < 0 or checkpoint_s < 0 or restart_s < 0 or not mtbf_s > 0:
        raise ValueError(
            f"need times >= 0 and mtbf_s > 0, got {interval_s!r}, {checkpoint_s!r}, {mtbf_s!r}, {restart_s!r}"
        )
    return next((why for test, why in _OUTSIDE if test(interval_s, checkpoint_s, mtbf_s, restart_s)), None)
