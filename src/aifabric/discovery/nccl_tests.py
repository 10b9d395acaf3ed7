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

import re
from dataclasses import dataclass
from typing import NamedTuple

from aifabric.discovery._text import clean_lines, decode, split_lines
from aifabric.discovery.perf_collective import (
    agreed_ranks,
    canonical_argument,
    nearest_binary,
    ranks_from_rows,
    redop_misfit,
    resolve_collective,
)
from aifabric.discovery.perf_metadata import Metadata, complete_rank_lines
from aifabric.discovery.perf_records import COLLECTIVES, PerfResult, PerfRow, RankInfo, RunParameters
from aifabric.discovery.perf_rows import (
    AVG_LINE,
    Columns,
    avg_busbw,
    clean_line,
    is_column_header,
    looks_like_row,
    parse_columns,
    parse_row,
    starts_new_run,
)
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

_OUT_OF_BOUNDS = re.compile(r"^#\s*Out of bounds values\s*:\s*(\d{1,20})")
#: A line that stands for rows the publisher left out of a copied table (``...``, ``…``, ``[...]``).
_ELISION = re.compile(r"^(?:\.{3,}|\u2026|\[(?:\.{3}|\u2026)\])$")


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
        ``# Out of bounds values`` footer: elements nccl-tests' own check found wrong (``N OK``/``N FAILED``).
    columns : tuple of str
        Column names of the header (``size``, ``count``, ..., ``#wrong``); empty for a fragment.
    line : int
        1-based line of the column header (of the footer for a fragment).
    source : str or None
        File name or description of the input.
    cut_line : int or None
        1-based line of a last row cut mid-line (the copy stopped there), dropped from :attr:`rows`.
    out_of_bounds_line : int or None
        1-based line of the ``# Out of bounds values`` footer.
    header_supplied : bool
        True when the rows had no column header above them (the copy starts mid-table) and
        :func:`~aifabric.discovery.paste.parse_pasted` read them with nccl-tests' own header.
    elided_lines : tuple of int
        1-based lines of a ``...`` among the rows (rows the publisher left out): the rows on both sides are
        one table, and each line is said in :attr:`notes`.
    left_out : tuple of str
        The halves of a JSON report's rows that nccl-tests wrote as "nan" and the reader left out
        (:mod:`aifabric.discovery.perf_json`), one sentence each naming its line; in :attr:`notes`.
    bytes_header : bool
        True when the header read ``bytes N type op ... res`` with times in milliseconds: NCCL 1's own tests
        (NVIDIA/nccl v1.3.4-1 ``test/single``) and nccl-tests 1.0.0 print it; nccl-tests 2.x prints
        ``size count type redop ...`` in microseconds.

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
    cut_line: int | None = None
    out_of_bounds_line: int | None = None
    header_supplied: bool = False
    elided_lines: tuple[int, ...] = ()
    left_out: tuple[str, ...] = ()
    bytes_header: bool = False

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
    def notes(self) -> tuple[str, ...]:
        """What was read other than as printed, one sentence each naming its line."""
        notes: list[str] = []
        if self.header_supplied:
            notes.append(
                f"line {self.line}: rows without their column header (the copy starts mid-table): read with "
                f"nccl-tests' header '{' '.join(self.columns)}'"
            )
        if self.ranks and not complete_rank_lines(self.ranks):
            listed = ", ".join(str(rank.rank) for rank in self.ranks[:4]) + (
                ", ..." if len(self.ranks) > 4 else ""
            )
            notes.append(
                f"the rank lines list rank(s) {listed} only, not 0 to n-1 (a partial copy): "
                "ranks and hosts are not counted from them"
            )
        notes.extend(f"line {n}: rows left out of the copy ('...'): one table" for n in self.elided_lines)
        if self.cut_line is not None:
            notes.append(f"line {self.cut_line}: last row cut mid-line (the copy stopped there): dropped")
        return (*notes, *self.left_out)

    @property
    def ranks_per_process(self) -> int | None:
        """Most ranks one process drove: the complete rank lines' ranks per (host, pid), else nThread x nGpus
        of the ``# nThread`` line (``-t`` threads of ``-g`` GPUs each); None when neither says.

        >>> from aifabric.discovery.perf_records import RunParameters
        >>> args = (None, None, 8, 1, None, None, None, (), (), RunParameters(n_threads=1, n_gpus=8))
        >>> PerfTable(*args, None, None, (), 1).ranks_per_process
        8
        """
        if complete_rank_lines(self.ranks) and all(rank.pid is not None for rank in self.ranks):
            per: dict[tuple[str, int | None], int] = {}
            for rank in self.ranks:
                per[rank.host, rank.pid] = per.get((rank.host, rank.pid), 0) + 1
            return max(per.values())
        p = self.parameters
        if p is None or (p.n_threads is None and p.n_gpus is None):
            return None
        return (p.n_threads or 1) * (p.n_gpus or 1)

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


def parse_nccl_tests(
    text: str | bytes, source: str | None = None, *, collective: str | None = None
) -> list[PerfTable]:
    """Parse every nccl-tests result table in ``text``.

    A table starts at a ``#  size  count  type ...`` header and runs over its rows (blank, ``#`` and
    ``NCCL INFO``/``NCCL WARN`` lines in between are skipped) to the ``# Avg bus bandwidth`` footer or the
    first line that is not part of it. A footer without a table (a log whose rows were cut by its
    publisher) gives a table with no rows. A row wrapped onto two lines is joined back, and a last row cut
    mid-line is dropped (:attr:`PerfTable.cut_line`); see ``_next_row``. A tab reads as a space. Metadata is read from the lines between the previous table and
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
    override = canonical_argument(collective) if collective is not None else None
    # nccl-tests prints spaces; a paste through a spreadsheet or chat tool leaves tabs: whitespace either way
    raw_lines = split_lines(decode(text, source).replace("\t", " "), source)
    lines = _comment_marks_restored(
        [_unrendered(line) for line in clean_lines([clean_line(r) for r in raw_lines])]
    )
    tables = _scan_tables(lines, override, source)
    if not tables:
        raise ParseError(
            "no nccl-tests result table found (expected a '#  size  count  type ...' header)"
            + _no_table_reason(lines),
            source=source,
        )
    return tables


#: The lines nccl-tests starts with ``#`` (``src/common.cu``), as they read once a renderer took the ``#``
#: away: GitHub markdown outside a code fence turns ``# text`` into a heading and drops the mark.
_UNMARKED = re.compile(
    r"^\s*(?:nThread\s+\d+\s+nGpus\s|Using devices\s*$|Rank\s+\d+\s+(?:Group\s+\d+\s+)?Pid\s"
    r"|size\s+count\s+type\s|\(B\)\s+\(elements\)|out-of-place\s+in-place\s*$|Blocking Enabled:"
    r"|Out of bounds values\s*:|Avg bus bandwidth\s*:|Collective test (?:starting|concluded):)"
)


#: A Markdown table's rule line (``-- | --``, ``|:---|---:|``): its cells are dashes with optional colons.
_RULE_CELL = re.compile(r":?-+:?")


def _unrendered(line: str) -> str:
    r"""``line`` as nccl-tests printed it, from its Markdown source as a page shows or stores it.

    A code span's backticks become spaces (nccl-tests prints none: a command pasted as inline code); a
    ``\#`` escape (CommonMark 0.31, 2.4 "Backslash escapes") is the ``#`` it kept from being a heading; a row
    whose fields a renderer joined by ``|`` (GitHub Flavored Markdown 0.29, 4.10 "Tables") is its fields
    apart by spaces, and the table's delimiter row (``-- | --``) is blank. A line with ``|`` between cells
    of several words each (two runs side by side) is left as it is.

    >>> _unrendered("1024 | 512 | half | sum | -1 | 5.39"), _unrendered("-- | --"), _unrendered(r"\#  size")
    ('1024 512 half sum -1 5.39', '', '#  size')
    >>> _unrendered("8  2  float | 8  2  float"), _unrendered("`./all_reduce_perf -g 2`")
    ('8  2  float | 8  2  float', ' ./all_reduce_perf -g 2 ')
    """
    line = line.replace("`", " ")
    if line.lstrip().startswith("\\#"):
        line = line.replace("\\#", "#", 1)
    if "|" not in line:
        return line
    cells = [cell.strip() for cell in line.strip().removeprefix("|").removesuffix("|").split("|")]
    if len(cells) < 2 or not all(cell and len(cell.split()) == 1 for cell in cells):
        return line
    return "" if all(_RULE_CELL.fullmatch(cell) for cell in cells) else " ".join(cells)


def _comment_marks_restored(lines: list[str]) -> list[str]:
    """``lines`` with the ``#`` put back on the nccl-tests lines that lost it (:data:`_UNMARKED`), so a log
    pasted into a markdown page reads as printed.

    >>> _comment_marks_restored(["  size  count  type  redop", " nThread 1 nGpus 1 minBytes 8", "  8  2"])
    ['#  size  count  type  redop', '# nThread 1 nGpus 1 minBytes 8', '  8  2']
    """
    return [f"#{line}" if _UNMARKED.match(line) else line for line in lines]


#: nccl-tests' CUDACHECK/NCCLCHECK message: ``host: Test CUDA failure common.cu:891 '...'`` since v2.0.0
#: (``src/common.h``), ``Cuda failure common.cu:891 '...'`` / ``NCCL failure ...`` in v1.0.0.
_TEST_FAILURE = re.compile(r"\bTest (?:CUDA |NCCL |HIP )?failure\b|^\s*(?:Cuda|NCCL) failure \S+:\d+ '", re.I)
_WARN = re.compile(r"\bNCCL (?:WARN|ERROR)\b")
_SAYS_FAILED = re.compile(r"\b(?:failed|error)\b", re.I)
#: NCCLCHECK's trace of a call that returned an error (``misc/socket.cc:752 -> 6``: NVIDIA/nccl
#: ``src/include/checks.h`` prints ``"%s:%d -> %d"`` at each level the error unwinds through).
_ERROR_TRACE = re.compile(r"\bNCCL INFO \S+:\d+ -> [1-9]\d*\s*$")
#: A result header of ``size count`` then the times, no ``type``/``redop``: mscclpp-test's ``# size count
#: time algbw busbw #wrong`` under ``in-place  out-of-place`` (its outputs in microsoft/mscclpp pull requests
#: #83 and #87): a table, but not nccl-tests'.
_OTHER_LAYOUT = re.compile(r"^#\s*size\s+count\s+(?!type\b)\S")
_RUN_HEADER = re.compile(r"^#\s*(?:nThread\s|Using devices|Rank\s+\d|Collective test starting)")


def _failure_line(lines: list[str]) -> int | None:
    """The 0-based index of the line a run failed at: an nccl-tests ``Test ... failure`` line, or an NCCL
    WARN that NCCL returned an error after (its next NCCL line is an error trace, :data:`_ERROR_TRACE`), or
    that says it failed with no NCCL line after it. A WARN NCCL carried on after (``Failed to open
    libibverbs.so``, then ``NET/Socket : Using``) is no failure."""
    warn: int | None = None
    for index, line in enumerate(lines):
        if _TEST_FAILURE.search(line):
            return warn if warn is not None else index
        if warn is not None and "NCCL " in line:
            if _ERROR_TRACE.search(line):
                return warn
            warn = None  # NCCL went on: that WARN was not the failure
        if _WARN.search(line):
            warn = index
    if warn is not None and _SAYS_FAILED.search(lines[warn].split("NCCL", 1)[-1]):
        return warn
    return None


def _no_table_reason(lines: list[str]) -> str:
    """Why a text holds no table, when it tells: the line the run failed at (:func:`_failure_line`: ``Test
    CUDA failure common.cu:986 'invalid device ordinal'``), else the last line of a run's header that the
    text stops after; empty otherwise."""
    failed = _failure_line(lines)
    if failed is not None:
        return f"; the run failed at line {failed + 1}: {lines[failed].strip()[:160]!r}"
    other = next((i for i, line in enumerate(lines) if _OTHER_LAYOUT.match(line.strip())), None)
    if other is not None:
        return (
            f"; line {other + 1} heads a table without nccl-tests' type and redop columns "
            f"({' '.join(lines[other].split()[1:7])} ...): another tool's layout (mscclpp-test prints it, "
            "in-place half first), not read"
        )
    heads = [index for index, line in enumerate(lines) if _RUN_HEADER.match(line.strip())]
    if heads:
        return f"; the text stops after the run's header (line {heads[-1] + 1}), before its result table"
    return ""


def _scan_tables(lines: list[str], override: str | None, source: str | None) -> list[PerfTable]:
    """Every table of the cleaned ``lines`` in order, footer-only fragments included (none: empty).

    Raises
    ------
    ParseError
        If a table is malformed or a result row stands outside any table.
    """
    tables: list[PerfTable] = []
    boundary = 0  # first line after the previous table: metadata above a table is read from here on
    earlier: str | None = None  # the last binary named above ``boundary``
    index = 0
    while index < len(lines):
        stripped = lines[index].strip()
        if is_column_header(stripped):
            named = None if override else nearest_binary(lines, boundary, index, source)
            table, end = _read_table(
                lines, boundary, index, override=override, named=named, earlier=earlier, source=source
            )
            tables.append(table)
            earlier = named or earlier
            boundary = index = end
            continue
        if AVG_LINE.match(stripped):
            named = None if override else nearest_binary(lines, boundary, index, source)
            tables.append(_fragment(lines, boundary, index, override or named or earlier, source))
            earlier = named or earlier
            boundary = index + 1
        elif looks_like_row(stripped):
            raise ParseError(
                "a result row outside any table (is its '#  size  count  type' header missing?)",
                line=index + 1,
                source=source,
            )
        index += 1
    return tables


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
    columns = parse_columns(lines, header, source)
    meta = Metadata.read(lines, boundary, header, source)
    body = _read_body(lines, header, columns, (override or named) == "hypercube", source)
    rows = body.rows
    concluded, end = _concluded(lines, body.end, source)
    named = named or (None if override else concluded)
    collective = _table_collective(header, rows, columns, meta, override, named, earlier, source)
    n_ranks = meta.n_ranks if meta.n_ranks is not None else ranks_from_rows(collective, rows)
    if n_ranks is None and collective is None:  # the candidate collectives may all give the same n
        n_ranks = agreed_ranks(rows, columns)
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
        avg_busbw_bytes_per_s=body.avg_busbw_bytes_per_s,
        out_of_bounds=body.out_of_bounds,
        columns=columns.names,
        line=header + 1,
        source=source,
        cut_line=body.cut_line,
        out_of_bounds_line=body.out_of_bounds_line,
        elided_lines=body.elided,
        left_out=meta.left_out,
        bytes_header=columns.bytes_header,
    )
    return table, end


_CONCLUDED = re.compile(r"^#\s*Collective test concluded:\s*(\S+)")


def _concluded(lines: list[str], end: int, source: str | None) -> tuple[str | None, int]:
    """The collective named by a ``# Collective test concluded: alltoall_perf`` line just after a table (the
    footer of nccl-tests >= 2.14 and rccl-tests; only ``#`` and blank lines between), and the index after
    it; (None, ``end``) when there is none."""
    index = end
    while index < len(lines) and lines[index].strip() in ("", "#"):
        index += 1
    match = _CONCLUDED.match(lines[index].strip()) if index < len(lines) else None
    if match is None:
        return None, end
    return nearest_binary(lines, index, index + 1, source), index + 1


class _Body(NamedTuple):
    """What lies under a table's header: its rows, the line of a last row cut mid-line (1-based), the
    footer's average busbw (bytes/s), the out-of-bounds count, and the index of the first line after."""

    rows: list[PerfRow]
    cut_line: int | None
    avg_busbw_bytes_per_s: float | None
    out_of_bounds: int | None
    end: int
    out_of_bounds_line: int | None = None
    elided: tuple[int, ...] = ()


def _read_body(
    lines: list[str], header: int, columns: Columns, blank_redop: bool, source: str | None
) -> _Body:
    """Read the rows under the header at ``header`` to the ``# Avg bus bandwidth`` footer or the first line
    that is not part of the table (blank, ``#`` and NCCL log lines in between are skipped).

    Raises
    ------
    ParseError
        If a row is malformed or the header has no rows below it.
    """
    rows: list[PerfRow] = []
    cut_line: int | None = None
    avg: float | None = None
    out_of_bounds: int | None = None
    out_of_bounds_line: int | None = None
    elided: list[int] = []
    index = header + 1
    while index < len(lines):
        stripped = lines[index].strip()
        if _ELISION.match(stripped):
            elided.append(index + 1)
        if not stripped or "NCCL INFO" in stripped or "NCCL WARN" in stripped or _ELISION.match(stripped):
            index += 1
            continue
        if stripped.startswith("#"):
            if AVG_LINE.match(stripped):
                avg = avg_busbw(stripped, index, source)
                index += 1
                break
            match = _OUT_OF_BOUNDS.match(stripped)
            if match:
                out_of_bounds, out_of_bounds_line = int(match.group(1)), index + 1
            elif is_column_header(stripped) or starts_new_run(stripped):
                break
            index += 1
            continue
        if not stripped[0].isdigit():
            break
        row, after = _next_row(lines, index, columns, blank_redop, source)
        if row is None:
            cut_line = index + 1
        else:
            rows.append(row)
        index = after
    if not rows and cut_line is None:  # a table whose only row was cut keeps its header (no rows)
        raise ParseError("the column header has no result rows below it", line=header + 1, source=source)
    return _Body(rows, cut_line, avg, out_of_bounds, index, out_of_bounds_line, tuple(elided))


def _table_collective(
    header: int,
    rows: list[PerfRow],
    columns: Columns,
    meta: Metadata,
    override: str | None,
    named: str | None,
    earlier: str | None,
    source: str | None,
) -> str | None:
    """The table's collective: ``override``, else the one the binary named above it or the columns tell,
    else the one ``earlier`` names.

    Raises
    ------
    ParseError
        If ``override`` contradicts what the log tells: the collective it names or its columns show, or
        the reduction its rows print (a reduction's name where the override reduces nothing, or ``none``
        where it reduces).
    """
    logged = resolve_collective(header, named, None, rows, columns, meta, source)
    if override is not None and logged is not None and logged != override:
        raise ParseError(
            f"--collective {override} conflicts with the log's {logged} (named above or told by the columns)",
            line=header + 1,
            source=source,
        )
    misfit = None if override is None else redop_misfit(override, rows, columns)
    if misfit is not None:
        raise ParseError(
            f"--collective {override} conflicts with the log's columns: {misfit}",
            line=header + 1,
            source=source,
        )
    return override or logged or resolve_collective(header, named, earlier, rows, columns, meta, source)


def _next_row(
    lines: list[str], index: int, columns: Columns, blank_redop: bool, source: str | None
) -> tuple[PerfRow | None, int]:
    """The result row starting at 0-based ``index`` (None when dropped) and the index after it.

    A row wrapped onto two lines (a terminal or an e-mail split it at a space) is joined back when the join
    parses as a row and the second line alone does not, while the first alone does not either or holds only
    the out-of-place half. The last line of the text, cut mid-row (the copy stopped there: fewer fields
    than the header and not a row), is dropped (:attr:`PerfTable.cut_line`).

    Raises
    ------
    ParseError
        If the row does not parse and is neither wrapped nor the cut last line.
    """
    stripped, lineno = lines[index].strip(), index + 1
    try:
        row = parse_row(stripped, lineno, columns, blank_redop, source)
    except ParseError:
        joined = _wrapped_row(lines, index, columns, blank_redop, source)
        if joined is not None:
            return joined, index + 2
        if len(stripped.split()) < columns.width and not any(line.strip() for line in lines[index + 1 :]):
            return None, index + 1
        raise
    if row.in_place is None and len(columns.groups) == 2:  # the in-place half may be on the next line
        joined = _wrapped_row(lines, index, columns, blank_redop, source)
        if joined is not None:
            return joined, index + 2
    return row, index + 1


def _wrapped_row(
    lines: list[str], index: int, columns: Columns, blank_redop: bool, source: str | None
) -> PerfRow | None:
    """The row of lines ``index`` and ``index + 1`` joined at a space, when the second line alone is no row
    and does not start a ``#`` or NCCL log line; else None."""
    if index + 1 >= len(lines):
        return None
    rest = lines[index + 1].strip()
    if not rest or rest.startswith("#") or "NCCL " in rest:
        return None
    try:
        parse_row(rest, index + 2, columns, blank_redop, source)
        return None  # a whole row of its own
    except ParseError:
        pass
    try:
        return parse_row(f"{lines[index].strip()} {rest}", index + 1, columns, blank_redop, source)
    except ParseError:
        return None


def _fragment(
    lines: list[str], boundary: int, footer: int, collective: str | None, source: str | None
) -> PerfTable:
    """A table whose rows were cut: only the ``# Avg bus bandwidth`` footer and the lines above remain."""
    meta = Metadata.read(lines, boundary, footer, source)
    out_of_bounds = out_of_bounds_line = None
    for k in range(boundary, footer):
        match = _OUT_OF_BOUNDS.match(lines[k].strip())
        if match:
            out_of_bounds, out_of_bounds_line = int(match.group(1)), k + 1
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
        avg_busbw_bytes_per_s=avg_busbw(lines[footer].strip(), footer, source),
        out_of_bounds=out_of_bounds,
        columns=(),
        line=footer + 1,
        source=source,
        out_of_bounds_line=out_of_bounds_line,
    )
