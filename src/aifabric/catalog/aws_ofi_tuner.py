"""aws-ofi-nccl's own NCCL tuner: the region tables that pick algorithm and protocol on EC2 p5 and later.

From v1.16.0 the plugin builds its tuner into the network plugin's library, which NCCL 2.21 and later load
as the tuner when ``NCCL_TUNER_PLUGIN`` names none (``data/aws_ofi_tuner.yaml`` ``tuner``, with the source
of each release's tables). On a communicator of more than two nodes, per collective and ranks per node, the
tables hold polygons in the plane (nBytes, nRanks); the first polygon that holds the call's point, edge
included, and whose (algorithm, protocol) NCCL still has, is what NCCL runs. Everywhere else NCCL's own
tuner chooses.

The geometry is the plugin's own (``src/tuner/nccl_ofi_regions.cpp``: ``intersect``, ``distance``,
``is_inside_region``, ``extend_region``), ported line by line so that edge cases fall as they do there.

>>> tuner_release("1.16.3").version, tuner_release("1.15.0") is None
('1.16.0', True)
>>> tuner_regions(tuner_release(), "p5.48xlarge", 32, 4, "all_reduce")[0][:2]
('tree', 'LL128')
>>> region_choices(tuner_release(), "p5.48xlarge", 32, 4, "all_reduce", 64 * 2**20)[0]
('ring', 'LL128')
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

from aifabric.catalog.aws_ofi_nccl import ofi_nccl_version_tuple
from aifabric.errors import ConfigError
from aifabric.package_data import load_package_yaml

__all__ = [
    "TunerRelease",
    "extend_region",
    "is_inside_region",
    "region_choices",
    "tuner_default",
    "tuner_platform",
    "tuner_regions",
    "tuner_release",
]

#: TUNER_MAX_SIZE and TUNER_MAX_RANKS (include/tuner/nccl_ofi_tuner_region.h): 100 GiB, 1024 x 1024 ranks.
_MAX = {"max_size": 100.0 * 1024 * 1024 * 1024, "max_ranks": 1024.0 * 1024}
#: is_inside_region's eps, and transform_log2's stand-in for a 0 coordinate (nccl_ofi_tuner_region.h).
_EPS = 1e-10
_LOG2_ZERO = 1e-6

Point = tuple[float, float]
#: (algorithm, protocol, vertices in the table's plane: linear, or log2 of both coordinates)
Region = tuple[str, str, tuple[Point, ...]]


@dataclass(frozen=True, eq=False)
class TunerRelease:
    """One recorded release of the plugin's region tables: its plane (``"linear"`` or ``"log2"``), its
    platforms' tables as the catalogue writes them, and its source. One object per release (kept by
    :func:`_releases`), hashed by identity."""

    version: str
    source: str
    scale: str
    platforms: dict[str, Any]


@cache
def _tuner() -> dict[str, Any]:
    """The tuner's tables (``data/aws_ofi_tuner.yaml`` ``tuner``), loaded once, and only on a call that
    reaches the plugin's tuner (EFA beyond two nodes): a cluster without EFA never reads the file."""
    data: dict[str, Any] = load_package_yaml("aifabric.catalog", "data/aws_ofi_tuner.yaml")["tuner"]
    return data


@cache
def _releases() -> tuple[TunerRelease, ...]:
    """The recorded releases, oldest first."""
    out = [
        TunerRelease(str(v), e["source"], e["scale"], e["platforms"]) for v, e in _tuner()["releases"].items()
    ]
    return tuple(sorted(out, key=lambda r: ofi_nccl_version_tuple(r.version)))


def tuner_default() -> dict[str, str]:
    """When the tuner runs by default: ``default_from`` (plugin), ``nccl_loads_from`` and
    ``cost_table_from`` (NCCL), and how the user turns it off (``turned_off_by``), as the catalogue
    states them."""
    t = _tuner()
    return {k: str(t[k]) for k in ("default_from", "nccl_loads_from", "cost_table_from", "turned_off_by")}


