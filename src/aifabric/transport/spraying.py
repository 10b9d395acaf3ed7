"""Spraying as it is built: a sender's entropy values (EVs) hashed onto the equal-cost paths.

A UET sender stamps each packet with one of its ``n_ev`` entropy values; switches hash the EV with the
flow's addresses onto a next hop (UET 1.0: "EV-selection ... open for vendor differentiation",
fabric-models.md Sec. 3.4). With packets spread evenly over the EVs, path ``j`` carries the fraction of
the EVs that hash to it, ``count_j / n_ev``: a balls-into-bins draw, uneven for a finite ``n_ev``
(Raab & Steger, RANDOM'98), where the ideal split gives every path ``1 / n_paths``.

REPS (Bonato et al., "REPS: Recycled Entropy Packet Spraying", arXiv 2407.21625) keeps the EVs whose
packets come back without an ECN mark and replaces the others by fresh random ones. :func:`reps_weights`
plays that loop at flow level: each round, on a path loaded ``rho > 1`` times its capacity, the share
``1 - 1/rho`` of the EVs (the packets that would be marked) is drawn again; the others are recycled.

All draws are seeded (``numpy.random.default_rng((seed, flow))``), so a result names its seed.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from aifabric.errors import ConfigError

__all__ = ["SPRAYING", "ecmp_weights", "even_weights", "ev_weights", "reps_weights"]


def _check(n_flows: int, n_paths: int, n_ev: int) -> None:
    if n_flows < 0 or n_paths < 1 or n_ev < 1:
        raise ConfigError(
            f"need n_flows >= 0, n_paths >= 1 and entropies >= 1, got {n_flows}, {n_paths}, {n_ev}"
        )


def ev_weights(n_flows: int, n_paths: int, n_ev: int, seed: int = 0) -> np.ndarray:
    """Fraction of each flow's bytes per path when its ``n_ev`` EVs hash uniformly onto ``n_paths``.

    Returns
    -------
    ndarray, shape (n_flows, n_paths)
        Rows sum to 1; entries are multiples of ``1 / n_ev``.

    >>> w = ev_weights(2, 4, 8, seed=0)
    >>> w.sum(axis=1).tolist(), bool((w * 8 == np.round(w * 8)).all())
    ([1.0, 1.0], True)
    """
    _check(n_flows, n_paths, n_ev)
    out = np.empty((n_flows, n_paths))
    for f in range(n_flows):
        ev_path = np.random.default_rng((seed, f)).integers(0, n_paths, n_ev)
        out[f] = np.bincount(ev_path, minlength=n_paths) / n_ev
    return out


def ecmp_weights(n_flows: int, n_paths: int, seed: int = 0) -> np.ndarray:
    """Per-flow ECMP: one EV per flow, so all of a flow's bytes on one hashed path."""
    return ev_weights(n_flows, n_paths, 1, seed)


def even_weights(n_flows: int, n_paths: int) -> np.ndarray:
    """The ideal split: ``1 / n_paths`` of every flow on every path."""
    _check(n_flows, n_paths, 1)
    return np.full((n_flows, n_paths), 1.0 / n_paths)


def reps_weights(
    n_flows: int,
    n_paths: int,
    n_ev: int,
    path_load: Callable[[np.ndarray], np.ndarray],
    *,
    rounds: int = 32,
    seed: int = 0,
) -> np.ndarray:
    """EV weights after ``rounds`` of REPS recycling (module docstring).

    Parameters
    ----------
    path_load : callable
        Maps weights ``(n_flows, n_paths)`` to each (flow, path)'s load relative to its fair share: the
        load of the most loaded link on that path over its capacity; above 1 means marked (congested).

    Returns
    -------
    ndarray, shape (n_flows, n_paths)
    """
    _check(n_flows, n_paths, n_ev)
    if rounds < 0:
        raise ConfigError(f"rounds must be >= 0, got {rounds!r}")
    evs = np.stack([np.random.default_rng((seed, f)).integers(0, n_paths, n_ev) for f in range(n_flows)])
    redraw = np.random.default_rng((seed, n_flows, 1))
    rows = np.arange(n_flows)[:, None]

    def weights() -> np.ndarray:
        w = np.zeros((n_flows, n_paths))
        np.add.at(w, (np.broadcast_to(rows, evs.shape), evs), 1.0 / n_ev)
        return w

    for _ in range(rounds):
        load = path_load(weights())[rows, evs]
        if not (load > 1.0 + 1e-9).any():
            break
        # the packets above the path's capacity are the marked ones: that share of its EVs is replaced
        marked = redraw.random(evs.shape) < np.maximum(1.0 - 1.0 / np.maximum(load, 1e-30), 0.0)
        evs = np.where(marked, redraw.integers(0, n_paths, evs.shape), evs)
    return weights()


#: Spraying modes of the scenarios, by name.
SPRAYING = ("ecmp", "ev", "reps", "even")
