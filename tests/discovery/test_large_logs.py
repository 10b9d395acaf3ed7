"""Large logs are compared in bounded work (issue 9, trial 9 item 11): one model evaluation per size, at most
:data:`MAX_ROWS_MODELLED` rows per table and :data:`MAX_TABLES_COMPARED` tables, the rest named as skipped.

Speed figures are in ``benchmarks/bench_large_logs.py``; these tests assert the caps and what is reported.
"""

from __future__ import annotations

import pytest

from aifabric.discovery import compare
from aifabric.discovery.compare import compare_nccl_tests

_HEAD = "#       size         count      type   redop    root     time   algbw   busbw #wrong\n"
# case 01 (NVIDIA/nccl-tests #290, one DGX H100): the 4 GB and 2 GB rows, out-of-place half
_ROWS = (
    "  4294967296    1073741824     float     sum      -1    15870  270.63  473.60      0\n"
    "  2147483648     536870912     float     sum      -1   8020.3  267.76  468.57      0\n"
)


def test_a_repeated_size_is_modelled_once_and_compared_on_every_row() -> None:
    table = compare_nccl_tests(_HEAD + _ROWS * 20, ranks=8, nodes=1).tables[0]
    assert len(table.rows) == 40
    four_gb = [row.predicted for row in table.rows if row.size_bytes == 4294967296]
    assert all(p is four_gb[0] for p in four_gb)  # one evaluation shared by the 20 rows of that size


def test_rows_beyond_the_cap_are_skipped_with_their_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compare, "MAX_ROWS_MODELLED", 4)
    table = compare_nccl_tests(_HEAD + _ROWS * 5, ranks=8, nodes=1).tables[0]
    assert [row.line for row in table.rows] == [2, 3, 4, 5]
    assert "10 rows: the first 4 modelled, the other 6 (lines 6-11) skipped (more than a sweep prints)" in (
        table.assumptions
    )


def test_tables_beyond_the_cap_are_listed_as_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compare, "MAX_TABLES_COMPARED", 2)
    result = compare_nccl_tests((_HEAD + _ROWS) * 3, ranks=8, nodes=1)
    assert [t.index for t in result.tables] == [1, 2]
    assert result.skipped == ((3, 7, "beyond the first 2 tables compared (--table 3)"),)
    assert [
        t.index for t in compare_nccl_tests((_HEAD + _ROWS) * 3, ranks=8, nodes=1, tables=[3]).tables
    ] == [3]
