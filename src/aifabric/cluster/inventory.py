"""Parts and power of a cluster's networks: switches per tier, cables, transceivers, NICs, watts, lasers.

Counting rules (stated so a reader can redo them by hand):

- Scale-up: one line per domain with its NVSwitch power, ``GPUs x NVLink ports per GPU x W per port``
  (``catalog/data/power.yaml``; 0 W when the catalogue has no figure for the accelerator).
- Scale-out NICs: ``nic_cards_per_node`` per node (``gpus_per_node x nics_per_gpu / gpus_per_nic``: AWS
  p4d's 8 GPUs share 4 EFA NICs), one NIC-leaf cable per NIC port (each of a card's ``ports``) and plane.
- Scale-out: every NIC-leaf, leaf-spine and spine-core cable is optical, unless
  ``scale_out.nic_to_leaf_copper`` (rack switches on copper, Meta's AI Zone) makes NIC-leaf cables passive
  copper (DAC, 0 W), one assembly per node cage: a twin-port or ``nic_cage_links`` cage takes one splitter DAC
  for its links (:func:`node_cage_links`). Transceivers are counted per module, not per link end: a switch end
  takes one module per cage where the switch's catalogue entry gives its cages (QM9700: 32 OSFP cages of 2 x
  400G, so two NDR links per module, or four 200G HDR links over 1:2 splitters), else twin-port modules (OSFP
  2x400G: one module per two links) when the catalogue has one at twice the link speed; a node end takes them
  when ``scale_out.nic_twin_port`` (DGX H100) or when each NIC port is split over two planes (one 2x400G
  module in the NIC's single 800G cage feeds both planes' leaves: DGX SuperPOD B300 RA, "each GPU has 2x
  400GbE connectivity through two different planes", 512 node-leaf cables per 512 GPUs); with
  ``scale_out.nic_cage_links`` one module per cage of that many links, broken out over them (a Gaudi 2
  server's 24 x 100 GbE from six 400G QSFP-DD cages); else one module per NIC link. With
  ``scale_out.uplink_speed`` a switch-to-switch cable carries ``uplink_speed / link`` links of one switch pair
  (DGX SuperPOD B300 twin-plane: 800G leaf-spine cables over 400G planes), one module per cable end at that
  speed.
- Front-end: ``front_end.nics_per_node`` NICs of the NIC's ``ports`` each, a cable per port, on leaf
  switches of ``switch`` ports split down:up by ``front_end.oversubscription``, plus spines for the
  uplinks (two tiers); optics as above.
- Storage fabric and in-band management (``storage_fabric``, ``inband_management``): ``ports_per_node``
  ports per node, and on the storage fabric the storage appliances' ports, on leaves of ``switch``, dual-homed
  port by port, spines where a group needs more than one leaf (:mod:`aifabric.cluster.access`); one module
  per node end, the switch's cage modules at the switch ends.
- Management: every managed device's management port (node and DPU BMCs, PDUs, power shelves, NVLink
  switch trays, every other network's switches, servers, storage appliances, the OOB switches' own) on
  per-rack and management-rack switches with two uplinks each to two aggregation switches
  (:func:`aifabric.cluster.management.management_shape`), copper; one ``port`` line per kind beyond the
  nodes' BMC NICs.
- Watts: switches at their datasheet power, NICs at theirs, modules at theirs. GPUs and CPUs are in
  :mod:`aifabric.cluster.power`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from aifabric import catalog
from aifabric.cluster.access import access_radix, access_shape
from aifabric.cluster.management import NODE_BMC, management_shape
from aifabric.cluster.spec import AccessFabricSpec, ScaleOutSpec
from aifabric.cluster.topology import Topology
from aifabric.errors import ConfigError

__all__ = [
    "NETWORK_PARTS",
    "NODE_NIC_NETWORKS",
    "Inventory",
    "PartLine",
    "bundled_cables",
    "fabric_switches",
    "inventory",
    "modules_for_links",
    "node_cage_links",
    "switch_end_modules",
]


@dataclass(frozen=True)
class PartLine:
    """A line of the bill of materials: ``count`` of ``part`` in ``network`` with ``watts`` and ``lasers``."""

    network: str
    item: str
    part: str
    count: int
    watts: float
    lasers: int = 0
    links: int = 0
    key: str = ""  # the catalogue key of the part, where a line is one (node NICs: cluster power's rest)


@dataclass(frozen=True)
class Inventory:
    """Bill of materials with power. ``lines`` in network order; totals by network in ``watts_by_network``."""

    lines: tuple[PartLine, ...]

    @property
    def total_watts(self) -> float:
        """All networks, watts."""
        return sum(line.watts for line in self.lines)

    def count(self, network: str, item: str) -> int:
        """Count of ``item`` in ``network`` (0 if absent)."""
        return sum(line.count for line in self.lines if line.network == network and line.item == item)

    @property
    def watts_by_network(self) -> dict[str, float]:
        """Watts per network."""
        out: dict[str, float] = {}
        for line in self.lines:
            out[line.network] = out.get(line.network, 0.0) + line.watts
        return out

    @property
    def optics_watts(self) -> float:
        """Watts of all transceivers (every network)."""
        return sum(line.watts for line in self.lines if line.item == "transceiver")


def _twin(link_bytes_per_s: float) -> catalog.OpticSpec | None:
    for key in catalog.catalog_names("optic"):
        o = catalog.optic(key)
        if o.kind == "pluggable" and o.links == 2 and abs(o.speed_bytes_per_s - 2 * link_bytes_per_s) < 1:
            return o
    return None


def modules_for_links(links: int, link_bytes_per_s: float, *, twin: bool) -> tuple[catalog.OpticSpec, int]:
    """The module and how many of them serve ``links`` link ends at one side: ceil(links / 2) twin-port
    modules when ``twin`` and the catalogue has one at twice the speed, else one module per link.

    Examples
    --------
    >>> o, n = modules_for_links(1024, 50e9, twin=True)
    >>> o.key, n
    ('osfp-800g-2xsr4', 512)
    """
    t = _twin(link_bytes_per_s) if twin else None
    if t is not None:
        return t, math.ceil(links / 2)
    return catalog.optic_for_speed(link_bytes_per_s), links


def switch_end_modules(links: int, link_bytes_per_s: float, switch_key: str) -> tuple[catalog.OpticSpec, int]:
    """The module and how many of them serve ``links`` link ends at switches of ``switch_key``.

    A switch whose catalogue entry gives its ``cages`` takes, in each, one module of the cage's speed
    ``c = ports x port speed / cages``, the one with the most ports no slower than the link (SN5600 at
    800GbE: a single-port 800G module per 800G link, a 2 x 400G one per two 400G links); that module
    serves ``floor(c / link)`` links (at most ``max_ports / cages``), its ports split by fibre splitters
    when the link is slower than the port: ``ceil(links / floor(c / link))`` modules. Else (no cages, no
    module of that speed, or a link faster than a cage) as :func:`modules_for_links` with twin-port
    modules.

    Examples
    --------
    A QM9700's 32 OSFP cages of 2 x 400G: two NDR links per module, four HDR (200G) links each over 1:2
    splitters (FiberMall: A100 + ConnectX-6 + QM9700, "1:0.75 800G OSFP" over three switch ends).

    >>> o, n = switch_end_modules(1120, 25e9, "quantum-2-qm9700")
    >>> o.key, n
    ('osfp-800g-2xsr4', 280)
    >>> switch_end_modules(1024, 50e9, "quantum-2-qm9700")[1]
    512
    """
    sw = catalog.switch(switch_key)
    if sw.cages is not None:
        cage_bytes_per_s = sw.ports * sw.port_speed_bytes_per_s / sw.cages
        per = math.floor(cage_bytes_per_s / link_bytes_per_s * (1 + 1e-9))  # whole links in a cage
        if sw.max_ports is not None:  # breakout stops at the datasheet's logical ports (SN5600: 256)
            per = min(per, max(1, sw.max_ports // sw.cages))
        module = catalog.module_at(cage_bytes_per_s, link_bytes_per_s)
        if module is not None and per >= 1:
            return module, math.ceil(links / per)
    return modules_for_links(links, link_bytes_per_s, twin=True)


def node_end_modules(links: int, link_bytes_per_s: float, cage_links: int) -> tuple[catalog.OpticSpec, int]:
    """The module and how many of them serve one node's ``links`` NIC-end links when each of its cages
    carries ``cage_links`` of them: in each cage the module of ``cage_links x link`` speed with the most
    ports no slower than the link, its lanes broken out when the link is slower than its port, ``ceil(links
    / cage_links)`` modules (a cage serves one node). A cage of a speed no catalogue module has is refused,
    not priced as one module per link: that would count more modules for more links per cage.

    Examples
    --------
    A Gaudi 2 server, 3 x 100 GbE per accelerator out of six 400G QSFP-DD cages (Cisco Gaudi 2 buying
    guide): 24 links, 6 modules.

    >>> o, n = node_end_modules(24, 12.5e9, 4)
    >>> o.key, n
    ('osfp-400g', 6)
    """
    module = catalog.module_at(cage_links * link_bytes_per_s, link_bytes_per_s)
    if module is None:
        raise ConfigError(
            f"scale_out.nic_cage_links: {cage_links} links of {link_bytes_per_s * 8e-9:g} Gb/s in one cage "
            f"take a {cage_links * link_bytes_per_s * 8e-9:g} Gb/s module, and the catalogue has no "
            "pluggable one of that speed; give the links one cage holds"
        )
    return module, math.ceil(links / cage_links)


def _optic_line(
    network: str, part: str, links: int, speed: float, *, twin: bool, switch_key: str | None = None
) -> PartLine:
    """One transceiver line: at a switch of ``switch_key`` its cages' modules, else per ``twin``."""
    if switch_key is not None and twin:
        opt, n = switch_end_modules(links, speed, switch_key)
    else:
        opt, n = modules_for_links(links, speed, twin=twin)
    return _module_line(network, part, links, opt, n)


