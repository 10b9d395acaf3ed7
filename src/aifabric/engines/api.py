"""The front door for timing a collective: :func:`collective_time`.

It accepts a cluster as a :class:`ClusterSpec`, a preset name or a YAML path, a communicator as a rank
count, explicit GPU ids or a :class:`Communicator`, and dispatches to an engine. Every engine declares
the options it takes (:data:`ENGINE_OPTIONS`); anything else is refused, not dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aifabric.cluster.resolve import resolve_cluster
from aifabric.cluster.spec import ClusterSpec
from aifabric.collectives.algorithms import ALGORITHMS, Algorithm, plan_algorithms
from aifabric.collectives.buffers import check_fits_hbm
from aifabric.collectives.communicator import Communicator, resolve_communicator
from aifabric.collectives.ops import Collective
from aifabric.collectives.plan import FIXED_EXCHANGES
from aifabric.engines.formula import formula_collective
from aifabric.engines.result import CollectiveResult

__all__ = ["ENGINES", "ENGINE_OPTIONS", "check_engine_options", "collective_time"]

_TOPOLOGY_OPTIONS = frozenset(
    {"algorithm", "routing", "seed", "qps", "efficiency", "topo", "link_alive", "progress"}
)

#: What each engine understands; anything else is refused, not dropped.
ENGINE_OPTIONS: dict[str, frozenset[str]] = {
    "formula": frozenset(
        {
            "algorithm",
            "protocol",
            "exclude",
            "convention",
            "efficiency",
            "calibration",
            "nccl_version",
            "env",
            "tiers",
            "gpus_per_thread",
            "launch_s_per_gpu",
        }
    ),
    "links": _TOPOLOGY_OPTIONS,
    "flow": _TOPOLOGY_OPTIONS | {"transport"},
}

#: The engines' names.
ENGINES = tuple(ENGINE_OPTIONS)


def check_engine_options(engine: str, options: Sequence[str]) -> None:
    """Refuse an unknown engine, or an option ``engine`` does not take.

    Raises
    ------
    ValueError
        ``engine: unknown engine ...`` or ``<option>: the <engine> engine does not take this option (it
        takes ...)``, naming the first unknown option in alphabetical order.
    """
    try:
        allowed = ENGINE_OPTIONS[engine]
    except KeyError:
        raise ValueError(f"engine: unknown engine {engine!r}; known: {', '.join(ENGINE_OPTIONS)}") from None
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise ValueError(
            f"{unknown[0]}: the {engine} engine does not take this option "
            f"(it takes {', '.join(sorted(allowed))})"
        )


def collective_time(
    op: Collective | str,
    message_bytes: float,
    cluster: ClusterSpec | str | Path,
    *,
    ranks: int | Sequence[int] | Communicator | None = None,
    engine: str = "formula",
    **options: Any,
) -> CollectiveResult:
    """Time one collective of ``message_bytes`` (nccl-tests size convention) on ``cluster``.

    Parameters
    ----------
    op : str or Collective
        ``all_reduce``, ``reduce_scatter``, ``all_gather``, ``all_to_all``, ``broadcast``, ``reduce``,
        ``send_recv``.
    message_bytes : float
        Bytes, > 0.
    cluster : ClusterSpec, preset name or YAML path
    ranks : int, sequence of GPU ids, Communicator, optional
        Default: every GPU.
    engine : {"formula", "links", "flow"}
    **options
        Passed to the engine; :data:`ENGINE_OPTIONS` lists each engine's.

    Raises
    ------
    ConfigError, ValueError
        Bad cluster, communicator, size (one a rank's buffer cannot hold in HBM even in place:
        :func:`aifabric.collectives.buffers.check_fits_hbm`) or option (an option the engine does not
        take, an algorithm with no transfer-level plan on the links/flow engines); the message names it.

    Examples
    --------
    >>> r = collective_time("all_reduce", 1e9, "dgx-h100-superpod", ranks=8)
    >>> r.algorithm
    'nvls'
    """
    check_engine_options(engine, list(options))
    algorithm = options.get("algorithm")
    if algorithm is not None and engine != "formula" and ALGORITHMS[Algorithm.parse(algorithm)].plan is None:
        known = ", ".join(a.value for a in plan_algorithms())
        raise ValueError(
            f"algorithm: {Algorithm.parse(algorithm).value!r} has no transfer-level plan (the {engine} "
            f"engine runs {known}); use --engine formula"
        )
    spec = resolve_cluster(cluster)
    comm = resolve_communicator(spec, ranks)
    if engine == "formula":
        _check_one_tier_route(Collective.parse(op), spec, comm)
        return formula_collective(op, message_bytes, spec, comm, **options)
    if message_bytes > 0:  # a bad size is the engine's to name
        check_fits_hbm(op, message_bytes, comm.n_ranks, spec)
    from aifabric.engines.fabric import fabric_collective  # lazy: scipy.sparse, for CLI start-up time

    return fabric_collective(op, message_bytes, spec, comm, engine=engine, **options)


def _check_one_tier_route(op: Collective, spec: ClusterSpec, comm: Communicator) -> None:
    """Refuse, with the links and flow engines' rule (:func:`~aifabric.engines.fabric.check_one_tier_route`),
    a collective whose fixed transfers (an all_to_all's, a send_recv's) meet on no leaf of a one-tier
    fabric: the formula engine would time a collective the topology cannot carry."""
    if op not in FIXED_EXCHANGES or spec.scale_out is None or spec.scale_out.tiers != 1:
        return
    from aifabric.engines.fabric import check_one_tier_route  # lazy, as above: only a one-tier fabric

    check_one_tier_route(op, spec, comm)
