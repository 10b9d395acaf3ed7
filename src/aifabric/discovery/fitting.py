"""Fit a calibration profile to measured nccl-tests tables, each knob on the rows that constrain it.

The formula engine's tier model has four knobs a profile sets
(:class:`~aifabric.discovery.calibrate.Calibration`): ``intra_scale`` and ``inter_scale`` multiply the
scale-up and scale-out bandwidths, ``latency_scale`` multiplies NCCL's latency constants and
``extra_inter_latency_s`` adds to every network hop. A knob is fitted only on the size regime whose time it
governs (:func:`regime`), so that rows the model is known to get wrong for another reason cannot pull it:

* **plateau** rows -- at least 64 MiB (:data:`PLATEAU_MIN_BYTES`) and within 5 % of the table's highest busbw
  there (:data:`PLATEAU_BAND`): the bandwidth a link sustains. ``intra_scale`` is fitted on the plateau rows
  of single-node tables only, ``inter_scale`` on those of multi-node tables only (scale-up is never moved by
  multi-node data);
* **latency** rows -- more than 90 % of NCCL's model time is latency (:data:`LATENCY_SHARE`), the small
  messages: ``latency_scale`` on those of single-node tables, ``extra_inter_latency_s`` on those of
  multi-node tables (NCCL's latency constants also time the scale-up steps, so a latency seen across nodes
  moves only the network term: a two-node fit leaves a node's prediction unchanged at every size), each
  fitted with the bandwidths already fixed;
* **ramp** rows -- the rest, where NCCL runs fewer channels or another protocol than at its peak (the
  ``ramp`` cause of :data:`~aifabric.discovery.compare.CAUSES`): they fit nothing and are reported so.

A knob is fitted only on at least :data:`MIN_ROWS` rows of its regime (fewer: "not determined", the rows
reported as ``too few``); when no knob has enough, the fit is refused ("nothing to fit: ...").

Each stage is a bounded non-linear least squares (``scipy.optimize.least_squares``) on the log of the time
ratio of its rows::

    r_i = ln( t_model(size_i; theta) / t_measured_i ),     theta = (ln s_intra, ln s_inter, ln s_lat, a_extra)

with a robust loss (``soft_l1``, scale 0.1, i.e. ~10 %) and a weak prior that pulls every knob towards NCCL's
own constants (scales 1, no extra latency) with a width of a factor e (and 20 us). The rows are predicted
with the algorithm and protocol the run used -- the log's ``NCCL_ALGO``/``NCCL_PROTO`` and INFO lines (NVLS
unavailable), else the model's choice of NCCL's -- and the fit reports how many rows each took
(:attr:`CalibrationFit.paths`) and the sizes each knob was fitted on (:attr:`CalibrationFit.fitted_on`).
Rows that are one-off outliers (out-of-place and in-place more than 1.5x apart) or isolated dips are left
out; a size window (``min_size_bytes``/``max_size_bytes``) holds the rest out so that the fit can be checked
on them.

After a stage, the information its rows carry on each of its knobs (the sum of the squared sensitivities of
the residuals, Gauss-Newton) is compared with the prior's: below 5 % of it (:data:`DETERMINED_INFO`), a knob
is one the rows cannot determine -- the scale-out figure of a 2-node NVLSTree plateau bound by NVLink --
and it is kept at NCCL's value (:data:`NEUTRAL`), the others refitted, and the report says "not determined
(kept at 1.0)" instead of quoting a value the prior chose.

Bounds: latency scale 0.25-8, extra latency 0-200 us, bandwidth scales from 0.2 up to the line rate (a scale
that made a 400 Gb/s NIC carry more than 50 GB/s, or NVLink more than its signalling rate, is refused). A
fitted knob within 1 % of a bound (0.1 us for the extra latency) is reported
(:attr:`CalibrationFit.at_bound`): the rows wanted it further, so the model, not the fabric, is the suspect.

Each determined knob comes with its standard error (:attr:`CalibrationFit.uncertainty`), from the
Gauss-Newton covariance at the solution over its stage's rows and the prior::

    cov = s^2 (J^T J + diag(1 / width^2))^-1,     s^2 = sum(r_i^2) / max(1, n - p)

with ``J`` the sensitivities of the residuals to the stage's knobs (central differences), ``n`` rows and
``p`` knobs; a scale's error is its value times the error of its logarithm.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import least_squares

from aifabric.discovery.calibrate import FIT_BOUNDS, Calibration
from aifabric.discovery.compare import RowComparison, TableComparison

__all__ = [
    "DETERMINED_INFO",
    "LATENCY_SHARE",
    "MIN_ROWS",
    "NEUTRAL",
    "PARAMETERS",
    "PLATEAU_BAND",
    "PLATEAU_MIN_BYTES",
    "CalibrationFit",
    "FitRow",
    "fit_calibration",
    "regime",
    "size_window",
]

_BOUNDS_LOW = np.array(
    [math.log(FIT_BOUNDS[k][0]) for k in ("intra_scale", "inter_scale", "latency_scale")]
    + [FIT_BOUNDS["extra_inter_latency_s"][0] * 1e6]
)
_BOUNDS_HIGH = np.array(
    [math.log(FIT_BOUNDS[k][1]) for k in ("intra_scale", "inter_scale", "latency_scale")]
    + [FIT_BOUNDS["extra_inter_latency_s"][1] * 1e6]
)
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
#: Fewest rows of its own regime a knob is fitted on: one more than the knobs of its stage, so that at least
#: one degree of freedom is left for the residual variance its standard error is scaled by (module
#: docstring); a knob fitted on one row matches it exactly and its quoted error is made up (issue 9: case_03
#: T7's single 1 MiB latency row set a latency scale that moved one node's 1 KiB prediction by 14 %).
MIN_ROWS = 2
#: Smallest size of a plateau row, bytes: below it NCCL still ramps its channels and protocol (one DGX H100:
#: 383 GB/s at 128 MB against 474 at 4 GB, NVIDIA/nccl-tests #290), so the rows say little about a link.
PLATEAU_MIN_BYTES = 64 << 20
#: A row from :data:`PLATEAU_MIN_BYTES` is on the plateau when its busbw is at least this fraction of the
#: table's highest there: within the few per cent nccl-tests' two halves of a plateau row differ by (at most
#: 3 % in NVIDIA/nccl-tests #309's seven tables), where a ramp row is 10-20 % below (#290).
PLATEAU_BAND = 0.95
#: A row is a latency row when more than this share of NCCL's model time is latency: its bandwidth term is
#: then under a tenth of the time, so even the mid-size ramp's bandwidth error (busbw at half the plateau,
#: NVIDIA/nccl-tests #290, #309) moves it by under 10 % and cannot pass for latency.
LATENCY_SHARE = 0.9
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
        Why it did not (``outlier``, ``dip``, ``held out``, ``ramp``: a mid-size row fits nothing;
        ``too few``: its regime has fewer than :data:`MIN_ROWS` rows).
    regime : str
        ``plateau``, ``latency`` or ``ramp`` (:func:`regime`).
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
    regime: str = ""

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
            "regime": self.regime,
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
    fitted_on : dict
        For each determined knob, the sizes (bytes) of the rows it was fitted on.
    limited : dict
        Knobs scaled back so that the worst row from 64 MiB (all tables) fits no worse than with NCCL's
        values: the fraction of the fitted step kept (0: back to NCCL's value, then not determined).
    knob_paths : dict
        For each determined knob, the NCCL algorithm/protocol pairs its rows ran (``"ring/Simple"``).
    few_rows : dict
        Knobs not determined because their regime had rows, but fewer than :data:`MIN_ROWS`: knob -> rows.
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
    fitted_on: dict[str, tuple[int, ...]] = field(default_factory=dict)
    limited: dict[str, float] = field(default_factory=dict)
    knob_paths: dict[str, tuple[str, ...]] = field(default_factory=dict)
    few_rows: dict[str, int] = field(default_factory=dict)

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
            "fitted_on": {k: list(v) for k, v in self.fitted_on.items()},
            "limited": dict(self.limited),
            "knob_paths": {k: list(v) for k, v in self.knob_paths.items()},
            "few_rows": dict(self.few_rows),
            "size_window": self.window or None,
            "rows": [r.to_dict() for r in self.rows],
        }


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


def _plateau_peak(comparison: TableComparison) -> float:
    """Highest measured busbw of a table's rows of at least :data:`PLATEAU_MIN_BYTES` that are not one-off
    outliers, bytes/s (0 without such rows)."""
    return max(
        (r.measured_busbw_bytes_per_s for r in comparison.rows
         if r.size_bytes >= PLATEAU_MIN_BYTES and r.outlier_ratio <= 1.5 and "outlier" not in r.causes),
        default=0.0,
    )  # fmt: skip


def regime(row: RowComparison, peak_bytes_per_s: float) -> str:
    """The size regime of a row, which says what it can constrain (see the module docstring).

    ``"plateau"``: at least :data:`PLATEAU_MIN_BYTES` and within :data:`PLATEAU_BAND` of the table's highest
    busbw there (``peak_bytes_per_s``); ``"latency"``: more than :data:`LATENCY_SHARE` of NCCL's model time is
    latency; ``"ramp"`` otherwise (fits nothing).
    """
    big = row.size_bytes >= PLATEAU_MIN_BYTES
    if big and row.measured_busbw_bytes_per_s >= PLATEAU_BAND * peak_bytes_per_s:
        return "plateau"
    return "latency" if row.latency_share > LATENCY_SHARE else "ramp"


def _selection(
    comparison: TableComparison, min_size_bytes: float | None, max_size_bytes: float | None
) -> list[tuple[int, str | None, str]]:
    """(row index, reason it is left out or None, regime) for every row of a table."""
    peak = _plateau_peak(comparison)
    out: list[tuple[int, str | None, str]] = []
    for i, row in enumerate(comparison.rows):
        kind = regime(row, peak)
        reason: str | None = None
        if "outlier" in row.causes or row.outlier_ratio > 1.5:
            reason = "outlier"
        elif "dip" in row.causes:
            reason = "dip"
        elif (min_size_bytes is not None and row.size_bytes < min_size_bytes) or (
            max_size_bytes is not None and row.size_bytes > max_size_bytes
        ):
            reason = "held out"
        elif kind == "ramp":
            reason = "ramp"
        out.append((i, reason, kind))
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


def _information(jacobian: np.ndarray, free: np.ndarray) -> np.ndarray:
    """The rows' Gauss-Newton information on each knob of ``free`` (the jacobian's columns), relative to the
    prior's (1 / width^2)."""
    return np.sum(jacobian**2, axis=0) * _PRIOR_WIDTH[free] ** 2


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
                else f"{finding.gap_bytes_per_s / 1e9:.1f} GB/s {finding.side} {finding.reference} "
                f"over {finding.rows} large row(s)"
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
    """Fit ``intra_scale``, ``inter_scale``, ``latency_scale`` and ``extra_inter_latency_s``, each on the rows
    of the regime that constrains it (see the module docstring).

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
        Every knob no row constrains is kept at NCCL's value and reported as not determined.

    Raises
    ------
    ValueError
        If no row is left to fit, the size window is empty or reversed, no knob has :data:`MIN_ROWS`
        rows of its regime ("nothing to fit: ..."), a table's verdict is not healthy (the cause and its
        line or shortfall are named, as ``nccl-tests compare`` says), or the data or the model give a
        non-finite value.

    Notes
    -----
    Fitted on case_03 T7 (2 x 8 H100, 8 x 400G IB, ``NCCL_ALGO=Ring``), the profile predicts the 8-node T6 and
    the 4-node T2 at >= 1 GB within 10 % (``tests/discovery/test_calibrate.py`` states the figures). The
    mid-size rows of those logs remain the model's weakest region (the ``ramp`` cause of
    :data:`~aifabric.discovery.compare.CAUSES`); they fit nothing.
    """
    if not comparisons:
        raise ValueError("comparisons: give at least one compared table")
    _refuse_mixed_gpus(comparisons)
    _refuse_broken(comparisons)
    selected = _select(comparisons, min_size_bytes, max_size_bytes)
    few = too_few_rows([(comp, i, kind) for comp, i, reason, kind in selected if reason is None])
    if few:  # rows of a regime too thin to fit its knob fit nothing, and say so
        selected = [
            (c, i, "too few" if why is None and _knob_of(c, kind) in few else why, kind)
            for c, i, why, kind in selected
        ]
    used = [(comp, i, kind) for comp, i, reason, kind in selected if reason is None]
    if not used:
        raise ValueError(_nothing_to_fit(few, len(selected)))
    fitter = _Fitter(*_bounds(comparisons))
    outcome = _run_stages(fitter, used)
    outcome.few_rows = few
    big = PLATEAU_MIN_BYTES
    large = [
        (c, i) for c, i, why, _ in selected if why not in ("outlier", "dip") and c.rows[i].size_bytes >= big
    ]
    _never_worse(fitter, outcome, large)
    if not outcome.seen.any():
        raise ValueError(_nothing_determined(outcome))
    window = size_window(min_size_bytes, max_size_bytes)
    return _assemble(comparisons, selected, outcome, fitter, name=name, source=source, window=window)


