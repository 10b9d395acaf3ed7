"""Failures: take links or switches out of a Topology, given or at random with a seed."""

from __future__ import annotations

import numpy as np

from aifabric.cluster.fail_items import fail_items
from aifabric.cluster.topology import Topology
from aifabric.errors import ConfigError

__all__ = ["parse_failures"]

_TIERS = {"nic": 1, "leaf-spine": 2, "spine-core": 3, "fabric": -1}
_SWITCH = {"leaf": "leaf", "spine": "spine", "core": "core"}
_KINDS = (*_TIERS, "link", *_SWITCH)


def parse_failures(topo: Topology, text: str | None, *, seed: int = 0) -> np.ndarray | None:
    """Live-link mask (True = up) from a failure description, or None for no failures.

    Forms, comma-separated (read by :func:`~aifabric.cluster.fail_items.fail_items`, as the management
    network's ``--fail`` is):
    ``fabric:5%`` or ``fabric:0.05`` (5 % of leaf-spine and spine-core cables, seeded), ``leaf-spine:10%``,
    ``spine-core:3`` (3 cables: a whole number >= 1 is a count), ``nic:2``, ``link:123`` (one cable: the
    directed link and its reverse), ``spine:4`` / ``leaf:0`` / ``core:1`` (every link of that switch;
    ``spine:*`` every spine).

    Raises
    ------
    ConfigError
        For an empty text or an unreadable item, naming it.
    """
    if text is None:
        return None
    items = fail_items(text, _KINDS)
    alive = np.ones(topo.n_links, bool)
    rng = np.random.default_rng(seed)
    n_cables = topo.n_links
    for kind, arg in items:
        item = f"{kind}:{arg}"
        if kind in _TIERS:
            tiers = (2, 3) if kind == "fabric" else (_TIERS[kind],)
            cand = np.nonzero(np.isin(topo.link_tier, tiers) & (topo.link_src < topo.link_dst))[0]
            count = _count(item, arg, cand.size)
            pick = rng.choice(cand, size=count, replace=False) if count else np.array([], np.int64)
            _kill_cables(topo, alive, pick)
        elif kind == "link":
            link = _index(item, arg, n_cables, "link")
            _kill_cables(topo, alive, np.array([link]))
        elif kind in _SWITCH:
            alive &= ~_switch_links(topo, item, kind, arg)
    return alive


def _switch_links(topo: Topology, item: str, kind: str, arg: str) -> np.ndarray:
    """Mask of every link of switch ``kind:arg``; ``arg`` ``*`` is every switch of that kind (as the
    management network's ``--fail`` reads it)."""
    off = topo.device_offsets.get(kind)
    shape = topo.shape
    count = {"leaf": shape.n_leaves, "spine": shape.n_spines, "core": shape.n_cores}[kind] if shape else 0
    idx = np.arange(count) if arg == "*" else np.array([_index(item, arg, count, kind)])
    if off is None or count == 0:
        raise ConfigError(f"--fail: this fabric has no {kind} switches")
    dev = off + idx
    return np.isin(topo.link_src, dev) | np.isin(topo.link_dst, dev)


def _count(item: str, arg: str, available: int) -> int:
    """Cables asked by ``arg``: ``5%`` or a fraction < 1 of ``available``, or a whole count >= 1."""
    try:
        frac = float(arg[:-1]) / 100 if arg.endswith("%") else float(arg)
    except ValueError:
        raise ConfigError(
            f"--fail: cannot read {item!r} (examples: fabric:5%, fabric:0.05, spine-core:3)"
        ) from None
    if not (frac >= 0 and frac < float("inf")):
        raise ConfigError(f"--fail: {item!r} must be a fraction in [0, 1) or a whole number of cables")
    if arg.endswith("%") or frac < 1:
        if frac > 1:
            raise ConfigError(f"--fail: {item!r} is more than 100 %")
        return int(round(frac * available))
    if frac != int(frac):
        raise ConfigError(f"--fail: {item!r}: a count of cables must be a whole number (use % for a share)")
    if not arg.isdigit():  # "1.0": a fraction of 1 (every cable) or one cable? neither is guessed
        raise ConfigError(
            f"--fail: {item!r}: a share is a fraction in [0, 1) or a percentage (100% for every cable), a "
            f"count of cables a whole number without a point ({int(frac)})"
        )
    if frac > available:
        raise ConfigError(f"--fail: {item!r} asks for {int(frac)} cables; there are {available}")
    return int(frac)


def _index(item: str, arg: str, count: int, what: str) -> int:
    try:
        idx = int(arg)
    except ValueError:
        raise ConfigError(
            f"--fail: cannot read {item!r} ({what} index must be a whole number or *)"
        ) from None
    if not 0 <= idx < count:
        raise ConfigError(f"--fail: {what} {idx} does not exist (this fabric has {count})")
    return idx


def _kill_cables(topo: Topology, alive: np.ndarray, links: np.ndarray) -> None:
    """Take out each cable: the directed link and its reverse (parallel cables stay up)."""
    links = np.asarray(links, dtype=np.int64)
    alive[links] = False
    alive[topo.link_reverse[links]] = False
