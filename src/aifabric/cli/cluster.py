"""``aifabric cluster``: show a cluster's four networks, ratios, oversubscription, bisection, parts, power."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table

from aifabric.cli.common import (
    CatalogOption,
    ClusterOpt,
    cluster_argument,
    console,
    devices,
    emit_json,
    handle_errors,
    literal,
    one_cluster,
    use_catalog,
)
from aifabric.cli.sizing import sized_cluster
from aifabric.cluster.headlines import format_figure, headlines
from aifabric.cluster.power import compute_power_gap, optics_whatif
from aifabric.cluster.presets import list_presets
from aifabric.cluster.resolve import resolve_cluster
from aifabric.cluster.spec import AccessFabricSpec, ClusterSpec
from aifabric.cluster.summary import ClusterSummary, summarize
from aifabric.errors import ConfigError
from aifabric.storage.paths import storage_network

__all__ = ["cluster_app"]

#: The cluster of ``show`` and ``mgmt`` when neither the CLUSTER argument nor -c/--cluster names one.
_CLUSTER = "dgx-h100-superpod"

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
        t.add_row(str(r["preset"]), str(r["accelerators"]), str(r["accelerator"]), str(r["scale_up_domain"]))
    console.print(t)


@cluster_app.command("show")
@handle_errors
def show(
    cluster_arg: Annotated[str | None, cluster_argument(_CLUSTER)] = None,
    cluster_opt: ClusterOpt = None,
    nodes: Annotated[int | None, typer.Option(help="Resize to this many nodes", min=1)] = None,
    tiers: Annotated[int | None, typer.Option(help="Scale-out tiers (1-3)", min=1, max=3)] = None,
    oversubscription: Annotated[
        str | None,
        typer.Option(
            help="Down:up ratio per tier boundary, leaf first, comma-separated: '2:1' or '1:1,7:1' ('1:2' "
            "undersubscribes)"
        ),
    ] = None,
    pod_gpus: Annotated[int | None, typer.Option(help="Cap on GPUs per three-tier pod (zone)", min=1)] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Machine-readable output")] = False,
    catalog_files: CatalogOption = None,
) -> None:
    """What a reader of a cluster announcement should ask: which network each headline number belongs to,
    bandwidth per GPU of each network and the ratios, size of the fast domain, oversubscription asked and
    built at every tier, bisection bandwidth, parts and whole-cluster power with the optics share.

    GB/s = 1e9 bytes/s. "per dir" is one direction; vendors' NVLink figures add both directions. A ratio the
    Clos cannot build to 1% exits with code 2 naming the nearest buildable ratios.
    """
    use_catalog(catalog_files)
    cluster = one_cluster(cluster_arg, cluster_opt, _CLUSTER)
    changes: dict[str, Any] = {}
    if tiers is not None:
        changes["scale_out.tiers"] = tiers
    if oversubscription is not None:
        changes["scale_out.oversubscription"] = [x.strip() for x in oversubscription.split(",")]
    if pod_gpus is not None:
        changes["scale_out.pod_gpus"] = pod_gpus
    if changes and resolve_cluster(cluster).scale_out is None:
        raise ConfigError(f"--tiers/--oversubscription/--pod-gpus: {cluster} has no scale-out fabric")
    spec = sized_cluster(cluster, nodes=nodes, **changes)
    s = summarize(spec)
    if json_out:
        emit_json(_summary_json(spec, s))
        return
    noun = spec.accelerator_spec.device_noun
    console.print(
        f"[bold]{literal(spec.name)}[/]: {s.n_gpus} x {literal(spec.accelerator_spec.name)} "
        f"in {s.n_nodes} nodes; "
        f"fast (scale-up) domain {s.domain_gpus} {noun}s",
        markup=True,
    )
    if spec.description:
        console.print(spec.description.strip())
    _print_bandwidths(s, noun)
    _print_fabric(spec, s)
    if not s.inventory.lines:
        console.print("parts and power: no switched networks in this description (torus links only)")
    else:
        _print_power(s)
    gap = compute_power_gap(spec)
    if gap is not None:
        console.print(f"compute power (chips, hosts): {literal(gap)}")


def _summary_json(spec: ClusterSpec, s: ClusterSummary) -> dict[str, Any]:
    """The ``--json`` document of a cluster summary (bandwidths in bytes/s per direction, power in W)."""
    return {
        "name": spec.name,
        "gpus": s.n_gpus,
        "nodes": s.n_nodes,
        "scale_up_domain_gpus": s.domain_gpus,
        "networks": [r.__dict__ for r in s.rungs],
        "ratios": s.ratios,
        "oversubscription": s.oversubscription,
        "realised_oversubscription": s.realised_oversubscription,
        "requested_bisection_bytes_per_s": s.requested_bisection_bytes_per_s,
        "tiers": s.tiers,
        "scale_out_built": bool(s.tiers) or s.dragonfly is not None,
        "dragonfly": _dragonfly_json(s),
        "front_end_oversubscription": spec.front_end.oversubscription if spec.front_end else None,
        "storage_network": storage_network(spec),
        "bisection_bytes_per_s": s.bisection_bytes_per_s,
        "headlines": [h.__dict__ for h in headlines(s)],
        "parts": [p.__dict__ for p in s.inventory.lines],
        "watts": s.inventory.watts_by_network,
        "compute_watts": s.power.compute_watts if s.power else 0.0,
        "total_watts": s.power.total_watts if s.power else s.inventory.total_watts,
        "optics_watts": s.inventory.optics_watts,
        "optics_share": s.power.optics_share if s.power else 0.0,
        "compute_power_gap": compute_power_gap(spec),
    }


def _print_bandwidths(s: ClusterSummary, noun: str) -> None:
    """The headline numbers with their networks, the bandwidth per accelerator of each network, the ratios;
    each part called ``noun`` (:func:`~aifabric.cli.common.devices`: "chip" on a TPU)."""
    h = Table(title="Headline numbers and the network each belongs to", show_edge=False)
    for col in ("figure", "value", "network", "what it is"):
        h.add_column(col)
    for x in headlines(s):
        h.add_row(devices(x.name, noun), format_figure(x.value, x.kind), x.network, devices(x.note, noun))
    console.print(h)
    t = Table(title=f"Bandwidth per {noun} (GB/s = 1e9 B/s)", show_edge=False)
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


def _one_switch(spec: ClusterSpec, s: ClusterSummary) -> str:
    """The clause of a one-tier Clos that is one switch (no rail leaves: every NIC port of a plane fits
    one leaf, :meth:`ClusterSpec._one_switch_tier`), else ""."""
    so = spec.scale_out
    if s.tiers != 1 or so is None or so.rail_optimized or not spec.one_leaf_holds_ports:
        return ""
    return (
        f" on one switch ({spec.endpoint_ports} NIC ports of a plane fit one leaf; rail_optimized: true "
        "gives a leaf per rail)"
    )


def _print_fabric(spec: ClusterSpec, s: ClusterSummary) -> None:
    """The scale-out Clos (tiers, oversubscription asked and built, bisection) or dragonfly, and the
    front-end."""
    if s.dragonfly is not None:
        console.print(_dragonfly_line(s))
    elif s.tiers:
        rail = "rail-optimised " if spec.scale_out and spec.scale_out.rail_optimized else ""
        console.print(
            f"scale-out: {s.tiers}-tier {rail}Clos{_one_pod(spec, s.tiers)}{_one_switch(spec, s)}, "
            f"{s.planes} plane(s); "
            f"{_oversubscription_clause(s)}; "
            f"bisection {s.bisection_bytes_per_s / 1e12:.2f} TB/s per direction "
            f"({s.bisection_bytes_per_s * 8 / 1e12:.1f} Tb/s), "
            f"{s.bisection_bytes_per_s / s.requested_bisection_bytes_per_s:.3f} x the requested "
            f"{s.requested_bisection_bytes_per_s / 1e12:.2f} TB/s"
        )
    elif spec.scale_out is not None and spec.scale_up.kind != "torus":
        console.print(
            f"scale-out: not built: one scale-up domain ({spec.n_nodes} node(s)) sends nothing across it "
            f"and its Clos cannot be built as asked, so no leaf; its {spec.n_nodes * spec.nics_per_node} "
            "NICs are listed (collectives run on the scale-up network alone)"
        )
    for note in (spec.nic_negotiated_note, spec.nic_host_link_note):
        if note is not None:
            console.print(f"scale-out: {note}")
    fe = spec.front_end
    route = storage_network(spec)
    if fe is not None and fe.nics_per_node:
        carries = (
            "storage and checkpoint traffic share the leaf uplinks"
            if route == "front-end"
            else f"storage and checkpoint traffic cross the {route} network"
        )
        console.print(
            f"front-end: {fe.nics_per_node} x {literal(fe.nic)} per node; leaf oversubscription (down:up) "
            f"{fe.oversubscription:g}:1 ({carries})"
        )
    for network, fabric in (("storage", spec.storage_fabric), ("in-band", spec.inband_management)):
        if fabric is not None:
            console.print(_access_line(network, fabric, spec.storage_appliance_ports))


def _access_line(network: str, fabric: AccessFabricSpec, appliance_ports: int) -> str:
    """One line on a storage or in-band network: ports per node, homing, leaf ratio, appliances' ports."""
    homing = f"dual-homed over {fabric.groups} leaf groups" if fabric.dual_homed else "one leaf group"
    line = (
        f"{network}: {fabric.ports_per_node} x {literal(fabric.nic)} port(s) per node at "
        f"{fabric.speed_bytes_per_s * 8 / 1e9:g} Gb/s on {literal(fabric.switch)}, {homing}; leaf "
        f"oversubscription (down:up) {fabric.oversubscription:g}:1"
    )
    if network == "storage":
        line += (
            f"; {appliance_ports} storage appliance port(s) on its leaves; checkpoints and data loading "
            "cross it"
        )
    return line


