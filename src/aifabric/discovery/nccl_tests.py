"""Read the result tables printed by nccl-tests (``all_reduce_perf``, ``all_gather_perf``, ...).

One run of a ``*_perf`` binary prints (NCCL's nccl-tests, ``src/common.cu``; columns in
``doc/PERFORMANCE.md``)::

    # nThread 1 nGpus 8 minBytes 134217728 maxBytes 4294967296 step: 2(factor) warmup iters: 5 iters: 20 ...
    #
    # Using devices
    #  Rank  0 Group  0 Pid 295203 on host-a device  0 [0x18] NVIDIA H100 80GB HBM3
    ...
    NCCL version 2.26.2+cuda12.8
    #
    #                                                              out-of-place                       in-place
    #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
    #        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
      4294967296    1073741824     float     sum      -1    15870  270.63  473.60      0    15773  272.30  476.53      0
    # Out of bounds values : 0 OK
    # Avg bus bandwidth    : 439.369

Older nccl-tests builds (those run with NCCL 2.4 and 2.8 in case 13) print ``size count type redop time algbw
busbw error`` twice, without ``root``, where ``error`` is the largest relative error rather than a count of
wrong elements. ``hypercube_perf`` leaves ``redop`` blank. Times are microseconds and bandwidths GB/s (1e9
B/s); this module converts them once, to seconds and bytes/s.

:func:`parse_nccl_tests` finds every table in a text (several runs, case-file commentary, ``=== title ===``
lines, interleaved ``NCCL INFO`` lines) and attaches to each the metadata printed before it: the
collective, the number of ranks and of hosts, the GPU model and the NCCL version. Where the log does not
print them, they are taken, in this order, from the launcher command (``mpirun -np 16 -H a:8,b:8``), from
the title and commentary just above the table ("2 of the 8 nodes (16 ranks)"), and finally from the
numbers themselves (see :class:`PerfTable`).
"""  # noqa: E501  (verbatim nccl-tests output in the example)

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal

from aifabric.discovery._text import decode, split_lines
from aifabric.errors import ParseError

__all__ = [
    "COLLECTIVES",
    "PerfResult",
    "PerfRow",
    "PerfTable",
    "RankInfo",
    "RunParameters",
    "parse_nccl_tests",
]

#: Collectives of nccl-tests, named as their binaries without ``_perf``.
COLLECTIVES: frozenset[str] = frozenset(
    {
        "all_reduce",
        "all_gather",
        "reduce_scatter",
        "alltoall",
        "broadcast",
        "reduce",
        "sendrecv",
        "hypercube",
        "gather",
        "scatter",
    }
)

_REDUCING = frozenset({"all_reduce", "reduce_scatter", "reduce", "sendrecv"})  # print an operation name
_ROOTED = frozenset({"reduce", "broadcast", "gather", "scatter"})  # print a root >= 0
# Collectives whose size column is n x count x typesize (the gathered or scattered whole).
_SIZE_IS_N_COUNTS = frozenset({"all_gather", "reduce_scatter", "alltoall", "gather", "scatter", "hypercube"})

_DTYPE_BYTES = {
    "int8": 1,
    "uint8": 1,
    "char": 1,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
    "f8e4m3": 1,
    "f8e5m2": 1,
    "half": 2,
    "float16": 2,
    "bfloat16": 2,
    "int32": 4,
    "uint32": 4,
    "int": 4,
    "float": 4,
    "float32": 4,
    "int64": 8,
    "uint64": 8,
    "double": 8,
    "float64": 8,
}

_NUMBER = r"[-+]?(?:\d{1,30}(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d{1,3})?"
_FLOAT = re.compile(rf"^{_NUMBER}$")
_BANDWIDTH = re.compile(rf"^(?:{_NUMBER}|-?inf|-?nan)$", re.IGNORECASE)
_TIME = re.compile(rf"^(\()?({_NUMBER})(\))?$")
_COUNT = re.compile(r"^\d{1,20}$")
_ROOT = re.compile(r"^-?\d{1,9}$")
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,31}$")
_BINARY = re.compile(r"(?<![\w-])([A-Za-z][A-Za-z0-9_]*?)_perf(?:_mpi)?(?![\w-])")
_PREFIX = re.compile(r"^(?:\[\d+,\d+\]<std(?:out|err)>:|\s*\d+: )")  # mpirun --tag-output, srun -l
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_RANK = re.compile(
    r"^#\s*Rank\s+(\d{1,9})\s+(?:Group\s+(\d{1,9})\s+)?Pid\s+(\d{1,12})\s+on\s+(\S+)\s+"
    r"device\s+(\d{1,9})\s+\[([^\]]*)\]\s*(.*)$"  # the name: not (.*?)\s*$, quadratic on long blank runs
)
_RANKS_LINE = re.compile(r"^#\s*Ranks\s+\d{1,9}\s*-\s*\d{1,9}\s+on\s+\S")
_RANKS_SEGMENT = re.compile(r"[Rr]anks\s+(\d{1,9})\s*-\s*(\d{1,9})\s+on\s+([^\s,;]+)([^;]*)")
_VERSION = re.compile(r"NCCL version\s+(\d{1,4}(?:\.\d{1,6}){1,3})(?:\+cuda(\d{1,4}(?:\.\d{1,4})*))?")
_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(\S*)")
_OUT_OF_BOUNDS = re.compile(r"^#\s*Out of bounds values\s*:\s*(\d{1,20})")
_LAUNCHER = re.compile(r"(?<![\w-])(mpirun|mpiexec|srun|orterun)(?![\w-])")
#: Most ranks the rank lines above one table may describe (131,072: above the largest single jobs reported,
#: about 100,000 GPUs). A condensed line ``Ranks 0-N on h`` expands to N objects, so this bounds the cost.
_MAX_RANKS = 1 << 17
_GIGA = Decimal(10) ** 9  # GB/s -> bytes/s (nccl-tests: 1 GB = 1e9 B)
_MICRO = Decimal(10) ** -6  # us -> s


