"""How many ranks and nodes a table ran on, from every form a log gives, or the option to ask for.

:func:`resolve_counts` settles :attr:`PerfTable.n_ranks` and :attr:`PerfTable.n_nodes` in this order, first
found wins (each choice is said in the notes):

ranks
    ``--ranks``; NCCL's ``nRanks`` INFO print; the parser's count (rank lines, ``Ranks a-b`` ranges, the
    launcher's ``-np`` x ``-t`` x ``-g``, the numbers) unless the rank lines are incomplete (``Rank 71``
    alone says at least 72, not 1); ``torchrun --nnodes N --nproc_per_node M``; busbw/algbw of the largest
    row where the printed precision pins one integer.
nodes
    ``--nodes``; NCCL's ``nNodes``; the parser's hosts (rank lines, ``mpirun -H``, ``srun -N``, processes /
    ``-N``/``--npernode``/``--map-by ppr:N:node``/``--ntasks-per-node``; unless the rank lines are
    incomplete); ``torchrun --nnodes``; one process driving every rank (``nThread`` x ``nGpus`` = the ranks);
    ranks / ``--gpus-per-node``; ranks / NCCL's ``localRanks``. Nothing else: a count none of these gives
    is asked for, never guessed.

The sources must agree: ``--ranks``, ``nRanks``, the table's count (when its rank lines are complete; a
count from the launcher line is named by that line) and the ranks busbw/algbw pins, and no row's printed
busbw/algbw may exclude the count settled on;
``--nodes``, ``nNodes``, the table's hosts, ``torchrun --nnodes`` and ranks / ``--gpus-per-node``. Two that
differ are refused naming both (and the log's line), never one silently preferred; ranks / ``localRanks``
is only a fallback (NCCL prints the local count of one rank). When the ranks cannot be told,
:func:`resolve_counts` raises a :class:`ParseError` asking for ``--ranks``; it never assumes one rank.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Sequence

from aifabric.collectives.ops import busbw_factor
from aifabric.discovery.nccl_info import NcclInfo
from aifabric.discovery.nccl_tests import PerfTable
from aifabric.discovery.perf_metadata import BINARY, launcher_line
from aifabric.errors import ParseError

__all__ = ["Counts", "resolve_counts"]

_TORCHRUN = re.compile(r"(?<![\w-])(?:torchrun|torch\.distributed\.(?:run|launch))(?![\w-])")
_NNODES = re.compile(r"--nnodes[= ](\d{1,6})(?![\d:])")
_NPROC = re.compile(r"--nproc[_-]per[_-]node[= ](\d{1,4})\b")
_HALF_DIGIT = 0.005e9  # nccl-tests prints GB/s with two decimals: +-0.005 GB/s, bytes/s
#: busbw/algbw as a function of n (nccl-tests doc/PERFORMANCE.md) and its inverse, per collective.
_FACTOR_INVERSE = {
    "all_reduce": lambda r: 2.0 / (2.0 - r),
    "all_gather": lambda r: 1.0 / (1.0 - r),
    "reduce_scatter": lambda r: 1.0 / (1.0 - r),
    "alltoall": lambda r: 1.0 / (1.0 - r),
}


@dataclasses.dataclass(frozen=True)
class Counts:
    """Ranks and nodes settled for a table, and how (one sentence per choice)."""

    n_ranks: int
    n_nodes: int | None
    notes: tuple[str, ...] = ()


def _incomplete_rank_lines(table: PerfTable) -> bool:
    """Rank lines that do not number 0..n-1 (``Rank 71`` alone, a cut paste)."""
    numbers = {r.rank for r in table.ranks}
    return bool(numbers) and numbers != set(range(len(numbers)))


def _torchrun(lines: Sequence[str]) -> tuple[int | None, int | None]:
    """``(ranks, nodes)`` of a torchrun command line above the table (None where it does not say)."""
    for line in lines:
        if _TORCHRUN.search(line):
            nodes = _NNODES.search(line)
            per = _NPROC.search(line)
            n_nodes = int(nodes.group(1)) if nodes else None
            ranks = n_nodes * int(per.group(1)) if n_nodes and per else None
            return ranks, n_nodes
    return None, None


def ranks_from_bandwidths(table: PerfTable) -> int | None:
    """Ranks implied by busbw/algbw of the largest row, when the two-decimal print pins one integer.

    >>> from aifabric.discovery.nccl_tests import parse_nccl_tests
    >>> t = parse_nccl_tests('''# nThread 1
    ... #  size  count  type  redop  root  time  algbw  busbw #wrong  time  algbw  busbw #wrong
    ...   4294967296  1073741824  float  sum  -1  15870  270.63  473.60  0  15773  272.30  476.53  0''')[0]
    >>> ranks_from_bandwidths(t)
    8
    """
    inverse = _FACTOR_INVERSE.get(table.collective or "")
    if inverse is None or not table.rows:
        return None
    half = table.rows[-1].out_of_place or table.rows[-1].in_place
    if half is None or half.algbw_bytes_per_s <= 10 * _HALF_DIGIT:
        return None
    low = (half.busbw_bytes_per_s - _HALF_DIGIT) / (half.algbw_bytes_per_s + _HALF_DIGIT)
    high = (half.busbw_bytes_per_s + _HALF_DIGIT) / (half.algbw_bytes_per_s - _HALF_DIGIT)
    limit = 2.0 if table.collective == "all_reduce" else 1.0
    if not 0.0 <= low < limit or not high < limit:
        return None
    first, last = math.ceil(inverse(low) - 1e-9), math.floor(inverse(high) + 1e-9)
    return first if first == last and first >= 2 else None


def _check_against_bandwidths(table: PerfTable, ranks: int, label: str) -> None:
    """Refuse a rank count the printed bandwidths exclude.

    nccl-tests prints busbw = algbw x the collective's factor of the ranks from one time (2(n-1)/n for an
    all_reduce, (n-1)/n for all_gather, reduce_scatter and alltoall: doc/PERFORMANCE.md), each to two
    decimals; a row whose two figures, rounding allowed, cannot stand in that ratio did not run on
    ``ranks`` ranks (an all_reduce printing busbw = algbw = 0.05 GB/s ran on 2, not 8: 8 would print 0.09).

    Raises
    ------
    ParseError
        Naming ``label`` (where the count came from), the first such row's line and figures and what
        ``ranks`` ranks would have printed.
    """
    if table.collective not in _FACTOR_INVERSE or ranks < 2:
        return
    f = busbw_factor(table.collective, ranks)
    for row in table.rows:
        for half in (row.out_of_place, row.in_place):
            if half is None or half.algbw_bytes_per_s <= _HALF_DIGIT:
                continue
            algbw, busbw = half.algbw_bytes_per_s, half.busbw_bytes_per_s
            low = (busbw - _HALF_DIGIT) / (algbw + _HALF_DIGIT)
            if low <= f <= (busbw + _HALF_DIGIT) / (algbw - _HALF_DIGIT):
                continue
            raise ParseError(
                f"{label} conflicts with the row at line {row.line}: busbw {busbw / 1e9:.2f} and algbw "
                f"{algbw / 1e9:.2f} GB/s, where {ranks} ranks print busbw = algbw x {f:.2f} = "
                f"{algbw * f / 1e9:.2f} (nccl-tests doc/PERFORMANCE.md); give the ranks the run had",
                line=row.line,
                source=table.source,
            )


def _check_against_rank_lines(
    table: PerfTable, partial: bool, ranks: int | None, info_ranks: int | None
) -> None:
    """Refuse a rank count that contradicts complete rank lines (``Rank 0`` .. ``Rank n-1``, one each).

    Raises
    ------
    ParseError
        Naming the option or NCCL's print and the count the rank lines give.
    """
    if partial or not table.ranks:
        return
    listed = len({r.rank for r in table.ranks})
    for what, value in (("--ranks", ranks), ("NCCL INFO nRanks", info_ranks)):
        if value is not None and value != listed:
            raise ParseError(
                f"{what} {value} conflicts with the log's {listed} rank lines (ranks 0-{listed - 1})",
                line=table.line,
                source=table.source,
            )


def resolve_counts(
    table: PerfTable,
    lines_before: Sequence[str] = (),
    info: NcclInfo | None = None,
    *,
    ranks: int | None = None,
    nodes: int | None = None,
    gpus_per_node: int | None = None,
    first_line: int = 1,
) -> Counts:
    """The ranks and nodes of ``table`` (module docstring for the order of the sources).

    Parameters
    ----------
    table : PerfTable
    lines_before : sequence of str
        The log's lines above the table (launcher command lines).
    info : NcclInfo, optional
        The run's NCCL INFO lines.
    ranks, nodes, gpus_per_node : int, optional
        The user's ``--ranks``, ``--nodes`` and ``--gpus-per-node``: they override the log.
    first_line : int
        1-based line number of ``lines_before[0]`` in the log (for messages).

    Raises
    ------
    ParseError
        If NCCL's communicator line has an impossible count (:meth:`NcclInfo.check_counts`: its line and
        value), the ranks cannot be told from the log (the message asks for ``--ranks``), two sources of a
        count disagree (module docstring; both named), ``--gpus-per-node`` does not divide the ranks, or
        the ranks do not fill the nodes evenly (naming where each count came from).
    ValueError
        If an override is below 1.
    """
    for name, value in (("--ranks", ranks), ("--nodes", nodes), ("--gpus-per-node", gpus_per_node)):
        if value is not None and value < 1:
            raise ValueError(f"{name}: must be at least 1, got {value}")
    info = info or NcclInfo()
    info.check_counts(table.source)
    partial = _incomplete_rank_lines(table)
    torch_ranks, torch_nodes = _torchrun(lines_before)
    _check_against_rank_lines(table, partial, ranks, info.n_ranks)
    given = _Given(table, info, partial, torch_nodes, lines_before, _launcher_label(lines_before, first_line))
    n_ranks, rank_source = given.first_ranks(ranks)
    notes: list[str] = []
    if n_ranks is None:
        n_ranks = torch_ranks or ranks_from_bandwidths(table)
        if partial and n_ranks is not None and n_ranks <= max(r.rank for r in table.ranks):
            n_ranks = None  # contradicts the rank lines: not a count to trust
        if partial and n_ranks is not None:
            notes.append(f"rank lines incomplete (highest rank {max(r.rank for r in table.ranks)}): "
                         f"{n_ranks} ranks from the launcher or the numbers")  # fmt: skip
        rank_source = _Count("the launcher or the numbers", n_ranks, table.line)
    if n_ranks is None:
        why = (
            f"the rank lines list {len(table.ranks)} of at least {max(r.rank for r in table.ranks) + 1} ranks"
            if partial
            else "the log does not say how many ranks ran this table"
        )
        raise ParseError(f"{why}; give --ranks (and --nodes)", line=table.line, source=table.source)
    _check_against_bandwidths(table, n_ranks, rank_source.label)
    n_nodes, node_source = given.first_nodes(nodes, rank_source, gpus_per_node, notes)
    if n_nodes is not None and n_ranks % n_nodes:
        raise ParseError(
            f"{n_ranks} ranks ({rank_source.label}) do not fill {n_nodes} nodes evenly "
            f"({node_source.label}); aifabric models nodes of equal size{_ask_for(ranks, nodes)}",
            line=node_source.line or rank_source.line,
            source=table.source,
        )
    return Counts(n_ranks, n_nodes, tuple(notes))


def _ask_for(ranks: int | None, nodes: int | None) -> str:
    """The advice to give the counts the user has not given (none when both were)."""
    missing = [flag for flag, value in (("--ranks", ranks), ("--nodes", nodes)) if value is None]
    return f"; give {' and '.join(missing)} to model a subset" if missing else ""


def _launcher_label(lines: Sequence[str], first_line: int) -> str | None:
    """``launcher line N (its text)`` for the last launcher command above the table, or None."""
    index = launcher_line(list(lines))
    if index is None:
        return None
    return f"the launcher line {first_line + index} ({lines[index].strip()[:80]})"


def _command_ranks(lines: Sequence[str]) -> int | None:
    """Ranks one process drives by the last ``*_perf`` command above the table run without a launcher
    (``./all_reduce_perf -t 2 -g 4``: ``-t`` x ``-g``, each 1 when not given), or None."""
    if launcher_line(list(lines)) is not None:
        return None
    for line in reversed(lines):
        binary = BINARY.search(line)
        if binary and not line.lstrip().startswith("#"):
            args = line[binary.end() :]
            flags = [re.search(rf"(?<!\S){f}\s*(\d{{1,6}})(?!\S)", args) for f in ("-t", "-g")]
            return math.prod(int(m.group(1)) if m else 1 for m in flags)
    return None


def _one_process(table: PerfTable, lines: Sequence[str], n_ranks: int) -> int | None:
    """1 when one process drives every rank: ``nThread`` x ``nGpus`` of the header, or ``-t`` x ``-g`` of a
    command run without a launcher, equals the ranks (nccl-tests starts the same threads and GPUs in every
    process, so there is no second process and no second node)."""
    p = table.parameters
    per_process = p.n_threads * p.n_gpus if p is not None and p.n_threads and p.n_gpus else None
    if n_ranks < 2:
        return None
    return 1 if n_ranks in (per_process, _command_ranks(lines)) else None


@dataclasses.dataclass(frozen=True)
class _Count:
    """One source's count: what it is (``--nodes``, ``NCCL INFO nNodes 3``), the value, the log line."""

    label: str
    value: int | None
    line: int | None = None