def _print_power(s: ClusterSummary) -> None:
    """Parts and power per network, the whole cluster's power with the optics share, and the optics
    what-ifs (co-packaged, linear pluggables)."""
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
        + f"; networks {s.inventory.total_watts / 1e3:.1f} kW"
    )
    if s.power is not None and s.power.compute:
        console.print(
            "cluster power: "
            + ", ".join(f"{line.item} {line.watts / 1e3:.1f} kW" for line in s.power.compute)
            + f"; total {s.power.total_watts / 1e3:.1f} kW; optics {s.power.optics_watts / 1e3:.1f} kW "
            f"= {s.power.optics_share * 100:.1f}% of the total"
        )
    for tech, label in (("cpo", "co-packaged optics at the switches"), ("lpo", "linear pluggables")):
        wi = optics_whatif(s.inventory, tech)
        if wi.watts_before:
            console.print(
                f"what-if {label}: optics {wi.watts_before / 1e3:.1f} -> {wi.watts_after / 1e3:.1f} kW "
                f"(saves {wi.saved_watts / 1e3:.1f} kW), "
                f"lasers {wi.lasers_before:,} -> {wi.lasers_after:,.0f}"
            )


def _dragonfly_line(s: ClusterSummary) -> str:
    """The dragonfly's parameters, counts, global taper and bisection, one line."""
    d = s.dragonfly
    assert d is not None
    return (
        f"scale-out: dragonfly of {d.g} group(s) x {d.a} switches (p={d.p} endpoints, a-1={d.a - 1} local, "
        f"h={d.h} global ports per switch of {d.radix}); {d.local_links} local and {d.global_links} global "
        f"links ({d.links_per_arc} per pair of groups); global taper (down:up) {d.oversubscription:.3g}:1 "
        f"under {d.routing} routing; bisection {s.bisection_bytes_per_s / 1e12:.2f} TB/s per direction "
        f"({s.bisection_bytes_per_s * 8 / 1e12:.1f} Tb/s)"
    )