# -- data objects --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunParameters:
    """The ``# nThread ... nGpus ... minBytes ...`` line: how nccl-tests was invoked.

    Every field is None when the line does not give it.

    Attributes
    ----------
    n_threads, n_gpus : int or None
        Threads per process (``-t``) and GPUs per thread (``-g``); ranks = processes x threads x GPUs.
    min_bytes, max_bytes : int or None
        Size range swept, bytes.
    step_factor, step_bytes : int or None
        Multiplicative (``-f``) or additive (``-i``) step between sizes.
    warmup_iters, iters, agg_iters : int or None
        Iterations before timing, timed iterations, operations aggregated per iteration.
    validation : bool or None
        Whether results were checked (``-c``).
    graph_launches : int or None
        CUDA graph launches per iteration (``-G``), 0 when graphs are not used.
    """

    n_threads: int | None = None
    n_gpus: int | None = None
    min_bytes: int | None = None
    max_bytes: int | None = None
    step_factor: int | None = None
    step_bytes: int | None = None
    warmup_iters: int | None = None
    iters: int | None = None
    agg_iters: int | None = None
    validation: bool | None = None
    graph_launches: int | None = None


@dataclass(frozen=True)
class RankInfo:
    """Where one rank ran, from a ``#  Rank  3 Group  0 Pid 1234 on host device  3 [0x19] NVIDIA H100`` line.

    The condensed form ``#  Ranks 0-7 on host devices 0-7 [bus ids]`` gives no GPU name or pid.
    """

    rank: int
    host: str
    device: int | None
    bus_id: str | None
    gpu_name: str | None
    pid: int | None = None
    group: int | None = None


@dataclass(frozen=True)
class PerfResult:
    """One half (out-of-place or in-place) of a result row.

    Attributes
    ----------
    time_s : float
        Average time of one operation, seconds (printed in us).
    algbw_bytes_per_s : float
        Algorithm bandwidth, size / time, bytes/s (printed in GB/s = 1e9 B/s).
    busbw_bytes_per_s : float
        Bus bandwidth, algbw x the collective's factor, bytes/s (printed in GB/s).
    wrong : int or None
        ``#wrong`` column: elements that failed validation (None for ``N/A`` or the old layout).
    error : float or None
        ``error`` column of the old layout: largest relative error (None in the new layout).
    time_reconstructed : bool
        True when the time was printed in parentheses, e.g. ``(413.7)``: not measured but reconstructed
        by whoever published the log.
    """

    time_s: float
    algbw_bytes_per_s: float
    busbw_bytes_per_s: float
    wrong: int | None = None
    error: float | None = None
    time_reconstructed: bool = False


@dataclass(frozen=True)
class PerfRow:
    """One message size of a table.

    Attributes
    ----------
    size_bytes : int
        The ``size`` column: bytes of the larger of the send and receive buffers (the whole gathered
        output for all_gather, a rank's whole send buffer for alltoall).
    count : int
        Elements passed to the NCCL call.
    dtype : str
        Element type as printed (``float``, ``bfloat16``, ...).
    redop : str or None
        Reduction as printed (``sum``, ``none``...); None without the column or when blank (hypercube).
    root : int or None
        Root rank, -1 for collectives without one; None in the old layout.
    out_of_place, in_place : PerfResult or None
        The two measurements (None where the table lacks that half).
    line : int
        1-based line of the row in the input.
    """

    size_bytes: int
    count: int
    dtype: str
    redop: str | None
    root: int | None
    out_of_place: PerfResult | None
    in_place: PerfResult | None
    line: int


