"""Cloud GPU instance types: the GPU each carries and, where its vendor page states them, its scale-out NICs.

``data/cloud_instances.yaml``. Vendor topology files and logs name the instance (``ND96asr_v4``,
``p4d.24xlarge``), not the GPU or the NICs; an NCCL topology dump of a VM often leaves the NIC speed out (NCCL
reads it from the IB device at run time), so the instance's page is what gives it. ``nic_speed`` (one port,
bytes/s, per direction), ``nics`` (scale-out ports per instance), ``nic`` (catalogue NIC) and ``transport``
(the net transport NCCL runs) are None where the page does not state them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from aifabric.catalog.loader import accelerator, nic
from aifabric.catalog.transport import transport
from aifabric.errors import ConfigError
from aifabric.package_data import load_package_yaml
from aifabric.units import parse_nic_bandwidth

__all__ = ["CloudInstance", "cloud_instances"]

_WHERE = "catalog/data/cloud_instances.yaml"


@dataclass(frozen=True)
class CloudInstance:
    """One instance type: its catalogue key, the regular expression its names match, the GPU (catalogue
    key), the NICs its page states (None where it does not) and that page."""

    key: str
    pattern: str
    accelerator: str
    source: str
    nic_speed_bytes_per_s: float | None = None
    nics: int | None = None
    nic: str | None = None
    transport: str | None = None

    @property
    def nic_speed_text(self) -> str | None:
        """The port speed as a NIC speed option takes it (``"200 Gb/s"``), or None."""
        return (
            None if self.nic_speed_bytes_per_s is None else f"{self.nic_speed_bytes_per_s * 8 / 1e9:g} Gb/s"
        )


@cache
def cloud_instances() -> tuple[CloudInstance, ...]:
    """Every recorded instance type, in file order (specific patterns before the general ones).

    >>> ndv4 = next(i for i in cloud_instances() if i.key == "azure-ndv4")
    >>> ndv4.accelerator, ndv4.nic_speed_bytes_per_s * 8 / 1e9, ndv4.nics, ndv4.nic, ndv4.transport
    ('a100-sxm-40gb', 200.0, 8, 'connectx-6', 'ib-verbs')

    Raises
    ------
    ConfigError
        If an entry lacks pattern, accelerator or source, or names a GPU, NIC, transport or speed the
        catalogue does not know.
    """
    raw: Any = load_package_yaml("aifabric.catalog", "data/cloud_instances.yaml")
    if not isinstance(raw, dict):
        raise ConfigError(f"{_WHERE}: expected a mapping of instance types")
    return tuple(_instance(str(key), entry) for key, entry in raw.items())


def _instance(key: str, entry: Any) -> CloudInstance:
    """One entry of the file, checked against the catalogue (see :func:`cloud_instances`)."""
    if not isinstance(entry, dict) or not {"pattern", "accelerator", "source"} <= set(entry):
        raise ConfigError(f"{_WHERE}: {key}: needs pattern, accelerator and source")
    accelerator(str(entry["accelerator"]))  # a key the catalogue knows, else ConfigError
    speed = entry.get("nic_speed")
    nics = entry.get("nics")
    if nics is not None and (isinstance(nics, bool) or not isinstance(nics, int) or nics < 1):
        raise ConfigError(f"{_WHERE}: {key}: nics must be a whole number >= 1, got {nics!r}")
    if entry.get("nic") is not None:
        nic(str(entry["nic"]))
    if entry.get("transport") is not None:
        transport(str(entry["transport"]))
    return CloudInstance(
        key=key,
        pattern=str(entry["pattern"]),
        accelerator=str(entry["accelerator"]),
        source=str(entry["source"]),
        nic_speed_bytes_per_s=None
        if speed is None
        else parse_nic_bandwidth(str(speed), field=f"{_WHERE}: {key}: nic_speed"),
        nics=nics,
        nic=None if entry.get("nic") is None else str(entry["nic"]),
        transport=None if entry.get("transport") is None else str(entry["transport"]),
    )
