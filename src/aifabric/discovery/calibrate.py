"""Calibration profiles: multipliers and latencies fitted to measurements, read by the engines.

A profile is a YAML mapping::

    name: h100-ib-2node from case_03 T7
    intra_scale: 1.0          # x scale-up bandwidth
    inter_scale: 0.998        # x scale-out bandwidth
    latency_scale: 1.0        # x NCCL's latency constants
    extra_inter_latency_s: 0  # added per network hop, seconds
    source: what it was fitted on
    gpu: h100-sxm             # the hardware it was fitted on (catalogue keys); the engine refuses
    nic: connectx-7           #   to apply it to another GPU or NIC
    fitted_paths:             # the algorithm/protocol each knob was fitted on: applied to those only
      inter_scale: [ring/Simple]

A knob listed under ``fitted_paths`` moves only the predictions NCCL's model runs on one of its paths (an
``intra_scale`` fitted on Ring rows leaves NVLS rows as the model has them, :func:`for_path`); a profile
without ``fitted_paths`` (written by hand, or before they were recorded) applies to every prediction.

The fit itself is :func:`aifabric.discovery.fitting.fit_calibration`.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from aifabric.errors import ConfigError
from aifabric.inputs import load_yaml_mapping_text, read_yaml_text

__all__ = ["FIT_BOUNDS", "Calibration", "for_path", "load_calibration", "save_calibration"]

#: The value of each knob that changes nothing (NCCL's own constants).
_NEUTRAL: dict[str, float] = {
    "intra_scale": 1.0,
    "inter_scale": 1.0,
    "latency_scale": 1.0,
    "extra_inter_latency_s": 0.0,
}
_PATH = re.compile(r"^[a-z_]{1,32}/(?:LL|LL128|Simple)$")

#: The box :func:`aifabric.discovery.fitting.fit_calibration` fits each knob in (its module docstring): a
#: bandwidth scale 0.2-5 (further capped at line rate per cluster), the latency scale 0.25-8, the extra
#: network latency 0-200 us. A profile read from a file with a value outside it was not fitted (a
#: hand-edited ``intra_scale: 0.01`` would predict NVLink at 1 %) and is refused.
FIT_BOUNDS: dict[str, tuple[float, float]] = {
    "intra_scale": (0.2, 5.0),
    "inter_scale": (0.2, 5.0),
    "latency_scale": (0.25, 8.0),
    "extra_inter_latency_s": (0.0, 200e-6),
}


@dataclass(frozen=True)
class Calibration:
    """Multipliers on the tier model (dimensionless) and an extra per-hop latency (s).

    ``gpu`` and ``nic`` are the catalogue keys of the hardware the profile was fitted on (empty: not
    recorded, or several); the engine refuses it on a cluster with another
    (:func:`aifabric.collectives.tiers.tier_model`): a scale fitted on H100 NVLink says nothing of B200's.
    """

    intra_scale: float = 1.0
    inter_scale: float = 1.0
    latency_scale: float = 1.0
    extra_inter_latency_s: float = 0.0
    name: str = "calibration"
    source: str = ""
    residual_rms: float | None = None
    gpu: str = ""
    nic: str = ""
    fitted_paths: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def __post_init__(self) -> None:
        for field in _NUMBERS:
            v = getattr(self, field)
            if v is not None and not math.isfinite(v):
                raise ConfigError(f"calibration {field}: {v!r} is not a finite number")
        for field in ("intra_scale", "inter_scale", "latency_scale"):
            v = getattr(self, field)
            if not 0.01 <= v <= 100:
                raise ConfigError(f"calibration {field}: {v!r} is outside 0.01..100")
        if self.extra_inter_latency_s < 0 or self.extra_inter_latency_s > 0.1:
            raise ConfigError(
                f"calibration extra_inter_latency_s: {self.extra_inter_latency_s!r} is outside 0..0.1 s"
            )


def for_path(calibration: Calibration, path: str) -> Calibration | None:
    """``calibration`` for a prediction NCCL's model runs on ``path`` (``"nvls/Simple"``): the knobs fitted
    on other paths put back to NCCL's values; None when no knob then moves (use no profile). A profile
    without :attr:`Calibration.fitted_paths` applies whole.

    >>> cal = Calibration(intra_scale=0.9, latency_scale=1.2,
    ...                   fitted_paths=(("intra_scale", ("ring/Simple",)), ("latency_scale", ("ring/LL",))))
    >>> for_path(cal, "ring/Simple").intra_scale, for_path(cal, "ring/Simple").latency_scale
    (0.9, 1.0)
    >>> for_path(cal, "nvls/Simple") is None
    True
    """
    if not calibration.fitted_paths:
        return calibration
    fitted = dict(calibration.fitted_paths)
    knob = {k: getattr(calibration, k) if path in fitted.get(k, ()) else v for k, v in _NEUTRAL.items()}
    if knob == _NEUTRAL:
        return None
    return dataclasses.replace(
        calibration,
        intra_scale=knob["intra_scale"],
        inter_scale=knob["inter_scale"],
        latency_scale=knob["latency_scale"],
        extra_inter_latency_s=knob["extra_inter_latency_s"],
    )


def _fitted_paths(value: object, where: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The ``fitted_paths`` mapping of a profile file: knob -> list of ``algorithm/protocol``.

    Raises
    ------
    ConfigError
        Naming ``where`` and the knob or path that is not one.
    """
    if value is None:
        return ()
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: calibration fitted_paths must map knobs to paths, got {value!r}")
    out = []
    for knob, paths in value.items():
        if knob not in _NEUTRAL:
            raise ConfigError(
                f"{where}: calibration fitted_paths: {knob!r} is not a knob ({', '.join(_NEUTRAL)})"
            )
        if not isinstance(paths, list) or not all(isinstance(p, str) and _PATH.match(p) for p in paths):
            raise ConfigError(
                f"{where}: calibration fitted_paths {knob}: {paths!r} is not a list of algorithm/protocol "
                "(ring/Simple)"
            )
        out.append((str(knob), tuple(paths)))
    return tuple(out)


