"""The NCCL environment a logged run used, and what it means for the formula engine.

nccl-tests logs carry their NCCL settings in the launcher command (``mpirun -x NCCL_ALGO=Ring ...``), in
``export NCCL_X=v`` lines, in ``NCCL INFO NCCL_X set by environment to v.`` lines (NCCL's closing period
dropped) and, in our case files, in the ``=== title ===`` of each table. :func:`nccl_settings` reads only
those setting-bearing lines -- never prose, so a commentary sentence that mentions ``NCCL_NVLS_ENABLE=0``
does not change a prediction -- and :class:`NcclSettings` maps the ones that steer NCCL's choice of
algorithm onto the engine:

================================  ===========================================================================
``NCCL_ALGO=Ring``                ``algorithm="ring"`` (one name forces it)
``NCCL_ALGO=Ring,Tree``           every other algorithm excluded
``NCCL_ALGO=^NVLS``               ``exclude=("nvls",)``
``NCCL_ALGO=allreduce:ring;...``  per-collective prefixes (NCCL's grammar: catalog.transport.nccl_enabled)
``NCCL_NVLS_ENABLE=0``            ``exclude=("nvls", "nvls_tree")``
``NCCL_PROTO=Simple``             ``protocols=("Simple",)`` (a list or ``^`` exclusion: the fastest allowed)
================================  ===========================================================================

The transport, CollNet, channel and QP variables (:data:`ENGINE_VARIABLES`: ``NCCL_P2P_DISABLE``,
``NCCL_SHM_DISABLE``, ``NCCL_COLLNET_ENABLE``...) go to the engine as its ``env=``
(:attr:`NcclSettings.engine_env`; :func:`aifabric.collectives.nccl_env.env_tiers`). ``NCCL_ALGO=CollNet*``
and PAT are not modelled; naming them is noted and ignored. :func:`setting_lines` says which line each
variable was read from. NCCL's ``N coll channels, N collnet channels, ...`` INFO line is not taken as CollNet
enabled: recent releases print ``comm->nChannels`` in the collnet place whatever CollNet's state
(NVIDIA/nccl ``init.cc``); only ``NCCL_COLLNET_ENABLE`` counts.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from aifabric.catalog.nccl import Algorithm, Collective, Protocol
from aifabric.catalog.transport import nccl_algorithms, nccl_protocols
from aifabric.discovery.nccl_info import Evidence, env_setting
from aifabric.engines.formula import PROTOCOLS
from aifabric.errors import ConfigError

__all__ = ["ENGINE_VARIABLES", "NcclSettings", "nccl_settings", "setting_lines"]

#: Variables passed to the formula engine as its ``env=``: the transports and CollNet
#: (:func:`aifabric.collectives.nccl_env.env_tiers`), channel and QP counts
#: (:func:`aifabric.collectives.tiers.tier_model`). ``NCCL_ALGO``, ``NCCL_PROTO`` and ``NCCL_NVLS_ENABLE`` are
#: mapped onto ``algorithm``, ``exclude`` and ``protocols`` instead.
ENGINE_VARIABLES = (
    "NCCL_P2P_DISABLE",
    "NCCL_P2P_LEVEL",
    "NCCL_SHM_DISABLE",
    "NCCL_NET_GDR_LEVEL",
    "NCCL_COLLNET_ENABLE",
    "NCCL_MIN_NCHANNELS",
    "NCCL_MAX_NCHANNELS",
    "NCCL_IB_QPS_PER_CONNECTION",
)
#: Every variable that changes a prediction (those :meth:`NcclSettings.from_env` maps, and the engine's).
_USED_VARIABLES = ("NCCL_ALGO", "NCCL_PROTO", "NCCL_NVLS_ENABLE", *ENGINE_VARIABLES)

# The engine's algorithms among NCCL's (catalog.nccl.Algorithm values), and those the engine does not model.
_NCCL_ALGOS = ("ring", "tree", "nvls", "nvls_tree")
_UNMODELLED_ALGOS = frozenset({Algorithm.COLLNET_DIRECT, Algorithm.COLLNET_CHAIN, Algorithm.PAT})
_ENV = re.compile(r"(?<![\w-])(NCCL_[A-Z0-9_]+)=([^\s'\"]+)")
# Regexes here run on every line of a log: each is linear (a variable name starts where no name character
# precedes it; an ``NCCL_X=v`` line is checked token by token, not by a nested repetition that backtracks).
_ENV_TOKEN = re.compile(r"NCCL_[A-Z0-9_]+=\S+")
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
    nccl_version : str or None
        The NCCL (or RCCL) release the run used, as the log or the user states it; its tuning tables price
        the run (:func:`aifabric.discovery.release.priced_release`). None: not stated.
    """

    env: dict[str, str] = field(default_factory=dict)
    algorithm: str | None = None
    exclude: tuple[str, ...] = ()
    protocols: tuple[str, ...] = PROTOCOLS
    notes: tuple[str, ...] = ()
    nccl_version: str | None = None

    @property
    def engine_env(self) -> dict[str, str]:
        """The variables of :attr:`env` the engine takes as its ``env=`` (:data:`ENGINE_VARIABLES`)."""
        return {name: value for name, value in self.env.items() if name in ENGINE_VARIABLES}

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
            exclude.extend(a for a in (Algorithm.NVLS.value, Algorithm.NVLS_TREE.value) if a not in exclude)
            notes.append("NCCL_NVLS_ENABLE=0: NVLS and NVLSTree excluded")
        protocols: tuple[str, ...] = PROTOCOLS
        if "NCCL_PROTO" in env:
            protocols, note = _map_proto(env["NCCL_PROTO"])
            notes.append(note)
        return cls(dict(env), algorithm, tuple(exclude), protocols, tuple(notes))


