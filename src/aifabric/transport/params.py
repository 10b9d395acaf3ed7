"""Congestion- and flow-control parameters (``catalog/data/congestion_control.yaml``), in SI units.

Each preset names its source in the YAML; this module only reads and validates them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from importlib import resources
from typing import Any

from aifabric.errors import ConfigError
from aifabric.inputs import load_yaml_text
from aifabric.units import parse_bandwidth, parse_time

__all__ = ["DcqcnParams", "PfcConstants", "dcqcn_preset", "dcqcn_presets", "pfc_constants"]


@cache
def _data() -> dict[str, Any]:
    text = (
        resources.files("aifabric.catalog")
        .joinpath("data/congestion_control.yaml")
        .read_text(encoding="utf-8")
    )
    data: dict[str, Any] = load_yaml_text(text, "catalog/data/congestion_control.yaml")
    return data


@dataclass(frozen=True)
class DcqcnParams:
    """DCQCN reaction-point, notification-point and RED marking parameters on one bottleneck (SI units).

    Attributes
    ----------
    capacity_bytes_per_s : float
        C, bottleneck capacity, bytes/s per direction (also every sender's line rate).
    packet_bytes : float
        Packet size used to turn rates and queues into packets (the fluid model counts in packets).
    r_ai_bytes_per_s : float
        R_AI, additive-increase step, bytes/s.
    byte_counter_bytes : float
        B, bytes between byte-counter rate increases.
    rate_timer_s, cnp_interval_s, alpha_interval_s : float
        T (rate-increase timer), tau (CNP generation interval), tau' (alpha update interval), seconds.
    g : float
        Alpha EWMA gain.
    fast_recovery_steps : int
        F, fast-recovery stages before additive increase.
    kmin_bytes, kmax_bytes, pmax : float
        RED profile: no marking below Kmin, linear up to Pmax at Kmax, every packet above Kmax.
    feedback_delay_s : float
        tau*, control-loop delay (queue to sender), seconds.
    source : str
    """

    capacity_bytes_per_s: float
    packet_bytes: float
    r_ai_bytes_per_s: float
    byte_counter_bytes: float
    rate_timer_s: float
    cnp_interval_s: float
    alpha_interval_s: float
    g: float
    fast_recovery_steps: int
    kmin_bytes: float
    kmax_bytes: float
    pmax: float
    feedback_delay_s: float
    source: str = ""

    def __post_init__(self) -> None:
        positive = (
            "capacity_bytes_per_s",
            "packet_bytes",
            "r_ai_bytes_per_s",
            "byte_counter_bytes",
            "rate_timer_s",
            "cnp_interval_s",
            "alpha_interval_s",
        )
        for name in positive:
            value = getattr(self, name)
            if not (value > 0 and value < float("inf")):
                raise ConfigError(f"{name} must be a finite number > 0, got {value!r}")
        if not 0 < self.g <= 1:
            raise ConfigError(f"g must be in (0, 1], got {self.g!r}")
        if not 0 < self.pmax <= 1:
            raise ConfigError(f"pmax must be in (0, 1], got {self.pmax!r}")
        if not 0 <= self.kmin_bytes < self.kmax_bytes:
            raise ConfigError(f"kmin_bytes must be >= 0 and < kmax_bytes, got {self.kmin_bytes!r}")
        if self.fast_recovery_steps < 0:
            raise ConfigError(f"fast_recovery_steps must be >= 0, got {self.fast_recovery_steps!r}")
        if not 0 <= self.feedback_delay_s < 1:
            raise ConfigError(f"feedback_delay_s must be in [0, 1) s, got {self.feedback_delay_s!r}")

    def with_(self, **changes: Any) -> DcqcnParams:
        """A copy with some fields changed (validated again)."""
        return replace(self, **changes)


def dcqcn_presets() -> tuple[str, ...]:
    """Names of the DCQCN presets in the catalogue."""
    return tuple(_data()["dcqcn"])


def dcqcn_preset(name: str = "conext16") -> DcqcnParams:
    """A DCQCN preset from the catalogue.

    Raises
    ------
    ConfigError
        If there is no such preset (the message lists the known ones).
    """
    presets = _data()["dcqcn"]
    if name not in presets:
        raise ConfigError(f"dcqcn preset: unknown {name!r}; known: {', '.join(presets)}")
    e = presets[name]
    return DcqcnParams(
        capacity_bytes_per_s=parse_bandwidth(e["capacity"], field="capacity"),
        packet_bytes=float(e["packet_bytes"]),
        r_ai_bytes_per_s=parse_bandwidth(e["r_ai"], field="r_ai"),
        byte_counter_bytes=float(e["byte_counter_bytes"]),
        rate_timer_s=parse_time(e["rate_timer"], field="rate_timer"),
        cnp_interval_s=parse_time(e["cnp_interval"], field="cnp_interval"),
        alpha_interval_s=parse_time(e["alpha_interval"], field="alpha_interval"),
        g=float(e["g"]),
        fast_recovery_steps=int(e["fast_recovery_steps"]),
        kmin_bytes=float(e["kmin_bytes"]),
        kmax_bytes=float(e["kmax_bytes"]),
        pmax=float(e["pmax"]),
        feedback_delay_s=parse_time(e["feedback_delay"], field="feedback_delay"),
        source=str(e["source"]),
    )


@dataclass(frozen=True)
class PfcConstants:
    """IEEE and simulator constants of PFC (see the catalogue's ``pfc`` entry for sources).

    ``pause_quanta`` maps a port speed in bytes/s to the peer's response time in pause quanta; a quantum is
    ``quantum_bits`` bit times. ``signal_speed_m_per_s`` is the speed of light in fibre.
    """

    pause_quanta: dict[float, int]
    signal_speed_m_per_s: float
    quantum_bits: float
    xon_offset_bytes: float
    source: str


@cache
def pfc_constants() -> PfcConstants:
    """The PFC constants of the catalogue."""
    e = _data()["pfc"]
    quanta = {parse_bandwidth(k, field="pause_quanta"): int(v) for k, v in e["pause_quanta"].items()}
    return PfcConstants(
        pause_quanta=dict(sorted(quanta.items())),
        signal_speed_m_per_s=float(e["signal_speed_m_per_s"]),
        quantum_bits=float(e["quantum_bits"]),
        xon_offset_bytes=float(e["xon_offset_bytes"]),
        source=str(e["source"]),
    )
