"""GPU-NIC paths, NVLink groups and NUMA nodes of a :class:`~aifabric.discovery.node_layout.NodeLayout`.

GPUDirect RDMA (reference note sec. 3.2, 5.1): NCCL lets a NIC read and write GPU memory directly only when
the path between them is at most ``PXB`` (``NCCL_NET_GDR_LEVEL`` default); ``PHB``, ``NODE`` and ``SYS``
make NCCL stage network traffic through host memory. The NCCL maintainer measured ~24 GB/s per HDR NIC with
a GPU-local NIC and GDR, ~16 GB/s with the NIC behind the CPU (NVIDIA/nccl #412).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from aifabric.catalog.nccl import nccl_release, release_named
from aifabric.catalog.transport import NcclEnv, gdr_distance, gdr_enabled, transport
from aifabric.discovery.assignment import min_cost_assignment
from aifabric.discovery.node_layout import NV_LINKS, NodeLayout
from aifabric.discovery.nvsmi import PATH_ORDER, normalize_path_code

__all__ = [
    "GDR_PATHS",
    "NO_GDR_FACTOR",
    "GpuNicPath",
    "NumaNode",
    "NvlinkGroup",
    "c2c_gdr_verdict",
    "gdr_verdict",
    "gpu_nic_path",
    "nic_pairing",
    "numa_nodes",
    "nvlink_groups",
    "path_rank",
]


#: Path types over which NCCL uses GPUDirect RDMA by default (NCCL_NET_GDR_LEVEL=PXB).
GDR_PATHS: tuple[str, ...] = ("PIX", "PXB")
#: Network bandwidth left when a NIC is reached through the CPU (16 of 24 GB/s per HDR NIC, NVIDIA/nccl #412).
NO_GDR_FACTOR = 16.0 / 24.0
_RANK = {code: i for i, code in enumerate(PATH_ORDER)}  # PIX 0 ... SYS 4


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


def nvlink_groups(layout: NodeLayout) -> tuple[NvlinkGroup, ...]:
    """The connected components of the NVLink graph of the node's GPUs (:attr:`NodeLayout.node_gpus`, a
    cut GPU whose paths to the others are all in the text included), in the layout's order."""
    gpus = layout.node_gpus
    order = {g: i for i, g in enumerate(gpus)}
    pairs = []
    for i, a in enumerate(gpus):
        for b in gpus[i + 1 :]:
            match = NV_LINKS.match(layout.gpu_link(a, b))
            if match and int(match.group(1)) > 0:
                pairs.append((a, b, int(match.group(1))))
    parent = {g: g for g in gpus}

    def find(g: str) -> str:
        while parent[g] != g:
            parent[g] = parent[parent[g]]
            g = parent[g]
        return g

    for a, b, _ in pairs:
        parent[find(a)] = find(b)
    members: dict[str, list[str]] = {}
    for g in gpus:
        members.setdefault(find(g), []).append(g)
    groups = []
    for gs in members.values():
        if len(gs) < 2:
            continue
        inside = tuple(p for p in pairs if p[0] in gs)
        groups.append(NvlinkGroup(tuple(sorted(gs, key=order.__getitem__)), inside))
    return tuple(sorted(groups, key=lambda g: order[g.gpus[0]]))


def c2c_gdr_verdict(nccl_version: str | None = None, fabric: str | None = None) -> tuple[bool, str]:
    """Whether NCCL ``nccl_version`` (default: the newest recorded) runs GPUDirect RDMA to a NIC of the
    GPU's own Grace CPU, and why.

    The GPU reaches that NIC over NVLink-C2C and then the Grace's PCIe: NCCL's path P2C (PHB before
    v2.27.3), judged by the collective model's one rule with NCCL's defaults
    (:func:`~aifabric.catalog.transport.gdr_distance`, then
    :func:`~aifabric.catalog.transport.gdr_enabled` on the fabric's verbs transport): NCCL_NET_GDR_C2C,
    read from 2.26.2 (default 0) and on by default from 2.27.3, compares the path as C2C, within
    NCCL_NET_GDR_LEVEL's default PXB (``ncclTopoCheckGdr``, ``src/graph/paths.cc``).

    >>> c2c_gdr_verdict("2.27.3")[0], c2c_gdr_verdict("2.26.2")[0]
    (True, False)

    Raises
    ------
    ConfigError
        If ``nccl_version`` is not a recorded release's (:func:`~aifabric.catalog.nccl.nccl_release`).
    """
    env, release = NcclEnv(), nccl_release(nccl_version)
    version = release_named(nccl_version, release)
    distance = gdr_distance(env, "P2C", release)
    net = transport("roce-v2" if fabric == "ethernet" else "ib-verbs")
    seen = (
        "nvidia-smi does not see C2C and prints NODE, or SYS on a board where it shows no CPU path; a NIC of "
        "the other CPU stays SYS, without it"
    )
    if gdr_enabled(env, net, distance):
        return True, (
            f"NVLink-C2C: the GPU reaches a NIC of its own Grace through C2C (NCCL path P2C), which NCCL "
            f"{version} compares as {distance.name} (NCCL_NET_GDR_C2C, default 1 from 2.27.3: "
            f"ncclTopoCheckGdr in src/graph/paths.cc), so it runs GPUDirect RDMA there; {seen}"
        )
    return False, (
        f"NVLink-C2C: the GPU reaches a NIC of its own Grace through C2C, which NCCL {version} "
        f"classes {distance.name}, above NCCL_NET_GDR_LEVEL's default PXB, so traffic is staged in host "
        "memory (NCCL 2.27.3 on, or NCCL_NET_GDR_C2C=1 from 2.26.2, runs GPUDirect RDMA there); " + seen
    )


