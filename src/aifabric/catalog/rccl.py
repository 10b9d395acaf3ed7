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

from dataclasses import dataclass
from functools import cache
from typing import Any

from pydantic import ValidationError

from aifabric.catalog.nccl import NcclRelease, nccl_release, pick_release
from aifabric.errors import ConfigError
from aifabric.package_data import load_package_yaml

__all__ = [
    "MscclKernel",
    "msccl_archs",
    "msccl_kernels",
    "msccl_single_process",
    "rccl_release",
    "rccl_release_versions",
]


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


@dataclass(frozen=True)
class MscclKernel:
    """One MSCCL all-pairs all_reduce kernel RCCL loads (``data/rccl_msccl.yaml``, read from the XML file).

    Attributes
    ----------
    file : str
        The XML file under ROCm/rccl ``tools/msccl-algorithms``.
    protocol : str
        ``LL`` or ``Simple`` (the XML's ``proto``).
    ranks : int
        The rank count it serves (``ngpus``).
    min_bytes, max_bytes : int
        The sizes it serves, bytes, both inclusive (``minBytes``, ``maxBytes``).
    channels, chunks_per_loop : int
        ``nchannels``; ``nchunksperloop``, which the element count must divide.
    peer_chunks : int
        Chunks a GPU sends one peer per step: ``S peer_chunks / chunks_per_loop`` bytes cross each link.
    steps : int
        Communication steps one after the other (1: whole buffer to every peer; 2: reduce-scatter, then
        all-gather).
    in_place, out_of_place : bool
        The placements it serves.
    """

    file: str
    protocol: str
    ranks: int
    min_bytes: int
    max_bytes: int
    channels: int
    chunks_per_loop: int
    peer_chunks: int
    steps: int
    in_place: bool
    out_of_place: bool


@cache
def _msccl_entries() -> dict[str, dict[str, Any]]:
    return dict(load_package_yaml("aifabric.catalog", "data/rccl_msccl.yaml"))


@cache
def msccl_kernels(version: str) -> tuple[MscclKernel, ...]:
    """The MSCCL all-pairs all_reduce kernels RCCL release ``version`` (a recorded one, as
    :func:`rccl_release` names it) loads; empty for a release the file does not list."""
    entry = _msccl_entries().get(version)
    return tuple(MscclKernel(**k) for k in entry["kernels"]) if entry else ()


def msccl_archs(version: str) -> frozenset[str]:
    """The GPU architectures whose RCCL ``version`` topology models turn MSCCL on (``mscclEnabled=1``)."""
    entry = _msccl_entries().get(version)
    return frozenset(entry["archs"]) if entry else frozenset()


def msccl_single_process(version: str) -> bool:
    """Whether RCCL ``version`` runs MSCCL for ranks that share a process
    (``RCCL_MSCCL_ENABLE_SINGLE_PROCESS`` defaults to 1 from 2.21.5, ROCm 6.3: ``mscclCommCompatible`` then
    accepts them); False before, and for a release the file does not list."""
    entry = _msccl_entries().get(version)
    return bool(entry and entry.get("single_process", False))
