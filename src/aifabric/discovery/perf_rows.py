"""Read the lines of an nccl-tests result table: clean a line, the column header, one row, the footer.

The layouts (NVIDIA, nccl-tests ``src/common.cu``): ``size count type redop root`` then one or two groups
``time algbw busbw #wrong`` (out-of-place, in-place); older builds print ``size count type redop`` and
``time algbw busbw error``. A row may carry only the out-of-place group under a two-group header (builds and
pastes that print no in-place half): its in-place half is missing (None), not zero. Times are microseconds
and bandwidths GB/s (1e9 B/s); they are converted here, once, to seconds and bytes/s.

nccl-tests 2.19 (``src/util.cu`` ``writeResultHeader``) adds two optional parts: ``-I 1`` prints four
per-iteration columns after each group's ``#wrong`` (``i_min i_max i_p99 i_cv%``: microseconds and a
percentage over the iterations; read as numbers, not kept), and ``-S 1`` a last ``timestamp`` column whose
cells are a date and a time (``2026-01-05 10:11:12``, two fields of a row; checked and dropped). ``-C 1``
names the time column ``cputime``; it is read as the time.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal

from aifabric.discovery.perf_records import DTYPE_BYTES, PerfResult, PerfRow
from aifabric.errors import ParseError

__all__ = [
    "AVG_LINE",
    "Columns",
    "avg_busbw",
    "clean_line",
    "is_column_header",
    "looks_like_row",
    "parse_columns",
    "parse_row",
    "starts_new_run",
]

_NUMBER = r"[-+]?(?:\d{1,30}(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d{1,3})?"
_FLOAT = re.compile(rf"^{_NUMBER}$")
_TIME = re.compile(rf"^(\()?({_NUMBER})(\))?$")
_COUNT = re.compile(r"^\d{1,20}$")
_ROOT = re.compile(r"^-?\d{1,9}$")
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,31}$")
_PREFIX = re.compile(r"^\s*(?:\[\d+,\d+\]<std(?:out|err)>:|\d+: )")  # mpirun --tag-output, srun -l
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
AVG_LINE = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(\S*)")
#: ``-I 1`` per-iteration columns after a group's ``#wrong`` (nccl-tests 2.19 ``writePerIterReport``).
_PER_ITERATION = ("i_min", "i_max", "i_p99", "i_cv%")
#: ``-S 1`` timestamp cell: ``TIME_STRING_FORMAT`` "%Y-%m-%d %H:%M:%S" (nccl-tests 2.19 ``src/util.cu``).
_STAMP = (re.compile(r"^\d{4}-\d{2}-\d{2}$"), re.compile(r"^\d{2}:\d{2}:\d{2}$"))
_GIGA = Decimal(10) ** 9  # GB/s -> bytes/s (nccl-tests: 1 GB = 1e9 B)
_MICRO = Decimal(10) ** -6  # us -> s
_MILLI = Decimal(10) ** -3  # ms -> s (NCCL 1's tests)
_NCCL1_HEAD = ["bytes", "N", "type"]


def clean_line(raw: str) -> str:
    """``raw`` without its CR, ANSI colour codes and one launcher prefix (``[1,0]<stdout>:``, ``3: ``)."""
    return _PREFIX.sub("", _ANSI.sub("", raw.rstrip("\r")), count=1)


def is_column_header(stripped: str) -> bool:
    """True for the ``#  size  count  type ...`` column header of a table (NCCL 1's ``#  bytes  N  type``)."""
    return stripped.startswith("#") and stripped[1:].split()[:3] in (["size", "count", "type"], _NCCL1_HEAD)


def _header_names(tokens: list[str]) -> tuple[list[str], Decimal]:
    """The header's column names as nccl-tests names them, and the unit of its time columns in seconds.

    NCCL 1's own tests (NVIDIA/nccl v1.3.4-1 ``test/single/*_test.cu``) print ``bytes N type op`` then
    ``time algbw busbw res`` per half, the time as ``elapsedSec * 1.0E3``: milliseconds, not nccl-tests'
    microseconds; ``res`` is the largest deviation, nccl-tests' old ``error``.
    """
    if tokens[:3] != _NCCL1_HEAD:
        return tokens, _MICRO
    names = {"bytes": "size", "N": "count", "res": "error"}
    return [names.get(t, t) for t in tokens], _MILLI


def looks_like_row(stripped: str) -> bool:
    """True for a line shaped like a result row (size, count, a known data type, at least six fields)."""
    tokens = stripped.split()
    return (
        len(tokens) >= 6
        and _COUNT.match(tokens[0]) is not None
        and _COUNT.match(tokens[1]) is not None
        and tokens[2] in DTYPE_BYTES
    )