@dataclass(frozen=True)
class PerfTable:
    """One nccl-tests result table and what the log says about its run.

    Build it with :func:`parse_nccl_tests` (every table of a text) or :meth:`from_text` (exactly one).

    Attributes
    ----------
    title : str or None
        Text of the nearest ``=== ... ===`` line above the table (case files), without the ``=``.
    collective : str or None
        One of :data:`COLLECTIVES`, or None if it cannot be told. Taken from the caller's
        ``collective=``; else the nearest ``<name>_perf`` above the table and after the previous one (the
        command line, ``# Collective test starting`` line or title); else the columns (an operation
        with root -1 and a bus/alg bandwidth ratio above 1 is all_reduce; with size = n x count x
        typesize, reduce_scatter; with a root, reduce; no operation with a root, broadcast); else the
        nearest ``<name>_perf`` anywhere above, if the columns fit it.
    n_ranks : int or None
        Ranks in the communicator: from ``# Rank`` lines; else ``Ranks a-b`` lines; else the launcher
        (``-np`` x threads x GPUs); else "(N ranks)" in the text above; else the numbers (size =
        n x count x typesize for gathering collectives; busbw/algbw = 2(n-1)/n for all_reduce when the
        printed precision pins n to one integer).
    n_nodes : int or None
        Hosts: distinct host names of the rank lines; else the launcher's host list (``-H``, ``-N``);
        else "N nodes", "N of the M nodes" or ``<node-1>..<node-8>`` in the title and text above.
    gpu_name : str or None
        GPU model from the rank lines when they all agree.
    nccl_version, cuda_version : str or None
        From the ``NCCL version 2.26.2+cuda12.8`` line above the table.
    rows : tuple of PerfRow
        The rows in order; empty for a fragment that kept only its ``# Avg bus bandwidth`` footer.
    ranks : tuple of RankInfo
        Per-rank placement printed above the table.
    parameters : RunParameters or None
        The ``# nThread ...`` line above the table.
    avg_busbw_bytes_per_s : float or None
        ``# Avg bus bandwidth`` footer, bytes/s: the mean busbw over all rows (not a peak).
    out_of_bounds : int or None
        ``# Out of bounds values`` footer.
    columns : tuple of str
        Column names of the header (``size``, ``count``, ..., ``#wrong``); empty for a fragment.
    line : int
        1-based line of the column header (of the footer for a fragment).
    source : str or None
        File name or description of the input.

    References
    ----------
    .. [1] NVIDIA, nccl-tests, ``doc/PERFORMANCE.md`` (algbw, busbw and their factors) and
       ``src/common.cu`` (the output format), https://github.com/NVIDIA/nccl-tests
    """

    title: str | None
    collective: str | None
    n_ranks: int | None
    n_nodes: int | None
    gpu_name: str | None
    nccl_version: str | None
    cuda_version: str | None
    rows: tuple[PerfRow, ...]
    ranks: tuple[RankInfo, ...]
    parameters: RunParameters | None
    avg_busbw_bytes_per_s: float | None
    out_of_bounds: int | None
    columns: tuple[str, ...]
    line: int
    source: str | None = None

    @classmethod
    def from_text(
        cls, text: str | bytes, source: str | None = None, *, collective: str | None = None
    ) -> PerfTable:
        """Parse a text that holds exactly one nccl-tests table (see :func:`parse_nccl_tests`).

        Parameters
        ----------
        text : str or bytes
            nccl-tests output of one run, possibly inside commentary.
        source : str, optional
            File name or description, used in error messages.
        collective : str, optional
            The collective, for logs that do not say.

        Returns
        -------
        PerfTable

        Raises
        ------
        ParseError
            If the text holds no table or several, or :func:`parse_nccl_tests` fails.
        ValueError
            If ``collective`` is not a name of :data:`COLLECTIVES`.
        """
        tables = parse_nccl_tests(text, source, collective=collective)
        if len(tables) != 1:
            raise ParseError(
                f"expected one nccl-tests table, found {len(tables)} (use parse_nccl_tests)",
                line=tables[1].line,
                source=source,
            )
        return tables[0]

    @property
    def is_old_layout(self) -> bool:
        """True for the layout without ``root`` and ``#wrong`` (an ``error`` column instead)."""
        return "error" in self.columns

    def row(self, size_bytes: int, dtype: str | None = None) -> PerfRow:
        """The first row of ``size_bytes`` (and ``dtype`` if given).

        Raises
        ------
        KeyError
            If the table has no such row.
        """
        for row in self.rows:
            if row.size_bytes == size_bytes and (dtype is None or row.dtype == dtype):
                return row
        raise KeyError(f"no row of {size_bytes} bytes" + (f" and type {dtype}" if dtype else ""))


# -- the front door ------------------------------------------------------------------------------------------