def _nothing_to_fit(few: dict[str, int], rows: int) -> str:
    """Why no knob can be fitted on ``rows`` rows: each regime's rows against :data:`MIN_ROWS`."""
    found = ", ".join(f"{n} row(s) for {k}" for k, n in few.items()) or "no plateau or latency row"
    return (
        f"nothing to fit: {rows} row(s), {found}; a knob needs at least {MIN_ROWS} rows of its own regime "
        f"(plateau rows >= {_bytes(PLATEAU_MIN_BYTES)} within {1 - PLATEAU_BAND:.0%} of the peak, or "
        "latency-bound small messages); measure a wider size range (nccl-tests -b 8 -e 8G -f 2)"
    )


def _refuse_mixed_gpus(comparisons: Sequence[TableComparison]) -> None:
    """Raise ValueError when the tables ran on different GPUs: a profile's knobs scale one GPU's links."""
    gpus = sorted({c.spec.accelerator for c in comparisons})
    if len(gpus) > 1:
        raise ValueError(
            f"gpu: the logs ran on different GPUs ({', '.join(gpus)}); a profile is fitted for one GPU, "
            "calibrate each GPU's logs separately"
        )


def _nothing_determined(outcome: _Outcome) -> str:
    """Why the stages determined no knob, knob by knob: too few rows of its regime, no row of it, rows that
    do not constrain it, or a fit the large messages refused (:func:`_never_worse`)."""
    staged = {PARAMETERS[k] for _, knobs in outcome.stages for k in knobs}
    why = []
    for knob, regime_rows in zip(PARAMETERS, _REGIMES, strict=True):
        if knob in outcome.few_rows:
            why.append(f"{knob}: {outcome.few_rows[knob]} row(s) of its regime, needs {MIN_ROWS}")
        elif outcome.limited.get(knob) == 0.0:
            big = _bytes(PLATEAU_MIN_BYTES)
            why.append(f"{knob}: dropped, it made the rows >= {big} worse than NCCL's values")
        elif knob in staged:
            why.append(f"{knob}: its rows do not constrain it")
        else:
            why.append(f"{knob}: no {regime_rows} row")
    return "nothing to fit: " + "; ".join(why)