def _module_line(network: str, part: str, links: int, opt: catalog.OpticSpec, n: int) -> PartLine:
    """``n`` modules ``opt`` serving ``links`` link ends, with their watts and lasers."""
    return PartLine(network, "transceiver", f"{part}: {opt.name}", n, n * opt.power_w, n * opt.lasers, links)


def _node_end_line(topo: Topology, links: int, link_bytes_per_s: float) -> PartLine:
    """The scale-out NICs' modules: one per cage of ``nic_cage_links`` links, twin-port ones for
    ``nic_twin_port`` or a NIC split over two planes (one cage feeds both), else one per link: several NICs
    of a GPU each have their own cage (a ConnectX-7's one 400G OSFP), one module each."""
    so = topo.spec.scale_out
    assert so is not None
    if so.nic_cage_links is not None:
        nodes = topo.spec.n_nodes  # every node has the same links; a cage serves one node
        opt, n = node_end_modules(links // nodes, link_bytes_per_s, so.nic_cage_links)
        return _module_line("scale-out", "node end", links, opt, n * nodes)
    return _optic_line("scale-out", "node end", links, link_bytes_per_s, twin=node_cage_links(so) == 2)


def bundled_cables(pairs: np.ndarray, per_cable: int) -> int:
    """Cables between switches when each carries ``per_cable`` links of the same switch pair:
    sum over pairs of ceil(links / per_cable). ``pairs[i, j]`` is the upper switch that uplink ``j`` of
    lower switch ``i`` reaches (one plane).

    Examples
    --------
    Two leaves, 4 uplinks each over 2 spines (2 links per pair), 800G cables of 2 x 400G links: 4 cables.

    >>> bundled_cables(np.array([[0, 1, 0, 1], [0, 1, 0, 1]]), 2)
    4
    """
    if pairs.size == 0:
        return 0
    lower = np.repeat(np.arange(pairs.shape[0], dtype=np.int64), pairs.shape[1])
    key = lower * (int(pairs.max()) + 1) + pairs.ravel().astype(np.int64)
    _, links = np.unique(key, return_counts=True)
    return int(np.sum(-(-links // per_cable)))


def _switch_cables(topo: Topology, tier_name: str, links: int) -> tuple[int, float, bool]:
    """(cables, cable speed, twin-port modules at the switch ends) of a switch-to-switch tier:
    ``scale_out.uplink_speed`` bundles ``k`` per-plane links per cable, one module per cable end at
    that speed (the cable fills the switch port); else one cable per link, twin-port modules."""
    so = topo.spec.scale_out
    assert so is not None
    link = topo.spec.link_bytes_per_s
    up = so.uplink_speed_bytes_per_s
    if up is None or round(up / link) == 1:
        return links, link, True
    k = round(up / link)
    pairs = topo.leaf_uplink_spine if tier_name == "leaf-spine" else topo.spine_uplink_core
    return bundled_cables(pairs, k) * so.planes, up, False


def _scale_out(topo: Topology) -> list[PartLine]:
    """The scale-out NICs, then the fabric's switches, cables and modules by its topology
    (:data:`_SCALE_OUT_FABRIC`)."""
    spec = topo.spec
    so = spec.scale_out
    assert so is not None
    nic = catalog.nic(so.nic)
    n_nics = spec.n_nodes * spec.nic_cards_per_node  # nics_per_gpu per GPU, or one per gpus_per_nic GPUs
    lines = [PartLine("scale-out", "nic", nic.name, n_nics, n_nics * nic.power_w, key=nic.key)]
    return lines + _SCALE_OUT_FABRIC[so.topology](topo)


def node_cage_links(so: ScaleOutSpec) -> int:
    """NIC links that share one cage of a node: ``nic_cage_links``; 2 for ``nic_twin_port`` or a NIC port
    split over two planes (one 2 x 400G cage feeds both planes' leaves); else 1, a cage per link."""
    if so.nic_cage_links is not None:
        return so.nic_cage_links
    return 2 if so.nic_twin_port or so.ports_per_nic == 2 else 1


def _copper_nic_lines(topo: Topology, tier_name: str, links: int) -> list[PartLine]:
    """Passive copper NIC cables (``scale_out.nic_to_leaf_copper``): one DAC assembly per node cage, a
    splitter whose legs carry the cage's :func:`node_cage_links` links to their switch ports (NVIDIA
    MCP7Y00, 800G twin-port OSFP to 2 x 400G; MCP7F80, 400G QSFP-DD to 8 x 50G: one assembly, several
    links), so ``ceil(links per node / cage links)`` per node; a cage of one link takes one plain DAC.

    A DGX H100 node (4 twin-port cages, 8 NDR links) on copper: 4 assemblies, 8 links.
    """
    so = topo.spec.scale_out
    assert so is not None
    per_cage = node_cage_links(so)
    nodes = topo.spec.n_nodes
    assemblies = links if per_cage == 1 else -(-(links // nodes) // per_cage) * nodes
    dac = catalog.optic("dac-copper")
    return [
        PartLine("scale-out", "cable", tier_name, assemblies, 0.0, links=links),
        PartLine("scale-out", "copper", f"{tier_name}: {dac.name}", assemblies, 0.0, links=links),
    ]


def _nic_cable_lines(topo: Topology, tier_name: str, cables: int, link: float) -> list[PartLine]:
    """The NIC-to-switch cables and their two ends: passive copper with ``scale_out.nic_to_leaf_copper``,
    else the node end's modules and the switch end's."""
    so = topo.spec.scale_out
    assert so is not None
    if so.nic_to_leaf_copper:
        return _copper_nic_lines(topo, tier_name, cables)
    lines = [PartLine("scale-out", "cable", tier_name, cables, 0.0)]
    leaf = so.tier_switches["leaf"]
    end = "leaf end" if tier_name == "nic-leaf" else "switch end"
    return lines + [
        _node_end_line(topo, cables, link),
        _optic_line("scale-out", end, cables, link, twin=True, switch_key=leaf),
    ]


def _clos_fabric(topo: Topology) -> list[PartLine]:
    """A Clos's switches per tier, and its cables and modules tier by tier."""
    spec = topo.spec
    so = spec.scale_out
    assert so is not None
    lines: list[PartLine] = []
    for tier, key in so.tier_switches.items():  # each tier's own part (scale_out.spine_switch, core_switch)
        c = topo.switch_counts[tier]
        if c:
            sw = catalog.switch(key)
            lines.append(PartLine("scale-out", "switch", f"{tier}: {sw.name}", c, c * sw.power_w))
    link = spec.link_bytes_per_s
    for tier_name, cables in topo.cable_counts.items():
        if not cables:
            continue
        if tier_name == "nic-leaf":
            lines += _nic_cable_lines(topo, tier_name, cables, link)
            continue
        lines.append(PartLine("scale-out", "cable", tier_name, cables, 0.0))
        lower, upper = tier_name.split("-")
        n, speed, twin = _switch_cables(topo, tier_name, cables)
        if n != cables:
            lines[-1] = PartLine("scale-out", "cable", tier_name, n, 0.0, links=cables)
        for end in (lower, upper):
            key = so.tier_switches[end]
            lines.append(_optic_line("scale-out", f"{end} end", n, speed, twin=twin, switch_key=key))
    return lines


def _dragonfly_fabric(topo: Topology) -> list[PartLine]:
    """A dragonfly's switches, NIC cables, local links (electrical: passive copper inside a group, Kim
    2008; NERSC's Perlmutter: copper L1 cables) and global links (optical, a module at each switch end)."""
    spec = topo.spec
    so = spec.scale_out
    d = topo.dragonfly
    assert so is not None and d is not None
    sw = catalog.switch(so.leaf_switch)
    link = spec.link_bytes_per_s
    dac = catalog.optic("dac-copper")
    lines = [PartLine("scale-out", "switch", f"dragonfly: {sw.name}", d.switches, d.switches * sw.power_w)]
    lines += _nic_cable_lines(topo, "nic-switch", d.endpoints, link)
    lines += [
        PartLine("scale-out", "cable", "local (in-group)", d.local_links, 0.0),
        PartLine("scale-out", "copper", f"local (in-group): {dac.name}", d.local_links, 0.0),
    ]
    if d.global_links:
        lines += [
            PartLine("scale-out", "cable", "global", d.global_links, 0.0),
            _optic_line(
                "scale-out", "global ends", 2 * d.global_links, link, twin=True, switch_key=so.leaf_switch
            ),
        ]
    return lines


#: The scale-out fabric's parts, by ``scale_out.topology``.
_SCALE_OUT_FABRIC = {"clos": _clos_fabric, "dragonfly": _dragonfly_fabric}


def _front_end(topo: Topology) -> list[PartLine]:
    spec = topo.spec
    fe = spec.front_end
    if fe is None:
        return []
    nic = catalog.nic(fe.nic)
    sw = catalog.switch(fe.switch)
    ports = spec.n_nodes * fe.ports_per_node
    cards = spec.n_nodes * fe.nics_per_node
    speed = fe.nic_speed_bytes_per_s or nic.line_rate_bytes_per_s
    shape = access_shape(ports, 1, access_radix(fe.switch, speed), fe.oversubscription)
    return [
        PartLine("front-end", "nic", nic.name, cards, cards * nic.power_w, key=nic.key),
        PartLine("front-end", "switch", sw.name, shape.switches, shape.switches * sw.power_w),
        PartLine("front-end", "cable", "node-leaf + leaf-spine", ports + shape.uplinks, 0.0),
        _optic_line("front-end", "node end", ports, speed, twin=False),
        _optic_line("front-end", "switch ends", ports + 2 * shape.uplinks, speed, twin=True),
    ]


def _access_lines(network: str, fabric: AccessFabricSpec, nodes: int, appliance_ports: int) -> list[PartLine]:
    """Parts of a storage or in-band network (:mod:`aifabric.cluster.access`): the nodes' ports (each
    ``1 / nic_ports`` of its card's watts), leaves and spines, node-leaf, appliance-leaf and leaf-spine
    cables, one module per node end and the switch's cage modules at the switch ends."""
    nic = catalog.nic(fabric.nic)
    sw = catalog.switch(fabric.switch)
    speed = fabric.speed_bytes_per_s
    ports = nodes * fabric.ports_per_node
    groups = fabric.groups
    per_group = ports // groups + math.ceil(appliance_ports / groups)
    shape = access_shape(per_group, groups, access_radix(fabric.switch, speed), fabric.oversubscription)
    lines = [
        PartLine(
            network, "nic", f"{nic.name} (port)", ports, ports * nic.power_w / fabric.nic_ports, key=nic.key
        ),
        PartLine(network, "switch", f"leaf: {sw.name}", shape.leaves, shape.leaves * sw.power_w),
    ]
    if shape.spines:
        spine_w = shape.spines * sw.power_w
        lines.append(PartLine(network, "switch", f"spine: {sw.name}", shape.spines, spine_w))
    lines.append(PartLine(network, "cable", "node-leaf", ports, 0.0))
    if appliance_ports:
        lines.append(PartLine(network, "cable", "appliance-leaf", appliance_ports, 0.0))
    if shape.uplinks:
        lines.append(PartLine(network, "cable", "leaf-spine", shape.uplinks, 0.0))
    ends = ports + appliance_ports + 2 * shape.uplinks
    lines.append(_optic_line(network, "node end", ports, speed, twin=False))
    lines.append(_optic_line(network, "switch ends", ends, speed, twin=True, switch_key=fabric.switch))
    return lines


def _storage_fabric(topo: Topology) -> list[PartLine]:
    """The storage fabric's parts, with the appliances' ports on its leaves
    (:attr:`~aifabric.cluster.spec.ClusterSpec.storage_appliance_ports`)."""
    spec = topo.spec
    sf = spec.storage_fabric
    if sf is None:
        return []
    return _access_lines("storage", sf, spec.n_nodes, spec.storage_appliance_ports)


def _inband(topo: Topology) -> list[PartLine]:
    """The in-band management network's parts."""
    spec = topo.spec
    ib = spec.inband_management
    return [] if ib is None else _access_lines("in-band", ib, spec.n_nodes, 0)


def fabric_switches(topo: Topology) -> dict[str, int]:
    """Switches of every network but the management one, by network: each takes a management port on the
    OOB network (:func:`aifabric.cluster.management.management_shape`)."""
    out: dict[str, int] = {}
    for network, parts in NETWORK_PARTS:
        if network == "management":
            continue
        for line in parts(topo):
            if line.item == "switch":
                out[line.network] = out.get(line.network, 0) + line.count
    return out


def _management(topo: Topology) -> list[PartLine]:
    """The OOB network's parts: the nodes' BMC NICs, every other managed kind's ports, rack (compute and
    management racks) and aggregation switches, cables."""
    spec = topo.spec
    mg = spec.management
    if mg is None or not mg.ports_per_node:
        return []
    shape = management_shape(spec, fabric_switches(topo))
    nic = catalog.nic(mg.nic)
    sw = catalog.switch(mg.switch)
    agg = catalog.switch(mg.aggregation)
    n_agg = shape.aggregation_switches
    n_rack = shape.rack_switches + shape.infra_switches
    lines = [
        PartLine("management", "nic", nic.name, shape.bmc_ports, shape.bmc_ports * nic.power_w, key=nic.key)
    ]
    lines += [
        PartLine("management", "port", f"managed: {kind}", n, 0.0)
        for kind, n in shape.ports_by_kind
        if kind != NODE_BMC
    ]
    return [
        *lines,
        PartLine("management", "switch", f"rack: {sw.name}", n_rack, n_rack * sw.power_w),
        PartLine("management", "switch", f"aggregation: {agg.name}", n_agg, n_agg * agg.power_w),
        PartLine("management", "cable", "copper 1GbE + uplinks", shape.cables, 0.0),
    ]


def inventory(topo: Topology) -> Inventory:
    """Count the parts and watts of ``topo``'s networks, each through its entry of :data:`NETWORK_PARTS`
    (rules in the module docstring).

    Examples
    --------
    1,024 GPUs (128 DGX H100) on 64-port switches, two tiers: 32 leaves + 16 spines, 1,024 + 1,024 cables.
    Modules: 512 twin-port at the nodes (4 OSFP cages each), 512 at the leaves' down ports, 512 at their
    up ports, 512 at the spines = 2,048 (not 4,096 link ends).

    >>> from aifabric.cluster.presets import preset
    >>> from aifabric.cluster.topology import build_topology
    >>> inv = inventory(build_topology(preset("dgx-h100-superpod", nodes=128)))
    >>> inv.count("scale-out", "switch"), inv.count("scale-out", "transceiver")
    (48, 2048)
    """
    lines: list[PartLine] = []
    for _network, parts in NETWORK_PARTS:
        lines += parts(topo)
    return Inventory(tuple(lines))


def _scale_up(topo: Topology) -> list[PartLine]:
    """One line per scale-up domain kind with its NVSwitch watts (none without a switched domain)."""
    spec = topo.spec
    if not topo.switch_counts["scale-up domain"]:
        return []
    pw = catalog.system_power(spec.accelerator)
    nvs_w = (
        spec.n_gpus * pw.nvlink_ports_per_gpu * pw.nvlink_port_w
        if pw and spec.scale_up.kind == "nvswitch"
        else 0.0
    )
    part = f"{spec.domain_gpus}-GPU {spec.scaleup_link.name}"
    return [PartLine("scale-up", "domain", part, spec.n_domains, nvs_w)]


def _scale_out_parts(topo: Topology) -> list[PartLine]:
    """The back-end's parts; one scale-up domain lists its NICs alone (ClusterSpec.builds_scale_out)."""
    return [] if topo.spec.scale_out is None else _scale_out(topo)


#: Every network of a cluster and the function that counts its parts, in the order the bill lists them; a
#: function returns no line for a network the spec does not have. ``network`` is the label each line carries
#: (:data:`aifabric.cluster.topology.NETWORKS`).
NETWORK_PARTS: tuple[tuple[str, Callable[[Topology], list[PartLine]]], ...] = (
    ("scale-up", _scale_up),
    ("scale-out", _scale_out_parts),
    ("front-end", _front_end),
    ("storage", _storage_fabric),
    ("in-band", _inband),
    ("management", _management),
)

#: Networks whose NICs sit inside the node (their watts are part of the node's maximum power).
NODE_NIC_NETWORKS = ("scale-out", "front-end", "storage", "in-band")
