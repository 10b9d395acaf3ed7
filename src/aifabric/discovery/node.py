"""What one machine is, from ``nvidia-smi topo -m`` or an NCCL topology XML, and what it should reach.

:func:`inspect_node_text` detects the format, reads the node into a :class:`NodeLayout` (the same shape
whatever the input) and :func:`inspect_layout` answers:

* NVLink: groups of GPUs joined by NVLink and every pair with its link count (``NV18``);
* GPU-NIC locality: the nearest NICs of each GPU and their path type, a one-NIC-per-GPU pairing as NCCL
  would use it, and a GPUDirect RDMA verdict for every GPU-NIC pair;
* NUMA: which GPUs and NICs hang off which CPU node;
* a one-node :class:`~aifabric.cluster.spec.ClusterSpec` and the all_reduce busbw the node should reach
  alone and across nodes (formula engine, 4 GiB);
* warnings, each with its reason, when the layout will hurt.

GPUDirect RDMA (reference note sec. 3.2, 5.1): NCCL lets a NIC read and write GPU memory directly only when
the path between them is at most ``PXB`` (``NCCL_NET_GDR_LEVEL`` default): ``PIX`` (same PCIe switch) and
``PXB`` (several switches, no host bridge) are good; ``PHB`` (through the CPU's root complex), ``NODE``
(between root complexes of one CPU; NCCL computes PHB) and ``SYS`` (across the CPU interconnect) make NCCL
stage network traffic through host memory. The NCCL maintainer measured ~24 GB/s per HDR NIC with a
GPU-local NIC and GDR, ~16 GB/s with the NIC behind the CPU (NVIDIA/nccl #412); with ACS/IOMMU redirection or
in VMs the loss reaches 2-8x (reference note sec. 7.6). The across-node figure below uses the 16/24 ratio,
the mildest of these.

Path type between a GPU and a NIC in an NCCL XML (NCCL's own rules, ``src/graph/paths.cc``): same switch
-> PIX, a common switch higher up -> PXB, same CPU without a common switch -> PHB, different CPUs -> SYS.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import linear_sum_assignment

from aifabric import catalog
from aifabric.cluster.spec import ClusterSpec
from aifabric.collectives.algorithms import Algorithm
from aifabric.discovery._text import line_count, nonempty_text
from aifabric.discovery.calibrate import Calibration
from aifabric.discovery.inference import (
    DEFAULT_GPU,
    DEFAULT_NIC_SPEED,
    GpuMention,
    accelerators_in_text,
    nic_for_speed,
)
from aifabric.discovery.nccl_xml import GpuNode, NcclTopology, NicNode, parse_nccl_topologies
from aifabric.discovery.nvsmi import PATH_ORDER, TopoMatrix, normalize_path_code
from aifabric.engines.formula import formula_collective
from aifabric.errors import ParseError
from aifabric.units import parse_nic_bandwidth

__all__ = [
    "GDR_PATHS",
    "NO_GDR_FACTOR",
    "ExpectedBusbw",
    "Finding",
    "GpuNicPath",
    "NodeInspection",
    "NodeLayout",
    "NumaNode",
    "NvlinkGroup",
    "detect_format",
    "gdr_verdict",
    "inspect_layout",
    "inspect_node_text",
]

#: Path types over which NCCL uses GPUDirect RDMA by default (NCCL_NET_GDR_LEVEL=PXB).
GDR_PATHS: tuple[str, ...] = ("PIX", "PXB")
#: Network bandwidth left when a NIC is reached through the CPU (16 of 24 GB/s per HDR NIC, NVIDIA/nccl #412).
NO_GDR_FACTOR = 16.0 / 24.0
#: Message size of the expected-busbw figures (nccl-tests' plateau region).
EXPECTED_BYTES = 1 << 32
_NV = re.compile(r"^NV(\d+)$")
_RANK = {code: i for i, code in enumerate(PATH_ORDER)}  # PIX 0 ... SYS 4
# Compute capability -> catalogue key, for NCCL dumps (sm="90").
_SM_GPU = {70: "v100-pcie-32gb", 80: "a100-sxm-80gb", 90: "h100-sxm", 100: "b200"}
# NVLinks per GPU pair in nvidia-smi -> the board it usually is.
_NV_GPU = {18: ("h100-sxm", "an H100/H200/B200 SXM board"), 12: ("a100-sxm-80gb", "an A100 SXM board")}


# PCIe per-lane rate (GT/s) -> NCCL's per-lane speed in units of 100 Mb/s (``kvDictPciGen``, ``topo.cc``) and
# the generation; a link's bandwidth is width x that / 80 GB/s (reference note sec. 3.1).
_PCI_LANE = {2.5: (15, 1), 5.0: (30, 2), 8.0: (60, 3), 16.0: (120, 4), 32.0: (240, 5), 64.0: (480, 6)}
# Compute capability of each architecture, to check a GPU named in the text against an NCCL dump's sm=.
_ARCH_SM = {"volta": 70, "ampere": 80, "hopper": 90, "blackwell": 100}


def _pcie_gen(gt_per_s: float | None) -> int | None:
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


def gdr_verdict(path: str) -> tuple[bool, str]:
    """Whether NCCL uses GPUDirect RDMA over a GPU-NIC path type, and why.

    Examples
    --------
    >>> gdr_verdict("PIX")[0], gdr_verdict("NODE")[0]
    (True, False)
    """
    code = normalize_path_code(path)
    if code in GDR_PATHS:
        return True, f"{code}: the NIC reaches GPU memory without crossing the CPU; GPUDirect RDMA is used"
    where = {
        "PHB": "through the CPU's PCIe root complex",
        "NODE": "between PCIe root complexes of one CPU (NCCL computes PHB)",
        "SYS": "across the inter-socket link (QPI/UPI/xGMI)",
    }.get(code, "an unusual path")
    return False, (
        f"{code}: {where}; above NCCL_NET_GDR_LEVEL's default PXB, so traffic is staged in host memory "
        "(degraded: ~2/3 of the NIC at best, 2-8x lower with ACS/IOMMU or in VMs)"
    )


# -- data objects --------------------------------------------------------------------------------------------


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
    """

    kind: str
    gpus: tuple[str, ...]
    nics: tuple[str, ...]
    nic_names: dict[str, str] = field(hash=False)
    gpu_links: dict[tuple[str, str], str] = field(hash=False)
    gpu_nic: dict[tuple[str, str], str] = field(hash=False)
    gpu_numa: dict[str, int | None] = field(hash=False)
    nic_numa: dict[str, int | None] = field(hash=False)
    gpu_gdr: dict[str, bool | None] = field(hash=False, default_factory=dict)
    nic_gdr: dict[str, bool | None] = field(hash=False, default_factory=dict)
    nic_speed_bytes_per_s: float | None = None
    fabric: str | None = None
    gpu_hint: tuple[str | None, str] = (None, "")
    cpu_vendor: str | None = None
    hand_written: bool = False
    affinity_known: bool = True
    line: int = 1
    source: str | None = None
    gpu_nic_pcie: dict[tuple[str, str], tuple[float, str]] = field(hash=False, default_factory=dict)
    nvlink_count: int | None = None
    gpu_sm: int | None = None
    gpu_link_gt_per_s: float | None = None

    # -- constructors ----------------------------------------------------------------------------------------

    @classmethod
    def from_matrix(cls, m: TopoMatrix) -> NodeLayout:
        """Read a parsed ``nvidia-smi topo -m`` matrix."""
        gpu_links = {(a, b): m.link(a, b) for a in m.gpus for b in m.gpus if a != b}
        gpu_nic = {(g, n): m.path_type(g, n) for g in m.gpus for n in m.nics}
        gpu_numa: dict[str, int | None] = {}
        for g in m.gpus:
            nodes = m.numa_affinity.get(g)
            gpu_numa[g] = min(nodes) if nodes and len(nodes) == 1 else m.gpu_numa_id.get(g)
        nic_numa: dict[str, int | None] = {}
        for n in m.nics:  # a NIC shares the NUMA node of any GPU it reaches without crossing the SMP link
            near = {gpu_numa[g] for g in m.gpus if gpu_nic[(g, n)] != "SYS" and gpu_numa[g] is not None}
            nic_numa[n] = near.pop() if len(near) == 1 else None
        nv = sorted({int(c[2:]) for c in gpu_links.values() if _NV.match(c)})
        if nv:
            key, board = _NV_GPU.get(nv[-1], (None, ""))
            hint = (key, f"NV{nv[-1]} between GPUs" + (f": {board}" if board else ""))
        else:
            hint = (None, "no NVLink in the matrix")
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
            gpu_hint=hint,
            affinity_known=affinity or not m.gpus,
            line=m.line,
            source=m.source,
            nvlink_count=nv[-1] if nv else None,
        )

    @classmethod
    def from_topology(cls, t: NcclTopology) -> NodeLayout:
        """Read a parsed NCCL topology XML document."""
        gpus = t.gpus
        labels = [f"GPU{g.dev}" if g.dev is not None else f"GPU{i}" for i, g in enumerate(gpus)]
        if len(set(labels)) != len(labels):
            labels = [f"GPU{i}" for i in range(len(gpus))]
        nics = [n for n in t.nics if n.busid is not None or n.nets]
        nic_labels = [f"NIC{i}" for i in range(len(nics))]
        parents = {s.busid: s.parent for s in t.pci_switches}

        def chain(switch: str | None) -> list[str]:
            out: list[str] = []
            while switch is not None and switch not in out:
                out.append(switch)
                switch = parents.get(switch)
            return out

        def pcie_path(
            a_switch: str | None, a_numa: int | None, b_switch: str | None, b_numa: int | None
        ) -> str:
            if a_numa is not None and b_numa is not None and a_numa != b_numa:
                return "SYS"
            ca, cb = chain(a_switch), chain(b_switch)
            common = next((s for s in ca if s in cb), None)
            if common is None:
                return "PHB"
            return "PIX" if common == a_switch and common == b_switch else "PXB"

        gpu_nic = {
            (gl, nl): pcie_path(g.pci_switch, g.numaid, n.pci_switch, n.numaid)
            for g, gl in zip(gpus, labels, strict=True)
            for n, nl in zip(nics, nic_labels, strict=True)
        }
        switch_bw = {s.busid: _pcie_bw(s.link_speed_gt_per_s, s.link_width) for s in t.pci_switches}

        def pcie_bw(g: GpuNode, n: NicNode) -> tuple[float, str] | None:
            """The slowest PCIe link between a GPU and a NIC (NCCL: a path's bandwidth is its minimum)."""
            links = [
                _pcie_bw(g.link_speed_gt_per_s, g.link_width),
                _pcie_bw(n.link_speed_gt_per_s, n.link_width),
            ]
            ca, cb = chain(g.pci_switch), chain(n.pci_switch)
            common = next((x for x in ca if x in cb), None)
            for side in (ca, cb):
                for x in side:
                    if x == common:
                        break
                    links.append(switch_bw.get(x))
            known = [x for x in links if x is not None]
            return min(known) if known else None

        gpu_nic_pcie = {}
        for g, gl in zip(gpus, labels, strict=True):
            for n, nl in zip(nics, nic_labels, strict=True):
                bw = pcie_bw(g, n)
                if bw is not None:
                    gpu_nic_pcie[(gl, nl)] = bw
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
                    f"NV{count}" if count else pcie_path(g.pci_switch, g.numaid, h.pci_switch, h.numaid)
                )
        speeds = [sum(net.speed_bytes_per_s or 0.0 for net in n.nets) for n in nics]
        speeds = [s for s in speeds if s > 0]
        classes = {(n.pci_class or "").lower()[:6] for n in nics}
        fabric = "infiniband" if classes == {"0x0207"} else "ethernet" if classes == {"0x0200"} else None
        nv_counts = [int(code[2:]) for code in gpu_links.values() if _NV.match(code) and int(code[2:]) > 0]
        gpu_speeds = [g.link_speed_gt_per_s for g in gpus if g.link_speed_gt_per_s]
        sms = {g.sm for g in gpus if g.sm is not None}
        one_sm = next(iter(sms)) if len(sms) == 1 else None
        if len(sms) == 1:
            sm = sms.pop()
            hint: tuple[str | None, str] = (_SM_GPU.get(sm), f"sm={sm} in the NCCL dump")
            if sm == 70 and any(g.nvlinks for g in gpus):
                hint = (None, "sm=70 with NVLink: a V100 SXM2, not in the catalogue")
        else:
            hint = (None, "the file gives no compute capability (hand-written topology)")
        vendors = {c.vendor for c in t.cpus if c.vendor}
        arches = {c.arch for c in t.cpus if c.arch}
        vendor = (
            "intel" if vendors == {"GenuineIntel"} else "amd" if vendors == {"AuthenticAMD"}
            else "arm" if arches and arches <= {"arm64", "aarch64"} else None
        )  # fmt: skip
        nic_gdr: dict[str, bool | None] = {}
        for n, nl in zip(nics, nic_labels, strict=True):
            flags = [net.gdr for net in n.nets if net.gdr is not None]
            nic_gdr[nl] = all(flags) if flags else None
        return cls(
            kind="nccl-xml",
            gpus=tuple(labels),
            nics=tuple(nic_labels),
            nic_names={
                nl: (n.nets[0].name if n.nets else (n.busid or nl))
                for n, nl in zip(nics, nic_labels, strict=True)
            },
            gpu_links=gpu_links,
            gpu_nic=gpu_nic,
            gpu_numa={gl: g.numaid for g, gl in zip(gpus, labels, strict=True)},
            nic_numa={nl: n.numaid for n, nl in zip(nics, nic_labels, strict=True)},
            gpu_gdr={gl: g.gdr for g, gl in zip(gpus, labels, strict=True)},
            nic_gdr=nic_gdr,
            nic_speed_bytes_per_s=max(speeds) if speeds else None,
            fabric=fabric,
            gpu_hint=hint,
            cpu_vendor=vendor,
            hand_written=not any(g.sm is not None or g.nvlinks for g in gpus)
            and not any(n.nets for n in nics),
            affinity_known=any(c.affinity for c in t.cpus) or any(c.numaid is not None for c in t.cpus),
            line=t.line,
            source=t.source,
            gpu_nic_pcie=gpu_nic_pcie,
            nvlink_count=max(nv_counts) if nv_counts else None,
            gpu_sm=one_sm,
            gpu_link_gt_per_s=max(gpu_speeds) if gpu_speeds else None,
        )