def _select(
    comparisons: Sequence[TableComparison], min_size_bytes: float | None, max_size_bytes: float | None
) -> list[tuple[TableComparison, int, str | None, str]]:
    """Every row of the tables: ``(comparison, row index, reason it is left out or None, regime)``.

    Raises
    ------
    ValueError
        If the window is reversed, no row is left once outliers, dips and the window are taken out, or a
        fitted row's measured time is not a positive finite number.
    """
    if min_size_bytes is not None and max_size_bytes is not None and max_size_bytes < min_size_bytes:
        raise ValueError(f"size window: max {max_size_bytes:g} B is below min {min_size_bytes:g} B")
    selected = [
        (comp, i, reason, kind)
        for comp in comparisons
        for i, reason, kind in _selection(comp, min_size_bytes, max_size_bytes)
    ]
    if all(reason in ("outlier", "dip", "held out") for *_, reason, _ in selected):
        raise ValueError("no row left to fit: every row is an outlier or outside the size window")
    measured = np.array([comp.rows[i].measured_time_s for comp, i, reason, _ in selected if reason is None])
    if not (np.isfinite(measured).all() and (measured > 0).all()):
        raise ValueError("calibration: a measured time is not a positive finite number; nothing was fitted")
    return selected


@dataclass
class _Outcome:
    """What the stages found: the knobs (optimiser units), which are determined, their errors, the sizes each
    was fitted on, and the optimiser's word."""

    x: np.ndarray
    seen: np.ndarray
    errors: dict[str, float | None]
    fitted_on: dict[str, tuple[int, ...]] = field(default_factory=dict)
    paths: dict[str, tuple[str, ...]] = field(default_factory=dict)
    messages: list[str] = field(default_factory=list)
    success: bool = True
    stages: list[tuple[np.ndarray, tuple[int, ...]]] = field(default_factory=list)  # (start, knobs freed)
    limited: dict[str, float] = field(default_factory=dict)
    few_rows: dict[str, int] = field(default_factory=dict)


