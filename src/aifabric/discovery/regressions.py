"""NCCL releases known for a bandwidth regression: the catalogue's table and whether a run can have one.

The table is ``catalog/data/nccl_regressions.yaml``: for each regression the first and last release known
affected, the release that fixed it, the collectives and the NCCL algorithm it hits, the fewest nodes it was
seen on, the symptom and its source (NCCL release notes, GitHub issues and pull requests). A run can have it
when its NCCL version lies in the affected range, it spans enough nodes and nothing in the log rules the
algorithm out (a run with ``NCCL_ALGO=Ring``, NVLS unavailable or a GPU without NVLS is never told so).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from functools import cache

from aifabric.errors import ConfigError
from aifabric.package_data import load_package_yaml

__all__ = ["Regression", "known_regressions", "regression_for", "version_key"]

_WHERE = "catalog/data/nccl_regressions.yaml"
_FIELDS = ("first", "last", "fixed_in", "collectives", "algorithm", "min_nodes", "symptom", "source")


def version_key(version: str) -> tuple[int, ...]:
    """``"2.19.3"`` -> ``(2, 19, 3)`` (a suffix such as ``+cuda12.2`` ignored).

    Raises
    ------
    ValueError
        If ``version`` does not start with a dotted number.
    """
    match = re.match(r"\s*(\d{1,4}(?:\.\d{1,6}){0,3})", version)
    if not match:
        raise ValueError(f"not an NCCL version: {version!r}")
    return tuple(int(p) for p in match.group(1).split("."))


@dataclass(frozen=True)
class Regression:
    """One known regression (see the module docstring); versions as NCCL prints them."""

    key: str
    first: str
    last: str
    fixed_in: str
    collectives: tuple[str, ...]
    algorithm: str
    min_nodes: int
    symptom: str
    source: str

    def affects(self, version: str) -> bool:
        """Whether release ``version`` lies in ``first .. last`` (compared on the first three numbers)."""
        try:
            v = version_key(version)[:3]
        except ValueError:
            return False
        return version_key(self.first)[:3] <= v <= version_key(self.last)[:3]

    def describe(self) -> str:
        """One sentence: the symptom, the affected and fixing releases, the source."""
        span = self.first if self.first == self.last else f"{self.first}-{self.last}"
        return f"NCCL {span}: {self.symptom}; fixed in {self.fixed_in} ({self.source})"


@cache
def known_regressions() -> tuple[Regression, ...]:
    """Every entry of ``catalog/data/nccl_regressions.yaml``.

    Raises
    ------
    ConfigError
        If an entry lacks a field or names a version that is not one.
    """
    raw = load_package_yaml("aifabric.catalog", "data/nccl_regressions.yaml")
    if not isinstance(raw, dict):
        raise ConfigError(f"{_WHERE}: expected a mapping of regressions")
    out = []
    for key, entry in raw.items():
        if not isinstance(entry, dict) or set(entry) != set(_FIELDS):
            raise ConfigError(f"{_WHERE}: {key}: needs exactly the fields {', '.join(_FIELDS)}")
        try:
            for name in ("first", "last", "fixed_in"):
                version_key(str(entry[name]))
        except ValueError as err:
            raise ConfigError(f"{_WHERE}: {key}: {err}") from None
        out.append(
            Regression(
                key=str(key),
                first=str(entry["first"]),
                last=str(entry["last"]),
                fixed_in=str(entry["fixed_in"]),
                collectives=tuple(str(c) for c in entry["collectives"]),
                algorithm=str(entry["algorithm"]),
                min_nodes=int(entry["min_nodes"]),
                symptom=str(entry["symptom"]),
                source=str(entry["source"]),
            )
        )
    return tuple(out)


def regression_for(
    version: str | None, op: str, n_nodes: int, algorithms: Collection[str]
) -> Regression | None:
    """The known regression a run on NCCL ``version`` can have, if any.

    Parameters
    ----------
    version : str or None
        NCCL version of the run (None: no regression can be told).
    op : str
        The engine's collective name (``all_reduce``...).
    n_nodes : int
        Nodes of the run.
    algorithms : collection of str
        The algorithms NCCL may have run (``NCCL_ALGO`` narrows it; NVLS unavailable or a GPU without NVLS
        rules ``nvls``/``nvls_tree`` out): a regression of another algorithm is contradicted by the log.

    Examples
    --------
    >>> regression_for("2.19.3", "all_reduce", 8, {"ring", "tree", "nvls_tree"}).fixed_in
    '2.20.3'
    >>> regression_for("2.19.3", "all_reduce", 8, {"ring"}) is None  # NCCL_ALGO=Ring: not that code path
    True
    """
    if version is None:
        return None
    for reg in known_regressions():
        applies = op in reg.collectives and n_nodes >= reg.min_nodes and reg.algorithm in algorithms
        if applies and reg.affects(version):
            return reg
    return None
