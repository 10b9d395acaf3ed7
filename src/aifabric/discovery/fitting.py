"""Fit a calibration profile to measured nccl-tests tables.

The formula engine's tier model has four knobs a profile sets
(:class:`~aifabric.discovery.calibrate.Calibration`): ``intra_scale`` and ``inter_scale`` multiply the
scale-up and scale-out bandwidths, ``latency_scale`` multiplies NCCL's latency constants and
``extra_inter_latency_s`` adds to every network hop. :func:`fit_calibration` chooses them by bounded
non-linear least squares (``scipy.optimize.least_squares``) on the log of the time ratio of every row:

    r_i = ln( t_model(size_i; theta) / t_measured_i ),     theta = (ln s_intra, ln s_inter, ln s_lat, a_extra)

Log-time residuals weigh a 25 us row and a 40 ms row alike, so one fit covers latency and bandwidth. Each
residual is weighted by how clearly its row belongs to one regime, ``max(0.2, (2 s - 1)^2)`` with ``s`` the
latency share of NCCL's model time: rows at the latency/bandwidth crossover, where the model is least right
and a row can be matched by trading latency against bandwidth, count a fifth. A robust loss (``soft_l1``,
scale 0.1, i.e. ~10 %) keeps a few poorly modelled rows from dragging the fit, and a weak prior pulls every
knob towards NCCL's own constants (scales 1, no extra latency) with a width of a factor e (and 20 us): a knob
the rows cannot see -- the NVLink scale on a NIC-bound ring, the latency on 1 GB rows -- stays at NCCL's value
instead of wandering to a bound. Rows that are one-off outliers (out-of-place and in-place more than 1.5x
apart) or isolated dips are left out; a size window (``min_size_bytes``/``max_size_bytes``) holds the rest out
so that the fit can be checked on them.

After the fit, the information the rows carry on each knob (the sum of the squared sensitivities of the
weighted residuals, Gauss-Newton) is compared with the prior's: below 5 % of it (:data:`DETERMINED_INFO`),
a knob is one the rows cannot determine -- changing it by a factor e moves their log-times by less than
about 0.2 in all. It is kept at NCCL's value (:data:`NEUTRAL`), the others are refitted, and the report says
"not determined (kept at 1.0)" instead of quoting a value the prior chose.

Bounds: latency scale 0.25-8, extra latency 0-200 us, bandwidth scales from 0.2 up to the line rate (a scale
that made a 400 Gb/s NIC carry more than 50 GB/s, or NVLink more than its signalling rate, is refused). A
fitted knob within 1 % of a bound (0.1 us for the extra latency) is reported
(:attr:`CalibrationFit.at_bound`): the rows wanted it further, so the model, not the fabric, is the suspect.

Each determined knob comes with its standard error (:attr:`CalibrationFit.uncertainty`), from the
Gauss-Newton covariance at the solution, rows and prior together::

    cov = s^2 (J^T J + diag(1 / width^2))^-1,     s^2 = sum(r_i^2) / max(1, n - p)

with ``J`` the sensitivities of the weighted residuals to the free knobs (central differences), ``n`` rows
and ``p`` free knobs; a scale's error is its value times the error of its logarithm. The rows are predicted
with the algorithm and protocol the run used -- the log's ``NCCL_ALGO``/``NCCL_PROTO`` and INFO lines
(NVLS unavailable), else the model's choice of NCCL's -- and the fit reports how many rows each took
(:attr:`CalibrationFit.paths`), so that a profile fitted on Ring rows is not read as one for NVLS.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import least_squares

from aifabric.discovery.calibrate import Calibration
from aifabric.discovery.compare import TableComparison

__all__ = [
    "DETERMINED_INFO",
    "NEUTRAL",
    "PARAMETERS",
    "CalibrationFit",
    "FitRow",
    "fit_calibration",
    "size_window",
]

_BOUNDS_LOW = np.array([math.log(0.2), math.log(0.2), math.log(0.25), 0.0])
_BOUNDS_HIGH = np.array([math.log(5.0), math.log(5.0), math.log(8.0), 200.0])
_PRIOR_WIDTH = np.array([1.0, 1.0, 1.0, 20.0])  # ln-units for the scales, microseconds for the extra latency
#: The knobs, in the order of the optimiser's vector, and the value each is kept at when the rows cannot see
#: it.
PARAMETERS: tuple[str, ...] = ("intra_scale", "inter_scale", "latency_scale", "extra_inter_latency_s")
NEUTRAL: dict[str, float] = {
    "intra_scale": 1.0,
    "inter_scale": 1.0,
    "latency_scale": 1.0,
    "extra_inter_latency_s": 0.0,
}
#: A knob is "determined" when the rows' information on it is at least this fraction of the prior's.
DETERMINED_INFO = 0.05
_FD_STEP = np.array([0.05, 0.05, 0.05, 1.0])  # finite-difference steps of the sensitivity, optimiser units


@dataclass(frozen=True)
class _Knobs:
    """What the engine reads from a calibration, without Calibration's range checks (for the optimiser)."""

    intra_scale: float
    inter_scale: float
    latency_scale: float
    extra_inter_latency_s: float