def parse_nccl_tests(
    text: str | bytes, source: str | None = None, *, collective: str | None = None
) -> list[PerfTable]:
    """Parse every nccl-tests result table in ``text``.

    A table starts at a ``#  size  count  type ...`` header and runs over its rows (blank, ``#`` and
    ``NCCL INFO``/``NCCL WARN`` lines in between are skipped) to the ``# Avg bus bandwidth`` footer or the
    first line that is not part of it. A footer without a table (a log whose rows were cut by its
    publisher) gives a table with no rows. Metadata is read from the lines between the previous table and
    this one; see :class:`PerfTable` for where each field comes from.

    Parameters
    ----------
    text : str or bytes
        nccl-tests output, possibly several runs inside commentary. Bytes are decoded as UTF-8.
    source : str, optional
        File name or description, used in error messages and kept on each table.
    collective : str, optional
        The collective of every table (``all_reduce``, ``allreduce``, ``all_gather_perf`` ...), for logs
        that do not say; it overrides what the text says.

    Returns
    -------
    list of PerfTable
        In the order of the text.

    Raises
    ------
    ParseError
        If the text holds no table, a row has too few or too many fields or a field of the wrong kind,
        a header has unknown columns or no rows, a result row stands outside any table, the nearest
        ``<name>_perf`` is not an nccl-tests binary (``foo_perf``) or contradicts the columns, or the bytes
        are not UTF-8. The error names the 1-based line.
    ValueError
        If ``collective`` is not a name of :data:`COLLECTIVES`.

    References
    ----------
    .. [1] NVIDIA, nccl-tests ``doc/PERFORMANCE.md`` and ``src/common.cu``,
       https://github.com/NVIDIA/nccl-tests

    Examples
    --------
    The 4 GB row of a DGX H100 AllReduce (NVIDIA/nccl-tests issue 290):

    >>> log = '''# nThread 1 nGpus 8 minBytes 4294967296 maxBytes 4294967296 step: 2(factor)
    ... #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
    ...   4294967296    1073741824     float     sum      -1    15870  270.63  473.60      0    15773  272.30  476.53      0
    ... # Avg bus bandwidth    : 475.065'''
    >>> table = parse_nccl_tests(log, collective="all_reduce")[0]
    >>> row = table.row(4294967296)
    >>> row.out_of_place.time_s, row.out_of_place.busbw_bytes_per_s / 1e9  # s, GB/s
    (0.01587, 473.6)
    >>> table.n_ranks  # from busbw / algbw = 2 (n - 1) / n
    8
    """  # noqa: E501  (verbatim nccl-tests rows in the doctest)
    override = _canonical_argument(collective) if collective is not None else None
    lines = [_clean(raw) for raw in split_lines(decode(text, source), source)]
    tables: list[PerfTable] = []
    boundary = 0  # first line after the previous table: metadata above a table is read from here on
    earlier: str | None = None  # the last binary named above ``boundary``
    index = 0
    while index < len(lines):
        stripped = lines[index].strip()
        if _is_column_header(stripped):
            named = None if override else _nearest_binary(lines, boundary, index, source)
            table, end = _read_table(
                lines, boundary, index, override=override, named=named, earlier=earlier, source=source
            )
            tables.append(table)
            earlier = named or earlier
            boundary = index = end
            continue
        if _AVG.match(stripped):
            named = None if override else _nearest_binary(lines, boundary, index, source)
            tables.append(_fragment(lines, boundary, index, override or named or earlier, source))
            earlier = named or earlier
            boundary = index + 1
        elif _looks_like_row(stripped):
            raise ParseError(
                "a result row outside any table (is its '#  size  count  type' header missing?)",
                line=index + 1,
                source=source,
            )
        index += 1
    if not tables:
        raise ParseError(
            "no nccl-tests result table found (expected a '#  size  count  type ...' header)", source=source
        )
    return tables


# -- lines ---------------------------------------------------------------------------------------------------


def _clean(raw: str) -> str:
    return _PREFIX.sub("", _ANSI.sub("", raw.rstrip("\r")), count=1)


def _is_column_header(stripped: str) -> bool:
    return stripped.startswith("#") and stripped[1:].split()[:3] == ["size", "count", "type"]


def _looks_like_row(stripped: str) -> bool:
    tokens = stripped.split()
    return (
        len(tokens) >= 6
        and _COUNT.match(tokens[0]) is not None
        and _COUNT.match(tokens[1]) is not None
        and tokens[2] in _DTYPE_BYTES
    )


# -- one table -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Columns:
    params: tuple[str, ...]  # size, count, type[, redop][, root]
    groups: tuple[tuple[str, ...], ...]  # (time, algbw, busbw[, #wrong|error]) once or twice
    places: tuple[str, ...]  # "out_of_place" / "in_place" for each group

    @property
    def names(self) -> tuple[str, ...]:
        return self.params + tuple(name for group in self.groups for name in group)

    @property
    def width(self) -> int:
        return len(self.names)


def _parse_columns(lines: list[str], index: int, source: str | None) -> _Columns:
    tokens = lines[index].strip()[1:].split()
    lineno = index + 1
    params: list[str] = []
    k = 0
    while k < len(tokens) and tokens[k] in ("size", "count", "type", "redop", "op", "root"):
        params.append("redop" if tokens[k] == "op" else tokens[k])
        k += 1
    if len(set(params)) != len(params):
        raise ParseError("a column appears twice in the header", line=lineno, source=source)
    groups: list[tuple[str, ...]] = []
    while k < len(tokens):
        if "time" not in tokens[k]:
            raise ParseError(f"unknown column {tokens[k]!r} in the header", line=lineno, source=source)
        if tokens[k + 1 : k + 3] != ["algbw", "busbw"]:
            raise ParseError(
                f"column {tokens[k]!r} is not followed by algbw busbw", line=lineno, source=source
            )
        group = tokens[k : k + 3]
        k += 3
        if k < len(tokens) and tokens[k] in ("#wrong", "error"):
            group.append(tokens[k])
            k += 1
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
    return _Columns(tuple(params), tuple(groups), places)


