"""The out-of-band management network as a graph: BMC ports on their own switches, reachability on failures.

Wiring (NVIDIA DGX SuperPOD H100 reference architecture, "Out-of-Band Management Network"): every node's BMC
port goes to its rack's management switch (1 GbE); every rack switch has one uplink to each of two
aggregation switches; the management servers hang off both aggregation switches. Beyond what one
aggregation switch's ports take, each of the two redundant aggregation planes grows to
``ceil(rack switches / (ports - 1))`` switches, one port of each kept for its link to the management
servers (the RA's 127 nodes need one per plane; 100,000 GPUs on 64-port SN4600C need 50 per plane).
Every managed device takes its management port on the OOB network, not only the nodes' BMCs (H100 RA: the
OOB fabric "connects the management ports of all devices including DGX and management servers, storage,
networking gear, rack PDUs, and all other devices"). :data:`MANAGED_KINDS` lists them: the ones that sit in a
compute rack (BMCs, rack PDUs, power shelves, NVLink switch trays) share its rack switches; the others (every
switch of every fabric, management and UFM servers, storage appliances, the aggregation switches) sit in
management racks on ``ceil(ports / (switch ports - 1))`` rack switches of their own, uplinked like the rest.
Each OOB switch's own management port takes one port of a rack switch (``ports - 1`` per switch).
``devices: bmc`` keeps the nodes' BMCs alone (one port per node, all ``ports`` used).
The back-end (scale-out) switches and the hosts' NICs are in the same graph, joined to the hosts but
never to a BMC, so a failure set can name any of them::

    mgmt-server --- mgmt-agg[a] --- mgmt-rack[r] --- bmc[n]           (out-of-band)
    host[n] --- leaf[l] --- spine[s] --- core[c]                      (back-end, plane 0)

A BMC is reachable when a path from a management server avoids every failed device
(``networkx.node_connected_component`` on the graph without them).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from aifabric import catalog
from aifabric.cluster.fail_items import fail_items
from aifabric.cluster.spec import ClusterSpec, ManagementSpec
from aifabric.cluster.topology import Topology
from aifabric.errors import ConfigError

if TYPE_CHECKING:
    import networkx as nx

__all__ = [
    "ManagementReport",
    "ManagementShape",
    "management_graph",
    "management_reachability",
    "management_shape",
    "MANAGED_KINDS",
    "NODE_BMC",
    "RACK_KINDS",
]

DGX_NODES_PER_RACK = 4
"""DGX SuperPOD H100 RA: a scalable unit of 32 DGX H100 in 8 compute racks of 4."""

AGGREGATION_PLANES = 2
"""DGX SuperPOD H100 RA: every rack management switch uplinks to two aggregation switches (redundancy)."""

KINDS = ("leaf", "spine", "core", "host", "mgmt-rack", "mgmt-agg", "bmc")

MGMT_PORTS_PER_SWITCH = 1
"""Management ports of one switch: one RJ45 (NVIDIA SN2201: ``eth0`` "Management" beside swp1-48, NetBox
device-type library ``Nvidia/SN2201.yaml``; QM9700/QM9790 user manual, "Management": one RJ45 Ethernet port;
BCM lists each NVLink switch tray as one device on ``ipminet0``)."""

NODE_BMC = "node BMC"

RACK_KINDS: dict[str, Callable[[ManagementSpec, int], int]] = {
    NODE_BMC: lambda mg, nodes: nodes * mg.ports_per_node,
    # Rubin NVL8 RA, Network Fabrics: the BlueField-4 DPU's BMC is on the OOB network beside the host's;
    # BlueField BMC software, "OOB Network 3-Port Switch Control": one RJ45 OOB port per DPU
    "DPU BMC": lambda mg, nodes: nodes * mg.dpu_bmcs_per_node,
    # H100 RA: "rack PDUs" are on the OOB fabric; B300 (XDR) RA: three 2U rack PDUs per rack
    "rack PDU": lambda mg, nodes: mg.pdus_per_rack,
    # BCM, "Power Shelf Integration": 8 power shelves per GB200 rack, each monitored as a device
    "power shelf": lambda mg, nodes: mg.power_shelves_per_rack,
    # DGX GB200 user guide, Rack Configuration: 9 NVLink switch trays per rack; BCM lists them on ipminet0
    "NVLink switch tray": lambda mg, nodes: mg.nvlink_trays_per_rack * MGMT_PORTS_PER_SWITCH,
}
"""Managed devices of a compute rack -> their OOB ports in a rack of ``nodes`` nodes, each with its source."""

MANAGED_KINDS = (*RACK_KINDS, "fabric switch", "management server", "storage appliance", "OOB switch")
"""Every kind of managed device whose management port the OOB network takes."""


@dataclass(frozen=True)
class ManagementShape:
    """Counts of the OOB network: managed ports by kind, racks, rack and aggregation switches, cables.

    ``rack_switches`` are the compute racks' (``switches_per_rack`` each), ``infra_switches`` the management
    racks' that take the ports of devices outside the compute racks; ``racks_per_aggregation`` is how many
    rack switches one aggregation switch takes (its ports less the one to the management servers);
    ``aggregation_switches`` counts both planes. ``ports_by_kind`` lists each managed kind with its ports.
    """

    bmc_ports: int
    racks: int
    nodes_per_rack: int
    rack_switches: int
    switches_per_rack: int
    aggregation_switches: int
    racks_per_aggregation: int
    infra_switches: int = 0
    ports_by_kind: tuple[tuple[str, int], ...] = ()

    @property
    def aggregation_per_plane(self) -> int:
        """Aggregation switches in each of the two redundant planes."""
        return self.aggregation_switches // AGGREGATION_PLANES

    @property
    def managed_ports(self) -> int:
        """Management ports of every managed device, all kinds."""
        return sum(n for _, n in self.ports_by_kind) or self.bmc_ports

    @property
    def cables(self) -> int:
        """One cable per managed port, one uplink per rack switch to each plane, one server link per
        aggregation switch."""
        uplinks = AGGREGATION_PLANES * (self.rack_switches + self.infra_switches)
        return self.managed_ports + uplinks + self.aggregation_switches


def _rack_ports(mg: ManagementSpec, nodes: int, racks: int, last: int) -> dict[str, int]:
    """Ports of each :data:`RACK_KINDS` kind over ``racks`` compute racks of ``nodes`` nodes, the last of
    ``last``; ``devices: bmc`` keeps the nodes' BMCs alone."""
    kinds = {NODE_BMC: RACK_KINDS[NODE_BMC]} if mg.devices == "bmc" else RACK_KINDS
    return {k: (racks - 1) * f(mg, nodes) + f(mg, last) for k, f in kinds.items()}


