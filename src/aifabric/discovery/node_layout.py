"""One machine's layout in one shape, read from ``nvidia-smi topo -m`` or an NCCL topology XML.

:class:`NodeLayout` holds GPUs, NICs, the path type of every GPU-NIC pair, NVLink counts, NUMA affinity
and PCIe links, whatever the input. PCIe link bandwidth follows NCCL's own table (``kvDictPciGen``,
``src/graph/topo.cc``; reference note sec. 3.1); path types between a GPU and a NIC in an NCCL XML follow
NCCL's rules (``src/graph/paths.cc``): same switch -> PIX, a common switch higher up -> PXB, same CPU
without a common switch -> PHB, different CPUs -> SYS.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from aifabric import catalog
from aifabric.discovery.nccl_xml import GpuNode, NcclTopology, NicNode
from aifabric.discovery.nvsmi import TopoMatrix

__all__ = [
    "cpu_sides",
    "HYPERVISOR_PCI_VENDORS",
    "NV_LINKS",
    "nvlink_pairs_only",
    "NodeLayout",
    "pcie_gen",
    "whole_cut_gpus",
]

#: PCI vendor IDs of hypervisors' virtual devices (PCI ID Repository, https://pci-ids.ucw.cz/): a ``pci``
#: element of an NCCL dump with one of them is a device the hypervisor made up (a QEMU root port, a virtio or
#: VMware NIC). Amazon's 0x1d0f (ENA/EFA, Nitro) is left out: Nitro passes GPUs, NVLink and P2P through.
HYPERVISOR_PCI_VENDORS = {
    "0x1af4": "Red Hat virtio",
    "0x1b36": "Red Hat QEMU",
    "0x15ad": "VMware",
    "0x1414": "Microsoft Hyper-V",
    "0x5853": "XenSource",
    "0x1ab8": "Parallels",
    "0x80ee": "VirtualBox",
}


NV_LINKS = re.compile(r"^NV(\d+)$")
# Compute capability -> catalogue key, for NCCL dumps (sm="90").
_SM_GPU = {70: "v100-pcie-32gb", 80: "a100-sxm-80gb", 90: "h100-sxm", 100: "b200"}
# NVLinks per GPU pair in nvidia-smi -> the board it usually is.
_NV_GPU = {
    18: ("h100-sxm", "an H100/H200/B200 SXM board"),
    12: ("a100-sxm-80gb", "an A100 SXM board"),
    8: ("h800-sxm", "an H800 SXM board, NVLink cut to 8 links (an A800 SXM shows NV8 too)"),
}
#: The same on a Grace board, where GPU memory is a NUMA node of the OS (coherent NVLink-C2C to the CPU).
_NV_GRACE = {18: ("gb200", "a Grace Blackwell tray, GB200 (GB300 prints the same)")}
_GRACE_KEYS = frozenset(key for key, _ in _NV_GRACE.values())
# PCIe per-lane rate (GT/s) -> NCCL's per-lane speed in units of 100 Mb/s (``kvDictPciGen``, ``topo.cc``) and
# the generation; a link's bandwidth is width x that / 80 GB/s (reference note sec. 3.1).
_PCI_LANE = {2.5: (15, 1), 5.0: (30, 2), 8.0: (60, 3), 16.0: (120, 4), 32.0: (240, 5), 64.0: (480, 6)}


def _gpu_numa(affinity: frozenset[int] | None, own: int | None, c2c: bool) -> int | None:
    """The NUMA node of a GPU's CPU: its one ``NUMA Affinity`` node; on a Grace board (``c2c``) the lowest
    node of a longer list, as the CPUs' nodes come first and the GPUs' memory nodes after them (a GB200 tray
    prints ``0,3-9,11-17`` with GPU NUMA ID 2 for GPU0, ``1,19-25,27-33`` with 18 for GPU2); else the GPU NUMA
    ID.

    >>> _gpu_numa(frozenset({0, 3, 4}), 2, True), _gpu_numa(frozenset({1}), None, False)
    (0, 1)
    """
    if affinity and (len(affinity) == 1 or c2c):
        return min(affinity)
    return own


def nvlink_pairs_only(gpus: int, links: dict[tuple[str, str], str]) -> bool:
    """Whether ``links`` (GPU pair -> matrix cell, read and cut rows alike) of a node of ``gpus`` GPUs show
    NVLink joining GPUs in pairs only: some NVLink, no GPU with NVLink to two others, at least 3 GPUs.

    That is PCIe cards on NVLink bridges: a bridge joins two cards (the catalogue's A100 PCIe and H100
    PCIe/NVL entries cite their datasheets: NVLink only as a bridge between pairs), while an SXM GPU sits on
    a board that links it to several GPUs of the board (every other one through NVSwitch on HGX 8-GPU
    boards; four peers at NV1/NV2 on a DGX-1, ``xml_dgx1_v100_cut.xml``). Two GPUs alone may be a slice of
    an SXM board, so they tell nothing.

    >>> nvlink_pairs_only(4, {("GPU0", "GPU1"): "NV12", ("GPU2", "GPU3"): "NV12", ("GPU0", "GPU2"): "SYS"})
    True
    >>> nvlink_pairs_only(2, {("GPU0", "GPU1"): "NV12"}), nvlink_pairs_only(3, {("GPU0", "GPU1"): "SYS"})
    (False, False)
    """
    peers: dict[str, set[str]] = {}
    for (a, b), code in links.items():
        if NV_LINKS.match(code) and int(code[2:]) > 0:
            peers.setdefault(a, set()).add(b)
            peers.setdefault(b, set()).add(a)
    return gpus >= 3 and bool(peers) and max(len(p) for p in peers.values()) == 1


def whole_cut_gpus(
    gpus: tuple[str, ...], cut_gpus: tuple[str, ...], cut_links: dict[tuple[str, str], str]
) -> tuple[str, ...]:
    """The cut GPUs whose paths to every other GPU (read or cut) are in ``cut_links``.

    >>> whole_cut_gpus(("GPU0",), ("GPU1",), {("GPU1", "GPU0"): "NV12", ("GPU0", "GPU1"): "NV12"})
    ('GPU1',)
    """
    return tuple(c for c in cut_gpus if all((c, g) in cut_links for g in (*gpus, *cut_gpus) if g != c))


def _whole_cut_note(m: TopoMatrix) -> tuple[str, ...]:
    """What the node makes of the cut GPUs whose every GPU path is in the matrix: one sentence, or none."""
    whole = whole_cut_gpus(m.gpus, m.cut_gpus, m.cut_gpu_links)
    if not whole:
        return ()
    return (
        f"{', '.join(whole)}: every path to the other GPUs is in the matrix, so the node counts "
        f"{len(m.gpus) + len(whole)} GPUs and their NVLink groups; the NIC paths and affinity of "
        f"{', '.join(whole)} are not scored",
    )


def cpu_sides(gpus: list[str], cpus: dict[str, frozenset[int] | None]) -> dict[str, int]:
    """Each of ``gpus`` whose local CPUs are known -> its group (0, 1 ...): GPUs that share a local CPU
    are in one group, in GPU order.

    nvidia-smi's ``CPU Affinity`` is the CPUs local to a GPU, those of its NUMA node; its legend's ``SYS``
    is a path "traversing PCIe as well as the SMP interconnect between NUMA nodes", ``NODE`` one "within a
    NUMA node" (NVIDIA, ``nvidia-smi topo -m`` legend). GPUs whose local CPUs are disjoint are on two NUMA
    nodes, though the text does not number them.

    >>> cpu_sides(["GPU0", "GPU1", "GPU2"], {"GPU0": frozenset({0, 1}), "GPU1": frozenset({2}), "GPU2": None})
    {'GPU0': 0, 'GPU1': 1}
    """
    groups: list[set[int]] = []
    side: dict[str, int] = {}
    for gpu in gpus:
        local = cpus.get(gpu)
        if not local:
            continue
        k = next((k for k, group in enumerate(groups) if group & local), len(groups))
        if k == len(groups):
            groups.append(set())
        groups[k] |= local
        side[gpu] = k
    return side


def pcie_gen(gt_per_s: float | None) -> int | None:
    """PCIe generation of a per-lane rate in GT/s (NCCL's ``kvDictPciGen``); None if unknown."""
    if not gt_per_s:
        return None
    lane = _PCI_LANE.get(float(gt_per_s))
    return lane[1] if lane else None


def _pcie_bw(gt_per_s: float | None, width: int | None) -> tuple[float, str] | None:
    """NCCL's bandwidth of one PCIe link, bytes/s, and its name (``Gen4 x16`` = 24 GB/s); None if unknown."""
    if not gt_per_s or not width:
        return None
    lane, gen = _PCI_LANE.get(float(gt_per_s), (gt_per_s * 7.5, None))
    name = f"Gen{gen} x{width}" if gen else f"{gt_per_s:g} GT/s x{width}"
    return width * lane / 80 * 1e9, name


@dataclass(frozen=True)
class NodeLayout:
    """One node's devices and paths, the same shape whether read from nvidia-smi or NCCL XML.

    Attributes
    ----------
    kind : str
        ``nvidia-smi`` or ``nccl-xml``.
    gpus, nics : tuple of str
        Labels (``GPU0``..., ``NIC0``...).
    nic_names : dict
        NIC label -> device name (``mlx5_0``) where known.
    gpu_links : dict
        ``(gpu_a, gpu_b) -> code`` for every ordered pair of distinct GPUs: ``NV#`` or a PCIe path type.
    gpu_nic : dict
        ``(gpu, nic) -> path type`` (``PIX`` ... ``SYS``, older codes normalised).
    gpu_numa, nic_numa : dict
        Label -> NUMA node, or None when the input does not say.
    gpu_side : dict
        GPU label -> its group among the GPUs of no known NUMA node, by their local CPUs
        (:func:`cpu_sides`); empty where every GPU's node is known or no CPU affinity is given.
    gpu_gdr, nic_gdr : dict
        Label -> the ``gdr`` attribute of an NCCL dump (None when absent).
    nic_speed_bytes_per_s : float or None
        Per-NIC speed from the input (NCCL dumps), bytes/s per direction.
    fabric : str or None
        ``infiniband`` or ``ethernet`` when the PCI class says.
    gpu_hint : tuple of (str or None, str)
        Catalogue key guessed from the input, and how.
    cpu_vendor : str or None
        ``intel``, ``amd`` or ``arm`` from an NCCL dump.
    cpu_family : str or None
        The catalogue CPU family (``cpus.yaml``) of an NCCL dump whose ``<cpu>`` elements agree on a CPUID
        family and model the catalogue names (:func:`aifabric.catalog.cpu_for_cpuid`).
    hand_written : bool
        An NCCL topology file without ``<gpu>``/``<net>`` elements (NCCL fills them in at run time).
    affinity_known : bool
        Whether any CPU/NUMA affinity was reported.
    line : int
        1-based line of the matrix header or ``<system>``.
    source : str or None
    gpu_nic_pcie : dict
        ``(gpu, nic) -> (bytes/s, "Gen4 x16")``: the PCIe bandwidth of the path as NCCL models it (the
        slowest link on it, each ``width x per-lane speed / 80`` GB/s), where an NCCL dump gives link speeds.
    nvlink_count : int or None
        Most NVLinks between two GPUs (``NV18``), None without NVLink.
    gpu_sm : int or None
        Compute capability of the GPUs (NCCL dumps), e.g. 90.
    gpu_link_gt_per_s : float or None
        PCIe per-lane rate of the GPUs' own links (NCCL dumps), GT/s.
    missing : tuple of str
        What a partial input lacks (:attr:`TopoMatrix.missing`), one sentence each.
    cut_gpus : tuple of str
        GPUs of the node whose matrix rows were cut (:attr:`TopoMatrix.cut_gpus`): not in :attr:`gpus`, but
        sharing the node's NICs.
    cut_gpu_links : dict
        ``(gpu, gpu) -> code`` for the pairs with a cut GPU on one side that the matrix holds
        (:attr:`TopoMatrix.cut_gpu_links`).
    hypervisor_pci : tuple of str
        PCI devices of an NCCL dump whose vendor ID is a hypervisor's (:data:`HYPERVISOR_PCI_VENDORS`), as
        ``"0000:00:02.0 (0x1b36 Red Hat QEMU)"``.
    gpus_off_cpu : bool
        An NCCL dump whose every GPU hangs directly off a ``<cpu>``, no PCIe switch above any (a flattened
        PCIe root: what a hypervisor shows).
    nvlink_hidden : bool
        A matrix printed by ``nvidia-smi topo -mp`` (:attr:`TopoMatrix.pci_only`): PCIe paths only, so the
        absence of ``NV#`` cells says nothing about NVLink.
    """

    kind: str
    gpus: tuple[str, ...]
    nics: tuple[str, ...]
    nic_names: dict[str, str] = field(hash=False)
    gpu_links: dict[tuple[str, str], str] = field(hash=False)
    gpu_nic: dict[tuple[str, str], str] = field(hash=False)
    gpu_numa: dict[str, int | None] = field(hash=False)
    nic_numa: dict[str, int | None] = field(hash=False)
    gpu_side: dict[str, int] = field(hash=False, default_factory=dict)
    gpu_gdr: dict[str, bool | None] = field(hash=False, default_factory=dict)
    nic_gdr: dict[str, bool | None] = field(hash=False, default_factory=dict)
    nic_speed_bytes_per_s: float | None = None
    fabric: str | None = None
    gpu_hint: tuple[str | None, str] = (None, "")
    cpu_vendor: str | None = None
    cpu_family: str | None = None
    hand_written: bool = False
    affinity_known: bool = True
    line: int = 1
    source: str | None = None
    gpu_nic_pcie: dict[tuple[str, str], tuple[float, str]] = field(hash=False, default_factory=dict)
    nvlink_count: int | None = None
    gpu_sm: int | None = None
    gpu_link_gt_per_s: float | None = None
    missing: tuple[str, ...] = ()
    cut_gpus: tuple[str, ...] = ()
    cut_gpu_links: dict[tuple[str, str], str] = field(hash=False, default_factory=dict)
    hypervisor_pci: tuple[str, ...] = ()
    gpus_off_cpu: bool = False
    c2c: bool = False
    nvlink_hidden: bool = False

    @property
    def node_gpus(self) -> tuple[str, ...]:
        """The GPUs the node is counted with: those read, then each cut GPU whose paths to every other GPU
        of the header are in the text (:func:`whole_cut_gpus`); its NIC paths and affinity are not."""
        return (*self.gpus, *whole_cut_gpus(self.gpus, self.cut_gpus, self.cut_gpu_links))

    @property
    def nvlinks_to_cut_gpus(self) -> tuple[tuple[str, str, int], ...]:
        """``(gpu read, cut GPU, links)`` for each NVLink cell a read row shows under the column of a GPU
        whose row was cut (``NV18`` in GPU0's row of a matrix cut after it): NVLink the input shows, to GPUs
        the node is not counted with."""
        return tuple(
            (a, b, int(m.group(1)))
            for (a, b), code in self.cut_gpu_links.items()
            if a in self.gpus and b not in self.node_gpus and (m := NV_LINKS.match(code))
        )

    @property
    def nvlink_bridged(self) -> bool:
        """NVLink between GPU pairs only (:func:`nvlink_pairs_only`): PCIe cards on NVLink bridges."""
        links = {**self.gpu_links, **self.cut_gpu_links}
        return nvlink_pairs_only(len(self.gpus) + len(self.cut_gpus), links)

    def gpu_link(self, a: str, b: str) -> str:
        """The cell between GPUs ``a`` and ``b`` of :attr:`node_gpus` (KeyError: a pair not in the text)."""
        return self.gpu_links[(a, b)] if (a, b) in self.gpu_links else self.cut_gpu_links[(a, b)]

    # -- constructors ----------------------------------------------------------------------------------------

    @classmethod
    def from_matrix(cls, m: TopoMatrix) -> NodeLayout:
        """Read a parsed ``nvidia-smi topo -m`` matrix."""
        gpu_links = {(a, b): m.link(a, b) for a in m.gpus for b in m.gpus if a != b}
        gpu_nic = {(g, n): m.path_type(g, n) for g in m.gpus for n in m.nics}
        c2c = any(v is not None for v in m.gpu_numa_id.values())
        gpu_numa = {g: _gpu_numa(m.numa_affinity.get(g), m.gpu_numa_id.get(g), c2c) for g in m.gpus}
        nic_numa: dict[str, int | None] = {}
        for n in m.nics:  # a NIC shares the NUMA node of any GPU it reaches without crossing the SMP link
            near = {gpu_numa[g] for g in m.gpus if gpu_nic[(g, n)] != "SYS" and gpu_numa[g] is not None}
            nic_numa[n] = near.pop() if len(near) == 1 else None
        # the NVLink a cut row prints counts too: the node counts a cut GPU whose GPU paths are whole
        seen = {**gpu_links, **m.cut_gpu_links}
        nv = sorted({int(c[2:]) for c in seen.values() if NV_LINKS.match(c)})
        hint: tuple[str | None, str]
        if nv and nvlink_pairs_only(len(m.gpus) + len(m.cut_gpus), seen):
            hint = (None, f"NV{nv[-1]} between GPU pairs only: NVLink bridges between PCIe cards")
        elif nv and c2c and nv[-1] in _NV_GRACE:
            grace, board = _NV_GRACE[nv[-1]]
            hint = (grace, f"NV{nv[-1]} between GPUs whose memory is a NUMA node (GPU NUMA ID): {board}")
        elif nv:
            key, board = _NV_GPU.get(nv[-1], (None, ""))
            hint = (key, f"NV{nv[-1]} between GPUs" + (f": {board}" if board else ""))
        else:
            hint = (
                None,
                "NVLink not shown (nvidia-smi topo -mp)" if m.pci_only else "no NVLink in the matrix",
            )
        affinity = any(v is not None for v in m.cpu_affinity.values()) or any(
            v is not None for v in m.numa_affinity.values()
        )
        return cls(
            kind="nvidia-smi",
            gpus=m.gpus,
            nics=m.nics,
            nic_names={n: m.nic_name(n) for n in m.nics},
            gpu_links=gpu_links,
            gpu_nic=gpu_nic,
            gpu_numa=gpu_numa,
            nic_numa=nic_numa,
            gpu_side=cpu_sides([g for g in m.gpus if gpu_numa[g] is None], m.cpu_affinity),
            gpu_hint=hint,
            affinity_known=affinity or not m.gpus or m.affinity_cut,
            missing=(*m.missing, *_whole_cut_note(m)),
            cut_gpus=m.cut_gpus,
            cut_gpu_links=m.cut_gpu_links,
            line=m.line,
            source=m.source,
            nvlink_count=nv[-1] if nv else None,
            c2c=c2c,
            cpu_vendor="arm" if hint[0] in _GRACE_KEYS else None,  # Grace: Arm Neoverse V2 cores
            nvlink_hidden=m.pci_only,
        )

    @classmethod
    def from_topology(cls, t: NcclTopology) -> NodeLayout:
        """Read a parsed NCCL topology XML document."""
        gpus = t.gpus
        labels = _xml_gpu_labels(gpus)
        nics = [n for n in t.nics if n.busid is not None or n.nets]
        nic_labels = [f"NIC{i}" for i in range(len(nics))]
        named_gpus = list(zip(gpus, labels, strict=True))
        named_nics = list(zip(nics, nic_labels, strict=True))
        tree = _PciTree(t)
        gpu_nic, gpu_nic_pcie = _xml_gpu_nic(tree, named_gpus, named_nics)
        gpu_links = _xml_gpu_links(gpus, labels, tree)
        gpu_speeds = [g.link_speed_gt_per_s for g in gpus if g.link_speed_gt_per_s]
        return cls(
            kind="nccl-xml",
            gpus=tuple(labels),
            nics=tuple(nic_labels),
            nic_names={nl: (n.nets[0].name if n.nets else (n.busid or nl)) for n, nl in named_nics},
            gpu_links=gpu_links,
            gpu_nic=gpu_nic,
            gpu_numa={gl: g.numaid for g, gl in named_gpus},
            nic_numa={nl: n.numaid for n, nl in named_nics},
            gpu_gdr={gl: g.gdr for g, gl in named_gpus},
            nic_gdr={nl: _xml_nic_gdr(n) for n, nl in named_nics},
            nic_speed_bytes_per_s=_xml_nic_speed(nics),
            fabric=_xml_fabric(nics),
            gpu_hint=_xml_gpu_hint(gpus),
            cpu_vendor=_xml_cpu_vendor(t),
            cpu_family=_xml_cpu_family(t),
            hand_written=not any(g.sm is not None or g.nvlinks for g in gpus)
            and not any(n.nets for n in nics),
            affinity_known=any(c.affinity for c in t.cpus) or any(c.numaid is not None for c in t.cpus),
            line=t.line,
            source=t.source,
            gpu_nic_pcie=gpu_nic_pcie,
            nvlink_count=_xml_nvlink_count(gpu_links),
            gpu_sm=_xml_one_sm(gpus),
            gpu_link_gt_per_s=max(gpu_speeds) if gpu_speeds else None,
            hypervisor_pci=_xml_hypervisor_pci(t),
            gpus_off_cpu=bool(gpus) and all(g.pci_switch is None for g in gpus),
        )


class _PciTree:
    """The PCIe switches of an NCCL XML document: path types and bandwidths between two devices."""

    def __init__(self, t: NcclTopology) -> None:
        self.parents = {s.busid: s.parent for s in t.pci_switches}
        self.switch_bw = {s.busid: _pcie_bw(s.link_speed_gt_per_s, s.link_width) for s in t.pci_switches}

    def chain(self, switch: str | None) -> list[str]:
        """``switch`` and the switches above it, nearest first."""
        out: list[str] = []
        while switch is not None and switch not in out:
            out.append(switch)
            switch = self.parents.get(switch)
        return out

    def path(self, a_switch: str | None, a_numa: int | None, b_switch: str | None, b_numa: int | None) -> str:
        """NCCL's path type between two devices (``src/graph/paths.cc``; see the module docstring)."""
        if a_numa is not None and b_numa is not None and a_numa != b_numa:
            return "SYS"
        ca, cb = self.chain(a_switch), self.chain(b_switch)
        common = next((s for s in ca if s in cb), None)
        if common is None:
            return "PHB"
        return "PIX" if common == a_switch and common == b_switch else "PXB"

    def bandwidth(self, g: GpuNode, n: NicNode) -> tuple[float, str] | None:
        """The slowest PCIe link between a GPU and a NIC (NCCL: a path's bandwidth is its minimum)."""
        links = [
            _pcie_bw(g.link_speed_gt_per_s, g.link_width),
            _pcie_bw(n.link_speed_gt_per_s, n.link_width),
        ]
        ca, cb = self.chain(g.pci_switch), self.chain(n.pci_switch)
        common = next((x for x in ca if x in cb), None)
        for side in (ca, cb):
            for x in side:
                if x == common:
                    break
                links.append(self.switch_bw.get(x))
        known = [x for x in links if x is not None]
        return min(known) if known else None


def _xml_gpu_links(
    gpus: tuple[GpuNode, ...], labels: list[str], tree: _PciTree
) -> dict[tuple[str, str], str]:
    """``NV<count>`` for each GPU pair joined by NVLink (directly or via NVSwitch), else its PCIe path."""
    busid_label = {(g.busid or "").lower(): gl for g, gl in zip(gpus, labels, strict=True) if g.busid}
    switch_links: dict[str, int] = {}
    direct: dict[tuple[str, str], int] = {}
    for g, gl in zip(gpus, labels, strict=True):
        for link in g.nvlinks:
            peer = busid_label.get(link.target.lower())
            if peer is not None and peer != gl:
                direct[(gl, peer)] = direct.get((gl, peer), 0) + link.count
            elif link.tclass is None or link.tclass.lower().startswith("0x0680"):
                switch_links[gl] = switch_links.get(gl, 0) + link.count
    gpu_links: dict[tuple[str, str], str] = {}
    for g, gl in zip(gpus, labels, strict=True):
        for h, hl in zip(gpus, labels, strict=True):
            if gl == hl:
                continue
            count = direct.get((gl, hl), 0) or direct.get((hl, gl), 0)
            if not count and gl in switch_links and hl in switch_links:
                count = min(switch_links[gl], switch_links[hl])
            gpu_links[(gl, hl)] = (
                f"NV{count}" if count else tree.path(g.pci_switch, g.numaid, h.pci_switch, h.numaid)
            )
    return gpu_links


def _xml_gpu_hint(gpus: tuple[GpuNode, ...]) -> tuple[str | None, str]:
    """The catalogue GPU the compute capability of an NCCL dump suggests, and why (None: no guess)."""
    sms = {g.sm for g in gpus if g.sm is not None}
    if len(sms) != 1:
        return None, "the file gives no compute capability (hand-written topology)"
    sm = sms.pop()
    if sm == 70 and any(g.nvlinks for g in gpus):
        return None, "sm=70 with NVLink: a V100 SXM2, not in the catalogue"
    return _SM_GPU.get(sm), f"sm={sm} in the NCCL dump"


def _xml_cpu_vendor(t: NcclTopology) -> str | None:
    """``intel``, ``amd`` or ``arm`` when every ``<cpu>`` of the dump agrees, else None."""
    vendors = {c.vendor for c in t.cpus if c.vendor}
    arches = {c.arch for c in t.cpus if c.arch}
    if vendors == {"GenuineIntel"}:
        return "intel"
    if vendors == {"AuthenticAMD"}:
        return "amd"
    return "arm" if arches and arches <= {"arm64", "aarch64"} else None


def _xml_cpu_family(t: NcclTopology) -> str | None:
    """The catalogue CPU family of a dump whose ``<cpu>`` elements agree on vendor, ``familyid`` and
    ``modelid`` (:func:`aifabric.catalog.cpu_for_cpuid`), else None."""
    vendor = _xml_cpu_vendor(t)
    ids = {(c.familyid, c.modelid) for c in t.cpus}
    if vendor is None or len(ids) != 1:
        return None
    ((family, model),) = ids
    return None if family is None else catalog.cpu_for_cpuid(vendor, family, model)


def _xml_gpu_labels(gpus: tuple[GpuNode, ...]) -> list[str]:
    """``GPU<dev>`` for each GPU (``GPU<index>`` where the dump gives no ``dev``), or ``GPU<index>`` for all
    when two labels would be the same."""
    labels = [f"GPU{g.dev}" if g.dev is not None else f"GPU{i}" for i, g in enumerate(gpus)]
    if len(set(labels)) != len(labels):
        labels = [f"GPU{i}" for i in range(len(gpus))]
    return labels


def _xml_gpu_nic(
    tree: _PciTree, named_gpus: list[tuple[GpuNode, str]], named_nics: list[tuple[NicNode, str]]
) -> tuple[dict[tuple[str, str], str], dict[tuple[str, str], tuple[float, str]]]:
    """For each (GPU, NIC) label pair: NCCL's path type (:meth:`_PciTree.path`), and, where known, the
    PCIe bandwidth of the path (:meth:`_PciTree.bandwidth`: bytes/s and its description)."""
    gpu_nic = {
        (gl, nl): tree.path(g.pci_switch, g.numaid, n.pci_switch, n.numaid)
        for g, gl in named_gpus
        for n, nl in named_nics
    }
    gpu_nic_pcie = {}
    for g, gl in named_gpus:
        for n, nl in named_nics:
            bw = tree.bandwidth(g, n)
            if bw is not None:
                gpu_nic_pcie[(gl, nl)] = bw
    return gpu_nic, gpu_nic_pcie


def _xml_nic_gdr(nic: NicNode) -> bool | None:
    """True when every net of the NIC that says so supports GPUDirect RDMA (None: none says)."""
    flags = [net.gdr for net in nic.nets if net.gdr is not None]
    return all(flags) if flags else None


def _xml_nic_speed(nics: list[NicNode]) -> float | None:
    """The fastest NIC's speed, bytes/s (the sum of its nets' speeds; None when no NIC gives one)."""
    speeds = [sum(net.speed_bytes_per_s or 0.0 for net in n.nets) for n in nics]
    speeds = [s for s in speeds if s > 0]
    return max(speeds) if speeds else None


def _xml_fabric(nics: list[NicNode]) -> str | None:
    """``infiniband`` (PCI class 0x0207) or ``ethernet`` (0x0200) when all NICs agree, else None."""
    classes = {(n.pci_class or "").lower()[:6] for n in nics}
    return "infiniband" if classes == {"0x0207"} else "ethernet" if classes == {"0x0200"} else None


def _xml_nvlink_count(gpu_links: dict[tuple[str, str], str]) -> int | None:
    """The most NVLinks between two GPUs (``NV<count>`` codes; None when no pair has NVLink)."""
    nv_counts = [int(code[2:]) for code in gpu_links.values() if NV_LINKS.match(code) and int(code[2:]) > 0]
    return max(nv_counts) if nv_counts else None


def _xml_one_sm(gpus: tuple[GpuNode, ...]) -> int | None:
    """The GPUs' compute capability when they all give the same one, else None."""
    sms = {g.sm for g in gpus if g.sm is not None}
    return next(iter(sms)) if len(sms) == 1 else None


def _xml_hypervisor_pci(t: NcclTopology) -> tuple[str, ...]:
    """``busid (vendor name)`` of each PCI device whose vendor ID is a hypervisor's."""
    return tuple(
        f"{busid} ({vendor} {HYPERVISOR_PCI_VENDORS[vendor]})"
        for busid, vendor in t.pci_vendors
        if vendor in HYPERVISOR_PCI_VENDORS
    )
