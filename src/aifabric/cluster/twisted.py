"""Twisted tori: the TPU slice shapes whose wraparound links close with an offset, and their distances.

A TPU v4 or v5p slice of ``k x k x 2k`` or ``k x 2k x 2k`` chips (``k`` a multiple of 4) may be wired as a
twisted torus (Cloud TPU v4 docs: "AxBxC is either 2A=B=C or 2A=2B=C, where each dimension is a multiple
of 4. For example, 4x4x8, 4x8x8, or 12x12x24"; Cloud TPU v5p docs: 4x4x8 and 4x8x8 "Supports twisted?
Yes"; Jouppi et al., "TPU v4: An Optically Reconfigurable Supercomputer for Machine Learning with Hardware
Support for Embeddings", ISCA 2023: the optical circuit switches let users pick a twisted 3D torus).

The twist (Camara et al., "Twisted Torus Topologies for Enhanced Interconnection Networks", IEEE TPDS
21(12), 2010): a wraparound link of a short axis (``k`` chips) lands ``k`` chips further along each long
axis (``2k``): in ``k x k x 2k`` both short axes' wraps move ``+k`` along the long one; in ``k x 2k x 2k``
the short axis's wrap moves ``(+k, +k)`` along both long ones. These twisted tori are edge-symmetric
(Camara et al.: twisting "recover[s] edge symmetry, and consequently, balance[s] the utilization of their
links"), so uniform traffic loads every directed link alike; a plain mixed-radix torus loads its long
axis most.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from functools import cache

__all__ = ["TWIST_RULE", "twist_ok", "twisted_distances"]

#: The shapes a twisted torus takes, as a user reads it in an error message.
TWIST_RULE = "AxBxC with 2A=B=C or 2A=2B=C (A <= B <= C), each a multiple of 4: 4x4x8, 4x8x8, 8x8x16, ..."


def twist_ok(dims: Sequence[int]) -> bool:
    """Whether a slice of ``dims`` chips per axis can be a twisted torus (:data:`TWIST_RULE`).

    >>> [twist_ok(d) for d in ((4, 4, 8), (8, 4, 8), (4, 4, 4), (4, 8, 16), (2, 2, 4))]
    [True, True, False, False, False]
    """
    if len(dims) != 3:
        return False
    a, b, c = sorted(int(d) for d in dims)
    return a % 4 == 0 and ((a == b and c == 2 * a) or (b == c == 2 * a))


def _neighbours(p: tuple[int, int, int], dims: tuple[int, int, int]) -> list[tuple[int, int, int]]:
    """The 6 chips one ICI link from ``p`` in the twisted torus of sorted ``dims`` (``a <= b <= c``)."""
    a, b, c = dims
    k = a
    out = []
    for axis in range(3):
        for step in (1, -1):
            q = list(p)
            q[axis] += step
            if not 0 <= q[axis] < dims[axis]:
                q[axis] %= dims[axis]
                for other in range(axis + 1, 3):  # a short axis's wrap moves +-k along each long axis
                    if dims[axis] == k and dims[other] == 2 * k:
                        q[other] = (q[other] + step * k) % dims[other]
            out.append((q[0], q[1], q[2]))
    return out


@cache
def twisted_distances(dims: tuple[int, ...]) -> tuple[int, float]:
    """``(diameter, mean distance)`` in ICI hops of the twisted torus of ``dims`` (any order), by a
    breadth-first search from one chip (a twisted torus is vertex-transitive: every chip sees the same).

    The mean counts every chip, the source included (distance 0), as an all-to-all's ``S/n`` per chip does.

    ``4x4x8``: diameter 6, mean 55/16 (a plain torus: 2 + 2 + 4 = 8 and 1 + 1 + 2 = 4);
    ``4x8x8``: diameter 6, mean 69/16 (plain: 10 and 5):

    >>> twisted_distances((4, 4, 8)), twisted_distances((4, 8, 8))
    ((6, 3.4375), (6, 4.3125))
    """
    s = tuple(sorted(dims))
    if not twist_ok(s):
        raise ValueError(f"twisted: {'x'.join(map(str, dims))} is no twisted torus ({TWIST_RULE})")
    shape = (s[0], s[1], s[2])
    start = (0, 0, 0)
    dist = {start: 0}
    queue = deque([start])
    while queue:
        p = queue.popleft()
        for q in _neighbours(p, shape):
            if q not in dist:
                dist[q] = dist[p] + 1
                queue.append(q)
    return max(dist.values()), sum(dist.values()) / len(dist)