def _dragonfly_json(s: ClusterSummary) -> dict[str, Any] | None:
    """The dragonfly's parameters and counts for ``--json`` (None for a Clos)."""
    d = s.dragonfly
    if d is None:
        return None
    return {name: getattr(d, name) for name in _DRAGONFLY_JSON}


#: The :class:`~aifabric.cluster.dragonfly.DragonflyShape` fields and counts ``--json`` gives, in order.
_DRAGONFLY_JSON = (
    "p",
    "a",
    "h",
    "g",
    "switches",
    "local_links",
    "global_links",
    "links_per_arc",
    "bisection_links",
    "routing",
    "oversubscription",
)


def _oversubscription_clause(s: ClusterSummary) -> str:
    """The down:up ratio asked and built at each tier boundary, leaf first; a one-tier fabric has no
    uplinks (its leaves are the whole fabric), so no ratio, and says so."""
    per_tier = ", ".join(
        f"{name} {want:g}:1 asked, {got:.3g}:1 built"
        for name, want, got in zip(
            ("leaf", "spine"), s.oversubscription, s.realised_oversubscription, strict=False
        )
    )
    return (
        f"oversubscription (down:up) {per_tier}" if per_tier else "one tier: no uplinks, no oversubscription"
    )


def _one_pod(spec: ClusterSpec, built_tiers: int) -> str:
    asked = spec.scale_out.tiers if spec.scale_out else 0
    return f" (asked {asked} tiers; it fits one pod, so no core tier)" if asked > built_tiers else ""