def _knobs(x: np.ndarray) -> _Knobs:
    return _Knobs(math.exp(x[0]), math.exp(x[1]), math.exp(x[2]), float(x[3]) * 1e-6)


@dataclass(frozen=True)
class FitRow:
    """One row of a fitted table.

    Attributes
    ----------
    table_index : int
        1-based table number in its log.
    source : str or None
        The log.
    size_bytes : int
    line : int
        Line of the row in the log.
    measured_time_s : float
    before_time_s, after_time_s : float
        Model time with NCCL's constants and with the fitted profile, seconds.
    used : bool
        Whether the row entered the fit.
    reason : str or None
        Why it did not (``outlier``, ``dip``, ``held out``).
    """

    table_index: int
    source: str | None
    size_bytes: int
    line: int
    measured_time_s: float
    before_time_s: float
    after_time_s: float
    used: bool
    reason: str | None = None

    @property
    def residual(self) -> float:
        """ln(after / measured): the fitted model's log-time error (0.1 = 10.5 % slow)."""
        return math.log(self.after_time_s / self.measured_time_s)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict, SI units."""
        return {
            "table": self.table_index,
            "source": self.source,
            "size_bytes": self.size_bytes,
            "line": self.line,
            "measured_time_s": self.measured_time_s,
            "before_time_s": self.before_time_s,
            "after_time_s": self.after_time_s,
            "residual_log": self.residual,
            "used": self.used,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class CalibrationFit:
    """The fitted profile and how well it fits.

    Attributes
    ----------
    calibration : Calibration
        The profile (its ``residual_rms`` is :attr:`rms_fit`).
    rows : tuple of FitRow
        Every row of the input tables, used or not.
    success : bool
        The optimiser's convergence flag.
    message : str
        The optimiser's message.
    n_evaluations : int
        Model evaluations of all rows.
    determined : dict
        For each knob of :data:`PARAMETERS`, whether the rows determine it: their information on it must be at
        least :data:`DETERMINED_INFO` of the prior's (Gauss-Newton, at the solution).
        A knob they cannot see (the NVLink scale on a NIC-bound ring, the network on one node, the latency
        on 1 GB rows) is kept at NCCL's value, :data:`NEUTRAL`, and reported as not determined.
    window : str
        The size window in words (``"64 MiB and up"``), empty without one.
    uncertainty : dict
        Standard error of each determined knob in its own units (scales, seconds); None where not determined.
    at_bound : tuple of str
        Fitted knobs within 1 % of a bound of the fit's box.
    paths : dict
        ``"ring/Simple"`` -> rows fitted that NCCL ran (or the model predicts it runs) that way.
    """

    calibration: Calibration
    rows: tuple[FitRow, ...]
    success: bool
    message: str
    n_evaluations: int
    determined: dict[str, bool] = field(default_factory=lambda: dict.fromkeys(PARAMETERS, True))
    window: str = ""
    uncertainty: dict[str, float | None] = field(default_factory=dict)
    at_bound: tuple[str, ...] = ()
    paths: dict[str, int] = field(default_factory=dict)

    @property
    def undetermined(self) -> tuple[str, ...]:
        """Knobs the rows cannot determine, kept at NCCL's value (:data:`NEUTRAL`)."""
        return tuple(k for k in PARAMETERS if not self.determined.get(k, True))

    @staticmethod
    def _rms(values: Sequence[float]) -> float | None:
        return math.sqrt(sum(v * v for v in values) / len(values)) if values else None

    @property
    def rms_fit(self) -> float:
        """RMS of the log-time residuals over the rows used in the fit."""
        value = self._rms([r.residual for r in self.rows if r.used])
        return 0.0 if value is None else value

    @property
    def rms_held_out(self) -> float | None:
        """RMS of the log-time residuals over the rows held out by the size window (None if none)."""
        return self._rms([r.residual for r in self.rows if r.reason == "held out"])

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        cal = self.calibration
        return {
            "calibration": {k: getattr(cal, k) for k in Calibration.__dataclass_fields__},
            "rms_fit_log": self.rms_fit,
            "rms_held_out_log": self.rms_held_out,
            "success": self.success,
            "message": self.message,
            "n_evaluations": self.n_evaluations,
            "determined": dict(self.determined),
            "uncertainty": dict(self.uncertainty),
            "at_bound": list(self.at_bound),
            "paths": dict(self.paths),
            "size_window": self.window or None,
            "rows": [r.to_dict() for r in self.rows],
        }


