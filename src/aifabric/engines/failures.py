"""Failures: take links or switches out of a Topology, given or at random with a seed."""

from __future__ import annotations

import numpy as np

from aifabric.cluster.topology import Topology
from aifabric.errors import ConfigError

__all__ = ["parse_failures"]

_TIERS = {"nic": 1, "leaf-spine": 2, "spine-core": 3, "fabric": -1}
_SWITCH = {"leaf": "leaf", "spine": "spine", "core": "core"}


def parse_failures(topo: Topology, text: str | None, *, seed: int = 0) -> np.ndarray | None:
    """Live-link mask (True = up) from a failure description, or None for no failures.

    Forms, comma-separated:
    ``fabric:0.05`` (5 % of leaf-spine and spine-core cables, seeded), ``leaf-spine:0.1``,
    ``spine-core:3`` (3 cables), ``nic:2``, ``link:123`` (one directed link and its reverse),
    ``spine:4`` / ``leaf:0`` / ``core:1`` (every link of that switch, plane 0).

    Raises
    ------
    ConfigError
        For an unreadable item, naming it.
    """
    if not text:
        return None
    alive = np.ones(topo.n_links, bool)
    rng = np.random.default_rng(seed)
    n_cables = topo.n_links
    for item in (x.strip() for x in text.split(",") if x.strip()):
        kind, _, arg = item.partition(":")
        try:
            val = float(arg)
        except ValueError:
            raise ConfigError(f"--fail: cannot read {item!r} (examples: fabric:0.05, spine:3, link:120)") from None
        if kind in _TIERS:
            tiers = (2, 3) if kind == "fabric" else (_TIERS[kind],)
            # one entry per cable: the "up" direction links are the first of each pair written
            cand = np.nonzero(np.isin(topo.link_tier, tiers) & (topo.link_src < topo.link_dst))[0]
            count = int(round(val * cand.size)) if val < 1 else int(val)
            if count > cand.size or val < 0:
                raise ConfigError(f"--fail: {item!r} asks for {count} of {cand.size} cables")
            pick = rng.choice(cand, size=count, replace=False) if count else np.array([], np.int64)
            _kill_cables(topo, alive, pick)
        elif kind == "link":
            link = int(val)
            if not 0 <= link < n_cables:
                raise ConfigError(f"--fail: link {link} does not exist (0..{n_cables - 1})")
            _kill_cables(topo, alive, np.array([link]))
        elif kind in _SWITCH:
            off = topo.device_offsets.get(kind)
            count = {"leaf": topo.shape.n_leaves, "spine": topo.shape.n_spines, "core": topo.shape.n_cores}[kind] if topo.shape else 0
            idx = int(val)
            if off is None or not 0 <= idx < count:
                raise ConfigError(f"--fail: {kind} {idx} does not exist (this fabric has {count})")
            dev = off + idx
            alive &= ~((topo.link_src == dev) | (topo.link_dst == dev))
        else:
            raise ConfigError(f"--fail: unknown failure kind {kind!r}; use fabric, leaf-spine, spine-core, nic, link, leaf, spine, core")
    return alive


def _kill_cables(topo: Topology, alive: np.ndarray, links: np.ndarray) -> None:
    for link in links:
        s, d = topo.link_src[link], topo.link_dst[link]
        alive[(topo.link_src == s) & (topo.link_dst == d)] = False
        alive[(topo.link_src == d) & (topo.link_dst == s)] = False