@dataclass(frozen=True)
class NvlinkGroup:
    """GPUs joined by NVLink (a connected component), with the link count of every pair that has NVLink."""

    gpus: tuple[str, ...]
    pairs: tuple[tuple[str, str, int], ...]

    @property
    def full_mesh(self) -> bool:
        """Every pair of the group has a direct NVLink (an NVSwitch board shows this)."""
        n = len(self.gpus)
        return len(self.pairs) == n * (n - 1) // 2

    @property
    def link_counts(self) -> tuple[int, ...]:
        """Distinct NVLink counts per pair, ascending."""
        return tuple(sorted({k for _, _, k in self.pairs}))


@dataclass(frozen=True)
class GpuNicPath:
    """A GPU-NIC pair: its path type and the GPUDirect RDMA verdict."""

    gpu: str
    nic: str
    nic_name: str
    path: str
    gdr: bool
    reason: str


@dataclass(frozen=True)
class NumaNode:
    """The GPUs and NICs of one NUMA node (None: the input does not say)."""

    node: int | None
    gpus: tuple[str, ...]
    nics: tuple[str, ...]


@dataclass(frozen=True)
class ExpectedBusbw:
    """An all_reduce busbw the node should reach (formula engine)."""

    label: str
    n_nodes: int
    algorithm: str
    protocol: str
    busbw_bytes_per_s: float
    message_bytes: float = EXPECTED_BYTES


