"""Whole-cluster power: GPUs, CPUs, the rest of each node, and every network's parts; the optics share;
what-ifs for linear pluggable optics (LPO) and co-packaged optics (CPO).

    total  = N_gpu x P_gpu + nodes x (P_cpu + rest of node) + network parts (inventory)
    rest of node = max(0, node max - GPUs - CPUs - node's NICs - NVSwitch inside the node)

The node's NICs in the rest are counted at the shipped catalogue's power (``data/nics.yaml``): the node
maximum is the datasheet's for the shipped build, and memory and fans do not draw less because a user's NIC
draws more, so a user part's power changes the total by its difference from the shipped one.
    optics share = transceiver watts / total

CPO what-if (NVIDIA Quantum-X / Spectrum-X Photonics): every switch-end module is replaced by co-packaged
ports, ``W_cpo x link / 1.6 Tb/s`` per link (9 W per 1.6T port) and ``lasers_cpo x link / 1.6 Tb/s``; node
ends keep their pluggables. LPO what-if: every DSP pluggable becomes a linear one at ``W_lpo x speed / 800
Gb/s`` (8.5 W per 800G), lasers unchanged. Catalogue entries ``cpo-1600g-port`` and ``lpo-800g`` give the
figures and their sources.
"""

from __future__ import annotations

from dataclasses import dataclass

from aifabric import catalog
from aifabric.cluster.inventory import NODE_NIC_NETWORKS, Inventory, PartLine, inventory
from aifabric.cluster.spec import ClusterSpec
from aifabric.cluster.topology import Topology

__all__ = ["OpticsWhatIf", "PowerBudget", "cluster_power", "compute_power_gap", "optics_whatif"]


@dataclass(frozen=True)
class PowerBudget:
    """Watts by part; ``compute`` lines (GPUs, CPUs, rest of node) plus the networks' inventory."""

    compute: tuple[PartLine, ...]
    inventory: Inventory

    @property
    def compute_watts(self) -> float:
        """GPUs + CPUs + rest of the nodes, watts."""
        return sum(line.watts for line in self.compute)

    @property
    def total_watts(self) -> float:
        """Everything, watts."""
        return self.compute_watts + self.inventory.total_watts

    @property
    def optics_watts(self) -> float:
        """Transceivers, watts."""
        return self.inventory.optics_watts

    @property
    def optics_share(self) -> float:
        """Transceiver watts / total watts."""
        return self.optics_watts / self.total_watts if self.total_watts else 0.0


def compute_power_gap(spec: ClusterSpec) -> str | None:
    """Why the cluster's power has no compute lines (GPUs, CPUs, rest of node), or None when it has them.

    >>> from aifabric.cluster.presets import preset
    >>> compute_power_gap(preset("tpu-v5p-pod")).startswith("not published for Google Cloud TPU v5p")
    True
    >>> compute_power_gap(preset("dgx-h100-superpod")) is None
    True
    """
    pw = catalog.system_power(spec.accelerator)
    if pw is None:
        return f"the catalogue has no power figures for {spec.accelerator_spec.name} (power.yaml)"
    if not pw.published:
        return f"not published for {spec.accelerator_spec.name}: {pw.source}"
    return None


def cluster_power(topo: Topology, inv: Inventory | None = None) -> PowerBudget:
    """Whole-cluster power of ``topo`` (formulas in the module docstring).

    The compute lines are empty when ``catalog/data/power.yaml`` has no entry for the accelerator, or one
    whose vendor publishes no power (``SystemPowerSpec.published`` False).
    """
    spec = topo.spec
    inv = inv if inv is not None else inventory(topo)
    pw = catalog.system_power(spec.accelerator)
    lines: list[PartLine] = []
    if pw is not None and pw.gpu_w is not None and pw.cpu_per_node_w is not None:
        gpus_w = spec.n_gpus * pw.gpu_w
        cpu_w = spec.n_nodes * pw.cpu_per_node_w
        lines.append(PartLine("compute", "gpu", spec.accelerator_spec.name, spec.n_gpus, gpus_w))
        lines.append(PartLine("compute", "cpu", "host CPUs", spec.n_nodes, cpu_w))
        if pw.node_max_w is not None:
            nics = sum(_shipped_watts(line) for line in inv.lines if line.network in NODE_NIC_NETWORKS)
            nvs_in_node = (
                sum(line.watts for line in inv.lines if line.network == "scale-up")
                if spec.domain_gpus <= spec.gpus_per_node
                else 0.0
            )
            rest = max(0.0, spec.n_nodes * pw.node_max_w - gpus_w - cpu_w - nics - nvs_in_node)
            lines.append(
                PartLine(
                    "compute", "rest", "rest of node (memory, fans, drives, PSU losses)", spec.n_nodes, rest
                )
            )
    return PowerBudget(tuple(lines), inv)