_NUMBERS = ("intra_scale", "inter_scale", "latency_scale", "extra_inter_latency_s", "residual_rms")


def _line_of(text: str, key: str) -> int | None:
    """1-based line of the top-level ``key:`` in a YAML text, if it can be found."""
    match = re.search(rf"^{re.escape(key)}[ \t]*:", text, re.MULTILINE)
    return text.count("\n", 0, match.start()) + 1 if match else None


def load_calibration(path: str | Path) -> Calibration:
    """Read a calibration profile. Raises ConfigError/ParseError naming the file, the field and its line.

    Numbers must be numbers (``5e-6`` written without a dot is accepted): ``inter_scale: banana`` and
    ``intra_scale: true`` (a bool is not a number) are refused, as is a missing value (``latency_scale:``)
    other than for ``residual_rms``; a knob outside :data:`FIT_BOUNDS` (``intra_scale: 0.01``) is refused.
    """
    p = Path(path)
    text = read_yaml_text(p)
    data = load_yaml_mapping_text(text, str(p))
    known = set(Calibration.__dataclass_fields__)
    unknown = sorted(set(data) - known)
    if unknown:
        line = _line_of(text, str(unknown[0]))
        raise ConfigError(
            f"{p}{f':{line}' if line else ''}: unknown calibration field(s) {', '.join(map(str, unknown))}; "
            f"known: {', '.join(sorted(known))}"
        )
    values: dict[str, object] = {}
    for key, value in data.items():
        where = f"{p}:{_line_of(text, key)}" if _line_of(text, key) else str(p)
        if key in _NUMBERS:
            if value is None and key == "residual_rms":
                values[key] = None
                continue
            number = None
            if isinstance(value, int | float) and not isinstance(value, bool):
                number = float(value)
            elif isinstance(value, str):  # PyYAML reads 5e-6 (no dot) as text
                try:
                    number = float(value)
                except ValueError:
                    number = None
            if number is None or not math.isfinite(number):
                what = "a finite number" if number is not None else "a number"
                raise ConfigError(f"{where}: calibration {key} must be {what}, got {value!r}")
            values[key] = number
        elif key == "fitted_paths":
            values[key] = _fitted_paths(value, where)
        else:
            values[key] = "" if value is None else str(value)
    for key, (low, high) in FIT_BOUNDS.items():
        given = values.get(key)
        if isinstance(given, float) and not low * (1 - 1e-6) <= given <= high * (1 + 1e-6):
            line = _line_of(text, key)
            raise ConfigError(
                f"{p}{f':{line}' if line else ''}: calibration {key}: {given!r} is outside the range a fit "
                f"gives ({low:g}..{high:g}); refit with 'aifabric calibrate' instead of editing the profile"
            )
    try:
        return Calibration(**values)  # type: ignore[arg-type]
    except ConfigError as err:
        field = next((k for k in _NUMBERS if str(err).startswith(f"calibration {k}:")), None)
        line = _line_of(text, field) if field else None
        raise ConfigError(f"{p}{f':{line}' if line else ''}: {err}") from err
    except (TypeError, ValueError) as err:
        raise ConfigError(f"{p}: {err}") from err


def save_calibration(cal: Calibration, path: str | Path) -> Path:
    """Write ``cal`` as YAML; returns the path."""
    p = Path(path)
    data = {k: getattr(cal, k) for k in Calibration.__dataclass_fields__}
    data["fitted_paths"] = {knob: list(paths) for knob, paths in cal.fitted_paths}
    p.write_text(yaml.safe_dump(data, sort_keys=False))
    return p
