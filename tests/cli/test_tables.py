"""fitted_table: the same characters as rich's ``Table(show_edge=False)`` when the table fits, rich's own
table when it does not (issue 9: table rendering was half of ``nccl-tests compare``'s 0.5 s)."""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.table import Table
from rich.text import Text

from aifabric.cli.tables import Cell, Justify, fitted_table, size_text

#: Cell text: ASCII, accented and double-width (CJK) characters, spaces; no newline or tab (those go to
#: rich, see test_newline_goes_to_rich).
TEXT = st.text(alphabet=st.sampled_from("ab Z09.-%/é日本"), max_size=12)


def _console(width: int) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    # as aifabric.cli.common.console is set up when piped: soft wrap, no markup
    return Console(file=out, width=width, soft_wrap=True, markup=False), out


def _printed(renderable: object, width: int) -> str:
    console, out = _console(width)
    console.print(renderable)
    return out.getvalue()


def _rich(headers: list[str], rows: list[list[Cell]], justify: Justify, title: str | None) -> Table:
    table = Table(show_edge=False, title=title)
    for h in headers:
        table.add_column(h, justify=justify)
    for row in rows:
        table.add_row(*row)
    return table


@st.composite
def tables(draw: st.DrawFn) -> tuple[list[str], list[list[Cell]], Justify, str | None]:
    n = draw(st.integers(1, 6))
    headers = draw(st.lists(TEXT, min_size=n, max_size=n))
    cell = TEXT | TEXT.map(lambda s: Text(s, style="red"))
    rows = draw(st.lists(st.lists(cell, min_size=n, max_size=n), max_size=5))
    justify = draw(st.sampled_from(["left", "right", "center"]))
    title = draw(st.none() | TEXT.filter(str.strip))
    return headers, rows, justify, title


@settings(max_examples=150)
@given(tables(), st.sampled_from([20, 80, 180]))
def test_same_text_as_rich(table: tuple, width: int) -> None:
    headers, rows, justify, title = table
    console, _ = _console(width)
    fast = fitted_table(console, headers, rows, justify=justify, title=title)
    assert _printed(fast, width) == _printed(_rich(headers, rows, justify, title), width)


def test_nccl_tests_rows_laid_out_directly() -> None:
    # the shape of a compare row table: right-justified, a red FLAG, fits 180 columns
    headers = ["size", "time meas (us)", "busbw meas", ""]
    rows: list[list[Cell]] = [[size_text(8), "68.52", "0.00", "note"], ["16 GiB", "68652.00", "469.21", ""],
                              ["1 MiB", "71.93", "27.33", Text("FLAG", style="red")]]  # fmt: skip
    console, _ = _console(180)
    fast = fitted_table(console, headers, rows, justify="right")
    assert isinstance(fast, Text)
    assert fast.plain.splitlines()[0] == "   size ┃ time meas (us) ┃ busbw meas ┃      "
    assert fast.plain.splitlines()[-1] == "  1 MiB │          71.93 │      27.33 │ FLAG "
    red = [fast.plain[s.start : s.end] for s in fast.spans if s.style == "red"]
    assert red == ["FLAG"]


def test_too_wide_goes_to_rich_which_squeezes_it() -> None:
    console, _ = _console(30)
    wide = fitted_table(console, ["a", "b"], [["x" * 20, "y" * 20]])
    assert isinstance(wide, Table)
    assert max(len(line) for line in _printed(wide, 30).splitlines()) <= 30


def test_newline_goes_to_rich() -> None:
    console, _ = _console(180)
    assert isinstance(fitted_table(console, ["a"], [["two\nlines"]]), Table)


def test_escape_sequences_from_files_are_made_visible() -> None:
    console, _ = _console(180)
    fast = fitted_table(console, ["GPU"], [["GPU0\x1b[2J\x07"]])
    assert isinstance(fast, Text)
    assert "\x1b" not in fast.plain and "GPU0\\x1b[2J\\x07" in fast.plain  # README: shown as \xNN


def test_a_short_row_is_refused() -> None:
    console, _ = _console(180)
    with pytest.raises(ValueError, match="row 1 has 1 cells for 2 columns"):
        fitted_table(console, ["a", "b"], [["x"]])