def _run_stages(fitter: _Fitter, used: Sequence[tuple[TableComparison, int, str]]) -> _Outcome:
    """Fit every stage (:func:`_stages`) in turn, each from the knobs the previous ones left."""
    out = _Outcome(fitter.neutral.copy(), np.zeros(len(PARAMETERS), dtype=bool), dict.fromkeys(PARAMETERS))
    for knobs, rows in _stages(used):
        out.stages.append((out.x.copy(), knobs))
        out.x, result, determined, errors = fitter.fit_stage(out.x, knobs, rows)
        out.success = out.success and bool(result is None or result.success)
        what = "not determined" if result is None else str(result.message)
        out.messages.append(f"{'+'.join(PARAMETERS[k] for k in knobs)}: {what}")
        for k in determined:
            out.seen[k] = True
            out.errors[PARAMETERS[k]] = errors[k]
            out.fitted_on[PARAMETERS[k]] = tuple(sorted({comp.rows[i].size_bytes for comp, i in rows}))
            out.paths[PARAMETERS[k]] = tuple(sorted({_path(comp.rows[i]) for comp, i in rows}))
    return out


def _large_excess(fitter: _Fitter, large: Sequence[tuple[TableComparison, int]], x: np.ndarray) -> float:
    """How much the worst ``|model / measured - 1|`` over all the ``large`` rows (every table's together) grew
    from NCCL's values to knobs ``x`` (<= 0 when it did not)."""
    if not large:
        return 0.0
    before = np.abs(np.expm1(fitter.residuals(large, fitter.neutral)))
    after = np.abs(np.expm1(fitter.residuals(large, x)))
    return float(after.max() - before.max())


