"""The NCCL environment a logged run used, and what it means for the formula engine.

nccl-tests logs carry their NCCL settings in the launcher command (``mpirun -x NCCL_ALGO=Ring ...``), in
``export NCCL_X=v`` lines, in ``NCCL INFO NCCL_X set by environment to v`` lines and, in our case files, in
the ``=== title ===`` of each table. :func:`nccl_settings` reads only those setting-bearing lines -- never
prose, so a commentary sentence that mentions ``NCCL_NVLS_ENABLE=0`` does not change a prediction -- and
:class:`NcclSettings` maps the ones that steer NCCL's choice of algorithm onto the engine:

================================  ===========================================================================
``NCCL_ALGO=Ring``                ``algorithm="ring"`` (one name forces it)
``NCCL_ALGO=Ring,Tree``           every other algorithm excluded
``NCCL_ALGO=^NVLS``               ``exclude=("nvls",)``
``NCCL_ALGO=allreduce:ring;...``  per-collective prefixes (reference sec. 2.1), resolved for the collective
``NCCL_NVLS_ENABLE=0``            ``exclude=("nvls", "nvls_tree")``
``NCCL_PROTO=Simple``             ``protocols=("Simple",)`` (a list or ``^`` exclusion: the fastest allowed)
================================  ===========================================================================

CollNet and PAT are not modelled; naming them is noted and ignored.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from aifabric.engines.formula import PROTOCOLS

__all__ = ["NcclSettings", "nccl_settings"]

# NCCL_ALGO names (lower case, without separators) -> the engine's algorithms.
_NCCL_ALGOS = {"ring": "ring", "tree": "tree", "nvls": "nvls", "nvlstree": "nvls_tree"}
_UNMODELLED_ALGOS = {"collnet", "collnetdirect", "collnetchain", "pat"}
_ENV = re.compile(r"(?<![\w-])(NCCL_[A-Z0-9_]+)=([^\s'\"]+)")
_ENV_INFO = re.compile(r"(NCCL_[A-Z0-9_]+) set by environment to (\S+)")
_ENV_LINE = re.compile(r"^\s*(?:export\s+)?(?:NCCL_[A-Z0-9_]+=\S+\s*)+$")
_COMMAND = re.compile(
    r"(?<![\w-])(?:mpirun|mpiexec|srun|orterun|[A-Za-z][A-Za-z0-9_]*_perf(?:_mpi)?)(?![\w-])"
)


@dataclass(frozen=True)
class NcclSettings:
    """NCCL environment a run used, and what it means for the engine.

    Attributes
    ----------
    env : dict
        ``NCCL_*`` variables found, name -> value as written.
    algorithm : str or None
        Engine algorithm forced by ``NCCL_ALGO`` (one name).
    exclude : tuple of str
        Engine algorithms ruled out (``NCCL_ALGO`` lists and ``^`` exclusions, ``NCCL_NVLS_ENABLE=0``).
    protocols : tuple of str
        Protocols allowed by ``NCCL_PROTO`` (all three when unset).
    notes : tuple of str
        What was read and how it was mapped, in words.
    """

    env: dict[str, str] = field(default_factory=dict)
    algorithm: str | None = None
    exclude: tuple[str, ...] = ()
    protocols: tuple[str, ...] = PROTOCOLS
    notes: tuple[str, ...] = ()

    @classmethod
    def from_env(cls, env: dict[str, str], op: str | None = None) -> NcclSettings:
        """Map ``NCCL_ALGO``, ``NCCL_PROTO`` and ``NCCL_NVLS_ENABLE`` onto the engine (module docstring).

        Examples
        --------
        >>> s = NcclSettings.from_env({"NCCL_ALGO": "Ring", "NCCL_MIN_CTAS": "24"})
        >>> s.algorithm, s.exclude
        ('ring', ())
        >>> NcclSettings.from_env({"NCCL_NVLS_ENABLE": "0"}).exclude
        ('nvls', 'nvls_tree')
        """
        notes: list[str] = []
        algorithm: str | None = None
        exclude: list[str] = []
        if "NCCL_ALGO" in env:
            algorithm, excluded, note = _map_algo(env["NCCL_ALGO"], op)
            exclude.extend(excluded)
            notes.append(note)
        if env.get("NCCL_NVLS_ENABLE", "").strip() == "0":
            exclude.extend(a for a in ("nvls", "nvls_tree") if a not in exclude)
            notes.append("NCCL_NVLS_ENABLE=0: NVLS and NVLSTree excluded")
        protocols: tuple[str, ...] = PROTOCOLS
        if "NCCL_PROTO" in env:
            protocols, note = _map_proto(env["NCCL_PROTO"])
            notes.append(note)
        return cls(dict(env), algorithm, tuple(exclude), protocols, tuple(notes))


def _names(value: str, op: str | None) -> tuple[bool, list[str]]:
    """``(negated, names)`` of an NCCL_ALGO/NCCL_PROTO value, per-collective prefixes resolved."""
    value = value.strip().strip("'\"")
    if ":" in value:  # per-collective prefixes: "allreduce:ring;allgather:^nvls"
        chosen = ""
        for part in re.split(r"[;]", value):
            key, _, rest = part.partition(":")
            if op is None or key.strip().lower().replace("_", "") == op.replace("_", ""):
                chosen = rest
        value = chosen
    negated = value.startswith("^")
    names = [n.strip().lower().replace("_", "") for n in value.lstrip("^").split(",") if n.strip()]
    return negated, names


def _map_algo(value: str, op: str | None) -> tuple[str | None, list[str], str]:
    negated, names = _names(value, op)
    known = [_NCCL_ALGOS[n] for n in names if n in _NCCL_ALGOS]
    unmodelled = [n for n in names if n in _UNMODELLED_ALGOS]
    note = f"NCCL_ALGO={value}"
    if unmodelled:
        note += f" ({', '.join(unmodelled)} not modelled: ignored)"
    if negated:
        return None, known, note + f": {', '.join(known) or 'nothing modelled'} excluded"
    if len(known) == 1:
        return known[0], [], note + f": predicted with algorithm={known[0]}"
    if known:
        others = [a for a in _NCCL_ALGOS.values() if a not in known]
        return None, others, note + f": {', '.join(others)} excluded"
    return None, [], note + ": no modelled algorithm named; ignored"


def _map_proto(value: str) -> tuple[tuple[str, ...], str]:
    negated, names = _names(value, None)
    by_key = {p.lower(): p for p in PROTOCOLS}
    named = [by_key[n] for n in names if n in by_key]
    allowed = [p for p in PROTOCOLS if (p not in named) == negated] if named else list(PROTOCOLS)
    return tuple(allowed), f"NCCL_PROTO={value}: protocols {', '.join(allowed)}"


def nccl_settings(lines: Sequence[str], title: str | None = None, op: str | None = None) -> NcclSettings:
    """The NCCL settings of one run, read from its title and the lines printed before its table.

    Only setting-bearing lines count: the ``=== title ===``, launcher or ``*_perf`` command lines, bare
    ``NCCL_X=v`` / ``export NCCL_X=v`` lines and ``NCCL INFO NCCL_X set by environment to v`` lines.

    Parameters
    ----------
    lines : sequence of str
        The text between the previous table and this one.
    title : str, optional
        The table's title (:attr:`PerfTable.title`).
    op : str, optional
        The collective (resolves per-collective ``NCCL_ALGO`` prefixes).

    Examples
    --------
    >>> nccl_settings(["mpirun -np 16 -x NCCL_ALGO=Ring all_reduce_perf -b 8"]).algorithm
    'ring'
    >>> nccl_settings(["With NCCL_NVLS_ENABLE=0 the node measured 368.8 GB/s."]).exclude  # prose: ignored
    ()
    """
    env: dict[str, str] = {}
    sources = [title] if title else []
    for line in lines:
        stripped = line.strip()
        is_title = stripped.startswith("===")
        command = not stripped.startswith("#") and _COMMAND.search(stripped) is not None
        if is_title or command or _ENV_LINE.match(stripped):
            sources.append(stripped)
        else:
            info = _ENV_INFO.search(stripped)
            if info:
                env[info.group(1)] = info.group(2)
    for text in sources:
        for match in _ENV.finditer(text):
            value = match.group(2).rstrip(",;)")
            if value:
                env[match.group(1)] = value
    return NcclSettings.from_env(env, op)