@cluster_app.command("mgmt")
@handle_errors
def mgmt(
    cluster_arg: Annotated[str | None, cluster_argument(_CLUSTER)] = None,
    cluster_opt: ClusterOpt = None,
    nodes: Annotated[int | None, typer.Option(help="Resize to this many nodes", min=1)] = None,
    fail: Annotated[
        list[str] | None,
        typer.Option(
            help="Failed devices, KIND:INDEX or KIND:*, comma-separated or repeated (leaf, spine, core, "
            "host, mgmt-rack, mgmt-agg, bmc)"
        ),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Machine-readable output")] = False,
    catalog_files: CatalogOption = None,
) -> None:
    """The out-of-band management network: BMC ports, rack and aggregation switches, watts, and which BMCs
    the management servers still reach when --fail devices are down."""
    from aifabric.cluster.inventory import fabric_switches, inventory
    from aifabric.cluster.management import management_reachability
    from aifabric.cluster.topology import build_topology

    use_catalog(catalog_files)
    spec = sized_cluster(one_cluster(cluster_arg, cluster_opt, _CLUSTER), nodes=nodes)
    topo = build_topology(spec)
    rep = management_reachability(topo, fail or (), fabric_switches(topo))
    watts = inventory(topo).watts_by_network.get("management", 0.0)
    sh = rep.shape
    if json_out:
        emit_json(
            {
                "bmc_ports": sh.bmc_ports,
                "managed_ports": sh.managed_ports,
                "ports_by_kind": dict(sh.ports_by_kind),
                "racks": sh.racks,
                "rack_switches": sh.rack_switches,
                "infra_switches": sh.infra_switches,
                "aggregation_switches": sh.aggregation_switches,
                "watts": watts,
                "failed": len(rep.failed),
                "reachable_bmcs": rep.reachable_bmcs,
                "unreachable_nodes": list(rep.unreachable_bmcs),
            }
        )
        return
    console.print(
        f"management: {sh.managed_ports} managed ports in {sh.racks} racks on {sh.rack_switches} rack "
        f"switches + {sh.infra_switches} management-rack switches + {sh.aggregation_switches} aggregation "
        "switches, "
        f"{watts / 1e3:.1f} kW"
    )
    console.print("  " + ", ".join(f"{n} {kind}" for kind, n in sh.ports_by_kind))
    console.print(
        f"with {len(rep.failed)} device(s) failed: {rep.reachable_bmcs} of {sh.bmc_ports} BMCs reachable"
        + (f"; lost: nodes {_ranges(rep.unreachable_bmcs)}" if rep.unreachable_bmcs else "")
    )


def _ranges(ids: tuple[int, ...]) -> str:
    out: list[str] = []
    start = prev = ids[0]
    for i in ids[1:] + (-2,):
        if i != prev + 1:
            out.append(str(start) if start == prev else f"{start}-{prev}")
            start = i
        prev = i
    return ", ".join(out)