def _infra_ports(spec: ClusterSpec, mg: ManagementSpec, fabric_switches: Mapping[str, int]) -> dict[str, int]:
    """Ports of the managed devices outside the compute racks, the OOB switches' own left out; a node's own
    drives (storage ``kind: local``) are no appliance, and a storage system of no ``units`` counts none."""
    if mg.devices == "bmc":
        return {}
    st = spec.storage
    units = (st.units or 0) if st is not None and catalog.storage(st.system).kind != "local" else 0
    out = {f"{net} switch": n * MGMT_PORTS_PER_SWITCH for net, n in fabric_switches.items()}
    out["management server"] = mg.servers
    out["storage appliance"] = units * mg.storage_ports_per_unit
    return out


def _own_ports(mg: ManagementSpec) -> int:
    """Management ports an OOB switch takes on its own network: :data:`MGMT_PORTS_PER_SWITCH`, or none
    where ``devices: bmc`` counts the nodes' BMCs alone."""
    return 0 if mg.devices == "bmc" else MGMT_PORTS_PER_SWITCH


def _aggregation(mg: ManagementSpec, rack_switches: int, infra: int) -> tuple[int, int, int]:
    """(infra switches, aggregation switches per plane, rack switches per aggregation switch) for
    ``rack_switches`` compute rack switches and ``infra`` ports outside the racks; the OOB switches' own
    management ports join ``infra`` until the counts settle (each pass can only add switches)."""
    agg_ports = catalog.switch(mg.aggregation).ports
    if agg_ports < 2:
        raise ConfigError(f"management.aggregation: {mg.aggregation!r} has {agg_ports} port(s); needs >= 2")
    per_agg = agg_ports - 1  # one port to the management servers
    usable = catalog.switch(mg.switch).ports - MGMT_PORTS_PER_SWITCH
    own = _own_ports(mg)
    infra_sw, per_plane = 0, math.ceil(rack_switches / per_agg)
    while True:
        ports = infra + own * AGGREGATION_PLANES * per_plane
        new_infra = math.ceil(ports / usable) if ports else 0
        new_plane = math.ceil((rack_switches + new_infra) / per_agg)
        if (new_infra, new_plane) == (infra_sw, per_plane):
            return infra_sw, per_plane, per_agg
        infra_sw, per_plane = new_infra, new_plane