def _shipped_watts(line: PartLine) -> float:
    """A node NIC line's watts at the shipped catalogue's power of its part (:func:`catalog.shipped_nic`),
    0 for a line that is no NIC: the node maximum a system's datasheet gives is its shipped build's, so its
    rest (memory, fans, drives, PSU losses) is read against the shipped parts, once; a user's hotter or
    cooler card then changes the total by its own difference. A part only a user defines counts at its
    own power (no shipped figure to read the rest against)."""
    if line.item != "nic":
        return 0.0
    shipped = catalog.shipped_nic(line.key) if line.key else None
    current = catalog.nic(line.key).power_w if line.key else 0.0
    if shipped is None or not current > 0:
        return line.watts
    return line.watts * shipped.power_w / current


@dataclass(frozen=True)
class OpticsWhatIf:
    """Optics watts and lasers today and with ``technology``; ``saved_watts`` and the laser ratio."""

    technology: str
    watts_before: float
    watts_after: float
    lasers_before: int
    lasers_after: float

    @property
    def saved_watts(self) -> float:
        """Watts saved."""
        return self.watts_before - self.watts_after


def _is_switch_end(line: PartLine) -> bool:
    return not line.part.startswith("node end")


def optics_whatif(inv: Inventory, technology: str) -> OpticsWhatIf:
    """Optics watts and lasers if ``technology`` (``"cpo"`` or ``"lpo"``) replaced today's modules.

    Raises
    ------
    ValueError
        For another technology.

    Examples
    --------
    One 1.6 Tb/s switch port: a 30 W pluggable vs a 9 W co-packaged port is 3.3x (NVIDIA claims 3.5x).

    >>> cpo = catalog.optic("cpo-1600g-port")
    >>> round(30 / cpo.power_w, 2)
    3.33
    """
    if technology not in ("cpo", "lpo"):
        raise ValueError(f"technology must be 'cpo' or 'lpo', got {technology!r}")
    optics = [line for line in inv.lines if line.item == "transceiver"]
    before_w = sum(line.watts for line in optics)
    before_l = sum(line.lasers for line in optics)
    after_w = 0.0
    after_l = 0.0
    if technology == "cpo":
        cpo = catalog.optic("cpo-1600g-port")
        for line in optics:
            if not _is_switch_end(line):
                after_w += line.watts
                after_l += line.lasers
                continue
            mod = _module(line)
            link = mod.speed_bytes_per_s / mod.links
            after_w += line.links * cpo.power_w * link / cpo.speed_bytes_per_s
            after_l += line.links * cpo.lasers * link / cpo.speed_bytes_per_s
    else:
        lpo = catalog.optic("lpo-800g")
        for line in optics:
            after_w += line.count * lpo.power_w * _module(line).speed_bytes_per_s / lpo.speed_bytes_per_s
            after_l += line.lasers
    return OpticsWhatIf(technology, before_w, after_w, before_l, after_l)


def _module(line: PartLine) -> catalog.OpticSpec:
    """The catalogue module of a transceiver line (its part is ``"<end>: <module name>"``)."""
    name = line.part.split(": ", 1)[1]
    return next(catalog.optic(k) for k in catalog.catalog_names("optic") if catalog.optic(k).name == name)