@dataclass(frozen=True)
class Finding:
    """A warning about the layout: a stable ``code`` and the message with its reason."""

    code: str
    message: str


@dataclass(frozen=True)
class NodeInspection:
    """Everything :func:`inspect_layout` found about one node (see the module docstring)."""

    layout: NodeLayout
    accelerator: str
    nic_speed_bytes_per_s: float
    nvlink_groups: tuple[NvlinkGroup, ...]
    nearest: dict[str, tuple[GpuNicPath, ...]] = field(hash=False)
    pairing: dict[str, GpuNicPath | None] = field(hash=False)
    paths: tuple[GpuNicPath, ...] = ()
    numa: tuple[NumaNode, ...] = ()
    spec: ClusterSpec | None = None
    spec_data: dict[str, Any] = field(hash=False, default_factory=dict)
    network_factor: float = 1.0
    expected: tuple[ExpectedBusbw, ...] = ()
    warnings: tuple[Finding, ...] = ()
    assumptions: tuple[str, ...] = ()
    accelerator_source: str = ""
    nic_speed_assumed: bool = False
    rail_cap_bytes_per_s: float | None = None
    rail_cap_link: str | None = None

    @property
    def nvlink_pairs(self) -> tuple[tuple[str, str, int], ...]:
        """Every NVLink pair ``(gpu_a, gpu_b, links)`` over all groups."""
        return tuple(p for g in self.nvlink_groups for p in g.pairs)

    def path(self, gpu: str, nic: str) -> GpuNicPath:
        """The verdict for one GPU-NIC pair.

        Raises
        ------
        KeyError
            If the pair is not in the node.
        """
        for p in self.paths:
            if p.gpu == gpu and p.nic == nic:
                return p
        raise KeyError(f"no pair {gpu}-{nic}")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict, SI units."""
        lay = self.layout
        return {
            "source": lay.source,
            "format": lay.kind,
            "line": lay.line,
            "gpus": list(lay.gpus),
            "nics": {n: lay.nic_names.get(n, n) for n in lay.nics},
            "accelerator": self.accelerator,
            "nic_speed_bytes_per_s": self.nic_speed_bytes_per_s,
            "nvlink_groups": [
                {"gpus": list(g.gpus), "full_mesh": g.full_mesh, "pairs": [list(p) for p in g.pairs]}
                for g in self.nvlink_groups
            ],
            "nearest_nics": {g: [[p.nic, p.path] for p in ps] for g, ps in self.nearest.items()},
            "pairing": {
                g: (None if p is None else {"nic": p.nic, "path": p.path, "gdr": p.gdr})
                for g, p in self.pairing.items()
            },
            "gdr": [{"gpu": p.gpu, "nic": p.nic, "path": p.path, "gdr": p.gdr} for p in self.paths],
            "numa": [{"node": n.node, "gpus": list(n.gpus), "nics": list(n.nics)} for n in self.numa],
            "cluster_spec": dict(self.spec_data),
            "network_factor": self.network_factor,
            "expected_busbw": [
                {
                    "label": e.label,
                    "nodes": e.n_nodes,
                    "algorithm": e.algorithm,
                    "protocol": e.protocol,
                    "busbw_bytes_per_s": e.busbw_bytes_per_s,
                    "message_bytes": e.message_bytes,
                }
                for e in self.expected
            ],  # fmt: skip
            "warnings": [{"code": w.code, "message": w.message} for w in self.warnings],
            "assumptions": list(self.assumptions),
            "accelerator_source": self.accelerator_source,
            "nic_speed_assumed": self.nic_speed_assumed,
            "rail_cap_bytes_per_s": self.rail_cap_bytes_per_s,
            "rail_cap_link": self.rail_cap_link,
        }


# -- analysis ------------------------------------------------------------------------------------------------


def _nvlink_groups(layout: NodeLayout) -> tuple[NvlinkGroup, ...]:
    order = {g: i for i, g in enumerate(layout.gpus)}
    pairs = []
    for i, a in enumerate(layout.gpus):
        for b in layout.gpus[i + 1 :]:
            match = _NV.match(layout.gpu_links[(a, b)])
            if match and int(match.group(1)) > 0:
                pairs.append((a, b, int(match.group(1))))
    parent = {g: g for g in layout.gpus}

    def find(g: str) -> str:
        while parent[g] != g:
            parent[g] = parent[parent[g]]
            g = parent[g]
        return g

    for a, b, _ in pairs:
        parent[find(a)] = find(b)
    members: dict[str, list[str]] = {}
    for g in layout.gpus:
        members.setdefault(find(g), []).append(g)
    groups = []
    for gs in members.values():
        if len(gs) < 2:
            continue
        inside = tuple(p for p in pairs if p[0] in gs)
        groups.append(NvlinkGroup(tuple(sorted(gs, key=order.__getitem__)), inside))
    return tuple(sorted(groups, key=lambda g: order[g.gpus[0]]))


def _verdict(layout: NodeLayout, gpu: str, nic: str) -> GpuNicPath:
    path = layout.gpu_nic[(gpu, nic)]
    ok, reason = gdr_verdict(path)
    if ok and (layout.gpu_gdr.get(gpu) is False or layout.nic_gdr.get(nic) is False):
        ok, reason = (
            False,
            f"{path}, but the NCCL dump marks gdr=0 (GPUDirect RDMA unavailable: nvidia-peermem?)",
        )
    return GpuNicPath(gpu, nic, layout.nic_names.get(nic, nic), path, ok, reason)


def _rank(path: str) -> int:
    return _RANK.get(normalize_path_code(path), len(PATH_ORDER))


def _pairing(layout: NodeLayout) -> dict[str, GpuNicPath | None]:
    """One NIC per GPU, closest paths first; NICs are shared only when there are fewer NICs than GPUs."""
    gpus, nics = layout.gpus, layout.nics
    if not nics:
        return {g: None for g in gpus}
    share = math.ceil(len(gpus) / len(nics))
    columns = [n for n in nics for _ in range(share)]
    cost = np.array(
        [[_rank(layout.gpu_nic[(g, n)]) * 10 + k % share for k, n in enumerate(columns)] for g in gpus]
    )
    rows, cols = linear_sum_assignment(cost)
    return {gpus[r]: _verdict(layout, gpus[r], columns[c]) for r, c in zip(rows, cols, strict=True)}


def _numa(layout: NodeLayout) -> tuple[NumaNode, ...]:
    nodes = sorted({*layout.gpu_numa.values(), *layout.nic_numa.values()}, key=lambda v: (v is None, v or 0))
    return tuple(
        NumaNode(
            node,
            tuple(g for g in layout.gpus if layout.gpu_numa.get(g) == node),
            tuple(n for n in layout.nics if layout.nic_numa.get(n) == node),
        )
        for node in nodes
    )


def _names(items: list[str]) -> str:
    return ", ".join(items)


def _fit(layout: NodeLayout, key: str) -> tuple[int, str]:
    """How well a catalogue GPU fits what the layout itself shows: 2 exactly, 1 plausibly, 0 not; and why."""
    acc = catalog.accelerator(key)
    score, why = 1, ""
    if layout.gpu_sm is not None:
        sm = _ARCH_SM.get(acc.arch)
        if sm is not None and sm != layout.gpu_sm:
            return 0, f"the dump says sm={layout.gpu_sm}"
        if sm is not None:
            score, why = 2, f"sm={layout.gpu_sm}"
    if layout.nvlink_count is not None:
        if not acc.nvlink or acc.nvlink_links < layout.nvlink_count:
            return 0, f"NV{layout.nvlink_count} between GPUs"
        if acc.nvlink_links == layout.nvlink_count:
            score, why = 2, why or f"NV{layout.nvlink_count}"
    gen = _pcie_gen(layout.gpu_link_gt_per_s)
    have = int(acc.pcie[3:]) if acc.pcie and acc.pcie.startswith("gen") and acc.pcie[3:].isdigit() else None
    if gen is not None and have is not None:
        if have < gen:
            return 0, f"PCIe Gen{gen} GPU links"
        if have == gen:
            score, why = 2, why or f"PCIe Gen{gen} GPU links"
    return score, why


def _accelerator(
    layout: NodeLayout, gpu: str | None, named: tuple[GpuMention, ...] = ()
) -> tuple[str, str, list[str]]:
    """(catalogue key, where it came from, assumptions): --gpu, else a GPU the file names, else the layout's
    guess.

    Of several GPUs named in the file, the one that fits the layout best (compute capability, NVLink count,
    PCIe generation of the GPU links) wins, the first named on a tie; a name that contradicts the layout
    (an A100 named beside NV18 links) does not override the layout's own guess.
    """
    if gpu is not None:
        catalog.accelerator(gpu)
        return gpu, "--gpu", []
    where = f"{Path(layout.source).name}" if layout.source else "the file"
    if named:
        scored = [(_fit(layout, m.key), i, m) for i, m in enumerate(named)]
        (score, why), _, best = max(scored, key=lambda x: (x[0][0], -x[1]))
        others = [m for m in named if m is not best]
        also = ", ".join(f"{m.written} line {m.line}" for m in others)
        fits = f"; {best.written} fits {why}" if why else ""
        listed = f" (it also names {also}{fits})" if others else ""
        if score > 0:
            return (
                best.key,
                "the file",
                [
                    f"GPU model from the file: {best.written!r} ({where} line {best.line}) -> "
                    f"{best.key}{listed}; give --gpu to override"
                ],
            )
        key, how = layout.gpu_hint
        names = ", ".join(f"{m.written} (line {m.line})" for m in named)
        if key is not None:
            return (
                key,
                "the layout",
                [
                    f"the file names {names}, but that does not fit the layout ({why}); {how}: assumed "
                    f"{key} (give --gpu)"
                ],
            )
        return (
            best.key,
            "the file",
            [
                f"GPU model from the file: {best.written!r} ({where} line {best.line}) -> {best.key}, "
                f"although the layout shows {why}; give --gpu to override"
            ],
        )
    key, how = layout.gpu_hint
    if key is not None:
        return key, "the layout", [f"GPU model not named by the input: {how}; assumed {key} (give --gpu)"]
    return DEFAULT_GPU, "default", [f"GPU model unknown ({how}): assumed {DEFAULT_GPU} (give --gpu)"]


def _node_spec(
    layout: NodeLayout, accelerator: str, speed: float, groups: tuple[NvlinkGroup, ...]
) -> tuple[ClusterSpec, dict[str, Any], list[str], list[Finding]]:
    acc = catalog.accelerator(accelerator)
    notes: list[str] = []
    findings: list[Finding] = []
    n = len(layout.gpus)
    one_mesh = len(groups) == 1 and len(groups[0].gpus) == n and groups[0].full_mesh
    peer_through_cpu = any(
        not _NV.match(code) and normalize_path_code(code) not in GDR_PATHS
        for code in layout.gpu_links.values()
    )
    if layout.hand_written and not groups and acc.nvlink:
        one_mesh = True
        notes.append(
            f"NVLink not in the file: {accelerator}'s NVSwitch board assumed ({acc.nvlink_links} links per "
            "GPU)"
        )
    if n > 1 and one_mesh and acc.nvlink:
        scale_up: dict[str, Any] = {"kind": "nvswitch"}
        links = groups[0].link_counts if groups else ()
        if acc.nvlink_links and links and links[0] < acc.nvlink_links:
            notes.append(
                f"the matrix shows NV{links[0]} but {accelerator} has {acc.nvlink_links} links: modelled "
                "with the catalogue's"
            )
    else:
        scale_up = {
            "kind": "pcie",
            "link": f"pcie-{acc.pcie}" if acc.pcie else "pcie-gen4",
            "p2p_through_cpu": peer_through_cpu,
        }
        if groups and acc.nvlink:
            findings.append(Finding("nvlink_partial", (
                f"NVLink joins only {'; '.join('+'.join(g.gpus) for g in groups)}: rings that span all "
                "GPUs cross PCIe between the groups, so the node is modelled as PCIe-bound"
            )))  # fmt: skip
        elif groups and not acc.nvlink:
            notes.append(
                f"the input shows NVLink but {accelerator} has none in the catalogue: modelled as PCIe"
            )
        if n > 1 and peer_through_cpu:
            findings.append(Finding("pcie_p2p_cpu", (
                "GPU-to-GPU traffic crosses the CPU root complex (PHB/NODE/SYS between GPUs): busbw is "
                "bounded by what the CPU forwards (9-11 GB/s for 4 x V100 Gen3, reference sec. 7.7)"
            )))  # fmt: skip
    data: dict[str, Any] = {
        "name": f"{Path(layout.source).name if layout.source else 'node'} ({layout.kind})",
        "accelerator": accelerator,
        "gpus_per_node": max(1, n),
        "nodes": 1,
        "scale_up": scale_up,
        "scale_out": {
            "nic": nic_for_speed(speed),
            "nic_speed": f"{speed * 8 / 1e9:g} Gb/s",
            "fabric": layout.fabric or "infiniband",
            "switch": _switch(layout.fabric or "infiniband", speed),
            "tiers": 2,
        },
        "front_end": None,
        "management": None,
        "cpu_vendor": layout.cpu_vendor or "intel",
        "description": f"one node read from {layout.source or 'the input'}",
    }
    if layout.fabric is None and layout.nics:
        notes.append("NIC fabric not in the input: InfiniBand assumed")
    if layout.cpu_vendor is None:
        notes.append("CPU vendor not in the input: Intel assumed (NCCL's network overheads)")
    return ClusterSpec.from_dict(data, source="inspected node"), data, notes, findings


def _switch(fabric: str, speed: float) -> str:
    if fabric == "ethernet":
        return "spectrum-4-sn5600-400g" if speed <= 50e9 * 1.0001 else "spectrum-4-sn5600-800g"
    return "quantum-2-qm9700" if speed <= 50e9 * 1.0001 else "quantum-x800-q3400"


def _network_factor(
    layout: NodeLayout, pairing: dict[str, GpuNicPath | None], nic_effective_bytes_per_s: float = 0.0
) -> float:
    """Share of ``g`` NICs' worth of bandwidth a node's rings get: distinct NICs used x their factor / g.

    A NIC's factor is the GDR one (:data:`NO_GDR_FACTOR` when traffic is staged in host memory), capped by the
    PCIe path to its GPU where the input gives link speeds: NCCL's path bandwidth over the NIC's effective
    rate (a Gen4 x16 path, 24 GB/s, carries ~98 % of an HDR NIC and ~49 % of a 400 Gb/s one).
    """
    used: dict[str, float] = {}
    for g, p in pairing.items():
        if p is None:
            return 1.0
        factor = 1.0 if p.gdr else NO_GDR_FACTOR
        pcie = layout.gpu_nic_pcie.get((g, p.nic))
        if pcie is not None and nic_effective_bytes_per_s > 0:
            factor = min(factor, pcie[0] / nic_effective_bytes_per_s)
        used[p.nic] = min(used.get(p.nic, 1.0), factor)
    return sum(used.values()) / max(1, len(layout.gpus))


def _rail_cap(
    layout: NodeLayout, pairing: dict[str, GpuNicPath | None], nic_effective_bytes_per_s: float
) -> tuple[float, str] | None:
    """The slowest GPU-NIC PCIe path of the pairing, if it is below the NIC's effective rate."""
    caps = [
        layout.gpu_nic_pcie[(g, p.nic)]
        for g, p in pairing.items()
        if p is not None and (g, p.nic) in layout.gpu_nic_pcie
    ]
    if not caps:
        return None
    low = min(caps)
    return low if low[0] < nic_effective_bytes_per_s else None


