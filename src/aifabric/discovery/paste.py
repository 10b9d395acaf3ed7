"""nccl-tests output as people paste it: launcher prefixes, timestamps, tables without their header.

:func:`parse_pasted` is :func:`~aifabric.discovery.nccl_tests.parse_nccl_tests` for text copied from a job
log rather than from a terminal. Before parsing, each line loses

* a timestamp in front (``2024-03-01T10:00:00.123Z``, ``2024-03-01 10:00:00,123``, ``[10:00:00]``);
* a launcher tag: Open MPI ``--tag-output`` (``[1,0]<stdout>:``), Intel MPI / MPICH ``-prepend-rank``
  (``[0] ``), Slurm ``srun -l`` (``0: ``), ``torchrun``'s ``[default0]:``;

and result rows printed without their ``#  size  count  type ...`` header (the header scrolled away or was
not copied) get nccl-tests' own header, chosen by the number of fields of the first row (13: both halves;
9: out-of-place only, as ``-z``/``blocking`` runs or a cut paste print; 11 or 12 ending in an ``error``
cell: the layout before nccl-tests 2.13), or of its two lines when it was wrapped. Line numbers in the
tables and in errors are those of the pasted text. An nccl-tests ``-J`` JSON report is read as the text
log it stands for (:func:`~aifabric.discovery.perf_json.json_log_text`).

Lines a terminal wrapped at a fixed width ``W`` (the longest line of the paste) are joined back: a line of
exactly ``W`` characters continues on the next when it is a result row with fewer than 13 fields and the two
together have at most 13, or a ``#`` line (the header, the parameters) followed by a line that starts
neither a ``#`` line, a row nor an NCCL log line. Pieces are joined as printed, so a field cut in two is
whole again. A row split at a space onto two lines of any width (an e-mail client, a narrow terminal), a row
with only its out-of-place group and a last row cut mid-line are handled by the table reader
(:func:`~aifabric.discovery.nccl_tests.parse_nccl_tests`).
"""

from __future__ import annotations

import dataclasses
import re

from aifabric.discovery._text import clean_line, clean_lines, decode, demultiplexed
from aifabric.discovery.nccl_tests import PerfTable, parse_nccl_tests
from aifabric.discovery.perf_json import json_log_text, looks_like_json
from aifabric.errors import ParseError

__all__ = ["MAX_HEADERS", "clean_line", "parse_pasted"]

#: Headers supplied at most (each needs one more parse; beyond this the text is not a pasted log).
MAX_HEADERS = 8

_FULL = (
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw"
    "   busbw #wrong"
)
_HALF = "#       size         count      type   redop    root     time   algbw   busbw #wrong"
_HEADERS = {13: _FULL, 9: _HALF}
#: The header of rows in the layout of nccl-tests before 2.13 (``src/common.cu`` of v2.11.0): each half
#: ends with its largest error as ``%5.0le`` (``0e+00``) or ``N/A``, not a ``#wrong`` count; all_gather
#: printed neither redop nor root (11 fields), all_reduce, reduce_scatter and alltoall a redop, broadcast a
#: root (12 fields).
_OLD_HALF = "    time   algbw   busbw  error"
_OLD_HEADERS = {
    11: "#       size         count      type" + 2 * _OLD_HALF,
    12: "#       size         count      type   {}" + 2 * _OLD_HALF,
}
_OLD_ERROR = re.compile(r"^(?:\d(?:\.\d+)?e[+-]\d+|N/A)$")
_MISSING = "a result row outside any table"


def parse_pasted(
    text: str | bytes, source: str | None = None, *, collective: str | None = None
) -> list[PerfTable]:
    """Every nccl-tests table of a pasted log (module docstring), lines numbered as pasted.

    Raises
    ------
    ParseError
        As :func:`~aifabric.discovery.nccl_tests.parse_nccl_tests`, with the pasted line; also when a row
        without header has a field count no nccl-tests table prints, or more than :data:`MAX_HEADERS`
        headers are missing.
    """
    decoded = decode(text, source)
    if looks_like_json(decoded):  # nccl-tests -J: read as the text log it stands for
        decoded = json_log_text(decoded, source)
    pasted = [raw.rstrip("\r") for raw in decoded.split("\n")]
    order = demultiplexed(pasted)
    lines, origin = _unwrap([pasted[i] for i in order], [i + 1 for i in order])
    for _ in range(MAX_HEADERS + 1):
        try:
            tables = parse_nccl_tests("\n".join(lines), source, collective=collective)
        except ParseError as err:
            if err.line is None or _MISSING not in str(err) or len(origin) - len(lines) > MAX_HEADERS:
                raise _moved(err, origin) from None
            at = err.line - 1
            header = _header_for(lines[at].split()) or _wrapped_header(lines, at)
            if header is None:
                raise _moved(err, origin) from None
            lines.insert(at, header)
            origin.insert(at, origin[at])
            continue
        if origin == list(range(1, len(origin) + 1)):  # nothing inserted or reordered
            return tables
        return sorted((_renumbered(t, origin) for t in tables), key=lambda table: table.line)
    raise ParseError(f"more than {MAX_HEADERS} tables without a header", source=source)


