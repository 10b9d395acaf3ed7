"""``aifabric export``: a cluster in another simulator's format (ASTRA-sim, htsim, SimAI).

Exit codes: 0 written; 2 bad input (unknown format or cluster, a cluster the format cannot express, an
output folder that cannot be created, an option the format does not use, a connection matrix above the
memory limit), one line on stderr.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from aifabric.cli.common import CommandClusterOpt, console, handle_errors
from aifabric.cli.sizing import sized_cluster
from aifabric.errors import ConfigError
from aifabric.interop.export import FORMATS, export_cluster
from aifabric.units import one_size

__all__ = ["export"]


@handle_errors
def export(
    fmt: Annotated[str, typer.Option("--format", help=f"Target: {', '.join(FORMATS)}")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder to write into (created)")],
    cluster: CommandClusterOpt = "dgx-h100-superpod",
    nodes: Annotated[int | None, typer.Option(help="Resize the cluster to this many nodes", min=1)] = None,
    collective: Annotated[
        str | None,
        typer.Option(help="htsim only: also write this collective over every GPU as collective.cm"),
    ] = None,
    size: Annotated[
        str | None,
        typer.Option(
            "--size", "-s", help="--collective only: its size (nccl-tests convention) [default: 1 GiB]"
        ),
    ] = None,
) -> None:
    """Write the cluster for another simulator: astra-sim (analytical network.yml + ns-3 topology.txt),
    htsim (fat-tree cluster.topo + hosts.csv, and --collective as collective.cm) or simai (topology.txt).
    Rates per direction; see docs/interop.md for each format and its source."""
    if size is not None and collective is None:
        raise ConfigError(f"--size: only --collective (--format htsim) takes a size; --format {fmt} does not")
    spec = sized_cluster(cluster, nodes=nodes)
    message_bytes = one_size(size or "1 GiB", "--size") if collective is not None else None
    for path in export_cluster(spec, fmt, out, collective=collective, message_bytes=message_bytes):
        console.print(str(path), markup=False, highlight=False)
