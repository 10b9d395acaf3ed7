"""Raw traffic patterns as CommPlans: permutation, incast and uniform (all-to-all) flows."""

from __future__ import annotations

import numpy as np

from aifabric.collectives.plan import CommPlan, Stage, check_pairs

__all__ = ["PATTERNS", "pattern_plan"]

PATTERNS = ("permutation", "incast", "uniform")


def pattern_plan(
    pattern: str,
    gpus: np.ndarray,
    bytes_per_flow: float,
    *,
    seed: int = 0,
    fan_in: int = 8,
    job: str = "job0",
) -> CommPlan:
    """One stage of flows among ``gpus``.

    - ``permutation``: every GPU sends ``bytes_per_flow`` to one other GPU, a seeded random derangement
      (the classic fat-tree stress test, Al-Fares et al. 2008);
    - ``incast``: ``fan_in`` senders to each receiver (GPU k receives from the next ``fan_in`` GPUs);
    - ``uniform``: every GPU sends ``bytes_per_flow`` to every other GPU (all-to-all traffic of equal
      flows; the all_to_all *collective* is :func:`aifabric.collectives.plan.build_plan`).

    Raises ValueError for an unknown pattern, fewer than 2 GPUs or a size <= 0, ConfigError for a
    ``uniform`` pattern too large for the memory limit (:func:`aifabric.collectives.plan.check_pairs`).
    """
    gpus = np.asarray(gpus, dtype=np.int64)
    n = gpus.size
    if pattern not in PATTERNS:
        raise ValueError(f"traffic: unknown pattern {pattern!r}; known: {', '.join(PATTERNS)}")
    if n < 2:
        raise ValueError(f"traffic: a pattern needs at least 2 GPUs, got {n}")
    if not bytes_per_flow > 0:
        raise ValueError(f"size: bytes per flow must be > 0, got {bytes_per_flow!r}")
    rng = np.random.default_rng(seed)
    if pattern == "permutation":
        perm = rng.permutation(n)
        fixed = perm == np.arange(n)
        while fixed.any():  # turn fixed points into swaps
            i = np.nonzero(fixed)[0]
            j = (i + 1) % n
            perm[i], perm[j] = perm[j], perm[i].copy()
            fixed = perm == np.arange(n)
        src, dst = gpus, gpus[perm]
    elif pattern == "incast":
        k = min(fan_in, n - 1)
        recv = np.arange(0, n, k + 1)
        src = np.concatenate([gpus[(r + 1 + np.arange(k)) % n] for r in recv])
        dst = np.repeat(gpus[recv], k)
    else:
        check_pairs(n, "the uniform pattern")
        src = np.repeat(gpus, n)
        dst = np.tile(gpus, n)
        keep = src != dst
        src, dst = src[keep], dst[keep]
    m = src.size
    return CommPlan(
        pattern,
        "direct",
        bytes_per_flow * m,
        n,
        (Stage(src, dst, np.full(m, float(bytes_per_flow)), np.arange(m), 1, pattern),),
        job=job,
        pxn=False,
    )
