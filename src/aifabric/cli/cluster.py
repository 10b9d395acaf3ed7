"""``aifabric cluster``: show a cluster's four networks, ratios, oversubscription, bisection, parts, power."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table

from aifabric.cli.common import CatalogOption, console, emit_json, handle_errors, use_catalog
from aifabric.cluster.presets import list_presets
from aifabric.cluster.resolve import resolve_cluster
from aifabric.cluster.summary import summarize

__all__ = ["cluster_app"]

cluster_app = typer.Typer(help="Describe clusters: presets, networks, parts and power.", no_args_is_help=True)


@cluster_app.command("list")
@handle_errors
def list_cmd(
    json_out: Annotated[bool, typer.Option("--json", help="Machine-readable output")] = False,
) -> None:
    """List the built-in cluster presets: accelerators, count, scale-up domain size."""
    rows: list[dict[str, Any]] = []
    for name in list_presets():
        spec = resolve_cluster(name)
        rows.append(
            {
                "preset": name,
                "accelerators": spec.n_gpus,
                "accelerator": spec.accelerator,
                "scale_up_domain": spec.domain_gpus,
                "description": " ".join(spec.description.split()),
            }
        )
    if json_out:
        emit_json(rows)
        return
    t = Table(show_edge=False)
    for col in ("preset", "accelerators", "accelerator", "scale-up domain"):
        t.add_column(col)
    for r in rows:
        t.add_row(r["preset"], str(r["accelerators"]), r["accelerator"], str(r["scale_up_domain"]))
    console.print(t)


@cluster_app.command("show")
@handle_errors
def show(
    cluster: Annotated[str, typer.Argument(help="Preset name or cluster YAML file")] = "dgx-h100-superpod",
    nodes: Annotated[int | None, typer.Option(help="Resize to this many nodes", min=1)] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Machine-readable output")] = False,
    catalog_files: CatalogOption = None,
) -> None:
    """What a reader of a cluster announcement should ask: bandwidth per GPU of each network and the ratios,
    size of the fast domain, oversubscription, bisection bandwidth, parts and power.

    GB/s = 1e9 bytes/s. "per dir" is one direction; vendors' NVLink figures add both directions.
    """
    use_catalog(catalog_files)
    spec = resolve_cluster(cluster, nodes=nodes)
    s = summarize(spec)
    if json_out:
        emit_json(
            {
                "name": spec.name,
                "gpus": s.n_gpus,
                "nodes": s.n_nodes,
                "scale_up_domain_gpus": s.domain_gpus,
                "networks": [r.__dict__ for r in s.rungs],
                "ratios": s.ratios,
                "oversubscription": s.oversubscription,
                "tiers": s.tiers,
                "bisection_bytes_per_s": s.bisection_bytes_per_s,
                "parts": [p.__dict__ for p in s.inventory.lines],
                "watts": s.inventory.watts_by_network,
            }
        )
        return
    chips = "chips" if spec.accelerator_spec.arch == "tpu" else "GPUs"
    console.print(
        f"[bold]{spec.name}[/]: {s.n_gpus} x {spec.accelerator_spec.name} in {s.n_nodes} nodes; "
        f"fast (scale-up) domain {s.domain_gpus} {chips}"
    )
    if spec.description:
        console.print(spec.description.strip())
    t = Table(title=f"Bandwidth per {chips[:-1]} (GB/s = 1e9 B/s)", show_edge=False)
    for col in (
        "level",
        "network",
        "vendor figure",
        "convention",
        "per dir (GB/s)",
        "1 GB per dir (ms)",
        "note",
    ):
        t.add_column(col)
    for r in s.rungs:
        t.add_row(
            r.level,
            r.network,
            f"{r.documented_bytes_per_s / 1e9:.4g} GB/s",
            r.convention,
            f"{r.per_direction_bytes_per_s / 1e9:.4g}",
            f"{r.time_per_gb_per_direction_s * 1e3:.3g}",
            r.note,
        )
    console.print(t)
    console.print(
        "ratios of per-direction bandwidth: " + ", ".join(f"{a}/{b} = {x:.1f}x" for a, b, x in s.ratios)
    )
    if s.tiers:
        console.print(
            f"scale-out: {s.tiers}-tier "
            f"{'rail-optimised ' if spec.scale_out and spec.scale_out.rail_optimized else ''}Clos, "
            f"{s.planes} plane(s), oversubscription (down:up) "
            f"{', '.join(f'{x:g}:1' for x in s.oversubscription)}; bisection "
            f"{s.bisection_bytes_per_s / 1e12:.2f} TB/s per direction "
            f"({s.bisection_bytes_per_s * 8 / 1e12:.1f} Tb/s)"
        )
    if not s.inventory.lines:
        console.print("parts and power: no switched networks in this description (torus links only)")
        return
    p = Table(title="Parts and power", show_edge=False)
    for col in ("network", "item", "part", "count", "kW"):
        p.add_column(col)
    for line in s.inventory.lines:
        p.add_row(line.network, line.item, line.part, str(line.count), f"{line.watts / 1e3:.1f}")
    console.print(p)
    w = s.inventory.watts_by_network
    console.print(
        "network power: "
        + ", ".join(f"{k} {v / 1e3:.1f} kW" for k, v in w.items())
        + f"; total {s.inventory.total_watts / 1e3:.1f} kW (GPUs and hosts not counted)"
    )
