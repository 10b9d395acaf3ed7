"""Warnings about a node layout that will hurt NCCL, each with its reason and source."""

from __future__ import annotations

from dataclasses import dataclass

from aifabric.discovery.node_layout import NodeLayout
from aifabric.discovery.node_paths import GDR_PATHS, GpuNicPath, path_rank
from aifabric.discovery.nvsmi import normalize_path_code

__all__ = [
    "Finding",
    "layout_warnings",
    "vm_signature",
    "xml_vm_signature",
]


@dataclass(frozen=True)
class Finding:
    """A warning about the layout: a stable ``code`` and the message with its reason."""

    code: str
    message: str


def _names(items: list[str]) -> str:
    return ", ".join(items)


#: Why a NIC behind an x86 CPU costs GPUDirect RDMA (a Grace board's own NICs: the path's verdict instead).
_BEHIND_CPU = (
    "i.e. behind the CPU; NCCL does not use GPUDirect RDMA over it by default (NCCL_NET_GDR_LEVEL=PXB) and "
    "stages network traffic in host memory: ~2/3 of the NIC at best, 2-8x lower network busbw with ACS/IOMMU "
    "or in VMs (reference sec. 7.6; NVIDIA/nccl #412, #489)"
)


def layout_warnings(
    layout: NodeLayout,
    nearest: dict[str, tuple[GpuNicPath, ...]],
    pairing: dict[str, GpuNicPath | None],
    speed: float,
) -> list[Finding]:
    """Findings about a layout that will hurt NCCL: no NIC, NICs behind the CPU or far, shared NICs, no GDR.

    ``nearest`` maps each GPU to its nearest NICs, ``pairing`` to the NIC NCCL would use; ``speed`` is
    each NIC's rate in bytes/s.
    """
    out: list[Finding] = []
    if not layout.nics:
        out.append(Finding("no_nic", (
            "no NIC in the input: the across-node figures assume one GPU-local NIC per GPU; a node without "
            "RDMA NICs talks to others over sockets, far slower"
        )))  # fmt: skip
        return out
    far: dict[str, list[str]] = {}
    why: dict[str, str] = {}
    for g, ps in nearest.items():
        if ps and not ps[0].gdr and normalize_path_code(ps[0].path) not in GDR_PATHS:
            far.setdefault(ps[0].path, []).append(g)
            why.setdefault(ps[0].path, ps[0].reason)
    for path, gs in far.items():
        out.append(Finding("nic_behind_cpu", (
            f"{_names(gs)}: the nearest NIC is {path}, "
            + (f"as nvidia-smi prints it; {why[path]}" if layout.c2c else _BEHIND_CPU)
        )))  # fmt: skip
    for g, p in pairing.items():
        best = nearest[g][0] if nearest.get(g) else None
        if p is None or best is None:
            continue
        if path_rank(p.path) > path_rank(best.path):
            out.append(Finding("far_nic", (
                f"{g} is paired with {p.nic} ({p.nic_name}) at {p.path}, although {best.nic} is "
                f"{best.path}: {best.nic} is taken by another GPU; GPUDirect RDMA "
                f"{'still works' if p.gdr else 'is lost'} for {g}"
            )))  # fmt: skip
        elif normalize_path_code(p.path) == "SYS" and layout.nics and not layout.c2c:
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


def vm_signature(layout: NodeLayout) -> str | None:
    """Why ``layout`` looks like a virtual machine, or None.

    A hypervisor passes each GPU and NIC through on its own virtual root port, so the guest sees a flattened
    PCIe tree: every GPU-GPU and GPU-NIC path is ``PHB`` or ``SYS``, with no ``PIX``/``PXB`` switch and no
    ``NV#`` link. Bare metal without PCIe switches shows that too (NVIDIA/nccl #1084, an A30 box), so a VM is
    named only with a hypervisor-style host beside it: no CPU/NUMA affinity reported, or four GPUs or more
    behind one single host bridge (every GPU-GPU path ``PHB``), which no 4-GPU server board wires without
    a switch. Which paths NCCL sees then says nothing about the real board (NVIDIA/nccl-tests #256).
    """
    pairs = [c for (a, b), c in layout.gpu_links.items() if a < b] + list(layout.gpu_nic.values())
    if len(layout.gpus) < 2 or not pairs:
        return None
    codes = {normalize_path_code(c) for c in pairs}
    if not codes <= {"PHB", "SYS"}:
        return None
    gpu_codes = {normalize_path_code(c) for c in layout.gpu_links.values()}
    if not layout.affinity_known:
        host = "no CPU or NUMA affinity reported"
    elif gpu_codes == {"PHB"} and len(layout.gpus) >= 4:
        host = f"all {len(layout.gpus)} GPUs behind one host bridge"
    else:
        return None
    return (
        f"a virtual machine: every GPU-GPU and GPU-NIC path is {'/'.join(sorted(codes))} with no PCIe switch "
        f"or NVLink visible (a flattened PCIe tree) and {host}; the hypervisor hides the real layout, GPU "
        "peer-to-peer may be off (NCCL then goes through host memory) and GPUDirect RDMA cannot be judged: "
        "give NCCL the cloud's topology file (NCCL_TOPO_FILE); H200 VMs reached ~55 GB/s without it, ~105 "
        "with it, 459-489 on bare metal (NVIDIA/nccl-tests #256)"
    )


def xml_vm_signature(layout: NodeLayout, nvlink_gpu: bool) -> str | None:
    """Why an NCCL topology dump looks like a virtual machine, or None (``nvlink_gpu``: the GPU model is an
    NVLink part, SXM or NVL).

    Two signatures, either one: PCI devices with a hypervisor's vendor ID (:data:`~aifabric.discovery.
    node_layout.HYPERVISOR_PCI_VENDORS`: a QEMU root port, a virtio NIC), or NVLink GPUs that each hang
    directly off the CPU with no PCIe switch above and no ``<nvlink>`` listed (NCCL lists the NVLinks it
    finds, ``graph/xml.cc``; NVSwitch boards whose dump lists no NVLink still show their PCIe switches, AWS
    p5). A GPU the hypervisor does not give peer access has no P2P path: NCCL connects it through host memory
    (``via SHM``, ``transport/shm.cc``), at a fraction of NVLink. ACS does not show in the XML (NCCL's
    ``ACS is enabled`` hint in the INFO log does: ``nccl-tests compare``).
    """
    if layout.kind != "nccl-xml" or len(layout.gpus) < 2:
        return None
    if layout.hypervisor_pci:
        shown = ", ".join(layout.hypervisor_pci[:3]) + (" ..." if len(layout.hypervisor_pci) > 3 else "")
        why = f"PCI devices with a hypervisor's vendor ID: {shown}"
    elif layout.gpus_off_cpu and nvlink_gpu and layout.nvlink_count is None and not layout.hand_written:
        why = (
            f"all {len(layout.gpus)} GPUs, NVLink parts, hang directly off the CPU (no PCIe switch, a "
            "flattened PCIe root) and the dump lists no NVLink"
        )
    else:
        return None
    return (
        f"a virtual machine (NCCL topology dump): {why}; where the hypervisor gives the GPUs no peer-to-peer "
        "path, NCCL connects them through host memory (SHM, 'via SHM' in its INFO log) instead of a direct "
        "GPU-to-GPU path: check that the VM passes NVLink/P2P through and give NCCL the cloud's topology "
        "file (NCCL_TOPO_FILE); H200 VMs reached ~55 GB/s without it, ~105 with it, 459-489 on bare metal "
        "(NVIDIA/nccl-tests #256)"
    )
