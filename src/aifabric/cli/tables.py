"""Console tables laid out in one pass: the text of a rich ``Table(show_edge=False)`` without its cost.

rich lays a table out cell by cell (a ``Padding`` and a measurement per cell, then line cropping), about
1 ms a row: a 230-row ``nccl-tests compare`` spent a quarter of a second on it, half of issue 9's 0.5 s
budget. :func:`fitted_table` writes the same characters directly when the table fits the console (the
widest cell of each column, one space of padding each side, rich's ``HEAVY_HEAD`` box), and hands the
table to rich when it does not, so that rich shrinks and wraps the columns as before. Test:
``tests/cli/test_tables.py`` compares both renderings.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from rich.cells import cell_len
from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Span, Text

from aifabric.inputs import printable

__all__ = ["Cell", "fits", "fitted_table", "gbps_text", "name_ranges", "size_text"]

#: A cell: plain text, or rich ``Text`` whose (single) style colours the whole cell.
Cell = str | Text
Justify = Literal["left", "right", "center"]

_HEAD, _HEAD_RULE, _RULE, _ROW = "┃", "━", "╇", "│"  # rich.box.HEAVY_HEAD without its edges


def size_text(n: float) -> str:
    """nccl-tests sizes in binary units when they are powers of two (``1 MiB``), else bytes.

    >>> size_text(1 << 20), size_text(3 << 30), size_text(1000)
    ('1 MiB', '3 GiB', '1000 B')
    """
    n = int(n)
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} B"


def gbps_text(bytes_per_s: float) -> str:
    """Bytes/s as GB/s (1e9 B/s) with two decimals: ``gbps_text(4.5e11) == '450.00'``."""
    return f"{bytes_per_s / 1e9:.2f}"


def fitted_table(
    console: Console,
    headers: Sequence[str],
    rows: Sequence[Sequence[Cell]],
    *,
    justify: Justify = "left",
    title: str | None = None,
) -> RenderableType:
    """A table with a header rule and ``│`` between columns, no outer edge, for ``console.print``.

    Every cell is made printable (:func:`aifabric.inputs.printable`: text from input files cannot drive
    the terminal). When each column is as wide as its widest cell plus one space each side and the whole
    fits ``console.width``, the result is one ``Text`` of those lines (header bold, title italic, as
    rich's theme has them); otherwise, or when a cell holds a newline or a tab, a rich ``Table`` of the
    same cells, which rich squeezes to the width.

    Raises
    ------
    ValueError
        If a row does not have one cell per header.
    """
    heads, cells = _cleaned(headers, rows)
    widths = _widths(heads, cells)
    plain = [*heads, *(c.plain for r in cells for c in r), title or ""]
    if _width(widths) > console.width or any(("\n" in p or "\t" in p) for p in plain):
        return _rich_table(heads, cells, justify, title)
    return _lines(heads, cells, widths, justify, title)


def fits(console: Console, headers: Sequence[str], rows: Sequence[Sequence[Cell]]) -> bool:
    """Whether the table, each column as wide as its widest cell, fits ``console.width``.

    Raises
    ------
    ValueError
        If a row does not have one cell per header.
    """
    return _width(_widths(*_cleaned(headers, rows))) <= console.width


def name_ranges(names: Sequence[str]) -> str:
    """Names joined with ``", "``, runs of consecutive numbers under one prefix written as ranges.

    >>> name_ranges(["NIC0", "NIC1", "NIC2", "NIC3", "NIC8", "mlx5_0"])
    'NIC0-NIC3, NIC8, mlx5_0'
    """
    runs: list[list[str]] = []
    for name in names:
        if runs and _follows(runs[-1][-1], name):
            runs[-1].append(name)
        else:
            runs.append([name])
    return ", ".join(run[0] if len(run) == 1 else f"{run[0]}-{run[-1]}" for run in runs)


def _follows(before: str, name: str) -> bool:
    """``NIC4`` follows ``NIC3``: the same prefix, the number one more."""
    a, b = _NUMBERED.fullmatch(before), _NUMBERED.fullmatch(name)
    return bool(a and b and a[1] == b[1] and int(b[2]) == int(a[2]) + 1)


_NUMBERED = re.compile(r"(.*?)(\d+)")


def _cleaned(headers: Sequence[str], rows: Sequence[Sequence[Cell]]) -> tuple[list[str], list[list[Text]]]:
    """Headers and cells made printable, cells as ``Text``; a row without one cell per header refused."""
    cells = [[_clean(c) for c in row] for row in rows]
    for index, row in enumerate(cells):
        if len(row) != len(headers):
            raise ValueError(f"table row {index + 1} has {len(row)} cells for {len(headers)} columns")
    return [printable(h) for h in headers], cells


def _widths(heads: list[str], cells: list[list[Text]]) -> list[int]:
    """Each column's width, terminal cells: its widest header or cell."""
    return [max([cell_len(h), *(cell_len(r[k].plain) for r in cells)]) for k, h in enumerate(heads)]


def _width(widths: list[int]) -> int:
    """The table's width: each column padded by a space each side, ``│`` between them."""
    return sum(widths) + 3 * len(widths) - 1


def _clean(cell: Cell) -> Text:
    if isinstance(cell, Text):
        return Text(printable(cell.plain), style=cell.style)
    return Text(printable(cell))


def _gaps(text: str, width: int, justify: Justify) -> tuple[int, int]:
    """Spaces before and after ``text`` to fill ``width`` cells as rich justifies it (right and centre
    justification drop the text's trailing spaces first; see :func:`_justified`)."""
    gap = width - cell_len(text)
    before = {"left": 0, "right": gap, "center": gap // 2}[justify]
    return before, gap - before


def _justified(text: str, justify: Justify) -> str:
    """``text`` as rich justifies it in a cell: right and centre strip its trailing spaces."""
    return text if justify == "left" else text.rstrip()


def _pad(text: str, width: int, justify: Justify) -> str:
    text = _justified(text, justify)
    before, after = _gaps(text, width, justify)
    return " " * before + text + " " * after


def _lines(
    heads: list[str], cells: list[list[Text]], widths: list[int], justify: Justify, title: str | None
) -> Text:
    """The table as one ``Text``: title, header, rule, rows; each styled cell's text as a span."""
    out = Text(end="")
    if title:
        out.append(printable(title) + "\n", style="table.title")
    out.append(_HEAD.join(f" {_pad(h, w, justify)} " for h, w in zip(heads, widths, strict=True)) + "\n",
               style="table.header")  # fmt: skip
    out.append(_RULE.join(_HEAD_RULE * (w + 2) for w in widths))
    at = len(out)
    pieces: list[str] = []
    for row in cells:
        pieces.append("\n")
        at += 1
        for k, (cell, w) in enumerate(zip(row, widths, strict=True)):
            text = _justified(cell.plain, justify)
            before, after = _gaps(text, w, justify)
            lead = f"{_ROW if k else ''} {' ' * before}"
            piece = f"{lead}{text}{' ' * (after + 1)}"
            if cell.style:
                out.spans.append(Span(at + len(lead), at + len(lead) + len(text), cell.style))
            pieces.append(piece)
            at += len(piece)
    out.append("".join(pieces))
    return out


def _rich_table(heads: list[str], cells: list[list[Text]], justify: Justify, title: str | None) -> Table:
    table = Table(show_edge=False, title=title)
    for h in heads:
        table.add_column(h, justify=justify)
    for row in cells:
        table.add_row(*row)
    return table