def _regime_weight(latency_share: float) -> float:
    """Weight of a row's residual: ``max(0.2, (2 s - 1)^2)`` for a latency share ``s`` of the model time.

    1 for a row that is all latency or all bandwidth, 0.2 at the crossover (s = 1/2), where an alpha-beta
    model is least right (NCCL switches protocol and ramps its channels there) and where a row can be fitted
    by trading latency against bandwidth -- a trade that would spoil both ends.
    """
    return max(0.2, (2.0 * latency_share - 1.0) ** 2)


def _bounds(comparisons: Sequence[TableComparison]) -> tuple[np.ndarray, np.ndarray]:
    """Box of the fit: :data:`_BOUNDS_LOW`/`_HIGH`, with the bandwidth scales capped at the line rates.

    A scale above line rate / NCCL's effective rate would make a link faster than its wire (a 400 Gb/s NIC
    above 50 GB/s): the rows cannot ask for that, only a mis-specified model can.
    """
    high = _BOUNDS_HIGH.copy()
    intra = [c.spec.scaleup_line_rate_bytes_per_s / c.spec.scaleup_effective_bytes_per_s for c in comparisons]
    inter = [
        c.spec.nic_line_rate_bytes_per_s / c.spec.nic_effective_bytes_per_s
        for c in comparisons
        if c.n_nodes > 1 and c.spec.nic_effective_bytes_per_s > 0
    ]
    high[0] = min(high[0], math.log(max(1.0, min(intra))))
    if inter:
        high[1] = min(high[1], math.log(max(1.0, min(inter))))
    return _BOUNDS_LOW.copy(), np.maximum(high, _BOUNDS_LOW + 1e-6)


def _selection(
    comparison: TableComparison, min_size_bytes: float | None, max_size_bytes: float | None
) -> list[tuple[int, str | None]]:
    """(row index, reason it is left out or None) for every row of a table."""
    out: list[tuple[int, str | None]] = []
    for i, row in enumerate(comparison.rows):
        if "outlier" in row.causes or row.outlier_ratio > 1.5:
            out.append((i, "outlier"))
        elif "dip" in row.causes:
            out.append((i, "dip"))
        elif (min_size_bytes is not None and row.size_bytes < min_size_bytes) or (
            max_size_bytes is not None and row.size_bytes > max_size_bytes
        ):
            out.append((i, "held out"))
        else:
            out.append((i, None))
    return out


def _bytes(n: float) -> str:
    n = float(n)
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            value = n / (1 << shift)
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.3g} {unit}"
    return f"{n:.0f} B"


