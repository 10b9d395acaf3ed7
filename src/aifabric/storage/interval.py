"""How often to checkpoint: Young's optimum and the goodput it loses.

With a checkpoint costing ``delta`` seconds of lost training, failures arriving at rate 1/M (M the job's
mean time between failures) and a restart costing R, a run that checkpoints every ``tau`` seconds of work
loses, to first order, the fraction

    lost(tau) = delta / tau  +  tau / (2 M)  +  R / M

(checkpoint overhead + half an interval of work redone per failure + the restart). It is least at

    tau* = sqrt(2 delta M)            (Young 1974; Daly 2006 eq. 20 to first order)

where lost(tau*) = sqrt(2 delta / M) + R / M. Valid for delta << M.

References
----------
.. [1] J. W. Young, "A first order approximation to the optimum checkpoint interval", CACM 17(9), 1974,
   doi:10.1145/361147.361115.
.. [2] J. T. Daly, "A higher order estimate of the optimum checkpoint interval for restart dumps", FGCS
   22(3), 2006, doi:10.1016/j.future.2004.11.016.
"""

from __future__ import annotations

import math

__all__ = ["goodput_lost_fraction", "young_daly_interval_s"]


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