def gpu_nic_path(layout: NodeLayout, gpu: str, nic: str, nccl_version: str | None = None) -> GpuNicPath:
    """The path type between ``gpu`` and ``nic`` and its GPUDirect RDMA verdict (:func:`gdr_verdict`; on a
    Grace board a NIC of the GPU's own CPU: :func:`c2c_gdr_verdict` for ``nccl_version``, the newest
    recorded by default)."""
    path = layout.gpu_nic[(gpu, nic)]
    ok, reason = gdr_verdict(path)
    if not ok and layout.c2c and _same_cpu(layout, gpu, nic):
        ok, reason = c2c_gdr_verdict(nccl_version, layout.fabric)
    if ok and (layout.gpu_gdr.get(gpu) is False or layout.nic_gdr.get(nic) is False):
        ok, reason = (
            False,
            f"{path}, but the NCCL dump marks gdr=0 (GPUDirect RDMA unavailable: nvidia-peermem?)",
        )
    return GpuNicPath(gpu, nic, layout.nic_names.get(nic, nic), path, ok, reason)


def _same_cpu(layout: NodeLayout, gpu: str, nic: str) -> bool:
    """Whether ``nic`` hangs off ``gpu``'s own CPU: the same NUMA node, or either node unknown (a matrix
    that prints SYS for every NIC tells no CPU apart)."""
    own, theirs = layout.gpu_numa.get(gpu), layout.nic_numa.get(nic)
    return own is None or theirs is None or own == theirs


def path_rank(path: str) -> int:
    """Order of a path type, nearest first: PIX 0, PXB 1, PHB 2, NODE 3, SYS 4, anything else 5."""
    return _RANK.get(normalize_path_code(path), len(PATH_ORDER))


def nic_pairing(layout: NodeLayout, nccl_version: str | None = None) -> dict[str, GpuNicPath | None]:
    """One NIC per GPU, closest paths first; NICs are shared only when there are fewer NICs than GPUs
    (verdicts for NCCL ``nccl_version``, :func:`gpu_nic_path`)."""
    gpus, nics = layout.gpus, layout.nics
    if not nics:
        return {g: None for g in gpus}
    share = math.ceil(len(gpus) / len(nics))
    columns = [n for n in nics for _ in range(share)]
    cost = [[path_rank(layout.gpu_nic[(g, n)]) * 10 + k % share for k, n in enumerate(columns)] for g in gpus]
    pairs = min_cost_assignment(cost)
    return {gpus[r]: gpu_nic_path(layout, gpus[r], columns[c], nccl_version) for r, c in pairs}


def numa_nodes(layout: NodeLayout) -> tuple[NumaNode, ...]:
    """The GPUs and NICs of each NUMA node, unknown nodes last.

    GPUs whose node the input does not number form one group per side of the CPU (:attr:`NodeLayout.gpu_side`,
    by their local CPUs), those of unknown CPUs a last one. A NIC of no known node joins the one such
    group it reaches without crossing the SMP link (a path other than SYS), else the last group.
    """
    known = sorted({n for n in (*layout.gpu_numa.values(), *layout.nic_numa.values()) if n is not None})
    out = [
        NumaNode(
            node,
            tuple(g for g in layout.gpus if layout.gpu_numa.get(g) == node),
            tuple(n for n in layout.nics if layout.nic_numa.get(n) == node),
        )
        for node in known
    ]
    unknown = [g for g in layout.gpus if layout.gpu_numa.get(g) is None]
    keys = sorted({layout.gpu_side.get(g, -1) for g in unknown}, key=lambda k: (k < 0, k))
    sides = [tuple(g for g in unknown if layout.gpu_side.get(g, -1) == k) for k in keys]
    lost = [n for n in layout.nics if layout.nic_numa.get(n) is None]
    if lost and not sides:
        sides = [()]
    nics: list[list[str]] = [[] for _ in sides]
    for nic in lost:
        near = [k for k, side in enumerate(sides) if any(layout.gpu_nic[(g, nic)] != "SYS" for g in side)]
        nics[near[0] if len(near) == 1 else len(sides) - 1].append(nic)
    return (*out, *(NumaNode(None, side, tuple(nic)) for side, nic in zip(sides, nics, strict=True)))