def size_window(min_size_bytes: float | None, max_size_bytes: float | None) -> str:
    """A size window in words: ``"64 MiB and up"``, ``"up to 1 MiB"``, ``"1 KiB to 64 MiB"``; empty without
    one.

    >>> size_window(64 * 2**20, None), size_window(None, 2**20), size_window(1024, 64 * 2**20)
    ('64 MiB and up', 'up to 1 MiB', '1 KiB to 64 MiB')
    """
    if min_size_bytes is None and max_size_bytes is None:
        return ""
    if max_size_bytes is None or math.isinf(max_size_bytes):
        return f"{_bytes(min_size_bytes or 0)} and up"
    if not min_size_bytes:
        return f"up to {_bytes(max_size_bytes)}"
    return f"{_bytes(min_size_bytes)} to {_bytes(max_size_bytes)}"


def _information(jacobian: np.ndarray) -> np.ndarray:
    """The rows' Gauss-Newton information on each knob, relative to the prior's (1 / width^2)."""
    return np.sum(jacobian**2, axis=0) * _PRIOR_WIDTH**2


def _refuse_broken(comparisons: Sequence[TableComparison]) -> None:
    """Raise ValueError when a table's verdict (the rule ``nccl-tests compare`` prints) is not healthy.

    A fault -- one NCCL's INFO lines show (sockets instead of RDMA, GDR off, PXN off, fewer NICs used) or a
    large-message shortfall the diagnosis blames on the fabric or its settings -- would be learnt as the
    fabric's figure and make every later prediction worse; the message names the cause and its line, or
    the shortfall.
    """
    for comp in comparisons:
        for finding in comp.findings:
            why = (
                str(finding.evidence[0])
                if finding.evidence
                else f"{finding.explained_bytes_per_s / 1e9:.1f} GB/s below the model over {finding.rows} "
                "large row(s)"
            )
            raise ValueError(
                f"table {comp.index}: not fitted: the diagnosis found the run broken ({finding.cause}: "
                f"{why}); fix it and measure again"
            )


