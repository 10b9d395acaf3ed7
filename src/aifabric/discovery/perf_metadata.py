"""Read what a log says above an nccl-tests table: title, rank lines, run parameters, NCCL version, counts.

Ranks and hosts come, in this order, from the ``# Rank`` lines, the condensed ``Ranks a-b on host`` lines,
the launcher command (``mpirun -np 16 -H a:8,b:8``, ``srun -N 2``) and the title and commentary just above
the table ("2 of the 8 nodes (16 ranks)"); see :class:`aifabric.discovery.nccl_tests.PerfTable`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from aifabric.discovery.perf_records import RankInfo, RunParameters
from aifabric.errors import ParseError

__all__ = [
    "BINARY",
    "Metadata",
    "complete_rank_lines",
    "version_from_code",
    "launcher_line",
    "launcher_per_node",
]

BINARY = re.compile(r"(?<![\w-])([A-Za-z][A-Za-z0-9_]*?)_perf(?:_mpi)?(?![\w-])")
_RANK = re.compile(
    r"^#\s*Rank\s+(\d{1,9})\s+(?:Group\s+(\d{1,9})\s+)?Pid\s+(\d{1,12})\s+on\s+(\S+)\s+"
    r"device\s+(\d{1,9})\s+\[([^\]]*)\]\s*(.*)$"  # the name: not (.*?)\s*$, quadratic on long blank runs
)
_RANKS_LINE = re.compile(r"^#\s*Ranks\s+\d{1,9}\s*-\s*\d{1,9}\s+on\s+\S")
_RANKS_SEGMENT = re.compile(r"[Rr]anks\s+(\d{1,9})\s*-\s*(\d{1,9})\s+on\s+([^\s,;]+)([^;]*)")
_VERSION = re.compile(r"NCCL version\s+(\d{1,4}(?:\.\d{1,6}){1,3})(?:\+cuda(\d{1,4}(?:\.\d{1,4})*))?")
#: ``RCCL version : 2.28.3-gfx1151-rccl:a188cf2`` (rccl-tests with NCCL_DEBUG=VERSION).
_RCCL_VERSION = re.compile(r"^RCCL version\s*:\s*(\d{1,4}(?:\.\d{1,6}){1,3})")
#: ``# nccl-tests version 2.20.0 (b4d5bee) nccl-headers=23102 nccl-library=23102`` (nccl-tests >= 2.14):
#: the library's NCCL_VERSION_CODE.
_LIBRARY_CODE = re.compile(r"\b[nr]ccl-library=(\d{4,6})\b")
_LAUNCHER = re.compile(r"(?<![\w-])(mpirun|mpiexec|srun|orterun)(?![\w-])")
#: Most ranks the rank lines above one table may describe (131,072: above the largest single jobs reported,
#: about 100,000 GPUs). A condensed line ``Ranks 0-N on h`` expands to N objects, so this bounds the cost.
_MAX_RANKS = 1 << 17


@dataclass(frozen=True)
class Metadata:
    """What the lines between the previous table and this one say; see :class:`PerfTable` for the order."""

    title: str | None
    ranks: tuple[RankInfo, ...]
    n_ranks: int | None
    n_nodes: int | None
    gpu_name: str | None
    nccl_version: str | None
    cuda_version: str | None
    parameters: RunParameters | None
    left_out: tuple[str, ...] = ()

    @classmethod
    def read(cls, lines: list[str], boundary: int, stop: int, source: str | None) -> Metadata:
        """Read ``lines[boundary:stop]`` (0-based); ``source`` names the input in errors.

        Raises
        ------
        ParseError
            If a rank line is malformed or repeated, the rank lines name two GPU models or describe too
            many ranks, or one process drives more GPUs than the complete rank lines list.
        """
        title, title_start = _title(lines, boundary, stop)
        region = lines[boundary:stop]
        local_text = " ".join(line.strip() for line in lines[title_start:stop])
        ranks = _rank_lines(region, boundary, source)
        parameters = _run_parameters(region)
        _check_gpus_per_process(region, boundary, parameters, ranks, source)
        command = _launcher_command(region)
        gpus_per_process = (parameters.n_gpus if parameters else None) or _flag(command, "-g") or 1
        threads = (parameters.n_threads if parameters else None) or _flag(command, "-t") or 1
        counted = ranks if complete_rank_lines(ranks) else ()  # a partial copy counts neither
        n_ranks = len(counted) or None
        n_nodes = len({rank.host for rank in counted}) or None
        processes = _launcher_processes(command)
        if n_nodes is None:
            n_nodes = (
                _launcher_nodes(command) or _per_node_nodes(command, processes) or _text_nodes(local_text)
            )
        if n_ranks is None and processes is not None:
            n_ranks = processes * threads * gpus_per_process
        if n_ranks is None and not command:
            n_ranks, n_nodes = _bare_command_counts(region, n_nodes)
        if n_ranks is None:
            n_ranks = _text_ranks(local_text, n_nodes)
        names = {rank.gpu_name for rank in ranks}
        nccl_version, cuda_version = _nccl_version(region)
        return cls(
            title=title,
            ranks=ranks,
            n_ranks=n_ranks,
            n_nodes=n_nodes,
            gpu_name=names.pop() if len(names) == 1 else None,
            nccl_version=nccl_version,
            cuda_version=cuda_version,
            parameters=parameters,
            left_out=_left_out(region, boundary),
        )


#: The line the JSON reader (:mod:`aifabric.discovery.perf_json`) writes for a half it left out.
_LEFT_OUT = re.compile(r'^#\s*nccl-tests JSON:\s*(.+ is "nan" \(not measured\), left out)$')


def _left_out(region: list[str], offset: int) -> tuple[str, ...]:
    """The halves a JSON report held as "nan" and its reader left out, one sentence each naming its line."""
    return tuple(
        f"line {offset + i + 1}: {match.group(1)}"
        for i, line in enumerate(region)
        if "nccl-tests JSON" in line and (match := _LEFT_OUT.match(line.strip()))
    )


def complete_rank_lines(ranks: tuple[RankInfo, ...]) -> bool:
    """True when the rank lines list ranks 0..n-1 with none missing (nccl-tests prints one per rank); a copy
    that kept a few of them (``#  Rank 71 ...`` alone) does not tell the rank or host count."""
    return bool(ranks) and ranks[-1].rank == len(ranks) - 1


def version_from_code(code: int) -> str:
    """The release of an ``NCCL_VERSION_CODE``: X*1000 + Y*100 + Z up to 2.8, X*10000 + Y*100 + Z after
    (NVIDIA/nccl ``src/nccl.h.in``, macro ``NCCL_VERSION``).

    >>> version_from_code(23102), version_from_code(2708), version_from_code(22803)
    ('2.31.2', '2.7.8', '2.28.3')
    """
    major, rest = divmod(code, 10000) if code >= 10000 else divmod(code, 1000)
    return f"{major}.{rest // 100}.{rest % 100}"


def _nccl_version(region: list[str]) -> tuple[str | None, str | None]:
    """(NCCL release, CUDA version) from the last ``NCCL version 2.26.2+cuda12.8`` line of the region, else
    the last ``RCCL version : 2.28.3`` line, else the last ``nccl-library=23102`` code of the nccl-tests
    version line; (None, None) when none is there."""
    found: tuple[str | None, str | None] = (None, None)
    for pattern in (_LIBRARY_CODE, _RCCL_VERSION, _VERSION):  # later patterns take precedence
        for line in region:
            match = pattern.search(line.strip())
            if match is None:
                continue
            if pattern is _LIBRARY_CODE:
                found = (version_from_code(int(match.group(1))), None)
            else:
                found = (match.group(1), match.group(2) if pattern is _VERSION else None)
    return found


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
    seen: dict[int, int] = {}  # rank -> 1-based line of its ``# Rank`` line
    expanded = 0  # RankInfo objects made from condensed lines, repeats included
    models: set[str] = set()  # the GPU model of the rank lines so far (one: a second is refused)
    for i, line in enumerate(region):
        stripped = line.strip()
        match = _RANK.match(stripped)
        if match:
            info = RankInfo(
                rank=int(match.group(1)),
                host=match.group(4),
                device=int(match.group(5)),
                bus_id=match.group(6).strip() or None,
                gpu_name=match.group(7).rstrip() or None,
                pid=int(match.group(3)),
                group=int(match.group(2)) if match.group(2) is not None else None,
            )
            _check_rank_line(info, ranks, seen, models, (offset + i + 1, source))
            models.update((info.gpu_name,) if info.gpu_name is not None else ())
            seen.setdefault(info.rank, offset + i + 1)
            ranks.setdefault(info.rank, info)
        elif _RANKS_LINE.match(stripped):
            infos = _condensed_ranks(stripped, offset + i + 1, source, _MAX_RANKS - expanded)
            expanded += len(infos)
            for info in infos:
                ranks.setdefault(info.rank, info)
    return tuple(ranks[rank] for rank in sorted(ranks))


def _check_gpus_per_process(
    region: list[str],
    offset: int,
    parameters: RunParameters | None,
    ranks: tuple[RankInfo, ...],
    source: str | None,
) -> None:
    """Refuse ``# nThread T nGpus G`` when one process alone (T x G ranks) would drive more ranks than the
    rank lines list, and those lines are complete (ranks 0..n-1: nccl-tests prints one per rank).

    Raises
    ------
    ParseError
        Naming the ``# nThread`` line.
    """
    if parameters is None or not complete_rank_lines(ranks):
        return
    per_process = (parameters.n_threads or 1) * (parameters.n_gpus or 1)
    if per_process <= len(ranks):
        return
    lineno = max(offset + i + 1 for i, line in enumerate(region) if re.match(r"#\s*nThread\s", line.strip()))
    raise ParseError(
        f"nThread {parameters.n_threads} x nGpus {parameters.n_gpus} = {per_process:,} ranks in one process, "
        f"but the rank lines list {len(ranks)}",
        line=lineno,
        source=source,
    )


#: Why one rank number on two hosts: each process ran its own job (nccl-tests #182, #27: the maintainers'
#: answer is to rebuild with MPI=1).
_SEPARATE_JOBS = (
    ", on two hosts: each process ran a job of its own (an nccl-tests build without MPI=1 under mpirun "
    "prints one header per process); rebuild with make MPI=1"
)


def _check_rank_line(
    info: RankInfo,
    ranks: dict[int, RankInfo],
    seen: dict[int, int],
    models: set[str],
    where: tuple[int, str | None],
) -> None:
    """Refuse a ``# Rank`` line at ``where`` (1-based line, source) that repeats an earlier rank with other
    values, or names another GPU model than ``models``, those of the earlier rank lines (nccl-tests prints
    one line per rank, once). Constant work per line: a report of n ranks is read in O(n).

    Raises
    ------
    ParseError
        Naming the line (and for a repeated rank, the earlier one).
    """
    lineno, source = where
    earlier = ranks.get(info.rank)
    if earlier is not None and earlier != info and info.rank in seen:
        apart = bool(earlier.host and info.host) and earlier.host != info.host
        raise ParseError(
            f"rank {info.rank} appears twice, at lines {seen[info.rank]} and {lineno}, with other values"
            + (_SEPARATE_JOBS if apart else ""),
            line=lineno,
            source=source,
        )
    if info.gpu_name is not None and models and info.gpu_name not in models:
        raise ParseError(
            f"GPU model {info.gpu_name!r} of rank {info.rank} differs from the other ranks' "
            f"{sorted(models)[0]!r}: mixed GPU models are not supported",
            line=lineno,
            source=source,
        )


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


def launcher_line(lines: list[str]) -> int | None:
    """0-based index of the last ``mpirun``/``mpiexec``/``srun``/``orterun`` command line in ``lines``, or
    None (a line of a ``\\``-continued command counts where its launcher word is)."""
    found = None
    for index, line in enumerate(lines):
        if _LAUNCHER.search(line) and not line.lstrip().startswith("#"):
            found = index
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


def _bare_command_counts(region: list[str], n_nodes: int | None) -> tuple[int | None, int | None]:
    """(ranks, nodes) of an nccl-tests binary run without a launcher (``./build/sendrecv_perf -g 2``): one
    process on one host driving threads (``-t``) x GPUs per thread (``-g``); (None, ``n_nodes``) when no such
    command line with ``-t`` or ``-g`` is in the region."""
    commands = [line.strip() for line in region if BINARY.search(line) and not line.lstrip().startswith("#")]
    command = commands[-1] if commands else ""
    gpus, threads = _flag(command, "-g"), _flag(command, "-t")
    if gpus is None and threads is None:
        return None, n_nodes
    return (gpus or 1) * (threads or 1), n_nodes or 1


def _flag(command: str, flag: str) -> int | None:
    """Value of an nccl-tests flag (``-g 8``), looked up after the ``*_perf`` binary only."""
    binary = BINARY.search(command)
    if not binary:
        return None
    match = re.search(rf"(?<!\S){flag}\s*(\d{{1,6}})(?!\S)", command[binary.end() :])
    return int(match.group(1)) if match and int(match.group(1)) > 0 else None


def _launcher_options(command: str) -> str:
    """The launcher's part of a command: what comes before the ``*_perf`` binary."""
    binary = BINARY.search(command)
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


#: Processes per node: Open MPI ``--npernode``/``--map-by ppr:N:node`` (and ``-N``, mpirun(1)), srun's
#: ``--ntasks-per-node``, MPICH/Intel MPI ``-ppn``.
_PER_NODE = (
    re.compile(r"(?<!\S)(?:--npernode|-npernode|--ntasks-per-node|-ppn|--ppn)[\s=](\d{1,6})(?!\S)"),
    re.compile(r"(?<!\S)--map-by[\s=]ppr:(\d{1,6}):node(?![\w-])"),
)
_MPIRUN_N = re.compile(r"(?<!\S)-N[\s=]?(\d{1,6})(?!\S)")


def launcher_per_node(command: str) -> int | None:
    """Processes per node a launcher command starts (:data:`_PER_NODE`; mpirun's ``-N``, not srun's, which
    counts nodes), or None.

    >>> launcher_per_node("mpirun -np 16 -N 8 ./all_reduce_perf -g 1"), launcher_per_node("srun -N 2 x")
    (8, None)
    """
    head = _launcher_options(command)
    for pattern in _PER_NODE:
        match = pattern.search(head)
        if match:
            return int(match.group(1)) or None
    match = _MPIRUN_N.search(head)
    if match and "srun" not in head:
        return int(match.group(1)) or None
    return None


def _per_node_nodes(command: str, processes: int | None) -> int | None:
    """Nodes = processes / processes per node, when the launcher gives both and they divide."""
    per_node = launcher_per_node(command)
    if processes is None or per_node is None or processes % per_node:
        return None
    return processes // per_node or None


def _text_nodes(text: str) -> int | None:
    for pattern in (
        r"\b(\d{1,6})\s+of\s+the\s+\d{1,6}\s+nodes\b",
        r"\b(\d{1,6})\s+nodes?(?![\w-])",  # "2 nodes", not "-g 8 node-a:101" (a host name)
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
