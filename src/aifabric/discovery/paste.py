"""nccl-tests output as people paste it: launcher prefixes, timestamps, tables without their header.

:func:`parse_pasted` is :func:`~aifabric.discovery.nccl_tests.parse_nccl_tests` for text copied from a job
log rather than from a terminal. Before parsing, each line loses

* a timestamp in front (``2024-03-01T10:00:00.123Z``, ``2024-03-01 10:00:00,123``, ``[10:00:00]``);
* a launcher tag: Open MPI ``--tag-output`` (``[1,0]<stdout>:``), Intel MPI / MPICH ``-prepend-rank``
  (``[0] ``), Slurm ``srun -l`` (``0: ``), ``torchrun``'s ``[default0]:``;

and result rows printed without their ``#  size  count  type ...`` header (the header scrolled away or was
not copied) get nccl-tests' own header, chosen by the number of fields of the first row (13: both halves;
9: out-of-place only, as ``-z``/``blocking`` runs or a cut paste print). Line numbers in the tables and in
errors are those of the pasted text.
"""

from __future__ import annotations

import dataclasses
import re

from aifabric.discovery._text import decode
from aifabric.discovery.nccl_tests import PerfTable, parse_nccl_tests
from aifabric.errors import ParseError

__all__ = ["MAX_HEADERS", "clean_line", "parse_pasted"]

#: Headers supplied at most (each needs one more parse; beyond this the text is not a pasted log).
MAX_HEADERS = 8

_STAMP = re.compile(
    r"^(?:\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?\s+"
    r"|\[\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?\]\s*"
    r"|\[?\d\d:\d\d:\d\d(?:[.,]\d{1,9})?\]?\s+)"
)
_TAG = re.compile(r"^(?:\[\d{1,6},\d{1,6}\]<std(?:out|err)>:|\[\d{1,6}\] |\[default\d{1,6}\]:|\s*\d{1,6}: )")
_FULL = (
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw"
    "   busbw #wrong"
)
_HALF = "#       size         count      type   redop    root     time   algbw   busbw #wrong"
_HEADERS = {13: _FULL, 9: _HALF}
_MISSING = "a result row outside any table"


def clean_line(line: str) -> str:
    """``line`` without a leading timestamp and launcher tag (see the module docstring).

    >>> clean_line("[1,0]<stdout>:  4294967296  1073741824  float  sum  -1  15870")
    '  4294967296  1073741824  float  sum  -1  15870'
    >>> clean_line("2024-03-01T10:00:00.123Z 0: # nThread 1 nGpus 8")
    '# nThread 1 nGpus 8'
    """
    line = _STAMP.sub("", line, count=1)
    return _TAG.sub("", line, count=1)


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
    lines = [clean_line(raw.rstrip("\r")) for raw in decode(text, source).split("\n")]
    origin = list(range(1, len(lines) + 1))  # pasted line of each line parsed
    for _ in range(MAX_HEADERS + 1):
        try:
            tables = parse_nccl_tests("\n".join(lines), source, collective=collective)
        except ParseError as err:
            if err.line is None or _MISSING not in str(err) or len(origin) - len(lines) > MAX_HEADERS:
                raise _moved(err, origin) from None
            at = err.line - 1
            header = _HEADERS.get(len(lines[at].split()))
            if header is None:
                raise _moved(err, origin) from None
            lines.insert(at, header)
            origin.insert(at, origin[at])
            continue
        return [_renumbered(t, origin) for t in tables]
    raise ParseError(f"more than {MAX_HEADERS} tables without a header", source=source)


def _moved(err: ParseError, origin: list[int]) -> ParseError:
    if err.line is None or not 1 <= err.line <= len(origin):
        return err
    message = str(err)
    prefix = f"{err.source}:{err.line}: " if err.source else f"line {err.line}: "
    bare = message[len(prefix) :] if message.startswith(prefix) else message
    return ParseError(bare, line=origin[err.line - 1], source=err.source)


def _renumbered(table: PerfTable, origin: list[int]) -> PerfTable:
    if len(origin) == origin[-1]:  # nothing inserted
        return table
    rows = tuple(dataclasses.replace(r, line=origin[r.line - 1]) for r in table.rows)
    return dataclasses.replace(table, line=origin[table.line - 1], rows=rows)
