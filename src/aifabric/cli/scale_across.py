"""``aifabric scale-across``: an all-reduce over sites kilometres apart and the DP step cost of distance."""

from __future__ import annotations

from typing import Annotated

import typer

from aifabric.cli.common import console, emit_json, handle_errors
from aifabric.collectives.api import resolve_cluster
from aifabric.collectives.scale_across import cross_site_all_reduce
from aifabric.units import format_time, parse_bytes

__all__ = ["scale_across"]


@handle_errors
def scale_across(
    cluster: Annotated[str, typer.Argument(help="Preset name or cluster YAML file")] = "dgx-h100-superpod",
    nodes: Annotated[int | None, typer.Option(help="Resize to this many nodes (all sites)", min=1)] = None,
    sites: Annotated[int, typer.Option(help="Sites the GPUs are split over", min=2)] = 2,
    distance: Annotated[float, typer.Option(help="Fibre distance between sites, km", min=0.001)] = 50.0,
    dci: Annotated[
        str, typer.Option(help="DCI bandwidth per site, one direction, e.g. '100 Tb/s'")
    ] = "100 Tb/s",
    transport: Annotated[
        str, typer.Option(help="DCI transport (catalogue dci): spectrum-xgs, ...")
    ] = "spectrum-xgs",
    message: Annotated[str, typer.Option(help="All-reduce size per GPU, e.g. '140 GB' (gradients)")] = "1 GB",
    json_out: Annotated[bool, typer.Option("--json", help="Machine-readable output")] = False,
) -> None:
    """Hierarchical all-reduce across sites (in-site reduce-scatter, cross-site ring over the DCI with
    5 us/km of fibre, in-site all-gather) and the extra step time of putting DP across the sites."""
    spec = resolve_cluster(cluster, nodes=nodes)
    spec = spec.with_changes(
        sites={"count": sites, "distance_km": distance, "dci_bandwidth": dci, "transport": transport}
    )
    r = cross_site_all_reduce(spec, parse_bytes(message, field="--message"))
    out = {**r.__dict__, "total_s": r.total_s, "dp_step_cost_s": r.dp_step_cost_s}
    if json_out:
        emit_json(out)
        return
    console.print(
        f"{spec.n_gpus} GPUs over {sites} sites {distance:g} km apart ({transport}); DCI {dci} per site = "
        f"{r.dci_oversubscription:.3g}:1 oversubscribed against the site's NICs"
    )
    console.print(
        f"all-reduce {message}: {format_time(r.total_s)} = in-site {format_time(r.in_site_s)} + cross-site "
        f"{format_time(r.cross_s)} (latency {format_time(r.cross_latency_s)}, "
        f"{r.cross_bytes_per_s / 1e9:.3g} GB/s per GPU across)"
    )
    console.print(
        f"in one site it would take {format_time(r.single_site_s)}: DP across the sites costs "
        f"{format_time(r.dp_step_cost_s)} per step"
    )