@dataclass(frozen=True)
class Columns:
    """The columns of a table header: parameters, then one or two (time, algbw, busbw) groups."""

    params: tuple[str, ...]  # size, count, type[, redop][, root]
    groups: tuple[tuple[str, ...], ...]  # (time, algbw, busbw[, #wrong|error][, i_min ... i_cv%]) 1 or 2
    places: tuple[str, ...]  # "out_of_place" / "in_place" for each group
    timestamp: bool = False  # a last ``timestamp`` column (-S 1): two more fields on a full row
    time_unit: Decimal = _MICRO  # seconds per unit of the time columns (NCCL 1's tests: milliseconds)

    @property
    def names(self) -> tuple[str, ...]:
        return self.params + tuple(name for group in self.groups for name in group)

    @property
    def bytes_header(self) -> bool:
        """True for the ``bytes N type op ... res`` header in ms (NCCL 1's tests, nccl-tests 1.0)."""
        return self.time_unit == _MILLI

    @property
    def width(self) -> int:
        return len(self.names)


def parse_columns(lines: list[str], index: int, source: str | None) -> Columns:
    """The columns of the header at 0-based ``index`` (the line above tells a lone group's place).

    Raises
    ------
    ParseError
        If a column is unknown or repeated, or there are not one or two time/algbw/busbw groups.
    """
    tokens, time_unit = _header_names(lines[index].strip()[1:].split())
    lineno = index + 1
    params: list[str] = []
    k = 0
    while k < len(tokens) and tokens[k] in ("size", "count", "type", "redop", "op", "root"):
        params.append("redop" if tokens[k] == "op" else tokens[k])
        k += 1
    if len(set(params)) != len(params):
        raise ParseError("a column appears twice in the header", line=lineno, source=source)
    groups: list[tuple[str, ...]] = []
    stamped = tokens[-1:] == ["timestamp"] and len(tokens) > k + 1
    end = len(tokens) - stamped
    while k < end:
        if tokens[k] == "|":  # two runs pasted side by side for comparison (a published rccl-tests pair)
            raise ParseError(
                "two tables side by side ('|' between them): give each run's table on its own",
                line=lineno,
                source=source,
            )
        if "time" not in tokens[k]:
            raise ParseError(f"unknown column {tokens[k]!r} in the header", line=lineno, source=source)
        if tokens[k + 1 : k + 3] != ["algbw", "busbw"]:
            raise ParseError(
                f"column {tokens[k]!r} is not followed by algbw busbw", line=lineno, source=source
            )
        group = tokens[k : k + 3]
        k += 3
        if k < end and tokens[k] in ("#wrong", "error"):
            group.append(tokens[k])
            k += 1
            if tuple(tokens[k : k + len(_PER_ITERATION)]) == _PER_ITERATION:
                group.extend(_PER_ITERATION)
                k += len(_PER_ITERATION)
        groups.append(tuple(group))
    if not 1 <= len(groups) <= 2:
        raise ParseError(
            f"expected one or two 'time algbw busbw' groups in the header, found {len(groups)}",
            line=lineno,
            source=source,
        )
    above = lines[index - 1] if index > 0 else ""
    if len(groups) == 2:
        places: tuple[str, ...] = ("out_of_place", "in_place")
    else:
        places = ("in_place",) if "in-place" in above and "out-of-place" not in above else ("out_of_place",)
    return Columns(tuple(params), tuple(groups), places, stamped, time_unit)


def starts_new_run(stripped: str) -> bool:
    """True for a ``#`` line that opens the next run (``# nThread``, ``# Rank``, ``# Using devices`` ...)."""
    body = stripped.lstrip("#").strip()
    return body.startswith(("nThread", "Rank ", "Ranks ", "Using devices", "Collective test"))


def avg_busbw(stripped: str, index: int, source: str | None) -> float:
    """The ``# Avg bus bandwidth`` footer at 0-based ``index``, in bytes/s (GB/s x 1e9).

    Raises
    ------
    ParseError
        If the value is not a number; names the 1-based line.
    """
    match = AVG_LINE.match(stripped)
    value = match.group(1) if match else ""
    if not _FLOAT.match(value):
        raise ParseError(f"average bus bandwidth {value!r} is not a number", line=index + 1, source=source)
    return _scaled(value, _GIGA)


def _scaled(text: str, unit: Decimal) -> float:
    """``text`` x ``unit`` rounded once, so 473.60 GB/s gives exactly the float 473.6e9."""
    return float(Decimal(text) * unit)


