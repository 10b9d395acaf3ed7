"""Which collective an nccl-tests table measured, and its rank count when only the numbers tell.

From the nearest ``<name>_perf`` binary above the table, else from the columns and their numbers (an
operation with root -1 and busbw/algbw above 1 is all_reduce; size = n x count x typesize is a gathering
collective; a root is reduce or broadcast; an out-of-place ``#wrong`` count beside an in-place ``N/A`` is
sendrecv or alltoall, whose in-place half nccl-tests does not check). Bus-bandwidth factors: NVIDIA,
nccl-tests ``doc/PERFORMANCE.md``.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable

from aifabric.discovery.perf_metadata import BINARY, Metadata
from aifabric.discovery.perf_records import COLLECTIVES, DTYPE_BYTES, PerfRow
from aifabric.discovery.perf_rows import Columns
from aifabric.errors import ParseError

__all__ = [
    "canonical_argument",
    "agreed_ranks",
    "fitting_collectives",
    "nearest_binary",
    "odd_size_row",
    "ranks_from_rows",
    "redop_misfit",
    "resolve_collective",
]

_REDUCING = frozenset({"all_reduce", "reduce_scatter", "reduce", "sendrecv"})  # print an operation name
_ROOTED = frozenset({"reduce", "broadcast", "gather", "scatter"})  # print a root >= 0
# Collectives whose size column is n x count x typesize (the gathered or scattered whole).
_SIZE_IS_N_COUNTS = frozenset({"all_gather", "reduce_scatter", "alltoall", "gather", "scatter", "hypercube"})
#: The columns each binary printed before its root column in the layout before nccl-tests 2.13 (an
#: ``error`` cell ends each half; NVIDIA/nccl-tests v2.11.0 ``src/*.cu``, the ``PRINT("%12li  %12li  %8s"``
#: of each row): which binaries a table of that layout can be.
_OLD_PARAMS = {
    ("size", "count", "type"): frozenset({"all_gather", "hypercube", "sendrecv"}),
    ("size", "count", "type", "redop"): frozenset({"all_reduce", "alltoall", "reduce_scatter"}),
    ("size", "count", "type", "root"): frozenset({"broadcast", "gather", "scatter"}),
    ("size", "count", "type", "redop", "root"): frozenset({"reduce"}),
}


def _canonical(name: str) -> str | None:
    key = name.strip().lower()
    key = re.sub(r"_perf(_mpi)?$", "", key).replace("-", "").replace("_", "")
    for collective in COLLECTIVES:
        if collective.replace("_", "") == key:
            return collective
    return None


def canonical_argument(name: str) -> str:
    """The nccl-tests name of a caller's ``collective=`` (``allreduce_perf`` -> ``all_reduce``).

    Raises
    ------
    ValueError
        If ``name`` is not one of :data:`COLLECTIVES`.
    """
    canonical = _canonical(name)
    if canonical is None:
        raise ValueError(f"collective: unknown collective {name!r}; known: {', '.join(sorted(COLLECTIVES))}")
    return canonical


def nearest_binary(lines: list[str], start: int, stop: int, source: str | None) -> str | None:
    """The collective of the last ``<name>_perf`` in ``lines[start:stop]``; ParseError if it is unknown."""
    for index in range(stop - 1, start - 1, -1):
        matches = list(BINARY.finditer(lines[index]))
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


def resolve_collective(
    header: int,
    named: str | None,
    earlier: str | None,
    rows: list[PerfRow],
    columns: Columns,
    meta: Metadata,
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


def _fits(collective: str, rows: list[PerfRow], columns: Columns) -> bool:
    """Whether the ``redop`` and ``root`` columns (new layout only) are what ``collective`` prints."""
    return redop_misfit(collective, rows, columns) is None and _root_misfit(collective, rows, columns) is None


def redop_misfit(collective: str, rows: list[PerfRow], columns: Columns) -> str | None:
    """Why the ``redop`` column (new layout only) is not what ``collective`` prints, naming the values read
    and what its binary prints (nccl-tests ``src/*.cu``: a reduction's op name, ``none`` where nothing is
    reduced, blank for hypercube), or None.

    >>> from aifabric.discovery.perf_records import PerfRow
    >>> from aifabric.discovery.perf_rows import Columns
    >>> cols = Columns(("size", "count", "type", "redop", "root"), (), ())
    >>> redop_misfit("all_gather", [PerfRow(2048, 512, "float", "sum", -1, None, None, 1)], cols)
    "the rows read redop 'sum', which all_gather_perf does not print (it reduces nothing: redop 'none')"
    """
    if "root" not in columns.params or "redop" not in columns.params or not rows:
        return None
    redops = {row.redop for row in rows}
    if collective == "hypercube":
        redop_ok, prints = redops == {None}, "a blank redop"
    elif collective in _REDUCING:
        redop_ok, prints = None not in redops and "none" not in redops, "its reduction's name as redop"
    else:
        redop_ok, prints = redops == {"none"}, "it reduces nothing: redop 'none'"
    if redop_ok:
        return None
    read = ", ".join(sorted(repr(op) if op is not None else "blank" for op in redops))
    return f"the rows read redop {read}, which {collective}_perf does not print ({prints})"


def _root_misfit(collective: str, rows: list[PerfRow], columns: Columns) -> str | None:
    """Why the ``root`` column (new layout only) is not what ``collective`` prints (a root >= 0 for the
    rooted ones, -1 otherwise), or None."""
    if "root" not in columns.params or "redop" not in columns.params or not rows:
        return None
    roots = {row.root for row in rows}
    rooted = collective in _ROOTED
    if all(root is not None and root >= 0 for root in roots) if rooted else roots == {-1}:
        return None
    read = ", ".join(sorted("blank" if root is None else str(root) for root in roots))
    return f"the rows read root {read}, which {collective}_perf does not print"


def _size_ratio(rows: list[PerfRow]) -> int | None:
    """size / (count x typesize), when it is the same integer for every row that allows computing it."""
    ratios = set()
    for row in rows:
        width = DTYPE_BYTES.get(row.dtype)
        if width is None or row.count == 0:
            continue
        ratio = row.size_bytes / (row.count * width)
        if ratio != int(ratio):
            return None
        ratios.add(int(ratio))
    return ratios.pop() if len(ratios) == 1 else None


def odd_size_row(rows: list[PerfRow]) -> tuple[PerfRow, float, int] | None:
    """The one row whose ``size / (count x typesize)`` differs from the ratio every other row shares (a
    repeated or mistyped size or count), with its ratio and the others'; None otherwise.

    nccl-tests prints ``count = size / typesize`` divided by the same factor on every row of a run (1, or the
    rank count for the gathering collectives, ``src/*.cu`` ``GetCollByteCount``).
    """
    ratios: list[tuple[PerfRow, float]] = []
    for row in rows:
        width = DTYPE_BYTES.get(row.dtype)
        if width is not None and row.count > 0:
            ratios.append((row, row.size_bytes / (row.count * width)))
    if len(ratios) < 3:
        return None
    counts = Counter(ratio for _, ratio in ratios)
    (common, n_common), *rest = counts.most_common()
    if len(rest) != 1 or rest[0][1] != 1 or common != int(common):
        return None
    row, ratio = next((row, ratio) for row, ratio in ratios if ratio != common)
    return row, ratio, int(common)


def _bus_factor(rows: list[PerfRow]) -> tuple[float, float] | None:
    """busbw / algbw of the fastest row and its uncertainty from printing both to 0.01 GB/s; a busbw printed
    0.00 beside an algbw of 1 GB/s or more is a factor of 0 (a one-rank communicator: nccl-tests' factors
    2(n-1)/n and (n-1)/n are 0 at n = 1, ``src/*.cu`` ``GetBw``)."""
    results = [r for row in rows for r in (row.out_of_place, row.in_place) if r is not None]
    results = [
        r for r in results if math.isfinite(r.algbw_bytes_per_s) and math.isfinite(r.busbw_bytes_per_s)
    ]
    if not results:
        return None
    best = max(results, key=lambda r: r.algbw_bytes_per_s)
    if best.algbw_bytes_per_s < 1e9 or best.busbw_bytes_per_s < 0:
        return None
    factor = best.busbw_bytes_per_s / best.algbw_bytes_per_s
    if factor == 0.0:  # printed 0.00: below 0.005 GB/s
        return 0.0, 0.005e9 / best.algbw_bytes_per_s
    uncertainty = factor * (0.005e9 / best.busbw_bytes_per_s + 0.005e9 / best.algbw_bytes_per_s)
    return factor, uncertainty


def _collective_from_columns(rows: list[PerfRow], columns: Columns, n_ranks: int | None) -> str | None:
    if not rows:
        return None
    if "redop" not in columns.params:
        return _old_broadcast(rows, columns)
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
        if not has_root and n_ranks is not None and n_ranks > 1:
            # the old layout: each test printed its own header until nccl-tests 2.13's resync (51af557,
            # 2022-08-19); only all_reduce and reduce_scatter print a reduction without a root there
            # (print_header of src/*.cu at 9dae3d3: sendrecv prints "size count type", reduce "redop
            # root"), and reduce_scatter's size is n x count x type size on more than one rank
            return "all_reduce"
        factor = _bus_factor(rows)
        if factor is not None and abs(factor[0] - 1.0) > 5 * factor[1] + 0.01:
            return "all_reduce"  # 2(n-1)/n is 1 only at n = 2; sendrecv's factor is always 1
        if factor is not None and abs(factor[0] - 1.0) <= 0.02 and has_root and n_ranks and n_ranks > 2:
            return "sendrecv"  # factor 1 with more than 2 ranks rules out all_reduce
        return "sendrecv" if _in_place_unchecked(rows) else None
    return _unreduced(rows, reducing, (rooted, unrooted), ratio)


def _in_place_unchecked(rows: list[PerfRow]) -> bool:
    """Every row checked out of place (a ``#wrong`` count) and not in place (``N/A``): what sendrecv, alltoall
    and alltoallv print with the data check on (their ``args->reportErrors = in_place ? 0 : 1``, NVIDIA
    nccl-tests ``src/sendrecv.cu``, ``src/alltoall.cu`` since 2021-06; all_reduce checks both halves)."""
    for row in rows:
        out, inp = row.out_of_place, row.in_place
        if out is None or inp is None or out.wrong is None or inp.wrong is not None or inp.error is not None:
            return False
    return bool(rows)


def _unreduced(
    rows: list[PerfRow], reducing: bool, roots: tuple[bool, bool], ratio: int | None
) -> str | None:
    """Broadcast for rows without a reduction, a root and size = count x typesize; alltoall for rows without
    a reduction or root, size = n x count x typesize and the in-place half unchecked (all_gather checks it,
    :func:`_in_place_unchecked`); else None. ``roots``: every row rooted (>= 0), every row unrooted (-1)."""
    rooted, unrooted = roots
    if not reducing and rooted and ratio == 1:
        return "broadcast"
    if not reducing and unrooted and ratio is not None and ratio > 1 and _in_place_unchecked(rows):
        return "alltoall"
    return None  # all_gather vs alltoall with both halves checked or neither, gather vs scatter


def _old_broadcast(rows: list[PerfRow], columns: Columns) -> str | None:
    """Broadcast for the old layout's ``size count type root`` columns (no ``redop``: only broadcast printed a
    root without an operation; reduce printed both, as in microsoft/superbenchmark's nccl_broadcast.log and
    nccl_reduce.log), when a root >= 0 and size = count x typesize say so; else None."""
    rooted = "root" in columns.params and all(row.root is not None and row.root >= 0 for row in rows)
    return "broadcast" if rooted and _size_ratio(rows) == 1 else None


def fitting_collectives(
    rows: list[PerfRow], params: tuple[str, ...], *, old_layout: bool = False
) -> tuple[str, ...]:
    """The collectives whose printed columns the rows fit: the operation (a reduction, ``none`` or blank),
    the root (>= 0 or -1, where printed) and size = count x typesize (1, or n for the gathering ones); in
    the layout before nccl-tests 2.13 (``old_layout``: ``error`` cells), only the binaries that printed
    those columns (:data:`_OLD_PARAMS`) unless a redop column is left blank, which no such binary did.

    >>> from aifabric.discovery.perf_records import PerfRow
    >>> row = PerfRow(2048, 512, "float", "sum", -1, None, None, 1)
    >>> fitting_collectives([row], ("size", "count", "type", "redop", "root"))
    ('all_reduce', 'sendrecv')
    """
    redops = {row.redop for row in rows}
    ratio = _size_ratio(rows)
    out = []
    # a redop column left blank is no v2.11 binary's (microsoft/superbenchmark's alltoall log): all fit
    v211 = old_layout and not ("redop" in params and None in redops)
    printed = _OLD_PARAMS.get(params, frozenset()) if v211 else frozenset(COLLECTIVES)
    for collective in sorted(printed):
        if "redop" in params:
            if redops == {None}:
                redop_ok = collective not in _REDUCING  # hypercube; the old alltoall/all_gather
            else:
                redop_ok = ("none" in redops) != (collective in _REDUCING) and collective != "hypercube"
            if not redop_ok:
                continue
        if "root" in params:
            rooted = all(row.root is not None and row.root >= 0 for row in rows)
            if rooted != (collective in _ROOTED):
                continue
        if ratio is not None and (ratio == 1) == (collective in _SIZE_IS_N_COUNTS):
            continue  # size = count x typesize for one rank of a gathering collective only
        out.append(collective)
    return tuple(out)


def agreed_ranks(rows: list[PerfRow], columns: Columns) -> int | None:
    """The communicator size every collective the rows fit (:func:`fitting_collectives`) implies, when they
    all imply the same one (:func:`ranks_from_rows`); None when they differ, one cannot tell, or none fits.

    Headerless gather or scatter rows (root 0, redop ``none``) fit both: each prints size = n x count x
    typesize (``GetCollByteCount``, nccl-tests ``src/gather.cu``, ``src/scatter.cu``), so the rows give n
    whichever it was. The rows' busbw / algbw must be one candidate's factor at that n (``GetBw``), else the
    numbers contradict each other and n stays unknown.

    >>> from aifabric.discovery.perf_records import PerfRow
    >>> cols = Columns(("size", "count", "type", "redop", "root"), (), ())
    >>> agreed_ranks([PerfRow(1048576, 131072, "float", "none", 0, None, None, 1)], cols)
    2
    """
    fits = fitting_collectives(rows, columns.params, old_layout="error" in columns.names)
    found = {ranks_from_rows(collective, rows) for collective in fits}
    n = found.pop() if len(found) == 1 else None
    if n is None:
        return None
    return n if any(_factor_fits(collective, n, rows) for collective in fits) else None


#: busbw / algbw at n ranks of the binaries whose factor is not (n - 1)/n (nccl-tests ``src/*.cu``
#: ``GetBw``: all_reduce 2(n - 1)/n; hypercube, sendrecv, broadcast and reduce 1).
_BUS_FACTOR: dict[str, Callable[[int], float]] = {
    "all_reduce": lambda n: 2.0 * (n - 1) / n,
    "hypercube": lambda n: 1.0,
    "sendrecv": lambda n: 1.0,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
}


def _factor_fits(collective: str, n: int, rows: list[PerfRow]) -> bool:
    """Whether the rows' busbw / algbw (:func:`_bus_factor`) is ``collective``'s at ``n`` ranks, within
    printing; True where the rows do not show it."""
    measured = _bus_factor(rows)
    if measured is None:
        return True
    expected = _BUS_FACTOR.get(collective, lambda k: (k - 1) / k)(n)
    return abs(measured[0] - expected) <= 5 * measured[1] + 0.01


def ranks_from_rows(collective: str | None, rows: list[PerfRow]) -> int | None:
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
