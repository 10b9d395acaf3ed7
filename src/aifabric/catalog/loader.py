"""Load the hardware catalogue: accelerators, scale-up links, NICs, switches, optics.

The figures live in YAML files next to this module (``data/*.yaml``), each entry with a ``source``. This
module turns them into frozen, validated objects in SI units (bytes, bytes/s per direction, seconds, watts,
FLOP/s). Vendors' conventions are kept next to the SI figure: NVLink's "900 GB/s" is both directions added
(:attr:`ScaleUpSpec.per_gpu_bidirectional_bytes_per_s`), a NIC's "400 Gb/s" is one direction in bits
(:attr:`NicSpec.line_rate_bytes_per_s` is that figure / 8).
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator

from aifabric.errors import ConfigError
from aifabric.units import parse_bandwidth, parse_bytes, parse_power, parse_time

__all__ = [
    "AcceleratorSpec",
    "NicSpec",
    "OpticSpec",
    "ScaleUpSpec",
    "SwitchSpec",
    "accelerator",
    "catalog_names",
    "nic",
    "optic",
    "optic_for_speed",
    "scaleup",
    "switch",
]


class _Entry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    key: str
    name: str
    source: str = Field(min_length=5)


class AcceleratorSpec(_Entry):
    """A GPU or TPU chip.

    Attributes: ``peak_bf16_flops`` (dense FLOP/s), ``hbm_capacity_bytes``, ``hbm_bandwidth_bytes_per_s``,
    ``nvlink`` (key of a :class:`ScaleUpSpec` or None), ``nvlink_links``, ``pcie`` (generation key).
    """

    arch: str
    peak_bf16_flops: float = Field(gt=0)
    hbm_capacity_bytes: float = Field(gt=0, validation_alias="hbm_capacity")
    hbm_bandwidth_bytes_per_s: float = Field(gt=0, validation_alias="hbm_bandwidth")
    nvlink: str | None = None
    nvlink_links: int = 0
    pcie: str | None = None
    nvls: bool = False
    ici_bandwidth_bidirectional_bytes_per_s: float | None = Field(
        default=None, validation_alias="ici_bandwidth_bidirectional"
    )
    dcn_bandwidth_bytes_per_s: float | None = Field(default=None, validation_alias="dcn_bandwidth")
    ici_topology: str | None = None
    chips_per_pod: int | None = None

    @field_validator("hbm_capacity_bytes", mode="before")
    @classmethod
    def _size(cls, v: Any) -> float:
        return parse_bytes(v, field="hbm_capacity")

    @field_validator(
        "hbm_bandwidth_bytes_per_s",
        "ici_bandwidth_bidirectional_bytes_per_s",
        "dcn_bandwidth_bytes_per_s",
        mode="before",
    )
    @classmethod
    def _bw(cls, v: Any) -> float | None:
        return None if v is None else parse_bandwidth(v)


class ScaleUpSpec(_Entry):
    """A scale-up link family (NVLink generation, PCIe generation, TPU ICI).

    ``per_gpu_bidirectional_bytes_per_s`` is the vendor's figure (both directions added);
    ``per_gpu_per_direction_bytes_per_s`` is half of it. ``nccl_effective_per_link_bytes_per_s`` is the
    per-link, per-direction bandwidth NCCL's tuner assumes (protocol overhead included).
    """

    per_gpu_bidirectional_bytes_per_s: float = Field(gt=0, validation_alias="per_gpu_bidirectional")
    links_per_gpu: int = Field(ge=1)
    nccl_effective_per_link_bytes_per_s: float = Field(gt=0, validation_alias="nccl_effective_per_link")
    in_switch_reduction: bool = False
    nvls_efficiency: float = 0.0
    hop_latency_s: float = Field(ge=0, validation_alias="hop_latency")
    p2p_through_cpu_overhead: float = 1.0

    @field_validator(
        "per_gpu_bidirectional_bytes_per_s", "nccl_effective_per_link_bytes_per_s", mode="before"
    )
    @classmethod
    def _bw(cls, v: Any) -> float:
        return parse_bandwidth(v)

    @field_validator("hop_latency_s", mode="before")
    @classmethod
    def _lat(cls, v: Any) -> float:
        return parse_time(v)

    @property
    def per_gpu_per_direction_bytes_per_s(self) -> float:
        """Vendor line rate per GPU, one direction (bytes/s): half the bidirectional figure."""
        return self.per_gpu_bidirectional_bytes_per_s / 2

    def nccl_effective_bytes_per_s(self, links: int | None = None) -> float:
        """Per-direction bandwidth NCCL achieves per GPU over ``links`` links (default: all), bytes/s."""
        return self.nccl_effective_per_link_bytes_per_s * (links or self.links_per_gpu)


class NicSpec(_Entry):
    """A NIC, DPU or BMC port. ``line_rate_bytes_per_s`` is per direction (vendor's bits/s / 8)."""

    line_rate_bytes_per_s: float = Field(gt=0, validation_alias="speed")
    ports: int = 1
    power_w: float = Field(ge=0, validation_alias="power")
    payload_efficiency: float = Field(gt=0, le=1)
    latency_s: float = Field(ge=0, validation_alias="latency")

    @field_validator("line_rate_bytes_per_s", mode="before")
    @classmethod
    def _bw(cls, v: Any) -> float:
        return parse_bandwidth(v, field="speed")

    @field_validator("power_w", mode="before")
    @classmethod
    def _pw(cls, v: Any) -> float:
        return parse_power(v)

    @field_validator("latency_s", mode="before")
    @classmethod
    def _lat(cls, v: Any) -> float:
        return parse_time(v)

    @property
    def effective_bytes_per_s(self) -> float:
        """Payload bandwidth per direction, bytes/s: line rate x payload efficiency."""
        return self.line_rate_bytes_per_s * self.payload_efficiency


class SwitchSpec(_Entry):
    """A packet switch: ``ports`` of ``port_speed_bytes_per_s`` each (per direction)."""

    fabric: str
    ports: int = Field(ge=2)
    port_speed_bytes_per_s: float = Field(gt=0, validation_alias="port_speed")
    power_w: float = Field(ge=0, validation_alias="power")
    latency_s: float = Field(ge=0, validation_alias="latency")
    in_network_reduction: bool = False

    @field_validator("port_speed_bytes_per_s", mode="before")
    @classmethod
    def _bw(cls, v: Any) -> float:
        return parse_bandwidth(v, field="port_speed")

    @field_validator("power_w", mode="before")
    @classmethod
    def _pw(cls, v: Any) -> float:
        return parse_power(v)

    @field_validator("latency_s", mode="before")
    @classmethod
    def _lat(cls, v: Any) -> float:
        return parse_time(v)


class OpticSpec(_Entry):
    """An optical transceiver or cable end: ``speed_bytes_per_s`` per direction, ``power_w`` per end."""

    speed_bytes_per_s: float = Field(gt=0, validation_alias="speed")
    power_w: float = Field(ge=0, validation_alias="power")

    @field_validator("speed_bytes_per_s", mode="before")
    @classmethod
    def _bw(cls, v: Any) -> float:
        return parse_bandwidth(v, field="speed")

    @field_validator("power_w", mode="before")
    @classmethod
    def _pw(cls, v: Any) -> float:
        return parse_power(v)


_FILES: dict[str, tuple[str, type[_Entry]]] = {
    "accelerator": ("accelerators.yaml", AcceleratorSpec),
    "scaleup": ("scaleup.yaml", ScaleUpSpec),
    "nic": ("nics.yaml", NicSpec),
    "switch": ("switches.yaml", SwitchSpec),
    "optic": ("optics.yaml", OpticSpec),
}


@cache
def _load(kind: str) -> dict[str, Any]:
    filename, model = _FILES[kind]
    text = resources.files("aifabric.catalog").joinpath("data", filename).read_text()
    raw = yaml.safe_load(text)
    return {key: model.model_validate({"key": key, **entry}) for key, entry in raw.items()}


def _get(kind: str, key: str) -> Any:
    table = _load(kind)
    norm = key.strip().lower()
    if norm not in table:
        raise ConfigError(f"{kind}: unknown {kind} {key!r}; known: {', '.join(sorted(table))}")
    return table[norm]


def catalog_names(kind: str) -> list[str]:
    """Keys of one catalogue family: ``accelerator``, ``scaleup``, ``nic``, ``switch`` or ``optic``."""
    if kind not in _FILES:
        raise ConfigError(f"catalog kind: unknown {kind!r}; known: {', '.join(_FILES)}")
    return sorted(_load(kind))


def accelerator(key: str) -> AcceleratorSpec:
    """The accelerator ``key`` (e.g. ``"h100-sxm"``). Raises ConfigError naming the known keys."""
    return _get("accelerator", key)


def scaleup(key: str) -> ScaleUpSpec:
    """The scale-up link family ``key`` (e.g. ``"nvlink4"``, ``"pcie-gen3"``)."""
    return _get("scaleup", key)


def nic(key: str) -> NicSpec:
    """The NIC ``key`` (e.g. ``"connectx-7"``)."""
    return _get("nic", key)


def switch(key: str) -> SwitchSpec:
    """The switch ``key`` (e.g. ``"quantum-2-qm9700"``)."""
    return _get("switch", key)


def optic(key: str) -> OpticSpec:
    """The optic ``key`` (e.g. ``"osfp-800g-2xsr4"``)."""
    return _get("optic", key)


def optic_for_speed(port_bytes_per_s: float) -> OpticSpec:
    """The pluggable transceiver of the smallest catalogued speed >= ``port_bytes_per_s`` (per direction).

    Raises ConfigError if none is fast enough.
    """
    cands = [o for o in _load("optic").values() if o.power_w > 0 and o.speed_bytes_per_s >= port_bytes_per_s]
    if not cands:
        raise ConfigError(
            f"port speed: no transceiver in the catalogue reaches {port_bytes_per_s * 8 / 1e9:g} Gb/s"
        )
    return min(cands, key=lambda o: o.speed_bytes_per_s)
