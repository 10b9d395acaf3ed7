"""Calibration profiles: multipliers and latencies fitted to measurements, read by the engines.

A profile is a YAML mapping::

    name: h100-ib-2node from case_03 T7
    intra_scale: 1.0          # x scale-up bandwidth
    inter_scale: 0.998        # x scale-out bandwidth
    latency_scale: 1.0        # x NCCL's latency constants
    extra_inter_latency_s: 0  # added per network hop, seconds
    source: what it was fitted on

The fit itself is :func:`aifabric.discovery.fitting.fit_calibration`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from aifabric.errors import ConfigError

__all__ = ["Calibration", "load_calibration", "save_calibration"]


@dataclass(frozen=True)
class Calibration:
    """Multipliers on the tier model (dimensionless) and an extra per-hop latency (s)."""

    intra_scale: float = 1.0
    inter_scale: float = 1.0
    latency_scale: float = 1.0
    extra_inter_latency_s: float = 0.0
    name: str = "calibration"
    source: str = ""
    residual_rms: float | None = None

    def __post_init__(self) -> None:
        for field in ("intra_scale", "inter_scale", "latency_scale"):
            v = getattr(self, field)
            if not 0.01 <= v <= 100:
                raise ConfigError(f"calibration {field}: {v!r} is outside 0.01..100")
        if self.extra_inter_latency_s < 0 or self.extra_inter_latency_s > 0.1:
            raise ConfigError(f"calibration extra_inter_latency_s: {self.extra_inter_latency_s!r} is outside 0..0.1 s")


def load_calibration(path: str | Path) -> Calibration:
    """Read a calibration profile. Raises ConfigError/ParseError naming the file and field."""
    from aifabric.cluster.spec import load_yaml_mapping

    p = Path(path)
    data = load_yaml_mapping(p)
    known = set(Calibration.__dataclass_fields__)
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(f"{p}: unknown calibration field(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    try:
        return Calibration(**{k: (float(v) if k not in ("name", "source") and v is not None else v) for k, v in data.items()})
    except (TypeError, ValueError) as err:
        raise ConfigError(f"{p}: {err}") from err


def save_calibration(cal: Calibration, path: str | Path) -> Path:
    """Write ``cal`` as YAML; returns the path."""
    p = Path(path)
    p.write_text(yaml.safe_dump({k: getattr(cal, k) for k in Calibration.__dataclass_fields__}, sort_keys=False))
    return p
