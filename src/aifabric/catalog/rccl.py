"""RCCL's own tuning tables per release: AMD's fork of NCCL, which AMD Instinct GPUs run.

ROCm/rccl keeps NCCL's tuner (``src/graph/tuning.cc``) and its version numbers (``makefiles/version``: RCCL
2.20.5 is built on NCCL 2.20.5) but replaces some tables: one ``baseLat`` for every algorithm (12 us LL and
LL128, 17 us Simple), per-topology ``hwLat`` tables (``tuningModel`` structs chosen by the matched platform
model of ``rome_models.cc``; the 8 x MI300X xGMI mesh runs ``tuning_model_5``), and LL128 off by default
except on gfx90a. ``data/rccl_releases.yaml`` records, per RCCL release, the figures RCCL replaces, each
with its tag and source lines; every other figure is the NCCL release RCCL is built on
(:func:`aifabric.catalog.nccl.nccl_release` of the same version). The result is an
:class:`~aifabric.catalog.nccl.NcclRelease` with ``library == "rccl"``, which the cost functions read as
they read NCCL's.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from pydantic import ValidationError

from aifabric.catalog.nccl import NcclRelease, nccl_release, pick_release
from aifabric.errors import ConfigError
from aifabric.package_data import load_package_yaml

__all__ = ["rccl_release", "rccl_release_versions"]


@cache
def _rccl_releases() -> dict[str, NcclRelease]:
    """Each recorded RCCL release: its NCCL base's tables with RCCL's replacements, oldest first."""
    raw: dict[str, Any] = load_package_yaml("aifabric.catalog", "data/rccl_releases.yaml")
    out: dict[str, NcclRelease] = {}
    for version, entry in raw.items():
        base = nccl_release(str(version)).model_dump()
        try:
            out[str(version)] = NcclRelease.model_validate(
                {**base, **entry, "version": str(version), "library": "rccl"}
            )
        except ValidationError as err:  # a broken shipped file is a bug; say where
            raise ConfigError(f"rccl_releases.yaml: release {version}: {err.errors()[0]['msg']}") from err
    return dict(sorted(out.items(), key=lambda kv: kv[1].version_tuple))


def rccl_release_versions() -> list[str]:
    """The recorded RCCL releases (their NCCL version numbers), oldest first."""
    return list(_rccl_releases())


def rccl_release(version: str | None = None) -> NcclRelease:
    """The tuning tables RCCL ``version`` runs with (``"2.20.5"``, as rccl-tests' ``nccl-library`` line and
    ``RCCL version`` print it; ``None``: the newest recorded), chosen as
    :func:`~aifabric.catalog.nccl.nccl_release` chooses NCCL's.

    Raises
    ------
    ConfigError
        A malformed version, or one outside the recorded releases (the message names them).
    """
    return pick_release(_rccl_releases(), version, "rccl")
