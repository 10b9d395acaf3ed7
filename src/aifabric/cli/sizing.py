"""The cluster a command runs on, resized by its ``--nodes`` or ``--gpus``, with a size no fabric of the
cluster's switches connects refused under the option the user typed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aifabric.cli.common import options_as_typed
from aifabric.cluster.resolve import resolve_cluster
from aifabric.cluster.spec import ClusterSpec
from aifabric.cluster.tpu_slice import job_slice, single_pod

__all__ = ["job_cluster", "sized_cluster"]


def sized_cluster(
    cluster: ClusterSpec | str | Path, *, nodes: int | None = None, gpus: int | None = None, **changes: Any
) -> ClusterSpec:
    """:func:`~aifabric.cluster.resolve.resolve_cluster`, its refusal of a size that even three Clos tiers
    cannot connect (``scale_out.tiers: 16777216 GPUs need 16384 pods, more than a three-tier Clos of
    radix-64 cores connects (64 pods)``) led by the option that asked for that size (``--nodes 2097152:``)
    rather than a YAML field the cluster may not even name.

    Raises :class:`~aifabric.errors.ConfigError` (a ValueError) for a cluster that does not resolve or a
    size no fabric of its switches connects, one line, the option first when one asked for the size.

    >>> try:
    ...     sized_cluster("h100-ib-2node", nodes=2097152)
    ... except ValueError as err:
    ...     print(str(err).partition(", more")[0])
    --nodes 2097152: 16777216 GPUs need 16384 pods
    """
    asked = f"--nodes {nodes}" if nodes is not None else (f"--gpus {gpus}" if gpus is not None else None)
    with options_as_typed({} if asked is None else {"scale_out.tiers": asked}):
        return resolve_cluster(cluster, nodes=nodes, gpus=gpus, **changes)


def job_cluster(
    cluster: ClusterSpec | str | Path, *, nodes: int | None = None, slice_: str | None = None
) -> tuple[ClusterSpec, str | None]:
    """The cluster a training job runs on and a note for the user, or None: on a one-pod TPU cluster the
    slice that ``--slice`` or ``--nodes`` asks for (the largest slice of a pod that one slice cannot
    hold, with a note; :func:`~aifabric.cluster.tpu_slice.job_slice`), elsewhere :func:`sized_cluster`.

    Raises ConfigError naming ``--slice`` or ``--nodes``.

    >>> spec, note = job_cluster("tpu-v5e-pod", nodes=16)
    >>> spec.n_gpus, spec.scale_up.slice
    (128, (8, 16))
    """
    whole = sized_cluster(cluster)
    if single_pod(whole) or slice_ is not None:
        return job_slice(whole, nodes=nodes, value=slice_)  # off a TPU pod, it refuses --slice
    return (whole if nodes is None else sized_cluster(cluster, nodes=nodes)), None