def _never_worse(fitter: _Fitter, out: _Outcome, large: Sequence[tuple[TableComparison, int]]) -> None:
    """Scale back the stages, last first, until the worst row from :data:`PLATEAU_MIN_BYTES`, over all the
    tables together, fits no worse than with NCCL's values (taken table by table, tables that disagree --
    one faster than the model, one slower -- vetoed every move, and a mix fitted less than its parts): a
    knob its own regime's rows want further than the large messages allow is a limit of the model there
    (a latency scale fitted on mid-size LL128 rows lengthening 64 MiB rows), not a figure of the fabric.
    A stage's step from where it started is shortened by bisection (to 1/1024);
    :attr:`_Outcome.limited` records the fraction kept of each knob so limited, 0 dropping the stage (its
    knobs go back to NCCL's values and count as not determined)."""
    tolerance = 1e-9
    for start, knobs in reversed(out.stages):
        if _large_excess(fitter, large, out.x) <= tolerance:
            return
        step = out.x - start
        keep = 0.0
        if _large_excess(fitter, large, start) <= tolerance:
            low, high = 0.0, 1.0
            for _ in range(10):
                mid = 0.5 * (low + high)
                low, high = (
                    (mid, high)
                    if _large_excess(fitter, large, start + mid * step) <= tolerance
                    else (low, mid)
                )
            keep = low
        out.x = start + keep * step
        for k in knobs:
            if out.seen[k]:
                out.limited[PARAMETERS[k]] = keep
                if keep == 0.0:
                    out.seen[k] = False
                    out.errors[PARAMETERS[k]] = None
                    out.fitted_on.pop(PARAMETERS[k], None)
                    out.paths.pop(PARAMETERS[k], None)