def _collective(op: str | None) -> str:
    """The NCCL collective whose ``NCCL_ALGO``/``NCCL_PROTO`` reading applies to ``op`` (None: all_reduce)."""
    name = (op or "all_reduce").strip().lower()
    return name if name in {c.value for c in Collective} else "all_reduce"


def _map_algo(value: str, op: str | None) -> tuple[str | None, list[str], str]:
    """Engine algorithm forced / excluded by ``NCCL_ALGO`` (NCCL's grammar: :func:`nccl_algorithms`)."""
    note = f"NCCL_ALGO={value}"
    try:
        enabled = nccl_algorithms(value, _collective(op))
    except ConfigError as err:
        return None, [], note + f": not understood ({err}); ignored"
    unmodelled = sorted(a.value for a in enabled & _UNMODELLED_ALGOS)
    if unmodelled and len(unmodelled) < len(_UNMODELLED_ALGOS):
        note += f" ({', '.join(unmodelled)} not modelled: ignored)"
    known = [a for a in _NCCL_ALGOS if Algorithm(a) in enabled]
    if not known:
        return None, [], note + ": no modelled algorithm named; ignored"
    if len(known) == 1:
        return known[0], [], note + f": predicted with algorithm={known[0]}"
    others = [a for a in _NCCL_ALGOS if a not in known]
    return None, others, note + (f": {', '.join(others)} excluded" if others else ": every algorithm allowed")


def _map_proto(value: str) -> tuple[tuple[str, ...], str]:
    try:
        enabled = nccl_protocols(value, "all_reduce")
    except ConfigError as err:
        return PROTOCOLS, f"NCCL_PROTO={value}: not understood ({err}); ignored"
    allowed = tuple(p for p in PROTOCOLS if Protocol(p) in enabled)
    return allowed, f"NCCL_PROTO={value}: protocols {', '.join(allowed)}"


def _is_env_line(stripped: str) -> bool:
    """A line of ``NCCL_X=v`` assignments only, after an optional ``export``."""
    tokens = stripped.split()
    if tokens[:1] == ["export"]:
        tokens = tokens[1:]
    return bool(tokens) and all(_ENV_TOKEN.fullmatch(token) for token in tokens)


def _is_setting_line(stripped: str) -> bool:
    """A line whose ``NCCL_X=v`` counts: a ``=== title ===``, a launcher or ``*_perf`` command, or a line of
    assignments only."""
    command = not stripped.startswith("#") and _COMMAND.search(stripped) is not None
    return stripped.startswith("===") or command or _is_env_line(stripped)


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
        if _is_setting_line(stripped):
            sources.append(stripped)
        else:
            info = env_setting(stripped)
            if info:
                env[info[0]] = info[1]
    for text in sources:
        for match in _ENV.finditer(text):
            value = match.group(2).rstrip(",;)")
            if value:
                env[match.group(1)] = value
    return NcclSettings.from_env(env, op)


def setting_lines(lines: Sequence[str], env: dict[str, str], *, first_line: int = 1) -> dict[str, Evidence]:
    """The line each variable of ``env`` that changes a prediction was read from: the last of ``lines``
    that sets it (``NAME=value`` on a line :func:`nccl_settings` reads, or ``NAME set by environment to
    value``), as :class:`Evidence`; prose that mentions a variable is not a source.

    >>> found = setting_lines(["x", "h:1:1 [0] NCCL INFO NCCL_P2P_DISABLE set by environment to 1"],
    ...                       {"NCCL_P2P_DISABLE": "1", "NCCL_DEBUG": "INFO"}, first_line=10)
    >>> list(found), found["NCCL_P2P_DISABLE"].line
    (['NCCL_P2P_DISABLE'], 11)
    """
    found: dict[str, Evidence] = {}
    wanted = [name for name in env if name in _USED_VARIABLES]
    for number, line in enumerate(lines, start=first_line):
        stripped = line.strip()
        setting = _is_setting_line(stripped)
        for name in wanted:
            if (setting and f"{name}=" in stripped) or f"{name} set by environment" in stripped:
                found[name] = Evidence(number, stripped[:200])
    return found