def management_shape(spec: ClusterSpec, fabric_switches: Mapping[str, int] | None = None) -> ManagementShape:
    """Counts of ``spec``'s management network (rules in the module docstring).

    ``fabric_switches`` gives the switches of the cluster's other networks by network
    (:func:`aifabric.cluster.inventory.fabric_switches`); each takes one management port.

    Raises
    ------
    ConfigError
        If the cluster has no management network.
    """
    mg = spec.management
    if mg is None or not mg.ports_per_node:
        raise ConfigError("management: this cluster has no out-of-band management network")
    per_rack = mg.nodes_per_rack or (
        spec.domain_gpus // spec.gpus_per_node
        if spec.domain_gpus > spec.gpus_per_node
        else DGX_NODES_PER_RACK
    )
    racks = math.ceil(spec.n_nodes / per_rack)
    full = min(per_rack, spec.n_nodes)
    in_racks = _rack_ports(mg, full, racks, spec.n_nodes - (racks - 1) * full)
    rack_load = sum(_rack_ports(mg, full, 1, full).values())
    own = _own_ports(mg)
    per_rack_sw = math.ceil(rack_load / (catalog.switch(mg.switch).ports - own))
    rack_switches = racks * per_rack_sw
    infra = _infra_ports(spec, mg, fabric_switches or {})
    infra_sw, per_plane, per_agg = _aggregation(mg, rack_switches, sum(infra.values()))
    kinds = {**in_racks, **infra}
    if own:
        kinds["OOB switch"] = own * (rack_switches + infra_sw + AGGREGATION_PLANES * per_plane)
    return ManagementShape(
        in_racks[NODE_BMC],
        racks,
        per_rack,
        rack_switches,
        per_rack_sw,
        AGGREGATION_PLANES * per_plane,
        per_agg,
        infra_sw,
        tuple((k, n) for k, n in kinds.items() if n),
    )


def management_graph(topo: Topology, fabric_switches: Mapping[str, int] | None = None) -> nx.Graph:
    """The OOB network and the back-end switches of plane 0 as one undirected graph.

    Vertices are ``(kind, index)`` tuples with kinds ``bmc``, ``host``, ``mgmt-rack``, ``mgmt-agg``,
    ``mgmt-server``, ``leaf``, ``spine``, ``core``; the management racks' switches follow the compute racks'
    in ``mgmt-rack`` (``fabric_switches`` as in :func:`management_shape`).
    """
    import networkx as nx  # lazy: keeps networkx out of the CLI's start-up (inventory needs only the counts)

    spec = topo.spec
    shape = management_shape(spec, fabric_switches)
    g = nx.Graph()
    server = ("mgmt-server", 0)
    for a in range(shape.aggregation_switches):
        g.add_edge(server, ("mgmt-agg", a))
    for i in range(shape.rack_switches + shape.infra_switches):
        for plane in range(AGGREGATION_PLANES):
            a = plane * shape.aggregation_per_plane + i // shape.racks_per_aggregation
            g.add_edge(("mgmt-rack", i), ("mgmt-agg", a))
    ports = catalog.switch(spec.management.switch).ports  # type: ignore[union-attr]
    for n in range(spec.n_nodes):
        r = n // shape.nodes_per_rack
        k = ((n % shape.nodes_per_rack) * spec.management.ports_per_node) // ports  # type: ignore[union-attr]
        g.add_edge(("bmc", n), ("mgmt-rack", r * shape.switches_per_rack + k))
    off = topo.device_offsets
    if topo.shape is not None:
        n_gpus = spec.n_gpus
        src = topo.link_src[topo.link_plane == 0]
        dst = topo.link_dst[topo.link_plane == 0]
        tier = topo.link_tier[topo.link_plane == 0]
        keep = (tier >= 1) & (src < dst)
        names = _namer(off, n_gpus, spec.gpus_per_node)
        g.add_edges_from(zip(map(names, src[keep]), map(names, dst[keep]), strict=True))
    return g