@dataclasses.dataclass(frozen=True)
class _Given:
    """The counts the log's sources give for a table, checked against the options for agreement."""

    table: PerfTable
    info: NcclInfo
    partial: bool
    torch_nodes: int | None
    lines: Sequence[str] = ()
    launcher: str | None = None

    def _info_line(self) -> int | None:
        found = self.info.evidence.get("comm", ())
        return found[0].line if found else None

    def first_ranks(self, ranks: int | None) -> tuple[int | None, _Count]:
        """The first of ``--ranks``, NCCL's ``nRanks``, the table's count; refuse two that disagree."""
        line, table = self._info_line(), self.table
        listed = f"the log's {table.n_ranks} ranks above line {table.line}"
        if self.launcher is not None and not table.ranks:
            listed = f"{self.launcher}: {table.n_ranks} ranks"
        ratio = None if self.partial else ranks_from_bandwidths(table)
        last = table.rows[-1].line if table.rows else table.line
        sources = [
            _Count(f"--ranks {ranks}", ranks),
            _Count(f"NCCL INFO nRanks {self.info.n_ranks} at line {line}", self.info.n_ranks, line),
            _Count(listed, None if self.partial else table.n_ranks, table.line),
            _Count(f"busbw/algbw of the row at line {last}: {ratio} ranks", ratio, last),
        ]
        return _agreed(sources, table.source)

    def first_nodes(
        self, nodes: int | None, ranks: _Count, gpus_per_node: int | None, notes: list[str]
    ) -> tuple[int | None, _Count]:
        """The first of ``--nodes``, NCCL's ``nNodes``, the table's hosts, ``torchrun --nnodes``, ranks /
        ``--gpus-per-node`` (all refused when two disagree), else ranks / NCCL's ``localRanks``."""
        line = self._info_line()
        info, table, n_ranks = self.info, self.table, ranks.value or 0
        if gpus_per_node and n_ranks % gpus_per_node:
            raise ParseError(
                f"--gpus-per-node {gpus_per_node} does not divide {n_ranks} ranks ({ranks.label})",
                line=ranks.line,
                source=table.source,
            )
        sources = [
            _Count(f"--nodes {nodes}", nodes),
            _Count(f"NCCL INFO nNodes {info.n_nodes} at line {line}", info.n_nodes, line),
            _Count(
                f"the log's {table.n_nodes} node(s) above line {table.line}",
                None if self.partial else table.n_nodes,
                table.line,
            ),  # fmt: skip
            _Count(f"torchrun --nnodes {self.torch_nodes}", self.torch_nodes),
            _Count(
                f"one process drives all {n_ranks} ranks (nThread x nGpus or -t x -g above line "
                f"{table.line})",
                _one_process(table, self.lines, n_ranks),
            ),  # fmt: skip
            _Count(
                f"{n_ranks} ranks / --gpus-per-node {gpus_per_node}",
                n_ranks // gpus_per_node if gpus_per_node else None,
            ),  # fmt: skip
        ]
        n_nodes, chosen = _agreed(sources, table.source)
        local = info.local_ranks
        if n_nodes is None and local:
            n_nodes = -(-n_ranks // local)
            chosen = _Count(f"{n_ranks} ranks / NCCL localRanks {local} at line {line}", n_nodes, line)
        if chosen in sources[-2:] or (chosen.value is not None and chosen not in sources):
            notes.append(f"{chosen.label} = {n_nodes} node(s)")
        return n_nodes, chosen


def _agreed(sources: list[_Count], source: str | None) -> tuple[int | None, _Count]:
    """The first given count of ``sources`` and where it came from.

    Raises
    ------
    ParseError
        When two given counts differ, naming both and the log's line.
    """
    given = [count for count in sources if count.value is not None]
    if not given:
        return None, _Count("unknown", None)
    first = given[0]
    for other in given[1:]:
        if other.value != first.value:
            line = other.line or first.line
            raise ParseError(f"{first.label} conflicts with {other.label}", line=line, source=source)
    return first.value, first