def _warnings(layout: NodeLayout, nearest: dict[str, tuple[GpuNicPath, ...]],
              pairing: dict[str, GpuNicPath | None], speed: float) -> list[Finding]:  # fmt: skip
    out: list[Finding] = []
    if not layout.nics:
        out.append(Finding("no_nic", (
            "no NIC in the input: the across-node figures assume one GPU-local NIC per GPU; a node without "
            "RDMA NICs talks to others over sockets, far slower"
        )))  # fmt: skip
        return out
    far: dict[str, list[str]] = {}
    for g, ps in nearest.items():
        if ps and not ps[0].gdr and normalize_path_code(ps[0].path) not in GDR_PATHS:
            far.setdefault(ps[0].path, []).append(g)
    for path, gs in far.items():
        out.append(Finding("nic_behind_cpu", (
            f"{_names(gs)}: the nearest NIC is {path}, i.e. behind the CPU; NCCL does not use GPUDirect "
            "RDMA over it by default (NCCL_NET_GDR_LEVEL=PXB) and stages network traffic in host memory: "
            "~2/3 of the NIC at best, 2-8x lower network busbw with ACS/IOMMU or in VMs (reference sec. "
            "7.6; NVIDIA/nccl #412, #489)"
        )))  # fmt: skip
    for g, p in pairing.items():
        best = nearest[g][0] if nearest.get(g) else None
        if p is None or best is None:
            continue
        if _rank(p.path) > _rank(best.path):
            out.append(Finding("far_nic", (
                f"{g} is paired with {p.nic} ({p.nic_name}) at {p.path}, although {best.nic} is "
                f"{best.path}: {best.nic} is taken by another GPU; GPUDirect RDMA "
                f"{'still works' if p.gdr else 'is lost'} for {g}"
            )))  # fmt: skip
        elif normalize_path_code(p.path) == "SYS" and layout.nics:
            out.append(Finding("far_nic", (
                f"{g}'s NIC {p.nic} ({p.nic_name}) is on the other CPU socket (SYS): its traffic crosses the "
                "inter-socket link"
            )))  # fmt: skip
    sharers: dict[str, list[str]] = {}
    for g, p in pairing.items():
        if p is not None:
            sharers.setdefault(p.nic, []).append(g)
    for nic, gs in sharers.items():
        if len(gs) > 1:
            out.append(Finding("shared_nic", (
                f"{nic} ({layout.nic_names.get(nic, nic)}) serves {_names(gs)} ({len(layout.nics)} NICs for "
                f"{len(layout.gpus)} GPUs): they share its {speed * 8 / 1e9:g} Gb/s, "
                f"{speed * 8 / 1e9 / len(gs):g} Gb/s each across nodes"
            )))  # fmt: skip
    off = [g for g, v in layout.gpu_gdr.items() if v is False] + [
        n for n, v in layout.nic_gdr.items() if v is False
    ]
    if off:
        out.append(Finding("gdr_disabled", (
            f"the NCCL dump marks gdr=0 on {_names(off)}: GPUDirect RDMA is unavailable there "
            "(nvidia-peermem or dma-buf missing), whatever the PCIe path"
        )))  # fmt: skip
    return out