def parse_row(stripped: str, lineno: int, columns: Columns, blank_redop: bool, source: str | None) -> PerfRow:
    """One result row at 1-based ``lineno``; ``blank_redop`` when the binary leaves the operation empty.

    A row with only the first group's fields under a two-group header is read with ``in_place=None``.

    Raises
    ------
    ParseError
        If the row has the wrong number of fields or a field of the wrong kind.
    """
    tokens: list[str | None] = list(_unstamped(stripped.split(), columns))
    half = columns.width - (len(columns.groups[1]) if len(columns.groups) == 2 else 0)
    if "redop" in columns.params and len(tokens) in (columns.width - 1, half - 1):
        at = columns.params.index("redop")
        # hypercube prints an empty operation, and so did the old layout's alltoall (no root column; the
        # field after the type is then the time)
        old_blank = "root" not in columns.params and tokens[at - 1] in DTYPE_BYTES
        if blank_redop or (old_blank and at < len(tokens) and _FLOAT.match(tokens[at] or "")):
            tokens.insert(at, None)
    if len(tokens) not in (columns.width, half):
        raise ParseError(
            f"row has {len(tokens)} fields, the header has {columns.width} columns",
            line=lineno,
            source=source,
        )
    fields = dict(zip(columns.params, tokens, strict=False))

    def fail(what: str) -> ParseError:
        return ParseError(what, line=lineno, source=source)

    size, count, dtype = fields["size"], fields["count"], fields["type"]
    if size is None or not _COUNT.match(size):
        raise fail(f"size {size!r} is not a byte count")
    if count is None or not _COUNT.match(count):
        raise fail(f"count {count!r} is not an element count")
    if dtype is None or not _NAME.match(dtype):
        raise fail(f"type {dtype!r} is not a data type name")
    redop = fields.get("redop")
    if redop is not None and not _NAME.match(redop):
        raise fail(f"redop {redop!r} is not an operation name")
    root_text = fields.get("root")
    if root_text is not None and not _ROOT.match(root_text):
        raise fail(f"root {root_text!r} is not a rank")

    results: dict[str, PerfResult] = {}
    position = len(columns.params)
    for group, place in zip(columns.groups, columns.places, strict=True):
        if position == len(tokens):  # the out-of-place group alone: no in-place half printed
            break
        values = tokens[position : position + len(group)]
        position += len(group)
        results[place] = _parse_result(group, values, fail, columns.time_unit)
    return PerfRow(
        size_bytes=int(size),
        count=int(count),
        dtype=dtype,
        redop=redop,
        root=int(root_text) if root_text is not None else None,
        out_of_place=results.get("out_of_place"),
        in_place=results.get("in_place"),
        line=lineno,
    )


def _unstamped(tokens: list[str], columns: Columns) -> list[str]:
    """``tokens`` without the date and time a ``timestamp`` column (-S 1) ends a full row with."""
    tail = tokens[-2:]
    if columns.timestamp and len(tail) == 2 and all(p.match(t) for p, t in zip(_STAMP, tail, strict=True)):
        return tokens[:-2]
    return tokens


def _parse_result(
    group: tuple[str, ...],
    values: list[str | None],
    fail: Callable[[str], ParseError],
    time_unit: Decimal = _MICRO,
) -> PerfResult:
    time_text, algbw_text, busbw_text = values[0] or "", values[1] or "", values[2] or ""
    time_match = _TIME.match(time_text)
    if not time_match or bool(time_match.group(1)) != bool(time_match.group(3)):
        raise fail(f"time {time_text!r} is not a number of microseconds")
    time_us = float(time_match.group(2))
    if time_us < 0:
        raise fail(f"negative time {time_text!r}")
    for name, text in (("algbw", algbw_text), ("busbw", busbw_text)):
        # the time is the source, but a corrupt field (inf, nan, 1e309 overflowing) is a corrupt row
        if not _FLOAT.match(text) or text.startswith("-") or not math.isfinite(float(text)):
            raise fail(f"{name} {text!r} is not a finite bandwidth in GB/s")
    if time_us == 0 and float(algbw_text) > 0:  # nccl-tests: algbw = size / time, so no bytes in 0 us
        raise fail(f"time {time_text!r} us with algbw {algbw_text} GB/s: data moved in no time")
    wrong: int | None = None
    error: float | None = None
    for name, cell in zip(group[4:], values[4:], strict=True):  # -I 1: microseconds and i_cv% (percent)
        if not _FLOAT.match(cell or "") or not math.isfinite(float(cell or "")):
            raise fail(f"{name} {cell!r} is not a number")
    if len(group) >= 4:
        check = (values[3] or "").rstrip("*")  # old nccl-tests mark failed checks with a star
        if check.upper() != "N/A":
            if not _FLOAT.match(check):
                raise fail(f"{group[3]} {values[3]!r} is not a number or N/A")
            if group[3] == "error":
                error = float(check)
            else:
                number = float(check)
                if not math.isfinite(number) or number < 0 or number != math.floor(number) or number > 2**63:
                    raise fail(f"#wrong {values[3]!r} is not a count")
                wrong = int(number)
    return PerfResult(
        time_s=_scaled(time_match.group(2), time_unit),
        algbw_bytes_per_s=_scaled(algbw_text, _GIGA),
        busbw_bytes_per_s=_scaled(busbw_text, _GIGA),
        wrong=wrong,
        error=error,
        time_reconstructed=bool(time_match.group(1)),
    )