def _read_table(
    lines: list[str],
    boundary: int,
    header: int,
    *,
    override: str | None,
    named: str | None,
    earlier: str | None,
    source: str | None,
) -> tuple[PerfTable, int]:
    """Parse the table whose header is at ``header``; return it and the index of the first line after it.

    ``override`` is the caller's collective, ``named`` the binary named between ``boundary`` and the
    header, ``earlier`` the last one named above ``boundary``.
    """
    columns = _parse_columns(lines, header, source)
    meta = _Metadata.read(lines, boundary, header, source)
    rows: list[PerfRow] = []
    avg: float | None = None
    out_of_bounds: int | None = None
    index = header + 1
    while index < len(lines):
        stripped = lines[index].strip()
        if not stripped or "NCCL INFO" in stripped or "NCCL WARN" in stripped:
            index += 1
            continue
        if stripped.startswith("#"):
            if _AVG.match(stripped):
                avg = _avg(stripped, index, source)
                index += 1
                break
            match = _OUT_OF_BOUNDS.match(stripped)
            if match:
                out_of_bounds = int(match.group(1))
            elif _is_column_header(stripped) or _starts_new_run(stripped):
                break
            index += 1
            continue
        if not stripped[0].isdigit():
            break
        rows.append(_parse_row(stripped, index + 1, columns, (override or named) == "hypercube", source))
        index += 1
    if not rows:
        raise ParseError("the column header has no result rows below it", line=header + 1, source=source)

    collective = override or _resolve_collective(header, named, earlier, rows, columns, meta, source)
    n_ranks = meta.n_ranks if meta.n_ranks is not None else _ranks_from_rows(collective, rows)
    table = PerfTable(
        title=meta.title,
        collective=collective,
        n_ranks=n_ranks,
        n_nodes=meta.n_nodes,
        gpu_name=meta.gpu_name,
        nccl_version=meta.nccl_version,
        cuda_version=meta.cuda_version,
        rows=tuple(rows),
        ranks=meta.ranks,
        parameters=meta.parameters,
        avg_busbw_bytes_per_s=avg,
        out_of_bounds=out_of_bounds,
        columns=columns.names,
        line=header + 1,
        source=source,
    )
    return table, index


def _fragment(
    lines: list[str], boundary: int, footer: int, collective: str | None, source: str | None
) -> PerfTable:
    """A table whose rows were cut: only the ``# Avg bus bandwidth`` footer and the lines above remain."""
    meta = _Metadata.read(lines, boundary, footer, source)
    out_of_bounds = None
    for line in lines[boundary:footer]:
        match = _OUT_OF_BOUNDS.match(line.strip())
        if match:
            out_of_bounds = int(match.group(1))
    return PerfTable(
        title=meta.title,
        collective=collective,
        n_ranks=meta.n_ranks,
        n_nodes=meta.n_nodes,
        gpu_name=meta.gpu_name,
        nccl_version=meta.nccl_version,
        cuda_version=meta.cuda_version,
        rows=(),
        ranks=meta.ranks,
        parameters=meta.parameters,
        avg_busbw_bytes_per_s=_avg(lines[footer].strip(), footer, source),
        out_of_bounds=out_of_bounds,
        columns=(),
        line=footer + 1,
        source=source,
    )


def _starts_new_run(stripped: str) -> bool:
    body = stripped.lstrip("#").strip()
    return body.startswith(("nThread", "Rank ", "Ranks ", "Using devices", "Collective test"))


def _avg(stripped: str, index: int, source: str | None) -> float:
    match = _AVG.match(stripped)
    value = match.group(1) if match else ""
    if not _FLOAT.match(value):
        raise ParseError(f"average bus bandwidth {value!r} is not a number", line=index + 1, source=source)
    return _scaled(value, _GIGA)


def _scaled(text: str, unit: Decimal) -> float:
    """``text`` x ``unit`` rounded once, so 473.60 GB/s gives exactly the float 473.6e9."""
    return float(Decimal(text) * unit)


# -- one row -------------------------------------------------------------------------------------------------


def _parse_row(
    stripped: str, lineno: int, columns: _Columns, blank_redop: bool, source: str | None
) -> PerfRow:
    tokens: list[str | None] = list(stripped.split())
    if blank_redop and "redop" in columns.params and len(tokens) == columns.width - 1:
        tokens.insert(columns.params.index("redop"), None)  # hypercube prints an empty operation
    if len(tokens) != columns.width:
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
        values = tokens[position : position + len(group)]
        position += len(group)
        results[place] = _parse_result(group, values, fail)
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


def _parse_result(
    group: tuple[str, ...], values: list[str | None], fail: Callable[[str], ParseError]
) -> PerfResult:
    time_text, algbw_text, busbw_text = values[0] or "", values[1] or "", values[2] or ""
    time_match = _TIME.match(time_text)
    if not time_match or bool(time_match.group(1)) != bool(time_match.group(3)):
        raise fail(f"time {time_text!r} is not a number of microseconds")
    time_us = float(time_match.group(2))
    if time_us < 0:
        raise fail(f"negative time {time_text!r}")
    for name, text in (("algbw", algbw_text), ("busbw", busbw_text)):
        if not _BANDWIDTH.match(text) or text.startswith("-"):
            raise fail(f"{name} {text!r} is not a bandwidth in GB/s")
    wrong: int | None = None
    error: float | None = None
    if len(group) == 4:
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
        time_s=_scaled(time_match.group(2), _MICRO),
        algbw_bytes_per_s=_scaled(algbw_text, _GIGA),
        busbw_bytes_per_s=_scaled(busbw_text, _GIGA),
        wrong=wrong,
        error=error,
        time_reconstructed=bool(time_match.group(1)),
    )