_ROW_FIELDS = 13  # the most fields an nccl-tests result row has (both halves)
_LOG_LINE = re.compile(r"^\S+:\d+:\d+ \[\d+\] NCCL |NCCL (?:INFO|WARN)")


def _unwrap(raw: list[str], numbers: list[int]) -> tuple[list[str], list[int]]:
    """Cleaned lines with terminal-wrapped pieces joined (module docstring), and the pasted line of each
    (``numbers``: the pasted line of each of ``raw``)."""
    width = max((len(r) for r in raw), default=0)
    cleaned = clean_lines(raw)
    lines: list[str] = []
    origin: list[int] = []
    i = 0
    while i < len(raw):
        line, start = cleaned[i], numbers[i]
        while width >= 40 and len(raw[i]) == width and i + 1 < len(raw) and _continues(line, raw[i + 1]):
            i += 1
            line += raw[i]
        lines.append(line)
        origin.append(start)
        i += 1
    return lines, origin


def _continues(line: str, nxt: str) -> bool:
    """Whether ``nxt`` is the rest of ``line``, wrapped by a terminal (see the module docstring)."""
    tokens, more = line.split(), nxt.split()
    if not tokens or not more or clean_line(nxt) != nxt:  # a tag or timestamp starts a line of its own
        return False
    if tokens[0].isdigit():  # a result row: short of its fields (a whole row of the old layout is not), and
        # the rest fits
        fits = len(tokens) + len(more) - 1 <= _ROW_FIELDS
        return len(tokens) < _ROW_FIELDS and not _is_old_row(tokens) and fits
    # a row's first field is its size, a number in any form ("1e300" too, refused by the row's parser at
    # its own line); no piece of a wrapped header starts with a digit
    starts_row = more[0][:1].isdigit() and len(more) >= 8
    if tokens[0].startswith("#"):
        return not more[0].startswith("#") and not starts_row and not _LOG_LINE.search(nxt)
    return False


def _is_old_row(fields: list[str]) -> bool:
    """Whether ``fields`` are a whole row of the layout before nccl-tests 2.13: 11 or 12 fields, each half
    ending in its error cell (:data:`_OLD_ERROR`)."""
    return len(fields) in _OLD_HEADERS and bool(_OLD_ERROR.match(fields[-1]) and _OLD_ERROR.match(fields[-5]))


def _header_for(fields: list[str]) -> str | None:
    """nccl-tests' header for a row without one, told by its fields: 13 or 9 (:data:`_HEADERS`), or a whole
    row of the old layout (:func:`_is_old_row`, :data:`_OLD_HEADERS`; the 12th field names a redop, or is a
    root rank)."""
    if _is_old_row(fields):
        return _OLD_HEADERS[len(fields)].format("root" if fields[3].lstrip("-").isdigit() else "redop")
    return _HEADERS.get(len(fields))


def _wrapped_header(lines: list[str], at: int) -> str | None:
    """The header for a first row wrapped onto lines ``at`` and ``at + 1`` (their fields together 13 or 9)."""
    if at + 1 >= len(lines) or not lines[at + 1].strip() or lines[at + 1].lstrip().startswith("#"):
        return None
    return _HEADERS.get(len(lines[at].split()) + len(lines[at + 1].split()))


def _moved(err: ParseError, origin: list[int]) -> ParseError:
    if err.line is None or not 1 <= err.line <= len(origin):
        return err
    message = str(err)
    prefix = f"{err.source}:{err.line}: " if err.source else f"line {err.line}: "
    bare = message[len(prefix) :] if message.startswith(prefix) else message
    return ParseError(bare, line=origin[err.line - 1], source=err.source)


def _renumbered(table: PerfTable, origin: list[int]) -> PerfTable:
    rows = tuple(dataclasses.replace(r, line=origin[r.line - 1]) for r in table.rows)
    cut = origin[table.cut_line - 1] if table.cut_line is not None else None
    # a supplied header is numbered as the row below it: the only two lines that share a pasted line
    supplied = table.line < len(origin) and origin[table.line - 1] == origin[table.line]
    elided = tuple(origin[n - 1] for n in table.elided_lines)
    line = origin[table.line - 1]
    return dataclasses.replace(
        table, line=line, rows=rows, cut_line=cut, header_supplied=supplied, elided_lines=elided
    )