def inspect_layout(
    layout: NodeLayout,
    *,
    gpu: str | None = None,
    nic_speed: str | None = None,
    named: tuple[GpuMention, ...] = (),
) -> NodeInspection:
    """Analyse one node (see the module docstring).

    Parameters
    ----------
    layout : NodeLayout
    gpu : str, optional
        Catalogue key of the accelerator (default: a GPU the input file names, see ``named``; else guessed
        from the layout, else :data:`DEFAULT_GPU`; the choice is listed in
        :attr:`NodeInspection.assumptions`).
    nic_speed : str, optional
        Speed of each NIC, e.g. ``"400 Gb/s"`` (default: the NCCL dump's, else :data:`DEFAULT_NIC_SPEED`).
    named : tuple of GpuMention
        GPU models the input file names anywhere in its text
        (:func:`~aifabric.discovery.inference.accelerators_in_text`).

    Returns
    -------
    NodeInspection

    Raises
    ------
    ConfigError
        If ``gpu`` is not a catalogue key or ``nic_speed`` is not a NIC speed.
    ParseError
        If the input lists no GPU.
    """

    if not layout.gpus:
        raise ParseError("the topology lists no GPU", line=layout.line, source=layout.source)
    accelerator, accelerator_source, notes = _accelerator(layout, gpu, named)
    assumed_speed = False
    if nic_speed is not None:
        speed = parse_nic_bandwidth(nic_speed, field="--nic-speed")
    elif layout.nic_speed_bytes_per_s:
        speed = layout.nic_speed_bytes_per_s
    else:
        speed = parse_nic_bandwidth(DEFAULT_NIC_SPEED, field="--nic-speed")
        assumed_speed = True
        notes.append(f"NIC speed not in the input: {DEFAULT_NIC_SPEED} assumed (give --nic-speed)")
    groups = _nvlink_groups(layout)
    paths = tuple(_verdict(layout, g, n) for g in layout.gpus for n in layout.nics)
    nearest: dict[str, tuple[GpuNicPath, ...]] = {}
    for g in layout.gpus:
        mine = sorted(
            (p for p in paths if p.gpu == g), key=lambda p: (_rank(p.path), layout.nics.index(p.nic))
        )
        nearest[g] = tuple(p for p in mine if _rank(p.path) == _rank(mine[0].path)) if mine else ()
    pairing = _pairing(layout)
    spec, spec_data, spec_notes, findings = _node_spec(layout, accelerator, speed, groups)
    notes.extend(spec_notes)
    findings = _warnings(layout, nearest, pairing, speed) + findings
    if not layout.affinity_known:
        findings.append(Finding("no_affinity", (
            "no CPU or NUMA affinity reported (typical of a VM): the PCIe layout shown may hide the real "
            "switches, and NCCL may need NCCL_TOPO_FILE (NVIDIA/nccl-tests #256; Azure/azhpc-images ships "
            "such files)"
        )))  # fmt: skip
    if layout.hand_written:
        notes.append(
            "hand-written NCCL topology file: no NVLinks or NIC speeds in it (NCCL adds them at run time); "
            "the catalogue's figures for the GPU are used"
        )
    factor = _network_factor(layout, pairing, spec.nic_effective_bytes_per_s)
    cap = _rail_cap(layout, pairing, spec.nic_effective_bytes_per_s)
    expected = _expected(spec, factor)
    return NodeInspection(
        layout=layout,
        accelerator=accelerator,
        nic_speed_bytes_per_s=speed,
        nvlink_groups=groups,
        nearest=nearest,
        pairing=pairing,
        paths=paths,
        numa=_numa(layout),
        spec=spec,
        spec_data=spec_data,
        network_factor=factor,
        expected=expected,
        warnings=tuple(findings),
        assumptions=tuple(notes),
        accelerator_source=accelerator_source,
        nic_speed_assumed=assumed_speed,
        rail_cap_bytes_per_s=cap[0] if cap else None,
        rail_cap_link=cap[1] if cap else None,
    )