# -- metadata above a table ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Metadata:
    title: str | None
    ranks: tuple[RankInfo, ...]
    n_ranks: int | None
    n_nodes: int | None
    gpu_name: str | None
    nccl_version: str | None
    cuda_version: str | None
    parameters: RunParameters | None

    @classmethod
    def read(cls, lines: list[str], boundary: int, stop: int, source: str | None) -> _Metadata:
        title, title_start = _title(lines, boundary, stop)
        region = lines[boundary:stop]
        local_text = " ".join(line.strip() for line in lines[title_start:stop])
        ranks = _rank_lines(region, boundary, source)
        parameters = _run_parameters(region)
        command = _launcher_command(region)
        gpus_per_process = (parameters.n_gpus if parameters else None) or _flag(command, "-g") or 1
        threads = (parameters.n_threads if parameters else None) or _flag(command, "-t") or 1
        hosts = {rank.host for rank in ranks}
        n_ranks = len({rank.rank for rank in ranks}) or None
        n_nodes = len(hosts) or None
        if n_nodes is None:
            n_nodes = _launcher_nodes(command) or _text_nodes(local_text)
        if n_ranks is None:
            processes = _launcher_processes(command)
            if processes is not None:
                n_ranks = processes * threads * gpus_per_process
        if n_ranks is None:
            n_ranks = _text_ranks(local_text, n_nodes)
        names = {rank.gpu_name for rank in ranks}
        version = None
        for line in region:
            match = _VERSION.search(line)
            if match:
                version = match
        return cls(
            title=title,
            ranks=ranks,
            n_ranks=n_ranks,
            n_nodes=n_nodes,
            gpu_name=names.pop() if len(names) == 1 else None,
            nccl_version=version.group(1) if version else None,
            cuda_version=version.group(2) if version else None,
            parameters=parameters,
        )


def _title(lines: list[str], boundary: int, stop: int) -> tuple[str | None, int]:
    """The last ``=== ... ===`` title (possibly over several lines) in ``[boundary, stop)`` and its start."""
    title: str | None = None
    start = boundary
    index = boundary
    while index < stop:
        stripped = lines[index].strip()
        if stripped.startswith("==="):
            parts, end = [stripped], index
            closed = len(stripped) > 3 and stripped.endswith("===")
            while not closed and end + 1 < stop and end - index < 3:  # a title wrapped over a few lines
                end += 1
                parts.append(lines[end].strip())
                closed = parts[-1].endswith("===")
            if not closed:
                parts, end = [stripped], index
            title = " ".join(parts).strip("= ") or None
            start, index = index, end
        index += 1
    return title, start


def _rank_lines(region: list[str], offset: int, source: str | None) -> tuple[RankInfo, ...]:
    ranks: dict[int, RankInfo] = {}
    expanded = 0  # RankInfo objects made from condensed lines, repeats included
    for i, line in enumerate(region):
        stripped = line.strip()
        match = _RANK.match(stripped)
        if match:
            rank = int(match.group(1))
            ranks.setdefault(
                rank,
                RankInfo(
                    rank=rank,
                    host=match.group(4),
                    device=int(match.group(5)),
                    bus_id=match.group(6).strip() or None,
                    gpu_name=match.group(7).rstrip() or None,
                    pid=int(match.group(3)),
                    group=int(match.group(2)) if match.group(2) is not None else None,
                ),
            )
        elif _RANKS_LINE.match(stripped):
            infos = _condensed_ranks(stripped, offset + i + 1, source, _MAX_RANKS - expanded)
            expanded += len(infos)
            for info in infos:
                ranks.setdefault(info.rank, info)
    return tuple(ranks[rank] for rank in sorted(ranks))


def _condensed_ranks(stripped: str, lineno: int, source: str | None, limit: int) -> list[RankInfo]:
    """``#  Ranks 0-7 on host-a devices 0-7 [bus ids]; ranks 8-15 on host-b, same``; at most ``limit``."""
    infos: list[RankInfo] = []
    devices: tuple[int, int] | None = None
    bus_ids: list[str] = []
    for match in _RANKS_SEGMENT.finditer(stripped):
        first, last, host, rest = int(match.group(1)), int(match.group(2)), match.group(3), match.group(4)
        if last < first or last - first >= _MAX_RANKS:
            raise ParseError(f"rank range {first}-{last} is not plausible", line=lineno, source=source)
        device_match = re.search(r"devices\s+(\d{1,9})\s*-\s*(\d{1,9})", rest)
        if device_match:
            devices = (int(device_match.group(1)), int(device_match.group(2)))
            bus_ids = re.findall(r"\[([^\]]+)\]", rest)
        elif not re.search(r"\bsame\b", rest):
            devices, bus_ids = None, []
        if len(infos) + last - first >= limit:
            raise ParseError(
                f"rank lines above this table list more than {_MAX_RANKS:,} ranks", line=lineno, source=source
            )
        for k, rank in enumerate(range(first, last + 1)):
            device = devices[0] + k if devices and devices[0] + k <= devices[1] else None
            infos.append(
                RankInfo(
                    rank=rank,
                    host=host,
                    device=device,
                    bus_id=bus_ids[k] if k < len(bus_ids) else None,
                    gpu_name=None,
                )
            )
    return infos