def tuner_release(version: str | None = None) -> TunerRelease | None:
    """The region tables aws-ofi-nccl ``version`` runs by default (None: the newest recorded release): the
    newest recorded at or below it; None below ``default_from`` (v1.16.0), whose tuner NCCL loads only when
    ``NCCL_TUNER_PLUGIN`` names it.

    Raises ConfigError on a malformed version (named).
    """
    table = _releases()
    if version is None:
        return table[-1]
    want = ofi_nccl_version_tuple(version)
    if want < ofi_nccl_version_tuple(_tuner()["default_from"]):
        return None
    return [r for r in table if ofi_nccl_version_tuple(r.version) <= want][-1]


def tuner_platform(instance: str | None) -> str | None:
    """The tuner's platform of EC2 ``instance`` (``p5_p5e``, ``p5en``, ``p6``, ``p6_b300``); None for an
    instance it has no tables for (p4d, p4de)."""
    platforms: dict[str, str] = _tuner()["platforms"]
    return platforms.get(instance or "")


def tuner_regions(
    release: TunerRelease, instance: str | None, n_ranks: int, n_nodes: int, op: str
) -> tuple[Region, ...]:
    """The regions ``release`` consults for ``op`` on ``n_ranks`` ranks over ``n_nodes`` nodes of
    ``instance``, in the table's order, in its plane; empty where it leaves the call to NCCL (<= 2 nodes, no
    table for the platform, the ranks per node or the collective)."""
    platform = tuner_platform(instance)
    if platform is None or n_nodes <= 2 or n_ranks % n_nodes:
        return ()
    return _regions(release, platform, n_ranks // n_nodes, op)


@cache
def _regions(release: TunerRelease, platform: str, per_node: int, op: str) -> tuple[Region, ...]:
    table = release.platforms.get(platform, {}).get("layouts", {}).get(per_node, {}).get(op)
    if table is None:
        return ()
    log2 = release.scale == "log2"
    named = {
        name: extend_region(*(_point(p, {}) for p in pts), log2=log2)
        for name, pts in table.get("extend", {}).items()
    }
    return tuple(
        (str(algo), str(proto), tuple(_plane(_point(v, named), log2) for v in vertices))
        for algo, proto, vertices in table["regions"]
    )


def _coordinate(value: Any, named: dict[str, Point]) -> float:
    """A vertex coordinate as the catalogue writes it: a number, ``max_size`` / ``max_ranks``, or a named
    point's ``"name.x"`` / ``"name.y"``."""
    if isinstance(value, int | float):
        return float(value)
    if value in _MAX:
        return _MAX[value]
    name, _, axis = str(value).rpartition(".")
    if name not in named or axis not in ("x", "y"):
        raise ConfigError(f"catalog/data/aws_ofi_tuner.yaml tuner: unknown coordinate {value!r}")
    return named[name][0 if axis == "x" else 1]


def _point(value: Any, named: dict[str, Point]) -> Point:
    """A vertex: ``[x, y]`` or a named point."""
    if isinstance(value, str):
        return named[value]
    return (_coordinate(value[0], named), _coordinate(value[1], named))


def _plane(p: Point, log2: bool) -> Point:
    """``p`` in the table's plane: as is, or log2 of both coordinates with 0 as 1e-6 (transform_log2)."""
    if not log2:
        return p
    return (math.log2(p[0] or _LOG2_ZERO), math.log2(p[1] or _LOG2_ZERO))


def extend_region(a: Point, b: Point, z: Point, *, log2: bool) -> Point:
    """extend_region: where the line through ``a`` and ``b`` meets the box below ``z`` (in the log2 plane
    from v1.19.0, the point returned in bytes and ranks).

    >>> extend_region((8.0, 64.0), (16.0, 1024.0), (2.0**40, 2.0**20), log2=True)[1]  # region_based_tuner.cpp
    1048576.0
    """
    a, b, z = _plane(a, log2), _plane(b, log2), _plane(z, log2)
    if a[0] == b[0]:
        out = (a[0], z[1])
    elif a[1] == b[1]:
        out = (z[0], a[1])
    else:
        m = (a[1] - b[1]) / (a[0] - b[0])
        c = b[1] - m * b[0]
        zy = m * z[0] + c
        out = (z[0], zy) if zy < z[1] else ((z[1] - c) / m, z[1])
    return (2.0 ** out[0], 2.0 ** out[1]) if log2 else out


def _cross(a: Point, b: Point) -> float:
    return a[0] * b[1] - a[1] * b[0]


def _intersect(x0: Point, x1: Point, y0: Point, y1: Point) -> tuple[int, Point | None]:
    """intersect: 1 where segment x0-x1 crosses y0-y1, -1 where not, 0 where parallel or the crossing is
    within eps of y0 or y1; with the crossing point on y0-y1's line (None where parallel)."""
    dx = (x1[0] - x0[0], x1[1] - x0[1])
    dy = (y1[0] - y0[0], y1[1] - y0[1])
    d = _cross(dy, dx)
    if abs(d) < _EPS:
        return 0, None
    a = (_cross(x0, dx) - _cross(y0, dx)) / d
    sect = (y0[0] + a * dy[0], y0[1] + a * dy[1])
    if a < -_EPS or a > 1 + _EPS:
        return -1, sect
    if a < _EPS or a > 1 - _EPS:
        return 0, sect
    a = (_cross(x0, dy) - _cross(y0, dy)) / d
    return (-1 if a < 0 or a > 1 else 1), sect


def _distance(x: Point, y0: Point, y1: Point) -> float:
    """distance: from ``x`` to its foot on segment y0-y1, inf where the foot is off it (a parallel probe
    leaves the foot at the origin, as the plugin's zero-initialised point does)."""
    dy = (y1[0] - y0[0], y1[1] - y0[1])
    r, sect = _intersect(x, (x[0] + dy[1], x[1] - dy[0]), y0, y1)
    if r == -1:
        return math.inf
    s = sect or (0.0, 0.0)
    return math.hypot(s[0] - x[0], s[1] - x[1])


def is_inside_region(p: Point, vertices: tuple[Point, ...], far: Point) -> int:
    """is_inside_region: 1 inside, 0 on an edge, -1 outside (ray cast from ``p`` to ``far``, a point
    outside every polygon: twice TUNER_MAX_SIZE and TUNER_MAX_RANKS, in the table's plane).

    >>> square = ((0.0, 0.0), (4.0, 0.0), (4.0, 4.0), (0.0, 4.0))
    >>> [is_inside_region(p, square, (100.0, 100.0)) for p in ((1.0, 2.0), (4.0, 2.0), (5.0, 2.0))]
    [1, 0, -1]
    """
    n = len(vertices)
    edges = [(vertices[i], vertices[(i + 1) % n]) for i in range(n)]
    if any(_distance(p, a, b) < _EPS for a, b in edges):
        return 0
    xs = [v[0] for v in vertices]
    ys = [v[1] for v in vertices]
    if not (min(xs) <= p[0] <= max(xs) and min(ys) <= p[1] <= max(ys)):
        return -1
    crosses = sum(1 for a, b in edges if _intersect(p, far, a, b)[0] == 1)
    return 1 if crosses & 1 else -1


@lru_cache(maxsize=4096)
def region_choices(
    release: TunerRelease, instance: str | None, n_ranks: int, n_nodes: int, op: str, message_bytes: float
) -> tuple[tuple[str, str], ...]:
    """The (algorithm, protocol) of every region of :func:`tuner_regions` that holds the call's point
    (nBytes, nRanks), edge included, in the table's order: the plugin runs the first that NCCL still has.

    Optimisation: kept per call shape (the formula engine asks on every call across > 2 EFA nodes; the
    tables are read-only and the release one object per version)."""
    regions = tuner_regions(release, instance, n_ranks, n_nodes, op)
    if not regions:
        return ()
    log2 = release.scale == "log2"
    p = _plane((float(message_bytes), float(n_ranks)), log2)
    far = _plane((2.0 * _MAX["max_size"], 2.0 * _MAX["max_ranks"]), log2)
    return tuple((a, q) for a, q, vertices in regions if is_inside_region(p, vertices, far) >= 0)
