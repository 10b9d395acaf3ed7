"""The NCCL settings AWS's network plugin, aws-ofi-nccl, applies for the user on EC2, per plugin release.

EFA reaches NCCL through aws-ofi-nccl, and the plugin sets NCCL environment defaults per instance type
(``src/platform-aws.c`` / ``.cpp``: the platform table's ``env``, and code before v1.16.0) where the user's
environment leaves the variable unset. ``data/aws_ofi_nccl.yaml`` records them per plugin release and
instance type (p4d, p4de, p5, p5e, p5en, p6-b200), each release with its tag and source lines, and the NCCL
release from which NCCL reads each variable. The formula engine applies them beneath the user's environment
(:func:`aifabric.collectives.nccl_env.plugin_env`).

>>> ofi_nccl_release().version
'1.21.1'
>>> plugin_settings(ofi_nccl_release("1.18.0"), "p5.48xlarge", "2.30.3")["NCCL_NVLS_CHUNKSIZE"]
'524288'
>>> "NCCL_NVLS_CHUNKSIZE" in plugin_settings(ofi_nccl_release(), "p5.48xlarge", "2.20.3")  # NCCL ignores it
False
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from aifabric.catalog.nccl import version_tuple
from aifabric.errors import ConfigError
from aifabric.package_data import load_package_yaml

__all__ = [
    "OfiNcclRelease",
    "efa_instance",
    "instance_carries",
    "nccl_first_read",
    "nccl_reads",
    "not_modelled",
    "ofi_nccl_data",
    "ofi_nccl_release",
    "ofi_nccl_release_versions",
    "ofi_nccl_version_tuple",
    "plugin_settings",
]

_WHERE = "catalog/data/aws_ofi_nccl.yaml"


@dataclass(frozen=True)
class OfiNcclRelease:
    """One recorded aws-ofi-nccl release: the NCCL variables it sets per instance type, the NCCL release
    below which it turns NVLS off, the settings it applies only on a runtime condition, and its source."""

    version: str
    source: str
    instances: dict[str, dict[str, str]]
    nvls_off_below_nccl: str | None = None
    conditional: dict[str, str] | None = None

    @property
    def version_tuple(self) -> tuple[int, ...]:
        return ofi_nccl_version_tuple(self.version)


def ofi_nccl_version_tuple(version: str) -> tuple[int, ...]:
    """``"1.21.1"`` / ``"v1.13.0-aws"`` -> ``(1, 21, 1)`` / ``(1, 13, 0)``; ConfigError naming the value."""
    return _three_parts(version_tuple(version, "ofi_nccl_version", "1.21.1"))


@cache
def ofi_nccl_data() -> dict[str, Any]:
    """The catalogue file as loaded (``data/aws_ofi_nccl.yaml``), kept once."""
    raw: dict[str, Any] = load_package_yaml("aifabric.catalog", "data/aws_ofi_nccl.yaml")
    return raw


@cache
def _releases() -> dict[str, OfiNcclRelease]:
    """The recorded releases, oldest first."""
    out = {
        str(v): OfiNcclRelease(
            version=str(v),
            source=e["source"],
            instances={k: {n: str(x) for n, x in env.items()} for k, env in e["instances"].items()},
            nvls_off_below_nccl=e.get("nvls_off_below_nccl"),
            conditional=e.get("conditional"),
        )
        for v, e in ofi_nccl_data()["releases"].items()
    }
    return dict(sorted(out.items(), key=lambda kv: kv[1].version_tuple))


def ofi_nccl_release_versions() -> list[str]:
    """The recorded aws-ofi-nccl releases, oldest first."""
    return list(_releases())


def ofi_nccl_release(version: str | None = None) -> OfiNcclRelease:
    """The settings of aws-ofi-nccl ``version``: the newest recorded release at or below it (the recorded
    ones are those whose settings changed for the instance types recorded); None: the newest.

    Raises
    ------
    ConfigError
        A malformed version, or one older than the oldest recorded (the message names them).
    """
    table = _releases()
    if version is None:
        return next(reversed(table.values()))
    want = ofi_nccl_version_tuple(version)
    chosen = [r for r in table.values() if r.version_tuple <= want]
    if not chosen:
        raise ConfigError(
            f"ofi_nccl_version: {version!r} is older than the recorded aws-ofi-nccl releases; known: "
            f"{', '.join(table)}"
        )
    return chosen[-1]


def efa_instance(accelerator: str, nic: str, instance_type: str | None = None) -> str | None:
    """The EC2 instance type whose plugin settings apply: ``instance_type`` when named (checked), else the
    recorded one carrying ``accelerator`` with ``nic`` (any EFA NIC where the entry names none); None when
    no recorded instance matches.

    >>> efa_instance("h100-sxm", "efa-v2"), efa_instance("h200-sxm", "efa-v3")
    ('p5.48xlarge', 'p5en.48xlarge')
    >>> efa_instance("h100-sxm", "connectx-7") is None
    True
    """
    known: dict[str, dict[str, str | None]] = ofi_nccl_data()["instances"]
    if instance_type is not None:
        if instance_type not in known:
            raise ConfigError(
                f"scale_out.instance_type: {instance_type!r} has no recorded aws-ofi-nccl settings; known: "
                f"{', '.join(known)}"
            )
        return instance_type
    for name, entry in known.items():
        if entry["accelerator"] == accelerator and entry["nic"] in (None, nic):
            return name
    return None


def instance_carries(instance_type: str, nic: str) -> bool:
    """Whether the recorded EC2 ``instance_type`` carries the NIC ``nic``: the instance's own EFA NIC
    (aws_ofi_nccl.yaml ``instances``), or any EFA generation (``efa-*`` in nics.yaml) where it names none.

    >>> instance_carries("p5.48xlarge", "efa-v2"), instance_carries("p5.48xlarge", "connectx-7")
    (True, False)
    """
    entry = ofi_nccl_data()["instances"].get(instance_type)
    if entry is None:
        return False
    return nic == entry["nic"] if entry["nic"] is not None else nic.startswith("efa-")


def plugin_settings(release: OfiNcclRelease, instance: str, nccl_version: str) -> dict[str, str]:
    """The NCCL variables ``release`` sets on ``instance`` that NCCL ``nccl_version`` reads (``nccl_reads``:
    a variable NCCL does not know yet is dropped), with ``NCCL_NVLS_ENABLE=0`` below the release's
    ``nvls_off_below_nccl``. Unconditional settings only (``conditional`` holds the others)."""
    nccl = _nccl_tuple(nccl_version)
    env = {k: v for k, v in release.instances.get(instance, {}).items() if nccl_reads(k, nccl_version)}
    if release.nvls_off_below_nccl is not None and nccl < _nccl_tuple(release.nvls_off_below_nccl):
        env["NCCL_NVLS_ENABLE"] = "0"
    return env


def nccl_reads(variable: str, nccl_version: str) -> bool:
    """Whether NCCL ``nccl_version`` reads ``variable`` (``nccl_reads``: from the release that added it;
    variables not listed there are read by every recorded release).

    >>> nccl_reads("NCCL_NVLS_CHUNKSIZE", "2.20.5"), nccl_reads("NCCL_NVLS_CHUNKSIZE", "2.21.5")
    (False, True)
    """
    reads: dict[str, dict[str, str]] = ofi_nccl_data()["nccl_reads"]
    return variable not in reads or _nccl_tuple(nccl_version) >= _nccl_tuple(reads[variable]["since"])


def nccl_first_read(variable: str) -> str | None:
    """The NCCL release that first reads ``variable`` (``nccl_reads``), None when every recorded one does.

    >>> nccl_first_read("NCCL_NET_GDR_C2C"), nccl_first_read("NCCL_ALGO")
    ('2.26.2', None)
    """
    entry = ofi_nccl_data()["nccl_reads"].get(variable)
    return None if entry is None else str(entry["since"])


def _nccl_tuple(version: str) -> tuple[int, ...]:
    """An NCCL version as a comparable tuple (``"2.20.3"`` -> ``(2, 20, 3)``)."""
    return _three_parts(version_tuple(version))


def _three_parts(parts: tuple[int, ...]) -> tuple[int, ...]:
    """A version tuple padded with zeros to (major, minor, patch): ``(2, 26)`` -> ``(2, 26, 0)``."""
    return parts + (0,) * (3 - len(parts))


def not_modelled() -> dict[str, str]:
    """The plugin's variables the formula engine does not model, each with why (``not_modelled``)."""
    return dict(ofi_nccl_data()["not_modelled"])