def _namer(
    offsets: dict[str, int], n_gpus: int, gpus_per_node: int
) -> Callable[[np.integer], tuple[str, int]]:
    """Device id -> vertex name: ``("host", node)`` for a GPU, else ``(tier, index within the tier)``."""
    order = sorted((v, k) for k, v in offsets.items() if k in ("leaf", "spine", "core"))

    def name(dev: np.integer) -> tuple[str, int]:
        d = int(dev)
        if d < n_gpus:
            return ("host", d // gpus_per_node)
        kind, base = "leaf", 0
        for v, k in order:
            if d >= v:
                kind, base = k, v
        return (kind, d - base)

    return name


@dataclass(frozen=True)
class ManagementReport:
    """BMCs reachable from the management servers after ``failed`` devices are removed."""

    shape: ManagementShape
    failed: tuple[tuple[str, int], ...]
    unreachable_bmcs: tuple[int, ...]

    @property
    def reachable_bmcs(self) -> int:
        """BMCs still reachable."""
        return self.shape.bmc_ports - len(self.unreachable_bmcs)


def _parse_failures(g: nx.Graph, failures: Iterable[str]) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    for kind, idx in fail_items(failures, KINDS):
        if idx != "*" and not idx.isdigit():
            raise ConfigError(f"--fail: cannot read '{kind}:{idx}'; the index is a whole number or *")
        if idx == "*":
            hit = [v for v in g if v[0] == kind]
        else:
            hit = [(kind, int(idx))] if (kind, int(idx)) in g else []
        if not hit:
            raise ConfigError(f"--fail: no device {kind}:{idx} in this cluster")
        out.extend(hit)
    return list(dict.fromkeys(out))  # a device named twice fails once


def management_reachability(
    topo: Topology, failures: Iterable[str] = (), fabric_switches: Mapping[str, int] | None = None
) -> ManagementReport:
    """Which BMCs the management servers reach when ``failures`` (``"spine:*"``, ``"mgmt-rack:3"``) fail
    (``fabric_switches`` as in :func:`management_shape`).

    Raises
    ------
    ConfigError
        If a failure names no device of the cluster or cannot be read.

    Examples
    --------
    >>> from aifabric.cluster.presets import preset
    >>> from aifabric.cluster.topology import build_topology
    >>> topo = build_topology(preset("dgx-h100-superpod", nodes=32))
    >>> management_reachability(topo, ["spine:*"]).reachable_bmcs
    32
    >>> management_reachability(topo, ["mgmt-rack:0"]).unreachable_bmcs
    (0, 1, 2, 3)
    """
    import networkx as nx  # lazy, as in management_graph

    g = management_graph(topo, fabric_switches)
    failed = _parse_failures(g, failures)
    alive = g.subgraph(v for v in g if v not in set(failed))
    server = ("mgmt-server", 0)
    seen = nx.node_connected_component(alive, server) if server in alive else set()
    lost = tuple(n for n in range(topo.spec.n_nodes) if ("bmc", n) not in seen)
    return ManagementReport(management_shape(topo.spec, fabric_switches), tuple(failed), lost)
