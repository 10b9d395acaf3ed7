"""The double binary tree NCCL builds across nodes, as its source builds it (``src/graph/trees.cc``).

NCCL runs its tree algorithms (tree, NVLS-tree) over one rank per node and channel, on two binary trees
that each carry half of the buffer: the first from :func:`btree_peers`, the second its mirror (even node
counts) or the first shifted by one (odd). What a node's NICs carry follows from how many tree edges it
has in the two trees together (:func:`dtree_max_edges`).
"""

from __future__ import annotations

from functools import lru_cache

__all__ = ["btree_depth", "btree_peers", "dtree_max_edges"]


def btree_peers(nranks: int, rank: int) -> tuple[int, int, int]:
    """(parent, child 0, child 1) of ``rank`` in NCCL's binary tree of ``nranks`` (-1: none).

    A port of ``ncclGetBtree`` (NCCL ``src/graph/trees.cc``, the same from 2.4 to 2.30): rank 0 is the
    root and has one child; a rank's first set bit places it, its parent one bit up, its children half a
    bit down on each side (the right one pulled back inside ``nranks``).

    >>> [btree_peers(3, r) for r in range(3)]  # 0 - 2 - 1: the root has one child, a chain
    [(-1, -1, 2), (2, -1, -1), (0, 1, -1)]
    """
    bit = 1
    while bit < nranks and not bit & rank:
        bit <<= 1
    if rank == 0:
        return -1, -1, (bit >> 1 if nranks > 1 else -1)
    up = (rank ^ bit) | (bit << 1)
    if up >= nranks:
        up = rank ^ bit
    lowbit = bit >> 1
    down0 = -1 if lowbit == 0 else rank - lowbit
    down1 = -1 if lowbit == 0 else rank + lowbit
    while down1 >= nranks:  # as NCCL's loop: the first pass recomputes, then the bit halves
        down1 = -1 if lowbit == 0 else rank + lowbit
        lowbit >>= 1
    return up, down0, down1


def _edges(peers: tuple[int, int, int]) -> int:
    return sum(p != -1 for p in peers)


@lru_cache(maxsize=256)
def dtree_max_edges(nranks: int) -> int:
    """The most tree edges one rank has in NCCL's two trees together (``ncclGetDtree``: the second tree
    mirrors the first, rank r playing n - 1 - r, on an even count; shifts it by one on an odd count).

    Each tree carries half the buffer, S / 2 up (reduce) and S / 2 down (broadcast) on every edge, so a
    rank with ``e`` edges moves ``e S / 2`` per direction: 2 ranks, one edge in each tree (S); 3 ranks, a
    chain in each tree and at most 3 edges (1.5 S); from 4, an inner node with a parent and two children in
    one tree and a leaf of the other (2 S).

    >>> [dtree_max_edges(n) for n in (2, 3, 4, 5, 1024)]
    [2, 3, 4, 4, 4]
    """
    if nranks < 2:
        return 0
    if nranks % 2:
        second = [(r - 1 + nranks) % nranks for r in range(nranks)]
    else:
        second = [nranks - 1 - r for r in range(nranks)]
    return max(_edges(btree_peers(nranks, r)) + _edges(btree_peers(nranks, s)) for r, s in enumerate(second))


@lru_cache(maxsize=256)
def btree_depth(nranks: int) -> int:
    """The levels of NCCL's binary tree of ``nranks`` (:func:`btree_peers`): the most edges from a rank up
    to the root, a whole number. The second tree of ``ncclGetDtree`` relabels the same shape (mirrored or
    shifted), so it has as many. A reduction climbs them and a broadcast comes back down, one network step
    after another: ``ceil(log2 n)`` levels as NCCL builds them.

    >>> [btree_depth(n) for n in (1, 2, 3, 4, 5, 6, 8, 9)]
    [0, 1, 2, 2, 3, 3, 3, 4]
    """
    depth = 0
    for rank in range(nranks):
        hops, r = 0, rank
        while r > 0:
            r, hops = btree_peers(nranks, r)[0], hops + 1
        depth = max(depth, hops)
    return depth
