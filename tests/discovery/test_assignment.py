"""min_cost_assignment finds an optimal assignment: the same total cost as SciPy's linear_sum_assignment."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.optimize import linear_sum_assignment

from aifabric.discovery.assignment import min_cost_assignment


@st.composite
def matrices(draw: st.DrawFn) -> list[list[int]]:
    n = draw(st.integers(1, 9))
    m = draw(st.integers(n, 12))
    # small integer costs, as in NIC pairing (path rank x 10 + copy index): many ties
    return [draw(st.lists(st.integers(0, 50), min_size=m, max_size=m)) for _ in range(n)]


@given(matrices())
def test_total_cost_is_scipys_optimum(cost: list[list[int]]) -> None:
    pairs = min_cost_assignment(cost)
    assert [i for i, _ in pairs] == list(range(len(cost)))
    assert len({j for _, j in pairs}) == len(cost)  # a column serves one row
    rows, cols = linear_sum_assignment(np.array(cost))
    assert sum(cost[i][j] for i, j in pairs) == sum(cost[i][j] for i, j in zip(rows, cols, strict=True))


def test_hand_checked_example() -> None:
    # The 6 permutations cost 4+0+2=6, 4+5+2=11, 1+2+2=5, 1+5+3=9, 3+2+2=7, 3+0+3=6: the unique
    # least, 5, gives column 1 to row 0, column 0 to row 1 and column 2 to row 2.
    assert min_cost_assignment([[4, 1, 3], [2, 0, 5], [3, 2, 2]]) == [(0, 1), (1, 0), (2, 2)]


def test_eight_gpus_four_nics_share_each_nic_twice() -> None:
    # 8 GPUs, 4 NICs each offered twice (copy k costs k): GPU g is PIX (rank 0) to NIC g // 2 and SYS
    # (rank 4) to the others, so every GPU gets its own PIX NIC and each NIC serves exactly two GPUs.
    columns = [n for n in range(4) for _ in range(2)]
    cost = [[(0 if n == g // 2 else 4) * 10 + k % 2 for k, n in enumerate(columns)] for g in range(8)]
    pairs = min_cost_assignment(cost)
    assert [columns[j] for _, j in pairs] == [0, 0, 1, 1, 2, 2, 3, 3]


def test_empty_and_bad_input() -> None:
    assert min_cost_assignment([]) == []
    with pytest.raises(ValueError, match="only 1 columns"):
        min_cost_assignment([[1], [2]])
    with pytest.raises(ValueError, match="same number"):
        min_cost_assignment([[1, 2], [3]])
    with pytest.raises(ValueError, match="finite"):
        min_cost_assignment([[1, float("nan")]])