def _expected(spec: ClusterSpec, network_factor: float) -> tuple[ExpectedBusbw, ...]:
    out = []
    one = formula_collective("all_reduce", EXPECTED_BYTES, spec)
    out.append(ExpectedBusbw("one node, NCCL default", 1, one.algorithm, one.protocol, one.busbw_bytes_per_s))
    if one.algorithm != Algorithm.RING and spec.n_gpus > 1:
        ring = formula_collective("all_reduce", EXPECTED_BYTES, spec, algorithm="ring")
        out.append(
            ExpectedBusbw(
                "one node, NCCL_ALGO=Ring", 1, ring.algorithm, ring.protocol, ring.busbw_bytes_per_s
            )
        )
    net = Calibration(inter_scale=max(0.01, network_factor), name="node layout")
    for nodes, label, algorithm in ((2, "2 nodes, NCCL_ALGO=Ring (the fabric's figure)", "ring"),
                                    (8, "8 nodes, NCCL default", None)):  # fmt: skip
        multi = spec.with_changes(nodes=nodes)
        r = formula_collective("all_reduce", EXPECTED_BYTES, multi, algorithm=algorithm, calibration=net)
        out.append(ExpectedBusbw(label, nodes, r.algorithm, r.protocol, r.busbw_bytes_per_s))
    return tuple(out)


