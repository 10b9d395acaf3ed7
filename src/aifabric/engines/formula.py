"""The ``formula`` engine: closed-form alpha-beta timing per tier, the way NCCL's tuner models it.

For every (algorithm, protocol) that applies to a collective (:mod:`aifabric.collectives.algorithms`),
the algorithm's cost function gives a latency and bandwidth seconds per network from the cluster's tiers
(:mod:`aifabric.collectives.tiers`); the fastest is chosen, as NCCL's ``ncclTopoGetAlgoTime`` does
(NVIDIA/nccl 2.30.7 ``src/graph/tuning.cc``, restated in ``reference/nccl-cost-model.md`` sec. 2).
Textbook algorithms NCCL never picks by itself (``hierarchical``, ``flat_ring``) are timed only when
asked for.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from functools import cache
from operator import attrgetter
from typing import Any, NamedTuple

from aifabric.catalog.loader import catalog_generation
from aifabric.catalog.nccl import ring_backup
from aifabric.cluster.spec import ClusterSpec
from aifabric.cluster.tpu_slice import default_run
from aifabric.collectives.algorithms import (
    ALGORITHMS,
    Algorithm,
    AlgorithmSpec,
    Cost,
    applicable,
    collnet_release_note,
    release_note,
)
from aifabric.collectives.buffers import check_fits_hbm
from aifabric.collectives.communicator import Communicator
from aifabric.collectives.cost import SCALE_OUT, SCALE_UP
from aifabric.collectives.nccl_env import (
    EnvChoice,
    TransportTiers,
    check_env,
    env_choice,
    env_tiers,
    plugin_env,
    plugin_note,
)
from aifabric.collectives.ofi_tuner import ofi_tuner_note, ofi_tuner_pick
from aifabric.collectives.ops import Collective, busbw_factor
from aifabric.collectives.tiers import Protocol, TierModel, parse_protocol, tier_model
from aifabric.engines.host_launch import with_host_floor
from aifabric.engines.one_rank import one_rank_result
from aifabric.engines.result import Candidate, CollectiveResult, assemble, bottleneck
from aifabric.errors import ConfigError

__all__ = ["PROTOCOLS", "TierModel", "check_forced_algorithm", "formula_collective", "tier_model"]

#: NCCL's protocol names, in NCCL's column order.
PROTOCOLS = tuple(p.value for p in Protocol)


_COLLNET = frozenset({Algorithm.COLLNET_DIRECT, Algorithm.COLLNET_CHAIN})

#: The sort key of candidates: ``Cost.tuner_time_s`` (a C getter, not a lambda per candidate).
_TUNER_TIME = attrgetter("tuner_time_s")
#: The sort key of the next best: ``Cost.time_s``, the time the product predicts.
_TIME = attrgetter("time_s")


def _protocols(
    entry: AlgorithmSpec, tm: TierModel, forced: Protocol | None, allowed: frozenset[Protocol] | None
) -> tuple[Protocol, ...]:
    """The protocols ``entry`` runs with on this cluster, among those ``NCCL_PROTO`` allows (``allowed``;
    None: NCCL_PROTO does not name this collective). NCCL enables LL128 by default only on NVLink-class paths
    (not over PCIe, SHM or NET inside a node); a protocol list that names the collective, or a forced
    protocol, states LL128 on or off and NCCL runs what is stated (tuning.cc: the rule is applied only
    while ``pEnable == 2``, NCCL's default, v2.18.1-1 to v2.30.7-1), and before v2.27 only on the compute
    capabilities the release lists (no Blackwell to v2.24, not B300/GB300's 10.3 in v2.25-v2.26). RCCL turns
    LL128 on by default only on the architectures its release lists (:attr:`TierModel.ll128_default`:
    gfx90a, not gfx942)."""
    pci = (tm.intra_kind in ("pci", "net") or not tm.ll128_default) and allowed is None
    out = _protocols_of(entry.algorithm, tm.efficiency == "nccl", pci, forced)
    return out if allowed is None else tuple(p for p in out if p in allowed)


def _runs(
    entries: list[AlgorithmSpec],
    tm: TierModel,
    forced: Protocol | None,
    allowed: frozenset[Protocol] | None,
    excluded: frozenset[Algorithm],
    op: Collective,
) -> tuple[tuple[AlgorithmSpec, Protocol], ...]:
    """The (algorithm, protocol) pairs to time: ``entries`` less ``excluded``, each with its
    :func:`_protocols`; an entry ``asked_only`` for ``op`` only when no other is left
    (:attr:`AlgorithmSpec.asked_only`)."""
    runs = tuple(
        (e, p) for e in entries if e.algorithm not in excluded for p in _protocols(e, tm, forced, allowed)
    )
    unasked = tuple(r for r in runs if op not in r[0].asked_only)
    return unasked or runs


@cache
def _protocols_of(
    algorithm: Algorithm, nccl: bool, pci: bool, forced: Protocol | None
) -> tuple[Protocol, ...]:
    wanted = [forced] if forced is not None else (list(Protocol) if nccl else [Protocol.SIMPLE])
    allowed = ALGORITHMS[algorithm].protocols
    default_off = pci and forced is None  # LL128 off by NCCL's default only: a forced protocol is stated
    return tuple(p for p in wanted if p in allowed and not (p is Protocol.LL128 and default_off))


#: Names of the enums' members (a dict lookup: faster than ``.value`` in the hot path of planners).
_ALGO_NAME = {a: a.value for a in Algorithm}
_PROTO_NAME = {p: p.value for p in Protocol}
#: ``ring/LL``... for every (algorithm, protocol): the explanation names up to four per call.
_PAIR_NAME = {(a, p): f"{a.value}/{p.value}" for a in Algorithm for p in Protocol}
#: Whether NCCL runs each algorithm (``AlgorithmSpec.nccl``): hierarchical and flat_ring are aifabric's.
_NCCL_RUNS = {a: spec.nccl for a, spec in ALGORITHMS.items()}


def _nic_rate_note(spec: ClusterSpec, tm: TierModel, comm: Communicator, best: Cost) -> str | None:
    """Why the scale-out runs below its NICs' own rate when the network sets the time: leaf ports slower
    than the NIC train its links down (:attr:`~aifabric.cluster.spec.ClusterSpec.nic_negotiated_note`), or
    the GPU's own PCIe link bounds them (:attr:`~aifabric.cluster.spec.ClusterSpec.nic_host_link_note`)."""
    if comm.n_domains <= 1 or best.bottleneck != SCALE_OUT:
        return None
    # Optimisation: the note depends on the spec alone, so it is kept in the tier model's memo with the
    # spec it was built from (held, so that its id cannot be reused while the entry lives).
    kept = tm.memo(("nic_rate_note", id(spec)), lambda: (spec, _nic_rate_text(spec, tm)))
    return kept[1] if kept[0] is spec else _nic_rate_text(spec, tm)


def _nic_rate_text(spec: ClusterSpec, tm: TierModel) -> str | None:
    """The sentences of :func:`_nic_rate_note`: the leaf's slower ports, the GPU's PCIe link."""
    host = spec.nic_host_link_note if tm.nic_own_bytes_per_s > tm.nic_host_link_bytes_per_s else None
    return "; ".join(n for n in (spec.nic_negotiated_note, host) if n) or None


def _pick(evals: list[Cost], forced: bool) -> Cost:
    """What the library runs: an algorithm that preempts its tuner where it has a cost (RCCL's MSCCL
    kernels), else the fastest NCCL algorithm (any algorithm when one was forced); ``evals`` fastest
    first."""
    if not forced:
        preempting = next((e for e in evals if ALGORITHMS[e.algorithm].preempts), None)
        if preempting is not None:
            return preempting
        for e in evals:
            if ALGORITHMS[e.algorithm].nccl:
                return e
    return evals[0]


def formula_collective(
    op: Collective | str,
    message_bytes: float,
    spec: ClusterSpec,
    comm: Communicator | None = None,
    *,
    algorithm: Algorithm | str | None = None,
    protocol: Protocol | str | None = None,
    exclude: tuple[Algorithm | str, ...] = (),
    convention: str = "per_direction",
    efficiency: str = "nccl",
    calibration: Any | None = None,
    nccl_version: str | None = None,
    env: Mapping[str, str] | None = None,
    tiers: TierModel | None = None,
    hbm_check: bool = True,
    gpus_per_thread: int = 1,
    launch_s_per_gpu: float = 0.0,
) -> CollectiveResult:
    """Time one collective with the formula engine (see the module docstring).

    Parameters
    ----------
    op : Collective or str
    message_bytes : float
        Size in bytes, as nccl-tests counts it (:mod:`aifabric.collectives.ops`). Must be > 0.
    spec : ClusterSpec
    comm : Communicator, optional
        Default: every GPU of the cluster; on a TPU pod larger than its largest slice (v5p: 8,960 chips, a
        slice at most 16x16x24) the largest slice, as the CLI runs it
        (:func:`aifabric.cluster.tpu_slice.default_run`); send_recv on a TPU: two neighbouring chips.
    algorithm, protocol : str, optional
        Force one (like ``NCCL_ALGO`` / ``NCCL_PROTO``); default: the fastest.
    exclude : tuple of str
        Algorithms not to consider (``("nvls",)`` is ``NCCL_NVLS_ENABLE=0``).
    convention, efficiency, calibration, nccl_version
        See :func:`aifabric.collectives.tiers.tier_model` (``nccl_version``: the NCCL release whose tuning
        tables apply; default the newest recorded).
    env : mapping, optional
        NCCL environment variables (:data:`aifabric.collectives.nccl_env.MODELLED_VARIABLES`):
        ``NCCL_ALGO`` / ``NCCL_PROTO`` restrict the choice as NCCL does (an ``NCCL_ALGO`` that leaves the
        collective nothing runs ring where that release does, :func:`~aifabric.catalog.nccl.ring_backup`,
        and is refused elsewhere, as NCCL fails), ``NCCL_NVLS_ENABLE=0`` disables
        NVLS and NVLS-tree, ``NCCL_COLLNET_ENABLE=1`` allows CollNet on SHARP switches;
        ``NCCL_P2P_DISABLE``, ``NCCL_P2P_LEVEL``, ``NCCL_SHM_DISABLE`` and ``NCCL_NET_GDR_LEVEL`` choose the
        transports (:func:`aifabric.collectives.nccl_env.env_tiers`), ``NCCL_MIN/MAX_NCHANNELS`` and
        ``NCCL_IB_QPS_PER_CONNECTION`` go to :func:`~aifabric.collectives.tiers.tier_model`; others are
        refused.
    tiers : TierModel, optional
        Precomputed tier model (planners reuse one across calls).
    hbm_check : bool
        True (default): refuse a size whose buffer a rank cannot hold in HBM even in place, as the
        ``collective`` command does (:func:`aifabric.collectives.buffers.check_fits_hbm`). False: time the
        size as one logical message (the lesson's 140 GB gradient of a 70B model on 80 GB GPUs, which
        frameworks all-reduce in buckets; training layouts, whose memory the training model checks itself).
    gpus_per_thread, launch_s_per_gpu : int, float
        GPUs one host thread drives (nccl-tests ``-g``; default 1, a thread per GPU) and the host's cost of
        one GPU's enqueue and kernel launch, seconds (default 0: no floor). With several GPUs per thread the
        time is at least ``gpus_per_thread x launch_s_per_gpu``, as NCCL >= 2.9 launches each GPU's kernel
        in turn (:mod:`aifabric.engines.host_launch`; NCCL <= 2.8 launched them in one call: pass 1).
        Those GPUs' ranks share one process
        (:meth:`~aifabric.collectives.communicator.Communicator.in_processes_of`), which turns RCCL's MSCCL
        kernels off.

    Returns
    -------
    CollectiveResult

    Raises
    ------
    ValueError
        If ``message_bytes <= 0``, or the algorithm/protocol is unknown or not applicable.
    ConfigError
        If ``hbm_check`` and a rank's buffer cannot fit one accelerator's HBM even in place, the
        communicator spans several scale-up
        domains of a cluster without NICs, or ``env`` holds a variable not modelled or a bad value.

    Examples
    --------
    8 x H100 in one node, 4 GiB all_reduce: NVLS, busbw ~ 478 GB/s (case 01 measured 473.6):

    >>> from aifabric.cluster.presets import preset
    >>> r = formula_collective("all_reduce", 2**32, preset("h100-ib-2node", nodes=1))
    >>> r.algorithm, round(r.busbw_bytes_per_s / 1e9)
    ('nvls', 478)
    """
    op = Collective.parse(op)
    if not message_bytes > 0 or message_bytes != message_bytes or message_bytes == float("inf"):
        raise ValueError(f"size: message size must be > 0 bytes, got {message_bytes!r}")
    if comm is None:  # the CLI's default run: a TPU pod above its largest slice runs on that slice
        spec, ranks, _ = default_run(spec, pair=op is Collective.SEND_RECV)
        comm = Communicator.contiguous(spec, ranks)
    comm = comm.in_processes_of(gpus_per_thread)  # -g N: N ranks to a process (RCCL's MSCCL needs one)
    if hbm_check:
        check_fits_hbm(op, message_bytes, comm.n_ranks, spec)
    user_env = env
    plain = _plain_transports(spec, env, tiers, convention, efficiency, calibration, nccl_version)
    if plain is None:  # the user's environment, aws-ofi-nccl's beneath it, or a calibration
        tier_args = (tiers, convention, efficiency, calibration, nccl_version)
        options = _env_options(env, spec, op, tier_args, (algorithm, protocol, exclude))
        env, transports, forced, proto, excluded, allowed = options
    else:
        env, transports, allowed = None, plain, None
        forced, proto, excluded = _picks(algorithm, protocol, exclude)
    tm = transports.tiers
    if (not transports.gdr or not tm.net_ll128) and comm.n_domains > 1:  # tuning.cc typeInter (TierModel)
        allowed = (frozenset(Protocol) if allowed is None else allowed) - {Protocol.LL128}
    n = comm.n_ranks
    if n == 1:
        one = one_rank_result(
            op, message_bytes, spec, convention=f"{tm.convention}/{tm.efficiency}", engine="formula"
        )
        return with_host_floor(one, gpus_per_thread, launch_s_per_gpu, ranks_per_node=1)
    entries = tm.memo(("applicable", op, comm.shape), lambda: applicable(op, comm, tm))
    if forced is not None:
        entries = [_forced_entry(forced, op, entries, tm)]
    if comm.n_domains > 1 and tm.nic_bytes_per_s <= 0:
        raise ConfigError(
            "scale_out: the communicator spans several scale-up domains but the cluster has no NIC"
        )
    key = ("runs", op, comm.shape, forced, proto, allowed, excluded)
    runs = tm.memo(key, lambda: _runs(entries, tm, proto, allowed, excluded, op))
    evals = [c for e, p in runs if (c := e.cost(op, p, message_bytes, comm, tm)) is not None]
    backup = None
    if forced is None and env and "NCCL_ALGO" in env and not any(_NCCL_RUNS[e.algorithm] for e in evals):
        ring, backup = _ring_backup(op, message_bytes, comm, tm, entries, proto, allowed, env["NCCL_ALGO"])
        evals = ring or evals
    if forced is None and env and "NCCL_ALGO" in env:  # before "nothing left": NCCL_ALGO is the cause
        _check_nccl_algo_runs(env["NCCL_ALGO"], op, entries, evals, tm)
    if not evals:
        raise ValueError(_nothing_left(op, forced, proto, allowed, env))
    evals.sort(key=_TUNER_TIME)  # NCCL picks on its tuner's times (Cost.tuner_time_s)
    best = _pick(evals, forced is not None)
    unused = backup or (_collnet_unused(op, tm, evals) if forced is None else None)
    first = [transports.note if comm.n_ranks > 1 else None, unused]
    notes = _closing_notes(first, best, evals, (op, message_bytes, comm), spec, tm, user_env)
    result = _result(op, message_bytes, comm, tm, best, evals, notes)
    return with_host_floor(result, gpus_per_thread, launch_s_per_gpu, ranks_per_node=comm.ranks_per_node)


def _closing_notes(
    first: list[str | None],
    best: Cost,
    evals: list[Cost],
    call: tuple[Collective, float, Communicator],
    spec: ClusterSpec,
    tm: TierModel,
    user_env: Mapping[str, str] | None,
) -> list[str]:
    """The notes closing the explanation of ``call`` (collective, size, communicator): ``first`` (the
    transports, an unused CollNet or ring backup), then aws-ofi-nccl's region tuner
    (:func:`~aifabric.collectives.ofi_tuner.ofi_tuner_note`), what the network plugin or its image set
    (:func:`~aifabric.collectives.nccl_env.plugin_note`) and the NICs' rate (:func:`_nic_rate_note`);
    those that apply, in that order."""
    op, size, comm = call
    tuner = ofi_tuner_note(ofi_tuner_pick(spec, tm, op, size, comm, evals, user_env), comm, best)
    plugin = plugin_note(spec, tm, best.algorithm, user_env, call=(size, comm))
    return [s for s in (*first, tuner, plugin, _nic_rate_note(spec, tm, comm, best)) if s]


#: NCCL's ring in the registry: ring for all_reduce / all_gather / reduce_scatter, a chain for
#: broadcast / reduce (NCCL's ring algorithm, pipelined along the ring).
_NCCL_RING = (Algorithm.RING, Algorithm.CHAIN)


def _ring_backup(
    op: Collective,
    message_bytes: float,
    comm: Communicator,
    tm: TierModel,
    entries: list[AlgorithmSpec],
    proto: Protocol | None,
    allowed: frozenset[Protocol] | None,
    algo_env: str,
) -> tuple[list[Cost], str | None]:
    """NCCL's ring backup when ``NCCL_ALGO`` leaves ``op`` no algorithm that runs here: the ring costs
    and the note saying why, on releases that run ring then (:func:`~aifabric.catalog.nccl.ring_backup`);
    ``([], None)`` on the others, whose NCCL fails ("no algorithm/protocol available").

    Source: NCCL v2.19.1-v2.23.4 ``src/graph/tuning.cc`` ncclTopoTuneModel: when every (algorithm,
    protocol) of a collective has zero bandwidth after ``algoEnable``, "at least set ring algo
    available": ``bandwidths[c][RING][p] = ringbdw[c][p]`` for every protocol, the tuner then times ring
    as usual; v2.17-v2.18: "Never disable ring for non-allreduce operations". The protocols kept are
    those ``NCCL_PROTO`` allows (2.22.3 on zero ``ringbdw`` of a disabled protocol; 2.19-2.21 restored
    those too, not modelled).
    """
    if not ring_backup(tm.release, all_reduce=op is Collective.ALL_REDUCE):
        return [], None
    ring = [e for e in entries if e.algorithm in _NCCL_RING]
    runs = _runs(ring, tm, proto, allowed, frozenset(), op)
    evals = [c for e, p in runs if (c := e.cost(op, p, message_bytes, comm, tm)) is not None]
    version = tm.nccl_version or tm.release.version
    why = "'at least set ring algo available'" if tm.release.ring_backup == "any" else "'Never disable ring'"
    hint = _collnet_hint(op, tm) if "collnet" in algo_env.lower() else ""
    note = (
        f"NCCL_ALGO={algo_env} leaves {op.value} no algorithm here{hint}; so NCCL {version} runs ring "
        f"instead (tuning.cc: {why})"
    )
    return evals, note


#: The most calls :func:`_plain_transports` keeps.
_PLAIN_KEPT = 64
_plain: dict[Hashable, tuple[tuple[ClusterSpec, TierModel | None], TransportTiers | None]] = {}


def _plain_transports(
    spec: ClusterSpec,
    env: Mapping[str, str] | None,
    tiers: TierModel | None,
    convention: str,
    efficiency: str,
    calibration: Any | None,
    nccl_version: str | None,
) -> TransportTiers | None:
    """The transports, and tier model, of a call without an NCCL environment or a calibration
    (:func:`_call_tiers`, :func:`_env_transports`); None for a call with either (a calibration may be a
    mutable object) or where the cluster's aws-ofi-nccl sets a variable
    (:func:`~aifabric.collectives.nccl_env.plugin_env`): those calls read their environment.

    Optimisation: the three are pure for one catalogue (:func:`~aifabric.catalog.loader.catalog_generation`)
    and the spec and tier model are frozen, so a call is found again by their identity and its options
    (both kept with the answer, so that their ids stay theirs): ~6 us of a call at 32,768 GPUs.
    """
    if env or calibration is not None:
        return None
    key = (catalog_generation(), id(spec), id(tiers), convention, efficiency, nccl_version)
    hit = _plain.get(key)
    if hit is not None:
        return hit[1]
    transports = None
    if plugin_env(None, spec, nccl_version) is None:
        tm = _call_tiers(spec, None, tiers, convention, efficiency, None, nccl_version)
        transports = _env_transports(None, spec, tm)
    if len(_plain) >= _PLAIN_KEPT:
        _plain.clear()
    _plain[key] = ((spec, tiers), transports)
    return transports


class _Options(NamedTuple):
    """A call's options as resolved (:func:`_env_options`): its NCCL environment with aws-ofi-nccl's
    beneath it (None: none), the transports and tier model it runs on, the algorithm and protocol forced,
    the algorithms excluded (the caller's and the environment's) and the protocols the environment leaves
    (None: all)."""

    env: Mapping[str, str] | None
    transports: TransportTiers
    forced: Algorithm | None
    proto: Protocol | None
    excluded: frozenset[Algorithm]
    allowed: frozenset[Protocol] | None


def _picks(
    algorithm: Algorithm | str | None, protocol: Protocol | str | None, exclude: tuple[Algorithm | str, ...]
) -> tuple[Algorithm | None, Protocol | None, frozenset[Algorithm]]:
    """The algorithm and protocol a call forces (None: the fastest) and the algorithms it excludes, read."""
    forced = None if algorithm is None else Algorithm.parse(algorithm)
    proto = None if protocol is None else parse_protocol(protocol)
    return forced, proto, frozenset([Algorithm.parse(a) for a in exclude])


#: A call's ``tiers``, ``convention``, ``efficiency``, ``calibration`` and ``nccl_version``, as given.
_TierArgs = tuple[TierModel | None, str, str, Any | None, str | None]
#: A call's ``algorithm``, ``protocol`` and ``exclude``, as given.
_Picks = tuple[Algorithm | str | None, Protocol | str | None, tuple[Algorithm | str, ...]]
#: The most calls :func:`_env_options` keeps.
_ENV_KEPT = 256
_env_kept: dict[Hashable, tuple[tuple[ClusterSpec, TierModel | None], _Options]] = {}


def _env_options(
    env: Mapping[str, str] | None, spec: ClusterSpec, op: Collective, tier_args: _TierArgs, picks: _Picks
) -> _Options:
    """The options of a call that reads its NCCL environment (:func:`_read_options`).

    Optimisation: reading, checking and resolving the environment cost a call ~7 us at 32,768 GPUs
    (:func:`~aifabric.collectives.nccl_env.env_choice`, :func:`_call_tiers`,
    :func:`~aifabric.collectives.nccl_env.check_env`, :func:`_env_transports`, which hashes the spec).
    They are pure for one catalogue (:func:`~aifabric.catalog.loader.catalog_generation`), the spec and tier
    model are frozen and what they return is frozen, so a call is found again by the identity of its spec
    and tier model (kept with the answer, so that their ids stay theirs), its collective, its environment's
    (name, value type, value) in order (``1 == True``, but ``str(True)`` is no NCCL flag) and its other
    options. Only answers are kept: a refused call is read, and refused, again; a call with a calibration
    (possibly a mutable object) or a value that cannot be hashed is read each time.
    """
    tiers, calibration = tier_args[0], tier_args[3]
    if calibration is not None:
        return _read_options(env, spec, op, tier_args, picks)
    try:
        items = None if env is None else tuple([(name, type(value), value) for name, value in env.items()])
        key = (catalog_generation(), id(spec), id(tiers), op, items, tier_args[1:], picks)
        hit = _env_kept.get(key)
    except TypeError:  # a value that cannot be hashed (the reading names a bad one)
        return _read_options(env, spec, op, tier_args, picks)
    if hit is not None:
        return hit[1]
    options = _read_options(env, spec, op, tier_args, picks)
    if len(_env_kept) >= _ENV_KEPT:
        _env_kept.clear()
    _env_kept[key] = ((spec, tiers), options)
    return options


def _read_options(
    env: Mapping[str, str] | None, spec: ClusterSpec, op: Collective, tier_args: _TierArgs, picks: _Picks
) -> _Options:
    """The options of a call that reads its NCCL environment ``env`` (arguments as :func:`_env_options`):
    aws-ofi-nccl's settings beneath the user's (:func:`~aifabric.collectives.nccl_env.plugin_env`), the
    choice it leaves ``op`` and the tier model it shapes (:func:`_call_tiers`), checked against the forced
    algorithm and protocol (:func:`~aifabric.collectives.nccl_env.check_env`), and the transports it
    selects (:func:`_env_transports`); the environment kept is a copy, read only.
    """
    tiers, convention, efficiency, calibration, nccl_version = tier_args
    env = plugin_env(env, spec, nccl_version)
    choice = env_choice(env, op) if env else None
    tm = _call_tiers(spec, choice, tiers, convention, efficiency, calibration, nccl_version)
    forced, proto, excluded = _picks(*picks)
    if env:
        check_env(env, spec, op, tm, algorithm=forced, protocol=proto, excluded=excluded)
    allowed = None
    if choice is not None:
        excluded |= choice.disabled
        allowed = choice.protocols
    transports = _env_transports(env, spec, tm)
    return _Options(None if env is None else dict(env), transports, forced, proto, excluded, allowed)


def _call_tiers(
    spec: ClusterSpec,
    choice: EnvChoice | None,
    tiers: TierModel | None,
    convention: str,
    efficiency: str,
    calibration: Any | None,
    nccl_version: str | None,
) -> TierModel:
    """The tier model a call runs on: ``tiers`` when given, else :func:`tier_model` of ``spec`` with the
    environment's ``NCCL_MIN/MAX_NCHANNELS`` and ``NCCL_IB_QPS_PER_CONNECTION`` (``choice``).

    Raises ConfigError when ``tiers`` is given with those variables, which shape the tier model.
    """
    if tiers is not None and choice is not None and choice.shapes_tiers:
        raise ConfigError(
            "env: NCCL_MIN/MAX_NCHANNELS, NCCL_IB_QPS_PER_CONNECTION and the NVLS chunk sizes shape the tier "
            "model; pass them "
            "without a precomputed tiers="
        )
    return tiers or tier_model(
        spec,
        convention=convention,
        efficiency=efficiency,
        calibration=calibration,
        nccl_version=nccl_version,
        min_nchannels=choice.min_nchannels if choice else None,
        max_nchannels=choice.max_nchannels if choice else None,
        ib_qps_per_connection=choice.ib_qps_per_connection if choice else None,
        nvls_chunks=choice.nvls_chunks if choice else (None, None),
    )


def _check_nccl_algo_runs(
    nccl_algo: str, op: Collective, entries: list[AlgorithmSpec], evals: list[Cost], tm: TierModel
) -> None:
    """Refuse an ``NCCL_ALGO`` that leaves no NCCL algorithm among the costed runs ``evals`` (NCCL would
    fail the call): ConfigError naming the variable, its value and the NCCL algorithms of ``entries`` that
    do run ``op`` (with the CollNet hint when the value names CollNet)."""
    if any(ALGORITHMS[e.algorithm].nccl for e in evals):
        return
    nccl_runs = sorted({e.algorithm.value for e in entries if e.nccl})
    raise ConfigError(
        f"NCCL_ALGO={nccl_algo}: no algorithm it enables runs {op.value} here (NCCL would fail); "
        f"NCCL algorithms that do: {', '.join(nccl_runs) or 'none'}"
        + (_collnet_hint(op, tm) if "collnet" in nccl_algo.lower() else "")
    )


def _env_transports(env: Mapping[str, str] | None, spec: ClusterSpec, tm: TierModel) -> TransportTiers:
    """The transports ``env`` selects (:func:`~aifabric.collectives.nccl_env.env_tiers`), computed once per
    tier model and environment (``env_tiers`` is pure, so the memo is exact)."""
    if not env:
        return env_tiers(None, spec, tm)
    env_key = ("env_tiers", frozenset(env.items()), spec, catalog_generation())
    return tm.memo(env_key, lambda: env_tiers(env, spec, tm))


def check_forced_algorithm(
    op: Collective | str, algorithm: Algorithm | str, spec: ClusterSpec, comm: Communicator
) -> None:
    """Refuse an algorithm forced on ``op`` that does not apply to ``comm`` on ``spec``, as the formula
    engine does (:func:`_forced_entry`: the NCCL release's note, else the algorithms that apply), so that
    the links and flow engines refuse it with the same line before building a plan.

    Raises ValueError ``algorithm: 'hierarchical' does not apply to all_reduce ...; possible: ring``.
    """
    op = Collective.parse(op)
    tm = tier_model(spec)
    _forced_entry(Algorithm.parse(algorithm), op, applicable(op, comm, tm), tm)


def _nothing_left(
    op: Collective,
    forced: Algorithm | None,
    proto: Protocol | None,
    allowed: frozenset[Protocol] | None,
    env: Mapping[str, str] | None,
) -> str:
    """The one line refusing a call that leaves no algorithm/protocol: it names what the user gave that
    removed them (``--algo`` / ``--proto``, else ``NCCL_PROTO`` and the protocols it and the transports
    leave, else ``NCCL_ALGO``)."""
    asked = [f"--algo {forced.value}"] if forced else []
    asked += [f"--proto {proto.value}"] if proto else []
    if asked:
        return f"{' '.join(asked)}: no algorithm/protocol left for {op.value} with these choices"
    env = env or {}
    left = ", ".join(sorted(p.value for p in allowed)) if allowed is not None else "all"
    for name in ("NCCL_PROTO", "NCCL_ALGO"):
        if name in env:
            # tuning.cc: no LL128 across nodes without GPUDirect RDMA, the one protocol the model removes
            gdr = "; LL128 runs across nodes only with GPUDirect RDMA" if not left else ""
            return (
                f"{name}={env[name]}: no algorithm/protocol left for {op.value} (protocols left: "
                f"{left or 'none'}{gdr})"
            )
    return f"algorithm: no algorithm/protocol left for {op.value} (protocols left: {left or 'none'})"


def _forced_entry(
    forced: Algorithm, op: Collective, entries: list[AlgorithmSpec], tm: TierModel
) -> AlgorithmSpec:
    """The registry entry of an algorithm the user forced.

    Raises
    ------
    ValueError
        If ``forced`` is not among the ``entries`` applicable to ``op`` here: the release's note when its
        NCCL release lacks it, else the algorithms that do apply.
    """
    if forced not in {e.algorithm for e in entries}:
        note = release_note(forced, op, tm) if op in ALGORITHMS[forced].ops else None
        if note is not None:
            raise ValueError(note)
        possible = ", ".join(e.algorithm.value for e in entries)
        raise ValueError(
            f"algorithm: {forced.value!r} does not apply to {op.value} on this communicator; possible: "
            f"{possible}"
        )
    return ALGORITHMS[forced]


def _collnet_hint(op: Collective, tm: TierModel) -> str:
    """Why an ``NCCL_ALGO`` naming CollNet leaves nothing to run: CollNet off, or off on this release."""
    if not tm.collnet:
        return "; CollNet needs NCCL_COLLNET_ENABLE=1"
    note = collnet_release_note(op, tm)
    return "" if note is None else f"; CollNet: {note.removeprefix('algorithm: ')}"


def _collnet_unused(op: Collective, tm: TierModel, evals: list[Cost]) -> str | None:
    """A note for ``NCCL_COLLNET_ENABLE=1`` on a release without CollNet for ``op`` (NCCL then runs
    another algorithm without saying so), or None."""
    if not tm.collnet or any(e.algorithm in _COLLNET for e in evals):
        return None
    note = collnet_release_note(op, tm)
    return (
        None
        if note is None
        else f"NCCL_COLLNET_ENABLE=1 has no effect here: {note.removeprefix('algorithm: ')}"
    )


def _next_best(best: Cost, evals: list[Cost], n: int = 3) -> list[tuple[tuple[Algorithm, Protocol], Cost]]:
    """The ``n`` fastest (algorithm, protocol) pairs other than ``best``'s, fastest first, each once at its
    fastest cost: several costs of one pair (e.g. ring/Simple over both NIC paths) name it once.

    ``evals`` may come in NCCL's tuner order (``Cost.tuner_time_s``); they are ranked here on ``time_s``,
    the time the explanation prints.
    """
    seen = {best[:2]}  # Optimisation: a Cost's first two fields, (algorithm, protocol), in one slice
    out: list[tuple[tuple[Algorithm, Protocol], Cost]] = []
    for e in sorted(evals, key=_TIME):
        pair = e[:2]
        if pair not in seen:
            seen.add(pair)
            out.append((pair, e))
            if len(out) == n:
                break
    return out


def _explanation(best: Cost, evals: list[Cost]) -> str:
    """Why ``best``, its latency and bandwidth seconds, and the next best pairs with their times.

    When ``best`` is NCCL's pick, the next best are NCCL algorithms; faster algorithms NCCL does not run
    (hierarchical) are named apart, with the option that forces them.
    """
    nccl = _NCCL_RUNS[best.algorithm]
    ranked = [e for e in evals if _NCCL_RUNS[e.algorithm]] if nccl else evals
    runners_up = _next_best(best, ranked)
    others = [f"{_PAIR_NAME[pair]} {e.time_s * 1e6:.1f} us" for pair, e in runners_up]
    faster = [e for e in evals if nccl and not _NCCL_RUNS[e.algorithm] and e.time_s < best.time_s]
    unrun = [
        f"{_PAIR_NAME[pair]} {e.time_s * 1e6:.1f} us (force it with --algo {pair[0].value})"
        for pair, e in (_next_best(best, faster) if faster else ())
    ]
    return (
        f"{_PAIR_NAME[best.algorithm, best.protocol]}: {best.why}; latency "
        f"{best.latency_s * 1e6:.1f} us + bandwidth {sum(best.bandwidth_s.values()) * 1e6:.1f} us"
        + (f". Next best: {', '.join(others)}" if others else "")
        + _tuner_blind(best, [e for _, e in runners_up] if nccl else [])
        + (f". Faster but not run by NCCL: {', '.join(unrun)}" if unrun else "")
    )


def _tuner_blind(best: Cost, runners_up: list[Cost]) -> str:
    """Why NCCL's pick ``best`` stands though a runner-up it also runs is faster: its tuner prices ``best``
    below them, blind to what ``best`` pays that its tables do not hold (the NVLS pipeline fill) or pricing
    a runner-up above what it runs at (one-domain NVLS on its own NVLS graph, whose why says how).

    NCCL picks on ``ncclTopoGetAlgoTime`` (src/graph/tuning.cc, v2.26.2-1): ``lat * latCount + nBytes /
    (1000 * bw)``, with no pipeline fill term; ``Cost.tuner_time_s`` is that price. Empty when no runner-up
    is faster.
    """
    faster = [e for e in runners_up if e.time_s < best.time_s and best.tuner_time_s <= e.tuner_time_s]
    if not faster:
        return ""
    names = ", ".join(f"{_PAIR_NAME[e.algorithm, e.protocol]} {e.tuner_time_s * 1e6:.1f} us" for e in faster)
    unseen = best.time_s - best.tuner_time_s
    blind = [f"does not see the pipeline fill ({unseen * 1e6:.1f} us)"] if unseen > 0 else []
    blind += [
        f"prices {_PAIR_NAME[e.algorithm, e.protocol]} above the {e.time_s * 1e6:.1f} us it runs in ({e.why})"
        for e in faster
        if e.tuner_time_s > e.time_s
    ]
    return (
        f". NCCL runs {_PAIR_NAME[best.algorithm, best.protocol]} though it is slower: NCCL's tuner prices "
        f"it at {best.tuner_time_s * 1e6:.1f} us (below {names}); the tuner (ncclTopoGetAlgoTime, tuning.cc) "
        + "; it ".join(blind or ["prices them on its own tables"])
    )


def _result(
    op: Collective,
    message_bytes: float,
    comm: Communicator,
    tm: TierModel,
    best: Cost,
    evals: list[Cost],
    notes: list[str],
) -> CollectiveResult:
    """The :class:`CollectiveResult` of ``best`` among ``evals`` (fastest first), ``notes`` closing its
    explanation, then the tables an unrecorded release is priced with (README: "the assumptions name the
    tables used").

    Optimisation: the result and its candidates are built with :func:`~aifabric.engines.result.assemble`
    and :meth:`~aifabric.engines.result.Candidate.of` (a result and ~10 candidates per call: with the
    generated ``__init__`` they were the largest share of a call's time), the notes joined here rather
    than by a copy of the result.
    """
    n = comm.n_ranks
    t = best.time_s
    algbw = message_bytes / t if t > 0 else math.inf
    nets = dict(best.bandwidth_s)
    if best.latency_s > 0:
        inter = SCALE_OUT if comm.n_domains > 1 else SCALE_UP
        nets[inter] = nets.get(inter, 0.0) + best.latency_s
    candidates = tuple(
        [
            Candidate.of(_ALGO_NAME[e.algorithm], _PROTO_NAME[e.protocol], e.time_s, _NCCL_RUNS[e.algorithm])
            for e in evals
        ]
    )
    values = {
        "op": op.value,
        "message_bytes": float(message_bytes),
        "n_ranks": n,
        "algorithm": _ALGO_NAME[best.algorithm],
        "protocol": _PROTO_NAME[best.protocol],
        "time_s": t,
        "latency_s": best.latency_s,
        "algbw_bytes_per_s": algbw,
        "busbw_bytes_per_s": algbw * busbw_factor(op, n),
        "network_time_s": nets,
        "bottleneck": bottleneck(best.bottleneck, best.latency_s, t),
        "explanation": ". ".join([_explanation(best, evals), *notes, *tm.tables_notes]),
        "candidates": candidates,
        "convention": f"{tm.convention}/{tm.efficiency}",
        "engine": "formula",
        "extra": {},
    }
    return assemble(CollectiveResult, values)