def fit_calibration(
    comparisons: Sequence[TableComparison],
    *,
    min_size_bytes: float | None = None,
    max_size_bytes: float | None = None,
    name: str = "calibration",
    source: str | None = None,
) -> CalibrationFit:
    """Fit ``intra_scale``, ``inter_scale``, ``latency_scale`` and ``extra_inter_latency_s`` to measured rows.

    Parameters
    ----------
    comparisons : sequence of TableComparison
        Tables already compared with NCCL's constants (:func:`~aifabric.discovery.compare.compare_nccl_tests`,
        without a calibration): each brings its cluster, ranks, NCCL settings and measured times.
    min_size_bytes, max_size_bytes : float, optional
        Fit only rows in this size window; the others are reported as held out.
    name : str
        The profile's name.
    source : str, optional
        What it was fitted on (default: the logs and tables).

    Returns
    -------
    CalibrationFit

    Raises
    ------
    ValueError
        If no row is left to fit, the size window is empty or reversed, a table's verdict is not
        healthy (the cause and its line or shortfall are named, as ``nccl-tests compare`` says), or the
        data or the model give a non-finite value.

    Notes
    -----
    Only the knobs the rows determine are fitted; with multi-node tables only, ``intra_scale`` stays 1
    (scale-up is never moved by network-bound data).

    Fitted on case_03 T7 (2 x 8 H100, 8 x 400G IB, ``NCCL_ALGO=Ring``), the profile predicts the 8-node T6 and
    the 4-node T2 at >= 1 GB within 10 % (``tests/discovery/test_calibrate.py`` states the figures). The
    mid-size rows of those logs remain the model's weakest region (the ``ramp`` cause of
    :data:`~aifabric.discovery.compare.CAUSES`).
    """
    if not comparisons:
        raise ValueError("comparisons: give at least one compared table")
    _refuse_broken(comparisons)
    # Multi-node rows alone never move the scale-up figure: a NIC-bound run says nothing about NVLink.
    multi_only = all(c.n_nodes > 1 for c in comparisons)
    if min_size_bytes is not None and max_size_bytes is not None and max_size_bytes < min_size_bytes:
        raise ValueError(f"size window: max {max_size_bytes:g} B is below min {min_size_bytes:g} B")
    selected: list[tuple[TableComparison, int, str | None]] = []
    for comp in comparisons:
        for i, reason in _selection(comp, min_size_bytes, max_size_bytes):
            selected.append((comp, i, reason))
    used = [(comp, i) for comp, i, reason in selected if reason is None]
    if not used:
        raise ValueError("no row left to fit: every row is an outlier or outside the size window")
    measured = np.array([comp.rows[i].measured_time_s for comp, i in used])
    if not (np.isfinite(measured).all() and (measured > 0).all()):
        raise ValueError("calibration: a measured time is not a positive finite number; nothing was fitted")
    weights = np.array([_regime_weight(comp.rows[i].latency_share) for comp, i in used])
    low, high = _bounds(comparisons)
    neutral = np.array(
        [math.log(NEUTRAL[k]) if k.endswith("_scale") else NEUTRAL[k] * 1e6 for k in PARAMETERS]
    )
    evaluations = 0

    def weighted(x: np.ndarray) -> np.ndarray:
        nonlocal evaluations
        evaluations += 1
        knobs = _knobs(x)
        model = np.array([comp.predict(comp.rows[i].size_bytes, knobs).time_s for comp, i in used])
        return weights * np.log(model / measured)

    def solve(free: np.ndarray) -> tuple[np.ndarray, Any]:
        """Fit the ``free`` knobs, the others kept at NCCL's values."""

        def full(z: np.ndarray) -> np.ndarray:
            x = neutral.copy()
            x[free] = z
            return x

        def residuals(z: np.ndarray) -> np.ndarray:
            x = full(z)
            prior = (x - neutral) / _PRIOR_WIDTH
            return np.concatenate([weighted(x), prior[free]])

        lo, hi = low[free], high[free]
        # Two starts, NCCL's constants and twice its latencies: the selection of the fastest algorithm and
        # protocol makes the cost piecewise smooth, with a local minimum on each side of a protocol switch.
        # The extra latency starts just inside its bound (trf stalls on a start that sits on one).
        starts = []
        for lat in (0.0, math.log(2.0)):
            x0 = np.array([0.0, 0.0, lat, 1.0])[free]
            starts.append(np.clip(x0, lo + 1e-9, hi - 1e-9))
        if not free[2]:
            starts = starts[:1]
        try:
            fits = [
                least_squares(
                    residuals,
                    x0=x0,
                    bounds=(lo, hi),
                    loss="soft_l1",
                    f_scale=0.1,
                    diff_step=1e-3,
                    max_nfev=200,
                )  # fmt: skip
                for x0 in starts
            ]
        except ValueError as err:  # SciPy: "Residuals are not finite in the initial point" and the like
            raise ValueError(
                f"calibration: the model gave a non-finite time for a fitted row ({err}); nothing was fitted"
            ) from err
        best = min(fits, key=lambda r: r.cost)
        return full(best.x), best

    free = np.ones(len(PARAMETERS), dtype=bool)
    free[0] = not multi_only
    x, result = solve(free)
    # Which knobs the rows determine: their information on each, relative to the prior's, at the solution.
    jacobian = np.empty((len(used), len(PARAMETERS)))
    for j, step in enumerate(_FD_STEP):  # central differences: a knob at a bound or a kink still shows
        xp, xm = x.copy(), x.copy()
        xp[j] += step
        xm[j] -= step
        jacobian[:, j] = (weighted(xp) - weighted(xm)) / (2 * step)
    seen = _information(jacobian) >= DETERMINED_INFO
    seen[0] = bool(seen[0]) and not multi_only
    if not seen.all():
        if seen.any():
            x, result = solve(seen)
        else:
            x = neutral.copy()
    knobs = _knobs(x)
    fit_rows = []
    for comp, i, reason in selected:
        row = comp.rows[i]
        fit_rows.append(
            FitRow(
                table_index=comp.index,
                source=comp.table.source,
                size_bytes=row.size_bytes,
                line=row.line,
                measured_time_s=row.measured_time_s,
                before_time_s=row.predicted.time_s,
                after_time_s=comp.predict(row.size_bytes, knobs).time_s,
                used=reason is None,
                reason=reason,
            )
        )
    described = source or "; ".join(
        sorted(
            {
                f"{c.table.source or 'log'} table {c.index} ({c.n_nodes} node(s), {c.n_ranks} ranks)"
                for c in comparisons
            }
        )
    )
    window = size_window(min_size_bytes, max_size_bytes)
    kept = [k for k, ok in zip(PARAMETERS, seen, strict=True) if not ok]
    described += (f", sizes {window}" if window else "") + (
        f"; not determined (kept): {', '.join(kept)}" if kept else ""
    )
    provisional = CalibrationFit(
        Calibration(
            intra_scale=knobs.intra_scale,
            inter_scale=knobs.inter_scale,
            latency_scale=knobs.latency_scale,
            extra_inter_latency_s=knobs.extra_inter_latency_s,
            name=name,
            source=described,
        ),
        tuple(fit_rows),
        bool(result.success),
        str(result.message),
        evaluations,
    )
    cal = provisional.calibration
    final = Calibration(
        intra_scale=round(cal.intra_scale, 6),
        inter_scale=round(cal.inter_scale, 6),
        latency_scale=round(cal.latency_scale, 6),
        extra_inter_latency_s=round(cal.extra_inter_latency_s, 12),
        name=cal.name,
        source=cal.source,
        residual_rms=round(provisional.rms_fit, 6),
    )
    determined = {k: bool(ok) for k, ok in zip(PARAMETERS, seen, strict=True)}
    errors = _uncertainty(weighted, x, seen)
    paths: dict[str, int] = {}
    for comp, i in used:
        predicted = comp.rows[i].predicted
        key = f"{predicted.algorithm}/{predicted.protocol}"
        paths[key] = paths.get(key, 0) + 1
    return CalibrationFit(final, provisional.rows, provisional.success, provisional.message, evaluations,
                          determined, window, errors, _at_bound(x, seen, low, high), paths)  # fmt: skip