#: The rows each knob of :data:`PARAMETERS` is fitted on (see :func:`_stages`).
_REGIMES = ("single-node plateau", "multi-node plateau", "single-node latency", "multi-node latency")


def _stages(used: Sequence[tuple[TableComparison, int, str]]) -> list[tuple[tuple[int, ...], list[Any]]]:
    """The fit's stages: (indices of the knobs it frees, its rows ``(comparison, row index)``), in order.

    Scale-up on single-node plateau rows, scale-out on multi-node plateau rows, the latency scale on
    single-node latency rows, then the extra network latency on multi-node latency rows (every bandwidth and
    the latency scale fixed). NCCL's latency constants also time the scale-up steps, so a latency seen on
    multi-node rows moves only the network term: a two-node fit leaves a node's prediction unchanged at
    every size. A stage with fewer than :data:`MIN_ROWS` rows is left out, its knobs kept at NCCL's values.
    """
    single = [(c, i) for c, i, kind in used if kind == "plateau" and c.n_nodes == 1]
    multi = [(c, i) for c, i, kind in used if kind == "plateau" and c.n_nodes > 1]
    node_latency = [(c, i) for c, i, kind in used if kind == "latency" and c.n_nodes == 1]
    net_latency = [(c, i) for c, i, kind in used if kind == "latency" and c.n_nodes > 1]
    candidates = [((0,), single), ((1,), multi), ((2,), node_latency), ((3,), net_latency)]
    return [(knobs, rows) for knobs, rows in candidates if len(rows) >= MIN_ROWS]


def _knob_of(comp: TableComparison, kind: str) -> str | None:
    """The knob a row of regime ``kind`` of table ``comp`` is fitted for (None for a ramp row)."""
    if kind == "plateau":
        return "intra_scale" if comp.n_nodes == 1 else "inter_scale"
    if kind == "latency":
        return "latency_scale" if comp.n_nodes == 1 else "extra_inter_latency_s"
    return None


def too_few_rows(used: Sequence[tuple[TableComparison, int, str]]) -> dict[str, int]:
    """Knobs whose regime has some rows, but fewer than :data:`MIN_ROWS`: knob -> its rows."""
    count = dict.fromkeys(PARAMETERS, 0)
    for comp, _, kind in used:
        knob = _knob_of(comp, kind)
        if knob is not None:
            count[knob] += 1
    return {k: n for k, n in count.items() if 0 < n < MIN_ROWS}


