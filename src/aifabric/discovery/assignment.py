"""Minimum-cost assignment of rows to columns, for the small matrices of one node (GPUs x NICs).

``scipy.optimize.linear_sum_assignment`` solves the same problem, but importing ``scipy.optimize`` costs
about 0.35 s of CPU, more than the rest of ``aifabric inspect`` together (issue 9: <= 0.5 s with start-up);
a node has at most a few dozen GPUs, where the textbook algorithm below takes microseconds.
tests/discovery/test_assignment.py checks it against SciPy's optimum on random matrices.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["min_cost_assignment"]


def min_cost_assignment(cost: Sequence[Sequence[float]]) -> list[tuple[int, int]]:
    """The (row, column) pairs of a minimum-cost assignment of every row to a distinct column.

    Kuhn-Munkres with dual potentials and shortest augmenting paths: row ``i`` is added by growing a
    Dijkstra tree over the reduced costs ``c[r][j] - u[r] - v[j]`` (never negative) until it reaches a free
    column, then the potentials move by the tree's distances and the path's assignments flip. Each row
    costs O(n m), the whole O(n^2 m) for ``n`` rows and ``m >= n`` columns. Among optimal assignments,
    ties go to the lower column index.

    Parameters
    ----------
    cost : sequence of sequences of float, shape (n, m), n <= m
        ``cost[i][j]``: the cost of giving column ``j`` to row ``i`` (finite).

    Returns
    -------
    list of (int, int)
        ``(i, j)`` for every row ``i`` in order; the sum of ``cost[i][j]`` is the least possible.

    Raises
    ------
    ValueError
        If the rows differ in length, there are more rows than columns, or a cost is not finite.

    References
    ----------
    H. W. Kuhn, "The Hungarian method for the assignment problem", Naval Research Logistics Quarterly 2,
    83-97 (1955), doi:10.1002/nav.3800020109; R. Jonker and A. Volgenant, "A shortest augmenting path
    algorithm for dense and sparse linear assignment problems", Computing 38, 325-340 (1987),
    doi:10.1007/BF02278710.

    Examples
    --------
    >>> min_cost_assignment([[4, 1, 3], [2, 0, 5], [3, 2, 2]])
    [(0, 1), (1, 0), (2, 2)]
    """
    rows = [[float(x) for x in row] for row in cost]
    n = len(rows)
    m = len(rows[0]) if rows else 0
    if any(len(row) != m for row in rows):
        raise ValueError("cost: every row must have the same number of columns")
    if n > m:
        raise ValueError(f"cost: {n} rows but only {m} columns; every row needs its own column")
    if not all(math.isfinite(x) for row in rows for x in row):
        raise ValueError("cost: every cost must be finite")
    u = [0.0] * (n + 1)  # row potentials, 1-based (0: the row being added)
    v = [0.0] * (m + 1)  # column potentials; column 0 is the tree's root
    owner = [0] * (m + 1)  # owner[j]: the row (1-based) holding column j, 0 if free
    for i in range(1, n + 1):
        owner[0] = i
        j0 = 0
        dist = [math.inf] * (m + 1)
        came_from = [0] * (m + 1)
        done = [False] * (m + 1)
        while owner[j0] != 0:  # grow the tree until it reaches a free column
            done[j0] = True
            r = owner[j0]
            row = rows[r - 1]
            step, j1 = math.inf, 0
            for j in range(1, m + 1):
                if done[j]:
                    continue
                reduced = row[j - 1] - u[r] - v[j]
                if reduced < dist[j]:
                    dist[j], came_from[j] = reduced, j0
                if dist[j] < step:
                    step, j1 = dist[j], j
            for j in range(m + 1):
                if done[j]:
                    u[owner[j]] += step
                    v[j] -= step
                else:
                    dist[j] -= step
            j0 = j1
        while j0 != 0:  # flip the assignments along the path back to the root
            j1 = came_from[j0]
            owner[j0] = owner[j1]
            j0 = j1
    col_of_row = [0] * n
    for j in range(1, m + 1):
        if owner[j]:
            col_of_row[owner[j] - 1] = j - 1
    return list(enumerate(col_of_row))
