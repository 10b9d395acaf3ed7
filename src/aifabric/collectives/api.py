"""The front door for timing a collective: :func:`collective_time`.

It accepts a cluster as a :class:`ClusterSpec`, a preset name or a YAML path, a communicator as a rank
count, explicit GPU ids or a :class:`Communicator`, and dispatches to an engine (``formula`` here; the
``links`` and ``flow`` engines take the real topology).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aifabric.cluster.spec import ClusterSpec
from aifabric.collectives.communicator import Communicator
from aifabric.collectives.ops import Collective
from aifabric.engines.result import CollectiveResult
from aifabric.errors import ConfigError

__all__ = ["ENGINES", "collective_time", "resolve_cluster", "resolve_communicator"]

ENGINES = ("formula", "links", "flow")


def resolve_cluster(
    cluster: ClusterSpec | str | Path, *, nodes: int | None = None, gpus: int | None = None
) -> ClusterSpec:
    """A ClusterSpec from a spec, a preset name or a YAML file path, optionally resized.

    Raises ConfigError for an unknown preset or a file that does not exist.
    """
    from aifabric.cluster.presets import list_presets, preset

    if isinstance(cluster, ClusterSpec):
        spec = cluster
        if gpus is not None:
            return spec.with_changes(gpus=gpus, nodes=None)
        if nodes is not None:
            return spec.with_changes(nodes=nodes, gpus=None)
        return spec
    name = str(cluster)
    if name in list_presets():
        return preset(name, nodes=nodes, gpus=gpus)
    path = Path(name)
    if path.suffix in (".yaml", ".yml") or path.exists():
        if not path.exists():
            raise ConfigError(f"cluster: file {name!r} does not exist")
        spec = ClusterSpec.from_yaml(path)
        return resolve_cluster(spec, nodes=nodes, gpus=gpus) if (nodes or gpus) else spec
    raise ConfigError(f"cluster: {name!r} is neither a preset ({', '.join(list_presets())}) nor a YAML file")


def resolve_communicator(spec: ClusterSpec, ranks: int | Sequence[int] | Communicator | None) -> Communicator:
    """A Communicator from a rank count (first GPUs in order), GPU ids, or None (all GPUs)."""
    if isinstance(ranks, Communicator):
        return ranks
    if ranks is None or isinstance(ranks, int):
        return Communicator.contiguous(spec, ranks)
    return Communicator.from_gpus(spec, list(ranks))


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
        Passed to the engine (``algorithm``, ``protocol``, ``exclude``, ``convention``, ``efficiency``,
        ``calibration`` for ``formula``; ``routing``, ``seed`` ... for the topology engines).

    Raises
    ------
    ConfigError, ValueError
        Bad cluster, communicator, size or option; the message names it.

    Examples
    --------
    >>> r = collective_time("all_reduce", 1e9, "dgx-h100-superpod", ranks=8)
    >>> r.algorithm
    'nvls'
    """
    spec = resolve_cluster(cluster)
    comm = resolve_communicator(spec, ranks)
    if engine == "formula":
        from aifabric.engines.formula import formula_collective

        return formula_collective(op, message_bytes, spec, comm, **options)
    if engine in ("links", "flow"):
        from aifabric.engines.fabric import fabric_collective

        return fabric_collective(op, message_bytes, spec, comm, engine=engine, **options)
    raise ValueError(f"engine: unknown engine {engine!r}; known: {', '.join(ENGINES)}")
