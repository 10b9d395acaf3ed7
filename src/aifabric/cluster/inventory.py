"""Parts and power of a cluster's networks: switches per tier, cables, transceivers, NICs, watts.

Counting rules (stated so a reader can redo them by hand):

- Scale-out: every NIC-leaf, leaf-spine and spine-core cable is optical with one transceiver at each end,
  sized to the per-plane link speed (``optic_for_speed``), unless ``scale_out.nic_to_leaf_copper`` (rack
  switches on copper, Meta's AI Zone) makes NIC-leaf cables passive copper. The NIC end of a GPU's link
  counts as one transceiver per plane.
- Front-end: ``front_end.nics_per_node`` ports per node on leaf switches of ``switch`` ports split
  down:up by ``front_end.oversubscription``, plus spines for the uplinks (two tiers).
- Management: one BMC port per node on 1 GbE switches (copper), one uplink per switch.
- Watts: switches at their datasheet power, NICs at theirs, transceivers at theirs. GPUs and CPUs are not
  counted: these are the networks' watts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from aifabric import catalog
from aifabric.cluster.topology import Topology

__all__ = ["Inventory", "PartLine", "inventory"]


@dataclass(frozen=True)
class PartLine:
    """One line of the bill of materials: ``count`` of ``part`` in ``network``, ``watts`` in total."""

    network: str
    item: str
    part: str
    count: int
    watts: float


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


def _two_tier_counts(endpoints: int, radix: int, ratio: float) -> tuple[int, int, int]:
    """(leaves, spines, leaf-spine cables) of a simple two-tier Ethernet Clos for ``endpoints`` ports."""
    if endpoints == 0:
        return 0, 0, 0
    down = int(math.floor(radix * ratio / (ratio + 1)))
    up = int(math.ceil(down / ratio))
    leaves = math.ceil(endpoints / down)
    if leaves == 1:
        return 1, 0, 0
    spines = math.ceil(leaves * up / radix)
    return leaves, spines, leaves * up


def inventory(topo: Topology) -> Inventory:
    """Count the parts and watts of ``topo``'s four networks (rules in the module docstring).

    Examples
    --------
    1,024 GPUs on 64-port switches, two tiers: 32 leaves + 16 spines, 1,024 + 1,024 cables, 4,096
    transceivers (two per cable).

    >>> from aifabric.cluster.presets import preset
    >>> from aifabric.cluster.topology import build_topology
    >>> inv = inventory(build_topology(preset("dgx-h100-superpod", nodes=128)))
    >>> inv.count("scale-out", "switch"), inv.count("scale-out", "transceiver")
    (48, 4096)
    """
    spec = topo.spec
    lines: list[PartLine] = []
    if topo.switch_counts["scale-up domain"]:
        lines.append(
            PartLine(
                "scale-up", "domain", f"{spec.domain_gpus}-GPU {spec.scaleup_link.name}", spec.n_domains, 0.0
            )
        )
    so = spec.scale_out
    if so is not None and topo.shape is not None:
        nic = catalog.nic(so.nic)
        sw = catalog.switch(so.switch)
        n_nics = spec.n_gpus * so.nics_per_gpu
        lines.append(PartLine("scale-out", "nic", nic.name, n_nics, n_nics * nic.power_w))
        for tier in ("leaf", "spine", "core"):
            c = topo.switch_counts[tier]
            if c:
                lines.append(PartLine("scale-out", "switch", f"{tier}: {sw.name}", c, c * sw.power_w))
        opt = catalog.optic_for_speed(spec.nic_line_rate_bytes_per_s / so.planes)
        for tier_name, cables in topo.cable_counts.items():
            if not cables:
                continue
            lines.append(PartLine("scale-out", "cable", tier_name, cables, 0.0))
            if tier_name == "nic-leaf" and so.nic_to_leaf_copper:
                continue
            lines.append(
                PartLine(
                    "scale-out",
                    "transceiver",
                    f"{tier_name}: {opt.name}",
                    2 * cables,
                    2 * cables * opt.power_w,
                )
            )
    fe = spec.front_end
    if fe is not None and fe.nics_per_node:
        nic = catalog.nic(fe.nic)
        sw = catalog.switch(fe.switch)
        ports = spec.n_nodes * fe.nics_per_node
        speed = fe.nic_speed_bytes_per_s or nic.line_rate_bytes_per_s
        radix = (
            int(sw.ports * sw.port_speed_bytes_per_s // speed)
            if speed <= sw.port_speed_bytes_per_s
            else sw.ports
        )
        leaves, spines, up_cables = _two_tier_counts(ports, radix, fe.oversubscription)
        opt = catalog.optic_for_speed(speed)
        lines.append(PartLine("front-end", "nic", nic.name, ports, ports * nic.power_w))
        lines.append(
            PartLine("front-end", "switch", sw.name, leaves + spines, (leaves + spines) * sw.power_w)
        )
        cables = ports + up_cables
        lines.append(PartLine("front-end", "cable", "node-leaf + leaf-spine", cables, 0.0))
        lines.append(PartLine("front-end", "transceiver", opt.name, 2 * cables, 2 * cables * opt.power_w))
    mg = spec.management
    if mg is not None and mg.ports_per_node:
        nic = catalog.nic(mg.nic)
        sw = catalog.switch(mg.switch)
        ports = spec.n_nodes * mg.ports_per_node
        n_sw = math.ceil(ports / (sw.ports - 1))
        lines.append(PartLine("management", "nic", nic.name, ports, ports * nic.power_w))
        lines.append(PartLine("management", "switch", sw.name, n_sw, n_sw * sw.power_w))
        lines.append(PartLine("management", "cable", "copper 1GbE", ports + n_sw, 0.0))
    return Inventory(tuple(lines))