class _Fitter:
    """Bounded least squares of one stage at a time on ``ln(model / measured)`` with NCCL's values as a weak
    prior (see the module docstring); counts the model evaluations of all rows."""

    def __init__(self, low: np.ndarray, high: np.ndarray) -> None:
        self.low, self.high = low, high
        self.neutral = np.array(
            [math.log(NEUTRAL[k]) if k.endswith("_scale") else NEUTRAL[k] * 1e6 for k in PARAMETERS]
        )
        self.evaluations = 0

    def residuals(self, rows: Sequence[tuple[TableComparison, int]], x: np.ndarray) -> np.ndarray:
        """``ln(model / measured)`` of ``rows`` at knobs ``x`` (optimiser units)."""
        self.evaluations += 1
        knobs = _knobs(x)
        model = np.array([comp.predict(comp.rows[i].size_bytes, knobs).time_s for comp, i in rows])
        measured = np.array([comp.rows[i].measured_time_s for comp, i in rows])
        return np.log(model / measured)

    def jacobian(
        self, rows: Sequence[tuple[TableComparison, int]], x: np.ndarray, index: np.ndarray
    ) -> np.ndarray:
        """Sensitivities of the residuals to the knobs ``index`` (central differences: a knob at a bound or
        a kink still shows)."""
        jac = np.empty((len(rows), index.size))
        for col, j in enumerate(index):
            xp, xm = x.copy(), x.copy()
            xp[j] += _FD_STEP[j]
            xm[j] -= _FD_STEP[j]
            jac[:, col] = (self.residuals(rows, xp) - self.residuals(rows, xm)) / (2 * _FD_STEP[j])
        return jac

    def solve(
        self, x: np.ndarray, free: np.ndarray, rows: Sequence[tuple[TableComparison, int]]
    ) -> tuple[np.ndarray, Any]:
        """Fit the knobs ``free`` (indices) on ``rows``, the others kept at ``x``."""

        def full(z: np.ndarray) -> np.ndarray:
            out = x.copy()
            out[free] = z
            return out

        def residuals(z: np.ndarray) -> np.ndarray:
            prior = (full(z) - self.neutral) / _PRIOR_WIDTH
            return np.concatenate([self.residuals(rows, full(z)), prior[free]])

        lo, hi = self.low[free], self.high[free]
        # Latency: two starts, NCCL's constants and twice its latencies (the choice of the fastest protocol
        # makes the cost piecewise smooth, a local minimum on each side of a protocol switch). The extra
        # latency starts just inside its bound (trf stalls on a start that sits on one).
        lats = (0.0, math.log(2.0)) if 2 in free else (0.0,)
        starts = [np.clip(np.array([0.0, 0.0, lat, 1.0])[free], lo + 1e-9, hi - 1e-9) for lat in lats]
        try:
            fits = [least_squares(residuals, x0=x0, bounds=(lo, hi), loss="soft_l1", f_scale=0.1,
                                  diff_step=1e-3, max_nfev=200) for x0 in starts]  # fmt: skip
        except ValueError as err:  # SciPy: "Residuals are not finite in the initial point" and the like
            raise ValueError(
                f"calibration: the model gave a non-finite time for a fitted row ({err}); nothing was fitted"
            ) from err
        best = min(fits, key=lambda r: r.cost)
        return full(best.x), best

    def fit_stage(
        self, x: np.ndarray, knobs: tuple[int, ...], rows: Sequence[tuple[TableComparison, int]]
    ) -> tuple[np.ndarray, Any, tuple[int, ...], dict[int, float]]:
        """Fit one stage: its knobs on its rows, then keep at NCCL's value each knob the rows do not
        determine (information below :data:`DETERMINED_INFO` of the prior's) and refit the rest.

        Returns the knobs (all), the optimiser's result (None when nothing was determined), the determined
        knobs and their standard errors in their own units.
        """
        free = np.array(knobs)
        fitted, result = self.solve(x, free, rows)
        seen = _information(self.jacobian(rows, fitted, free), free) >= DETERMINED_INFO
        if not seen.all():
            free = free[seen]
            if free.size == 0:
                return x, None, (), {}
            fitted, result = self.solve(x, free, rows)
        return fitted, result, tuple(int(k) for k in free), self.uncertainty(rows, fitted, free)

    def uncertainty(
        self, rows: Sequence[tuple[TableComparison, int]], x: np.ndarray, free: np.ndarray
    ) -> dict[int, float]:
        """Standard error of each knob of ``free`` on ``rows``, in its own units (module docstring)."""
        r = self.residuals(rows, x)
        jac = self.jacobian(rows, x, free)
        s2 = float(np.sum(r**2)) / max(1, r.size - free.size)
        cov = s2 * np.linalg.inv(jac.T @ jac + np.diag(1.0 / _PRIOR_WIDTH[free] ** 2))
        out = {}
        for col, j in enumerate(free):
            sigma = math.sqrt(max(0.0, float(cov[col, col])))
            out[int(j)] = math.exp(x[j]) * sigma if PARAMETERS[j].endswith("_scale") else sigma * 1e-6
        return out


