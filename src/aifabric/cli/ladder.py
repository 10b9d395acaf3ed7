"""``aifabric ladder``: the bandwidth ladder of a cluster or TPU pod."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from aifabric.cli.common import (
    ClusterOpt,
    cluster_argument,
    console,
    emit_json,
    handle_errors,
    one_cluster,
)
from aifabric.cluster.ladder import bandwidth_ladder
from aifabric.cluster.resolve import resolve_cluster

__all__ = ["ladder"]

#: The cluster when neither the CLUSTER argument nor -c/--cluster names one.
_CLUSTER = "tpu-v5p-pod"


@handle_errors
def ladder(
    cluster_arg: Annotated[str | None, cluster_argument(_CLUSTER)] = None,
    cluster_opt: ClusterOpt = None,
    json_out: Annotated[bool, typer.Option("--json", help="Machine-readable output")] = False,
) -> None:
    """Per level: GB/s per chip as documented and per direction, and the time to move 1 GB at each.

    "1 GB takes" uses the documented figure, as the second seed does (a lower bound where the figure adds
    both directions); the last column uses one direction.
    """
    cluster = one_cluster(cluster_arg, cluster_opt, _CLUSTER)
    spec = resolve_cluster(cluster)
    rungs = bandwidth_ladder(spec)
    if json_out:
        emit_json({"cluster": spec.name, "rungs": [r.__dict__ for r in rungs]})
        return
    t = Table(title=f"Bandwidth ladder of {spec.name} (per chip; GB/s = 1e9 B/s)", show_edge=False)
    for col in (
        "level",
        "documented (GB/s)",
        "convention",
        "per dir (GB/s)",
        "1 GB at documented",
        "1 GB per dir",
        "x slower (documented)",
    ):
        t.add_column(col)
    prev = None
    for r in rungs:
        step = f"{prev / r.documented_bytes_per_s:.1f}x" if prev else ""
        t.add_row(
            r.level,
            f"{r.documented_bytes_per_s / 1e9:,.2f}",
            r.convention,
            f"{r.per_direction_bytes_per_s / 1e9:,.2f}",
            f"{r.time_per_gb_s * 1e3:.3g} ms",
            f"{r.time_per_gb_per_direction_s * 1e3:.3g} ms",
            step,
        )
        prev = r.documented_bytes_per_s
    console.print(t)
