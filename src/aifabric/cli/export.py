"""``aifabric export``: a cluster in another simulator's format (ASTRA-sim, htsim, SimAI).

Exit codes: 0 written; 2 bad input (unknown format or cluster, a cluster the format cannot express, an
output folder that cannot be created), one line on stderr.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from aifabric.cli.common import console, handle_errors
from aifabric.collectives.api import resolve_cluster
from aifabric.interop.export import FORMATS, export_cluster

__all__ = ["export"]


@handle_errors
def export(
    fmt: Annotated[str, typer.Option("--format", help=f"Target: {', '.join(FORMATS)}")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder to write into (created)")],
    cluster: Annotated[
        str, typer.Option("--cluster", "-c", help="Preset name or cluster YAML file")
    ] = "dgx-h100-superpod",
    nodes: Annotated[int | None, typer.Option(help="Resize the cluster to this many nodes", min=1)] = None,
) -> None:
    """Write the cluster for another simulator: astra-sim (analytical network.yml + ns-3 topology.txt),
    htsim (fat-tree cluster.topo + hosts.csv) or simai (topology.txt). Rates per direction; see
    docs/interop.md for each format and its source."""
    spec = resolve_cluster(cluster, nodes=nodes)
    for path in export_cluster(spec, fmt, out):
        console.print(str(path), markup=False, highlight=False)