def _run_parameters(region: list[str]) -> RunParameters | None:
    found: RunParameters | None = None
    for line in region:
        stripped = line.strip()
        head = re.match(
            r"#\s*nThread\s+(\d{1,9})\s+nGpus\s+(\d{1,9})(?:\s+minBytes\s+(\d{1,20})\s+maxBytes\s+(\d{1,20}))?",
            stripped,
        )
        if not head:
            continue

        def number(pattern: str, text: str = stripped) -> int | None:
            match = re.search(pattern, text)
            return int(match.group(1)) if match else None

        step = re.search(r"step:\s*(\d{1,20})\((factor|bytes)\)", stripped)
        validation = number(r"validation:\s*(\d{1,9})")
        found = RunParameters(
            n_threads=int(head.group(1)),
            n_gpus=int(head.group(2)),
            min_bytes=int(head.group(3)) if head.group(3) else None,
            max_bytes=int(head.group(4)) if head.group(4) else None,
            step_factor=int(step.group(1)) if step and step.group(2) == "factor" else None,
            step_bytes=int(step.group(1)) if step and step.group(2) == "bytes" else None,
            warmup_iters=number(r"warmup iters:\s*(\d{1,9})"),
            iters=number(r"(?<!warmup )(?<!agg )\biters:\s*(\d{1,9})"),
            agg_iters=number(r"agg iters:\s*(\d{1,9})"),
            validation=None if validation is None else validation != 0,
            graph_launches=number(r"graph:\s*(\d{1,9})"),
        )
    return found


def _launcher_command(region: list[str]) -> str:
    """The last ``mpirun``/``srun`` command in the region, with ``\\`` continuations joined."""
    joined: list[str] = []
    pending = ""
    for line in region:
        stripped = line.strip()
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        joined.append(pending + stripped)
        pending = ""
    if pending:
        joined.append(pending)
    commands = [line for line in joined if _LAUNCHER.search(line) and not line.startswith("#")]
    return commands[-1] if commands else ""


def _flag(command: str, flag: str) -> int | None:
    """Value of an nccl-tests flag (``-g 8``), looked up after the ``*_perf`` binary only."""
    binary = _BINARY.search(command)
    if not binary:
        return None
    match = re.search(rf"(?<!\S){flag}\s*(\d{{1,6}})(?!\S)", command[binary.end() :])
    return int(match.group(1)) if match and int(match.group(1)) > 0 else None


def _launcher_options(command: str) -> str:
    """The launcher's part of a command: what comes before the ``*_perf`` binary."""
    binary = _BINARY.search(command)
    return command[: binary.start()] if binary else command


def _launcher_processes(command: str) -> int | None:
    """Processes started: ``-np``/``-n``/``--ntasks``, or srun's ``-N`` x ``--ntasks-per-node``."""
    head = _launcher_options(command)
    match = re.search(r"(?<!\S)(?:-np|--np|-n|--ntasks)[\s=](\d{1,7})(?!\S)", head)
    if match:
        return int(match.group(1)) or None
    nodes = re.search(r"(?<!\S)(?:-N|--nodes)[\s=]?(\d{1,6})(?!\S)", head)
    per_node = re.search(r"--ntasks-per-node[\s=](\d{1,6})(?!\S)", head)
    if "srun" in head and nodes and per_node:
        return int(nodes.group(1)) * int(per_node.group(1)) or None
    return None


def _launcher_nodes(command: str) -> int | None:
    """Hosts named by mpirun's ``-H a:8,b:8`` or srun's ``-N 2`` (mpirun's ``-N`` is per-node ranks)."""
    head = _launcher_options(command)
    match = re.search(r"(?<!\S)(?:-H|--host|-host)[\s=](\S+)", head)
    if match:
        hosts = {re.sub(r":\d+$", "", host) for host in match.group(1).split(",") if host}
        return len(hosts) or None
    nodes = re.search(r"(?<!\S)(?:-N|--nodes)[\s=]?(\d{1,6})(?!\S)", head)
    if "srun" in head and nodes:
        return int(nodes.group(1)) or None
    return None


def _text_nodes(text: str) -> int | None:
    for pattern in (
        r"\b(\d{1,6})\s+of\s+the\s+\d{1,6}\s+nodes\b",
        r"\b(\d{1,6})\s+nodes?\b",
    ):
        match = re.search(pattern, text, re.IGNORECASE)
        if match and int(match.group(1)) > 0:
            return int(match.group(1))
    match = re.search(r"<([^<>\s]*?)(\d{1,6})>\s*\.\.\s*<\1(\d{1,6})>", text)
    if match and int(match.group(3)) >= int(match.group(2)):
        return int(match.group(3)) - int(match.group(2)) + 1
    if re.search(r"\b(?:single|one)\s+node\b", text, re.IGNORECASE):
        return 1
    return None


def _text_ranks(text: str, n_nodes: int | None) -> int | None:
    match = re.search(r"\b(\d{1,7})\s+ranks\b(?!\s+per\b)", text, re.IGNORECASE)
    if match and int(match.group(1)) > 0:
        return int(match.group(1))
    match = re.search(r"\b(\d{1,6})\s+ranks\s+per\s+(?:node|host|vm|server)\b", text, re.IGNORECASE)
    if match and n_nodes:
        return int(match.group(1)) * n_nodes or None
    return None


# -- which collective ----------------------------------------------------------------------------------------


def _canonical(name: str) -> str | None:
    key = name.strip().lower()
    key = re.sub(r"_perf(_mpi)?$", "", key).replace("-", "").replace("_", "")
    for collective in COLLECTIVES:
        if collective.replace("_", "") == key:
            return collective
    return None


def _canonical_argument(name: str) -> str:
    canonical = _canonical(name)
    if canonical is None:
        raise ValueError(f"collective: unknown collective {name!r}; known: {', '.join(sorted(COLLECTIVES))}")
    return canonical


