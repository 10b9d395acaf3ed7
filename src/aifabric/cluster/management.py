"""The out-of-band management network as a graph: BMC ports on their own switches, reachability on failures.

Wiring (NVIDIA DGX SuperPOD H100 reference architecture, "Out-of-Band Management Network"): every node's BMC
port goes to its rack's management switch (1 GbE); every rack switch has one uplink to each of two
aggregation switches; the management servers hang off both aggregation switches. Beyond what one
aggregation switch's ports take, each of the two redundant aggregation planes grows to
``ceil(rack switches / (ports - 1))`` switches, one port of each kept for its link to the management
servers (the RA's 127 nodes need one per plane; 100,000 GPUs on 64-port SN4600C need 50 per plane).
The back-end (scale-out) switches and the hosts' NICs are in the same graph, joined to the hosts but
never to a BMC, so a failure set can name any of them::

    mgmt-server --- mgmt-agg[a] --- mgmt-rack[r] --- bmc[n]           (out-of-band)
    host[n] --- leaf[l] --- spine[s] --- core[c]                      (back-end, plane 0)

A BMC is reachable when a path from a management server avoids every failed device
(``networkx.node_connected_component`` on the graph without them).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from aifabric import catalog
from aifabric.cluster.fail_items import fail_items
from aifabric.cluster.spec import ClusterSpec
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
]

DGX_NODES_PER_RACK = 4
"""DGX SuperPOD H100 RA: a scalable unit of 32 DGX H100 in 8 compute racks of 4."""

AGGREGATION_PLANES = 2
"""DGX SuperPOD H100 RA: every rack management switch uplinks to two aggregation switches (redundancy)."""

KINDS = ("leaf", "spine", "core", "host", "mgmt-rack", "mgmt-agg", "bmc")


@dataclass(frozen=True)
class ManagementShape:
    """Counts of the OOB network: BMC ports, racks, rack and aggregation switches, cables.

    ``racks_per_aggregation`` is how many rack switches one aggregation switch takes (its ports less the
    one to the management servers); ``aggregation_switches`` counts both planes.
    """

    bmc_ports: int
    racks: int
    nodes_per_rack: int
    rack_switches: int
    switches_per_rack: int
    aggregation_switches: int
    racks_per_aggregation: int

    @property
    def aggregation_per_plane(self) -> int:
        """Aggregation switches in each of the two redundant planes."""
        return self.aggregation_switches // AGGREGATION_PLANES

    @property
    def cables(self) -> int:
        """BMC cables, one uplink per rack switch to each plane, one server link per aggregation switch."""
        return self.bmc_ports + AGGREGATION_PLANES * self.rack_switches + self.aggregation_switches


def management_shape(spec: ClusterSpec) -> ManagementShape:
    """Counts of ``spec``'s management network (rules in the module docstring).

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
    sw = catalog.switch(mg.switch)
    per_rack_sw = math.ceil(min(per_rack, spec.n_nodes) * mg.ports_per_node / sw.ports)
    rack_switches = racks * per_rack_sw
    agg_ports = catalog.switch(mg.aggregation).ports
    if agg_ports < 2:
        raise ConfigError(f"management.aggregation: {mg.aggregation!r} has {agg_ports} port(s); needs >= 2")
    per_agg = agg_ports - 1  # one port to the management servers
    per_plane = math.ceil(rack_switches / per_agg)
    return ManagementShape(
        spec.n_nodes * mg.ports_per_node,
        racks,
        per_rack,
        rack_switches,
        per_rack_sw,
        AGGREGATION_PLANES * per_plane,
        per_agg,
    )


def management_graph(topo: Topology) -> nx.Graph:
    """The OOB network and the back-end switches of plane 0 as one undirected graph.

    Vertices are ``(kind, index)`` tuples with kinds ``bmc``, ``host``, ``mgmt-rack``, ``mgmt-agg``,
    ``mgmt-server``, ``leaf``, ``spine``, ``core``.
    """
    import networkx as nx  # lazy: keeps networkx out of the CLI's start-up (inventory needs only the counts)

    spec = topo.spec
    shape = management_shape(spec)
    g = nx.Graph()
    server = ("mgmt-server", 0)
    for a in range(shape.aggregation_switches):
        g.add_edge(server, ("mgmt-agg", a))
    for i in range(shape.rack_switches):
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


def management_reachability(topo: Topology, failures: Iterable[str] = ()) -> ManagementReport:
    """Which BMCs the management servers reach when ``failures`` (``"spine:*"``, ``"mgmt-rack:3"``) fail.

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

    g = management_graph(topo)
    failed = _parse_failures(g, failures)
    alive = g.subgraph(v for v in g if v not in set(failed))
    server = ("mgmt-server", 0)
    seen = nx.node_connected_component(alive, server) if server in alive else set()
    lost = tuple(n for n in range(topo.spec.n_nodes) if ("bmc", n) not in seen)
    return ManagementReport(management_shape(topo.spec), tuple(failed), lost)
