"""How many ranks and nodes a table ran on, from every form a log gives, or the option to ask for.

:func:`resolve_counts` settles :attr:`PerfTable.n_ranks` and :attr:`PerfTable.n_nodes` in this order, first
found wins (each choice is said in the notes):

ranks
    ``--ranks``; NCCL's ``nRanks`` INFO print; the parser's count (rank lines, ``Ranks a-b`` ranges, the
    launcher's ``-np`` x ``-t`` x ``-g``, the numbers) unless the rank lines are incomplete (``Rank 71``
    alone says at least 72, not 1); ``torchrun --nnodes N --nproc_per_node M``; busbw/algbw of the largest
    row where the printed precision pins one integer.
nodes
    ``--nodes``; NCCL's ``nNodes``; the parser's hosts (unless the rank lines are incomplete); ``torchrun
    --nnodes``; ranks / ``--gpus-per-node``; ranks / NCCL's ``localRanks``.

When the ranks cannot be told, :func:`resolve_counts` raises a :class:`ParseError` asking for ``--ranks``;
it never assumes one rank.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Sequence

from aifabric.discovery.nccl_info import NcclInfo
from aifabric.discovery.nccl_tests import PerfTable
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

    Raises
    ------
    ParseError
        If NCCL's communicator line has an impossible count (:meth:`NcclInfo.check_counts`: its line and
        value), the ranks cannot be told from the log (the message asks for ``--ranks``), an override
        contradicts itself (ranks not filling the nodes evenly), or ``--ranks`` or NCCL's ``nRanks``
        contradicts complete rank lines.
    ValueError
        If an override is below 1.
    """
    for name, value in (("--ranks", ranks), ("--nodes", nodes), ("--gpus-per-node", gpus_per_node)):
        if value is not None and value < 1:
            raise ValueError(f"{name}: must be at least 1, got {value}")
    info = info or NcclInfo()
    info.check_counts(table.source)
    notes: list[str] = []
    partial = _incomplete_rank_lines(table)
    torch_ranks, torch_nodes = _torchrun(lines_before)
    _check_against_rank_lines(table, partial, ranks, info.n_ranks)
    n_ranks = _rank_count(table, info, partial, torch_ranks, ranks, notes)
    n_nodes = _node_count(table, info, partial, torch_nodes, n_ranks, nodes, gpus_per_node, notes)
    return Counts(n_ranks, n_nodes, tuple(notes))


def _rank_count(
    table: PerfTable,
    info: NcclInfo,
    partial: bool,
    torch_ranks: int | None,
    ranks: int | None,
    notes: list[str],
) -> int:
    """The rank count: ``--ranks``, NCCL's ``nRanks``, complete rank lines, the launcher, the numbers (a
    guess the incomplete rank lines contradict is dropped; one they do not is noted in ``notes``).

    Raises
    ------
    ParseError
        If no source tells the ranks (the message asks for ``--ranks``).
    """
    n_ranks = ranks or info.n_ranks
    if n_ranks is None and not partial:
        n_ranks = table.n_ranks
    if n_ranks is None:
        n_ranks = torch_ranks or ranks_from_bandwidths(table)
        if partial and n_ranks is not None and n_ranks <= max(r.rank for r in table.ranks):
            n_ranks = None  # contradicts the rank lines: not a count to trust
        if partial and n_ranks is not None:
            notes.append(f"rank lines incomplete (highest rank {max(r.rank for r in table.ranks)}): "
                         f"{n_ranks} ranks from the launcher or the numbers")  # fmt: skip
    if n_ranks is None:
        why = (
            f"the rank lines list {len(table.ranks)} of at least {max(r.rank for r in table.ranks) + 1} ranks"
            if partial
            else "the log does not say how many ranks ran this table"
        )
        raise ParseError(f"{why}; give --ranks (and --nodes)", line=table.line, source=table.source)
    return n_ranks


def _node_count(
    table: PerfTable,
    info: NcclInfo,
    partial: bool,
    torch_nodes: int | None,
    n_ranks: int,
    nodes: int | None,
    gpus_per_node: int | None,
    notes: list[str],
) -> int | None:
    """The node count: ``--nodes``, NCCL's, complete rank lines', the launcher's, else ``n_ranks`` over
    ``--gpus-per-node`` or NCCL's ``localRanks`` (rounded up, noted in ``notes``); None if nothing tells.

    Raises
    ------
    ParseError
        If ``n_ranks`` does not fill the nodes evenly.
    """
    n_nodes = nodes or info.n_nodes
    if n_nodes is None and not partial:
        n_nodes = table.n_nodes
    n_nodes = n_nodes or torch_nodes
    if n_nodes is None and gpus_per_node:
        n_nodes = -(-n_ranks // gpus_per_node)
        notes.append(f"{n_ranks} ranks / --gpus-per-node {gpus_per_node} = {n_nodes} node(s)")
    if n_nodes is None and info.local_ranks:
        n_nodes = -(-n_ranks // info.local_ranks)
        notes.append(f"{n_ranks} ranks / NCCL localRanks {info.local_ranks} = {n_nodes} node(s)")
    if n_nodes is not None and n_ranks % n_nodes:
        raise ParseError(
            f"{n_ranks} ranks do not fill {n_nodes} nodes evenly; give --ranks and --nodes",
            line=table.line,
            source=table.source,
        )
    return n_nodes