def _nearest_binary(lines: list[str], start: int, stop: int, source: str | None) -> str | None:
    """The collective of the last ``<name>_perf`` in ``lines[start:stop]``; ParseError if it is unknown."""
    for index in range(stop - 1, start - 1, -1):
        matches = list(_BINARY.finditer(lines[index]))
        if matches:
            name = matches[-1].group(1).lower()
            canonical = _canonical(name)
            if canonical is None:
                raise ParseError(
                    f"{matches[-1].group(0)!r} is not an nccl-tests binary "
                    f"(known: {', '.join(sorted(c + '_perf' for c in COLLECTIVES))})",
                    line=index + 1,
                    source=source,
                )
            return canonical
    return None


def _resolve_collective(
    header: int,
    named: str | None,
    earlier: str | None,
    rows: list[PerfRow],
    columns: _Columns,
    meta: _Metadata,
    source: str | None,
) -> str | None:
    """The binary named above the table (checked against the columns), else the columns, else ``earlier``."""
    if named is not None:
        if not _fits(named, rows, columns):
            raise ParseError(
                f"the log names {named}_perf but the columns (redop {rows[0].redop}, root {rows[0].root}) "
                f"do not fit it",
                line=header + 1,
                source=source,
            )
        return named
    inferred = _collective_from_columns(rows, columns, meta.n_ranks)
    if inferred is not None:
        return inferred
    return earlier if earlier is not None and _fits(earlier, rows, columns) else None


def _fits(collective: str, rows: list[PerfRow], columns: _Columns) -> bool:
    """Whether the ``redop`` and ``root`` columns (new layout only) are what ``collective`` prints."""
    if "root" not in columns.params or "redop" not in columns.params:
        return True
    redops = {row.redop for row in rows}
    roots = {row.root for row in rows}
    if collective == "hypercube":
        redop_ok = redops == {None}
    elif collective in _REDUCING:
        redop_ok = None not in redops and "none" not in redops
    else:
        redop_ok = redops == {"none"}
    root_ok = (
        all(root is not None and root >= 0 for root in roots) if collective in _ROOTED else roots == {-1}
    )
    return redop_ok and root_ok


def _size_ratio(rows: list[PerfRow]) -> int | None:
    """size / (count x typesize), when it is the same integer for every row that allows computing it."""
    ratios = set()
    for row in rows:
        width = _DTYPE_BYTES.get(row.dtype)
        if width is None or row.count == 0:
            continue
        ratio = row.size_bytes / (row.count * width)
        if ratio != int(ratio):
            return None
        ratios.add(int(ratio))
    return ratios.pop() if len(ratios) == 1 else None


def _bus_factor(rows: list[PerfRow]) -> tuple[float, float] | None:
    """busbw / algbw of the fastest row and its uncertainty from printing both to 0.01 GB/s."""
    results = [r for row in rows for r in (row.out_of_place, row.in_place) if r is not None]
    results = [
        r for r in results if math.isfinite(r.algbw_bytes_per_s) and math.isfinite(r.busbw_bytes_per_s)
    ]
    if not results:
        return None
    best = max(results, key=lambda r: r.algbw_bytes_per_s)
    if best.algbw_bytes_per_s < 1e9 or best.busbw_bytes_per_s <= 0:
        return None
    factor = best.busbw_bytes_per_s / best.algbw_bytes_per_s
    uncertainty = factor * (0.005e9 / best.busbw_bytes_per_s + 0.005e9 / best.algbw_bytes_per_s)
    return factor, uncertainty


def _collective_from_columns(rows: list[PerfRow], columns: _Columns, n_ranks: int | None) -> str | None:
    if "redop" not in columns.params:
        return None
    redops = {row.redop for row in rows}
    if None in redops or (len(redops) > 1 and "none" in redops):
        return None
    reducing = "none" not in redops
    has_root = "root" in columns.params
    rooted = has_root and all(row.root is not None and row.root >= 0 for row in rows)
    unrooted = not has_root or all(row.root == -1 for row in rows)
    ratio = _size_ratio(rows)
    if reducing and rooted:
        return "reduce"
    if reducing and unrooted and ratio is not None and ratio > 1:
        return "reduce_scatter"
    if reducing and unrooted and ratio == 1:
        factor = _bus_factor(rows)
        if factor is not None and factor[0] > 1.0 + 5 * factor[1] + 0.01:
            return "all_reduce"  # 2(n-1)/n > 1 only for all_reduce
        if factor is not None and abs(factor[0] - 1.0) <= 0.02 and has_root and n_ranks and n_ranks > 2:
            return "sendrecv"  # factor 1 with more than 2 ranks rules out all_reduce
        return None
    if not reducing and rooted and ratio == 1:
        return "broadcast"
    return None  # all_gather vs alltoall, gather vs scatter: the columns cannot tell


def _ranks_from_rows(collective: str | None, rows: list[PerfRow]) -> int | None:
    """The communicator size implied by the numbers, or None if they do not pin it down."""
    if collective in _SIZE_IS_N_COUNTS:
        return _size_ratio(rows)
    if collective == "all_reduce":
        factor = _bus_factor(rows)
        if factor is None or factor[0] >= 2.0:
            return None
        n = 2.0 / (2.0 - factor[0])
        spread = n * n / 2.0 * factor[1]  # dn/dfactor = n^2 / 2
        if spread < 0.4 and abs(n - round(n)) <= 0.5 * max(spread, 0.05) + 0.05 and round(n) >= 1:
            return round(n)
    return None