def _uncertainty(weighted: Any, x: np.ndarray, free: np.ndarray) -> dict[str, float | None]:
    """Standard error of each free knob, in its own units (see the module docstring); None for the others."""
    out: dict[str, float | None] = dict.fromkeys(PARAMETERS, None)
    index = np.flatnonzero(free)
    if index.size == 0:
        return out
    r = weighted(x)
    jac = np.empty((r.size, index.size))
    for col, j in enumerate(index):
        xp, xm = x.copy(), x.copy()
        xp[j] += _FD_STEP[j]
        xm[j] -= _FD_STEP[j]
        jac[:, col] = (weighted(xp) - weighted(xm)) / (2 * _FD_STEP[j])
    s2 = float(np.sum(r**2)) / max(1, r.size - index.size)
    info = jac.T @ jac + np.diag(1.0 / _PRIOR_WIDTH[index] ** 2)
    cov = s2 * np.linalg.inv(info)
    for col, j in enumerate(index):
        sigma = math.sqrt(max(0.0, float(cov[col, col])))
        key = PARAMETERS[j]
        out[key] = math.exp(x[j]) * sigma if key.endswith("_scale") else sigma * 1e-6
    return out


def _at_bound(x: np.ndarray, free: np.ndarray, low: np.ndarray, high: np.ndarray) -> tuple[str, ...]:
    """Free knobs within 1 % of the box (a scale within a factor 1.01, the extra latency within 0.1 us)."""
    tolerance = np.array([0.01, 0.01, 0.01, 0.1])
    near = (np.abs(x - low) <= tolerance) | (np.abs(high - x) <= tolerance)
    return tuple(k for k, f, n in zip(PARAMETERS, free, near, strict=True) if f and n)