def _assemble(
    comparisons: Sequence[TableComparison],
    selected: Sequence[tuple[TableComparison, int, str | None, str]],
    outcome: _Outcome,
    fitter: _Fitter,
    *,
    name: str,
    source: str | None,
    window: str,
) -> CalibrationFit:
    """The :class:`CalibrationFit` of the stages' ``outcome``: every row before and after, the profile, what
    is known of each knob."""
    knobs = _knobs(outcome.x)
    seen = outcome.seen
    rows = tuple(
        FitRow(comp.index, comp.table.source, comp.rows[i].size_bytes, comp.rows[i].line,
               comp.rows[i].measured_time_s, comp.rows[i].predicted.time_s,
               comp.predict(comp.rows[i].size_bytes, knobs).time_s, reason is None, reason, kind)
        for comp, i, reason, kind in selected
    )  # fmt: skip
    kept = [k for k, ok in zip(PARAMETERS, seen, strict=True) if not ok]
    described = source or "; ".join(
        sorted({f"{c.table.source or 'log'} table {c.index} ({c.n_nodes} node(s), {c.n_ranks} ranks)"
                for c in comparisons})
    )  # fmt: skip
    described += (f", sizes {window}" if window else "") + (
        f"; not determined (kept): {', '.join(kept)}" if kept else ""
    )
    rms = CalibrationFit._rms([r.residual for r in rows if r.used]) or 0.0
    calibration = Calibration(
        intra_scale=round(knobs.intra_scale, 6),
        inter_scale=round(knobs.inter_scale, 6),
        latency_scale=round(knobs.latency_scale, 6),
        extra_inter_latency_s=round(knobs.extra_inter_latency_s, 12),
        name=name,
        source=described,
        residual_rms=round(rms, 6),
        **_hardware(comparisons),
        fitted_paths=tuple(sorted(outcome.paths.items())),
    )
    paths: dict[str, int] = {}
    for comp, i, reason, _ in selected:
        if reason is None:
            paths[_path(comp.rows[i])] = paths.get(_path(comp.rows[i]), 0) + 1
    determined = {k: bool(ok) for k, ok in zip(PARAMETERS, seen, strict=True)}
    message = "; ".join(outcome.messages) or "no row constrains any knob"
    return CalibrationFit(calibration, rows, outcome.success, message, fitter.evaluations, determined, window,
                          outcome.errors, _at_bound(outcome.x, seen, fitter.low, fitter.high), paths,
                          outcome.fitted_on, outcome.limited, outcome.paths, outcome.few_rows)  # fmt: skip


def _hardware(comparisons: Sequence[TableComparison]) -> dict[str, str]:
    """The catalogue keys of the GPU and (with multi-node tables) the NIC the tables ran on, recorded in the
    profile so that the engine refuses it elsewhere; empty where the tables disagree."""
    gpus = {c.spec.accelerator for c in comparisons}
    nics = {c.spec.scale_out.nic for c in comparisons if c.n_nodes > 1 and c.spec.scale_out is not None}
    return {"gpu": gpus.pop() if len(gpus) == 1 else "", "nic": nics.pop() if len(nics) == 1 else ""}


def _path(row: RowComparison) -> str:
    """``"ring/Simple"``: the algorithm and protocol a row ran (or the model predicts NCCL runs)."""
    return f"{row.predicted.algorithm}/{row.predicted.protocol}"


def _at_bound(x: np.ndarray, free: np.ndarray, low: np.ndarray, high: np.ndarray) -> tuple[str, ...]:
    """Free knobs within 1 % of the box (a scale within a factor 1.01, the extra latency within 0.1 us)."""
    tolerance = np.array([0.01, 0.01, 0.01, 0.1])
    near = (np.abs(x - low) <= tolerance) | (np.abs(high - x) <= tolerance)
    return tuple(k for k, f, n in zip(PARAMETERS, free, near, strict=True) if f and n)
