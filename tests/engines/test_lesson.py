"""The seed lesson's figures (../shared/cases/lesson.md) under its convention, and the per-direction ones."""

import pytest

from aifabric.collectives.costs import hierarchical_all_reduce_time, ring_all_reduce_time
from aifabric.engines.lesson import lesson_rows


def test_lesson_figures_with_lesson_convention():
    rows = lesson_rows()
    for r in rows:
        assert round(r.lesson_s, 2) == pytest.approx(r.expected_s, abs=0.006), r.scenario
    hier = rows[3]
    # 0.62 s = 0.27 s NVLink + 0.35 s NICs
    assert hier.parts_lesson[0] == pytest.approx(0.27, abs=0.005)
    assert hier.parts_lesson[1] == pytest.approx(0.35, abs=0.005)
    # Try 1: 1.39x faster with ConnectX-9; 0.27 + 0.17
    assert rows[3].lesson_s / rows[4].lesson_s == pytest.approx(1.39, abs=0.01)
    assert rows[4].parts_lesson[1] == pytest.approx(0.17, abs=0.005)
    # Try 2: 0.31 NVLink + 0.036 NICs
    assert rows[6].parts_lesson == pytest.approx((0.307, 0.036), abs=0.001)


def test_per_direction_doubles_nvlink_terms_only():
    rows = lesson_rows()
    assert rows[0].per_direction_s == pytest.approx(2 * rows[0].lesson_s)
    assert rows[2].per_direction_s == pytest.approx(rows[2].lesson_s)  # NIC-only: unchanged
    assert rows[3].parts_per_direction[0] == pytest.approx(2 * rows[3].parts_lesson[0])
    assert rows[3].parts_per_direction[1] == pytest.approx(rows[3].parts_lesson[1])


def test_cost_functions_by_hand():
    # 2 (n-1)/n S / B: 2 x 7/8 x 140e9 / 900e9 = 0.2722 s
    assert ring_all_reduce_time(140e9, 8, 900e9) == pytest.approx(0.27222, rel=1e-4)
    intra, inter = hierarchical_all_reduce_time(140e9, 8, 128, 900e9, 100e9)
    assert inter == pytest.approx(2 * 127 / 128 * 17.5e9 / 100e9)
    with pytest.raises(ValueError, match="n_ranks"):
        ring_all_reduce_time(1.0, 0, 1.0)
