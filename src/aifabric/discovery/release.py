"""The tuning tables an nccl-tests log is priced with: those of the release the log carries.

NCCL's tuner (``src/graph/tuning.cc``) changes between releases: its latencies, its per-channel ceilings and
the sizes where it switches algorithm. A log is therefore priced with the tables of the release it ran
(its ``NCCL version 2.26.2+cuda12.8`` banner, its ``NCCL INFO NCCL version`` line, rccl-tests' ``RCCL
version : 2.20.5`` line, a title naming ``NCCL 2.8.3``), or the one the user states for a log that carries
none. The catalogue records each release where a recorded fact changed
(:func:`~aifabric.catalog.nccl.nccl_release_versions`); a version between two of them runs the earlier's
tables (2.26.2 -> 2.25.1's, 2.22.3 -> 2.21.5's), a later patch of the newest recorded series the newest's.
An AMD GPU under RCCL with an RCCL release of a recorded series runs RCCL's own tables
(:func:`~aifabric.collectives.tiers.library_release`).

Three cases fall back on the newest recorded tables, each said in the note: no version in the log, a
release of a series newer than the newest recorded one (its tables not read yet), and a release older than
the oldest recorded one (:func:`~aifabric.discovery.inference.unrecorded_release_note`, which also marks the
machine as not modelled: no fault is read off it).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from aifabric.catalog.nccl import nccl_release, nccl_release_versions, version_tuple
from aifabric.catalog.rccl import rccl_release_versions
from aifabric.collectives.tiers import library_release, tables_note
from aifabric.discovery.inference import unrecorded_release_note
from aifabric.errors import ConfigError

__all__ = ["PricedRelease", "check_stated_version", "priced_release"]


@dataclass(frozen=True)
class PricedRelease:
    """The release a log's predictions are priced with.

    Attributes
    ----------
    version : str or None
        The version the engine is given (``nccl_version=``); None for the newest recorded tables.
    note : str
        Which tables price the log, in words (an assumption of the comparison).
    """

    version: str | None
    note: str


@cache
def priced_release(version: str | None, library: str = "nccl") -> PricedRelease:
    """The tables a log stating ``version`` is priced with, on a GPU whose collective library is ``library``.

    Examples
    --------
    >>> priced_release("2.18.5").note
    "priced with NCCL 2.18.5's tuning tables (recorded at 2.18.3, the last release at or below it that changed them)"
    >>> priced_release("2.31.0").version is None
    True
    >>> priced_release("2.20.5", "rccl").note
    "priced with RCCL 2.20.5's tuning tables"
    """  # noqa: E501  (the notes verbatim)
    newest = nccl_release_versions()[-1]
    if version is None:
        return PricedRelease(None, f"priced with NCCL {newest}'s tuning tables, the newest recorded: the run "
                                   "prints no NCCL version (give --nccl-version)")  # fmt: skip
    older = unrecorded_release_note(version)
    if older is not None:
        return PricedRelease(None, older)
    if version_tuple(version)[:2] > version_tuple(newest)[:2]:
        note = (f"NCCL {version} is newer than the newest recorded release {newest} (its tables not read "
                f"yet): priced with the newest recorded, {newest}'s")  # fmt: skip
        return PricedRelease(None, note)
    try:
        release = library_release(library, version)
    except ConfigError:  # an RCCL release of a recorded series older than RCCL's oldest recorded one
        known = ", ".join(rccl_release_versions())
        return PricedRelease(None, f"RCCL {version} predates RCCL's recorded releases ({known}): priced with "
                                   f"NCCL {newest}'s tuning tables, the newest recorded")  # fmt: skip
    return PricedRelease(version, tables_note(version, release, library))


def check_stated_version(version: str, field: str = "--nccl-version") -> None:
    """Refuse a stated release the catalogue cannot price: malformed, older than the oldest recorded release
    or of a series newer than the newest (:func:`~aifabric.catalog.nccl.nccl_release`'s rules).

    Raises
    ------
    ValueError
        One line naming ``field`` and the value.
    """
    try:
        nccl_release(version)
    except ConfigError as err:
        reason = str(err).removeprefix("nccl version: ")
        raise ValueError(f"{field}: {reason}") from err