# -- the front door ------------------------------------------------------------------------------------------


def detect_format(text: str) -> str:
    """``nccl-xml`` if ``text`` holds a ``<system>`` document, ``nvidia-smi`` if a matrix header, else
    ``unknown``.

    The one that appears first wins when both do.

    >>> detect_format("\\tGPU0\\tGPU1\\tCPU Affinity\\n"), detect_format("<system version='1'></system>")
    ('nvidia-smi', 'nccl-xml')
    """
    xml = re.search(r"^[ \t]*<system\b", text, re.MULTILINE)
    smi = re.search(r"^[ \t]*(?:\x1b\[[0-9;]*m)*GPU0(?:[ \t]|\x1b|$)", text, re.MULTILINE)
    if xml and (not smi or xml.start() < smi.start()):
        return "nccl-xml"
    if smi:
        return "nvidia-smi"
    return "unknown"


def inspect_node_text(
    text: str | bytes,
    *,
    source: str | None = None,
    gpu: str | None = None,
    nic_speed: str | None = None,
    fmt: str = "auto",
) -> list[NodeInspection]:
    """Inspect every node described in ``text``: one ``nvidia-smi topo -m`` matrix, or each NCCL XML
    ``<system>``.

    Parameters
    ----------
    text : str or bytes
        The file's content (commentary around the matrix or XML is allowed).
    source : str, optional
        File name, used in messages.
    gpu, nic_speed : str, optional
        See :func:`inspect_layout`.
    fmt : {"auto", "nvidia-smi", "nccl-xml"}
        Input format (default: detect).

    Returns
    -------
    list of NodeInspection

    Raises
    ------
    ParseError
        If the text is empty, not UTF-8, holds neither format, or the matrix/XML is malformed; the error names
        the line.
    ConfigError
        If ``gpu`` or ``nic_speed`` is invalid.
    ValueError
        If ``fmt`` is not one of the names above.

    Examples
    --------
    >>> node = inspect_node_text(
    ...     "\\tGPU0\\tGPU1\\tNIC0\\tNIC1\\tCPU Affinity\\tNUMA Affinity\\n"
    ...     "GPU0\\t X \\tNV18\\tPIX\\tSYS\\t0-55\\t0\\n"
    ...     "GPU1\\tNV18\\t X \\tSYS\\tPIX\\t56-111\\t1\\n"
    ...     "NIC0\\tPIX\\tSYS\\t X \\tSYS\\n"
    ...     "NIC1\\tSYS\\tPIX\\tSYS\\t X \\n", gpu="h100-sxm")[0]
    >>> node.nvlink_pairs, node.pairing["GPU1"].nic, node.path("GPU0", "NIC1").gdr
    ((('GPU0', 'GPU1', 18),), 'NIC1', False)
    """
    if fmt not in ("auto", "nvidia-smi", "nccl-xml"):
        raise ValueError(f"--format: use auto, nvidia-smi or nccl-xml, got {fmt!r}")
    text = nonempty_text(text, source, "the file is empty")
    kind = detect_format(text) if fmt == "auto" else fmt
    if kind == "unknown":
        n = line_count(text)
        hint = " (it looks like an nccl-tests log: use 'aifabric nccl-tests compare')" if re.search(
            r"#\s*size\s+count\s+type", text) else ""  # fmt: skip
        raise ParseError(
            f"no nvidia-smi topo -m matrix (a line starting with GPU0) or NCCL topology XML (<system>) found "
            f"in {n} lines{hint}",
            line=n,
            source=source,
        )
    if kind == "nvidia-smi":
        layouts = [NodeLayout.from_matrix(TopoMatrix.from_text(text, source=source))]
    else:
        layouts = [NodeLayout.from_topology(t) for t in parse_nccl_topologies(text, source=source)]
    named = accelerators_in_text(text) if gpu is None else ()
    return [inspect_layout(lay, gpu=gpu, nic_speed=nic_speed, named=named) for lay in layouts]
