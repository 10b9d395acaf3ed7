"""Spec inference for one node: the accelerator, a one-node ClusterSpec and the busbw it should reach.

The accelerator comes from the caller, the GPU the input names, the NCCL dump's ``sm=`` or the NVLink count
per pair; every choice is listed as an assumption. The expected figures are the formula engine's all_reduce
at 4 GiB, alone and across nodes, the network scaled by the GDR loss of the layout (16/24, NVIDIA/nccl #412).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aifabric import catalog
from aifabric.catalog import AcceleratorSpec
from aifabric.catalog.archs import gpu_architecture
from aifabric.cluster.spec import MAX_CPU_SOCKETS, ClusterSpec
from aifabric.collectives.algorithms import Algorithm
from aifabric.discovery.calibrate import Calibration
from aifabric.discovery.inference import (
    DEFAULT_GPU,
    DEFAULT_PCIE_GPU,
    GpuMention,
    nic_for_speed,
)
from aifabric.discovery.node_layout import NV_LINKS, NodeLayout, pcie_gen
from aifabric.discovery.node_paths import GDR_PATHS, NO_GDR_FACTOR, GpuNicPath, NvlinkGroup, path_rank
from aifabric.discovery.node_warnings import Finding, xml_vm_signature
from aifabric.discovery.nvsmi import normalize_path_code
from aifabric.engines.formula import formula_collective

__all__ = [
    "EXPECTED_BYTES",
    "ExpectedBusbw",
    "choose_accelerator",
    "expected_busbw",
    "gdr_network_factor",
    "infer_node_spec",
    "local_gpus_per_nic",
    "local_nics_per_gpu",
    "rail_cap",
    "staged_nic_path",
]


#: Message size of the expected-busbw figures (nccl-tests' plateau region).
EXPECTED_BYTES = 1 << 32


@dataclass(frozen=True)
class ExpectedBusbw:
    """An all_reduce busbw the node should reach (formula engine)."""

    label: str
    n_nodes: int
    algorithm: str
    protocol: str
    busbw_bytes_per_s: float
    message_bytes: float = EXPECTED_BYTES


def _fit(layout: NodeLayout, key: str) -> tuple[int, str]:
    """How well a catalogue GPU fits what the layout itself shows: 2 exactly, 1 plausibly, 0 not; and why."""
    acc = catalog.accelerator(key)
    score, why = 1, ""
    if layout.gpu_sm is not None:
        # the arch's compute capability: catalog/data/gpu_architectures.yaml
        arch = gpu_architecture(acc.arch)
        sm = arch.sm if arch is not None else None
        if sm is not None and sm != layout.gpu_sm:
            return 0, f"the dump says sm={layout.gpu_sm}"
        if sm is not None:
            score, why = 2, f"sm={layout.gpu_sm}"
    if layout.nvlink_count is not None:
        if not acc.nvlink or acc.nvlink_links < layout.nvlink_count:
            return 0, f"NV{layout.nvlink_count} between GPUs"
        if acc.nvlink_links == layout.nvlink_count:
            score, why = 2, why or f"NV{layout.nvlink_count}"
    gen = pcie_gen(layout.gpu_link_gt_per_s)
    have = int(acc.pcie[3:]) if acc.pcie and acc.pcie.startswith("gen") and acc.pcie[3:].isdigit() else None
    if gen is not None and have is not None:
        if have < gen:
            return 0, f"PCIe Gen{gen} GPU links"
        if have == gen:
            score, why = 2, why or f"PCIe Gen{gen} GPU links"
    return score, why


def _refuse_impossible_nvlink(layout: NodeLayout, gpu: str) -> None:
    """Raise ValueError when ``--gpu`` names a GPU that cannot have the NVLink count the layout shows.

    ``NVk`` between two GPUs is k NVLinks; a GPU has at most its catalogue ``nvlink_links`` (A100 SXM 12,
    H100 SXM 18, V100 SXM2 6: the datasheets the catalogue cites). A GPU without NVLink in the catalogue
    may still carry a bridge between two cards (A30, H100 NVL datasheets), so it is refused only when a GPU
    has NVLink to more than one peer.
    """
    acc = catalog.accelerator(gpu)
    count = layout.nvlink_count
    if count is None or count <= acc.nvlink_links:
        return
    peers: dict[str, int] = {}
    for (a, _), code in layout.gpu_links.items():
        if NV_LINKS.match(code) and int(code[2:]) > 0:
            peers[a] = peers.get(a, 0) + 1
    if not acc.nvlink and max(peers.values(), default=0) <= 1:
        return
    has = f"{acc.nvlink_links} NVLinks per GPU (NV{acc.nvlink_links} at most)" if acc.nvlink else "no NVLink"
    raise ValueError(
        f"--gpu: {gpu} has {has}, but the matrix (line {layout.line}) shows NV{count} ({count} NVLinks) "
        f"between GPUs; give the GPU the node has, or leave --gpu out"
    )


def choose_accelerator(
    layout: NodeLayout, gpu: str | None, named: tuple[GpuMention, ...] = ()
) -> tuple[str, str, list[str]]:
    """(catalogue key, where it came from, assumptions): --gpu, else a GPU the file names, else the layout's
    guess.

    Of several GPUs named in the file, the one that fits the layout best (compute capability, NVLink count,
    PCIe generation of the GPU links) wins, the first named on a tie; a name that contradicts the layout
    (an A100 named beside NV18 links) does not override the layout's own guess.
    """
    if gpu is not None:
        _refuse_impossible_nvlink(layout, gpu)
        return gpu, "--gpu", []
    key, source, notes = _guess_accelerator(layout, named)
    _refuse_nvlinks_beyond(layout, key)
    return key, source, notes


def _refuse_nvlinks_beyond(layout: NodeLayout, key: str) -> None:
    """Raise ValueError naming the cell when a GPU pair shows more NVLinks (``NVk``) than the guessed GPU
    ``key`` has (catalogue ``nvlink_links``: H100 SXM and B200 18, the datasheets the catalogue cites): no
    NVLink GPU has more, so the cell is malformed or misread and no link count can be modelled from it."""
    acc = catalog.accelerator(key)
    count = layout.nvlink_count
    if not acc.nvlink or count is None or count <= acc.nvlink_links:
        return
    cells = [p for p, code in layout.gpu_links.items() if NV_LINKS.match(code) and int(code[2:]) == count]
    between = f" between {cells[0][0]} and {cells[0][1]}" if cells else ""
    where = f"{Path(layout.source).name}: " if layout.source else ""
    raise ValueError(
        f"{where}the matrix (line {layout.line}) shows NV{count}{between}, {count} NVLinks, but {key} has "
        f"{acc.nvlink_links} per GPU (NV{acc.nvlink_links} at most); the cell is malformed or misread"
    )


def _guess_accelerator(layout: NodeLayout, named: tuple[GpuMention, ...]) -> tuple[str, str, list[str]]:
    """(catalogue key, where it came from, assumptions) without --gpu: :func:`choose_accelerator`."""
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
    if _shows_no_nvlink(layout) or layout.nvlink_bridged:
        return (
            DEFAULT_PCIE_GPU,
            "default",
            [
                f"GPU model unknown ({how}): an SXM GPU always sits on its NVLink board, so these are PCIe "
                f"cards: assumed {DEFAULT_PCIE_GPU} (give --gpu)"
            ],
        )
    return DEFAULT_GPU, "default", [f"GPU model unknown ({how}): assumed {DEFAULT_GPU} (give --gpu)"]


def _shows_no_nvlink(layout: NodeLayout) -> bool:
    """Whether the layout shows GPU pairs and no NVLink between any, where NVLink would show: a
    ``nvidia-smi topo -m`` matrix prints ``NV#`` for every NVLink pair, while ``topo -mp`` and topology
    files describe PCIe only (:func:`_scale_up`), so their silence says nothing."""
    hidden = layout.kind == "nccl-xml" or layout.nvlink_hidden
    return len(layout.gpus) > 1 and layout.nvlink_count is None and not hidden


def local_nics_per_gpu(layout: NodeLayout, nearest: dict[str, tuple[GpuNicPath, ...]]) -> int:
    """Scale-out NICs each GPU drives: ``min(min over GPUs of its local NICs, NICs // GPUs)``, at least 1.

    A GPU's local NICs are its nearest ones when they sit under the GPU's own PCIe switch (PIX/PXB, the
    paths NCCL uses GPUDirect RDMA on); NCCL drives all of them in parallel (AWS p5: 4 x 100 Gb/s EFA per
    H100, 3200 Gb/s per instance; case 21). ``NICs // GPUs`` keeps a NIC shared by two GPUs of one switch
    (p4d, DGX A100) from being counted twice; the GPUs of a partial matrix whose rows were cut
    (:attr:`NodeLayout.cut_gpus`) count among the GPUs, as they share the NICs.
    """
    if not layout.gpus or not nearest:
        return 1
    local = [sum(normalize_path_code(p.path) in GDR_PATHS for p in nearest.get(g, ())) for g in layout.gpus]
    return max(1, min(min(local), len(layout.nics) // (len(layout.gpus) + len(layout.cut_gpus))))


def local_gpus_per_nic(layout: NodeLayout) -> int:
    """GPUs that share one scale-out NIC: 1 unless the layout shows fewer NICs than GPUs, then the
    smallest divisor ``d`` of the GPU count (:attr:`NodeLayout.node_gpus`) with ``GPUs / d <= NICs`` (every
    NIC serving as many GPUs).

    AWS p4d (case 21): 8 GPUs, 4 NICs -> 2; a node with one NIC -> 8; 8 GPUs over 3 NICs -> 4 (modelled
    as 2 NICs: a third NIC cannot serve a whole share of 8 GPUs). A layout without NICs -> 1.
    """
    n, m = len(layout.node_gpus), len(layout.nics)
    if m == 0 or m >= n:
        return 1
    return next(d for d in range(-(-n // m), n + 1) if n % d == 0)


def infer_node_spec(
    layout: NodeLayout,
    accelerator: str,
    speed: float,
    groups: tuple[NvlinkGroup, ...],
    nics_per_gpu: int = 1,
    gpus_per_nic: int = 1,
    nic_path: str | None = None,
) -> tuple[ClusterSpec, dict[str, Any], list[str], list[Finding]]:
    """A one-node ClusterSpec for ``layout`` with ``accelerator`` and ``nics_per_gpu`` NICs of ``speed``
    bytes/s per GPU (:func:`local_nics_per_gpu`), or one NIC per ``gpus_per_nic`` GPUs
    (:func:`local_gpus_per_nic`), reached over ``nic_path`` where it is given (:func:`staged_nic_path`:
    the spec then carries the missing GPUDirect RDMA, as every command fed the saved spec prices it).

    Returns
    -------
    (spec, spec_data, notes, findings)
        The spec, the mapping it was built from, assumptions made and layout findings (NVLink missing).
    """
    acc = catalog.accelerator(accelerator)
    notes: list[str] = []
    findings: list[Finding] = []
    scale_up = _scale_up(layout, acc, accelerator, groups, notes, findings)
    data = _node_spec_data(layout, accelerator, scale_up, speed, nics_per_gpu, gpus_per_nic)
    if nic_path is not None:
        data["scale_out"]["nic_path"] = nic_path
    notes.extend(_scale_out_notes(layout, speed, nics_per_gpu, gpus_per_nic))
    return ClusterSpec.from_dict(data, source="inspected node"), data, notes, findings


def _scale_up(
    layout: NodeLayout,
    acc: AcceleratorSpec,
    accelerator: str,
    groups: tuple[NvlinkGroup, ...],
    notes: list[str],
    findings: list[Finding],
) -> dict[str, Any]:
    """The ``scale_up`` mapping of the node: an NVSwitch when NVLink joins every GPU in one full mesh (or a
    topology file leaves NVLink out for an NVLink GPU, unless it is a VM's dump: GPUs off the CPU,
    :func:`~aifabric.discovery.node_warnings.xml_vm_signature`), else PCIe; assumptions go to ``notes``,
    layout findings to ``findings``."""
    n = len(layout.node_gpus)
    one_mesh = len(groups) == 1 and len(groups[0].gpus) == n and groups[0].full_mesh
    vm = layout.kind == "nccl-xml" and not groups and xml_vm_signature(layout, True) is not None
    if vm:
        notes.append(
            "NVLink not in the dump and the GPUs hang directly off the CPU (a VM): no NVSwitch board "
            "assumed; modelled as PCIe through the CPU (a VM that passes NVLink through: inspect the "
            "cloud's topology file instead)"
        )
    hidden = layout.kind == "nccl-xml" or layout.nvlink_hidden
    if hidden and not groups and acc.nvlink and n > 1 and not vm:
        # Vendor topology files (aws-ofi-nccl p4d/p5, Azure NDv4/NDv5) describe PCIe only and leave NVLink
        # to NCCL's detection at run time, and nvidia-smi topo -mp prints PCIe paths only; an SXM GPU
        # always sits on its NVSwitch board (the GPU tells).
        one_mesh = True
        why = (
            "nvidia-smi topo -mp prints PCIe paths only"
            if layout.nvlink_hidden
            else "topology files describe PCIe only; NCCL detects NVLink at run time"
        )
        notes.append(
            f"NVLink not in the {'matrix' if layout.nvlink_hidden else 'file'} ({why}): {accelerator}'s "
            f"NVSwitch board assumed ({acc.nvlink_links} links per GPU); give --gpu for a PCIe card"
        )
    if n == 2 and one_mesh and groups and acc.nvlink_bridge is not None:
        return _bridged_pair(acc, accelerator, groups[0], notes)
    if not (n > 1 and one_mesh and acc.nvlink):
        if groups and not acc.nvlink:
            notes.append(
                f"the input shows NVLink but {accelerator} has none in the catalogue: modelled as PCIe"
            )
        scale_up, pcie_findings = _pcie_scale_up(layout, acc, groups)
        findings.extend(pcie_findings)
        return scale_up
    links = groups[0].link_counts if groups else ()
    if acc.nvlink and acc.nvlink_links and links and links[0] < acc.nvlink_links:
        return _fewer_nvlinks(acc, accelerator, links[0], notes)
    return {"kind": "nvswitch"}


def _bridged_pair(
    acc: AcceleratorSpec, accelerator: str, group: NvlinkGroup, notes: list[str]
) -> dict[str, Any]:
    """The ``scale_up`` mapping of two PCIe cards the matrix shows joined by NVLink, on a card the catalogue
    pairs over a bridge (``accelerators.yaml`` ``nvlink_bridge``): the bridge's full mesh of two, at its
    catalogued rate, noted in ``notes`` with the link count the matrix shows."""
    bridge = catalog.scaleup(acc.nvlink_bridge or "")
    links = f"NV{group.link_counts[0]}" if group.link_counts else "NVLink"
    notes.append(
        f"{links} between the two {accelerator} cards: an NVLink bridge, modelled as {acc.nvlink_bridge} "
        f"({bridge.per_gpu_bidirectional_bytes_per_s / 1e9:g} GB/s both ways, the datasheet's bridge)"
    )
    return {"kind": "nvswitch", "link": acc.nvlink_bridge}


def _fewer_nvlinks(acc: AcceleratorSpec, accelerator: str, links: int, notes: list[str]) -> dict[str, Any]:
    """The ``scale_up`` mapping of an NVSwitch node whose matrix shows fewer NVLinks per GPU pair
    (``NV<links>``) than ``accelerator`` has: the GPUs reach the switch over the links the matrix counts, so
    the domain runs at ``links`` x the generation's per-link rate (NVLink 4: 900 GB/s / 18 = 50 GB/s both
    ways per link; NCCL's ``ncclTopoGetLinks`` counts the same links), noted in ``notes``."""
    nvlink = catalog.scaleup(acc.nvlink or "")
    per_link = nvlink.per_gpu_bidirectional_bytes_per_s / nvlink.links_per_gpu
    bandwidth = links * per_link
    notes.append(
        f"the matrix shows NV{links} but {accelerator} has {acc.nvlink_links} links: modelled with the "
        f"{links} links it shows ({bandwidth / 1e9:g} GB/s both ways per GPU)"
    )
    return {"kind": "nvswitch", "bandwidth": f"{bandwidth / 1e9:g} GB/s"}


def _pcie_scale_up(
    layout: NodeLayout, acc: AcceleratorSpec, groups: tuple[NvlinkGroup, ...]
) -> tuple[dict[str, Any], list[Finding]]:
    """The PCIe ``scale_up`` mapping of a node without one NVLink mesh, and its findings: NVLink joining only
    some GPUs, and GPU peer traffic crossing the CPU root complex."""
    findings: list[Finding] = []
    peer_through_cpu = any(
        not NV_LINKS.match(code) and normalize_path_code(code) not in GDR_PATHS
        for code in layout.gpu_links.values()
    )
    if groups and acc.nvlink:
        findings.append(Finding("nvlink_partial", (
            f"NVLink joins only {'; '.join('+'.join(g.gpus) for g in groups)}: rings that span all "
            "GPUs cross PCIe between the groups, so the node is modelled as PCIe-bound"
        )))  # fmt: skip
    if len(layout.gpus) > 1 and peer_through_cpu:
        findings.append(Finding("pcie_p2p_cpu", (
            "GPU-to-GPU traffic crosses the CPU root complex (PHB/NODE/SYS between GPUs): busbw is "
            "bounded by what the CPU forwards (9-11 GB/s for 4 x V100 Gen3, reference sec. 7.7)"
        )))  # fmt: skip
    scale_up = {
        "kind": "pcie",
        "link": f"pcie-{acc.pcie}" if acc.pcie else "pcie-gen4",
        "p2p_through_cpu": peer_through_cpu,
    }
    return scale_up, findings


def _node_spec_data(
    layout: NodeLayout,
    accelerator: str,
    scale_up: dict[str, Any],
    speed: float,
    nics_per_gpu: int,
    gpus_per_nic: int,
) -> dict[str, Any]:
    """The one-node ClusterSpec mapping: ``nics_per_gpu`` NICs of ``speed`` bytes/s per GPU (or one per
    ``gpus_per_nic`` GPUs) on a two-tier fabric, InfiniBand and an Intel CPU unless the layout says."""
    return (
        {
            "name": f"{Path(layout.source).name if layout.source else 'node'} ({layout.kind})",
            "accelerator": accelerator,
            "gpus_per_node": max(1, len(layout.node_gpus)),
            "nodes": 1,
            "scale_up": scale_up,
            "scale_out": {
                "nic": nic_for_speed(speed),
                "nic_speed": f"{speed * 8 / 1e9:g} Gb/s",
                "nics_per_gpu": nics_per_gpu,
                "planes": nics_per_gpu,
                "gpus_per_nic": gpus_per_nic,
                "fabric": layout.fabric or "infiniband",
                "switch": catalog.default_leaf_switch(layout.fabric or "infiniband", speed),
                "tiers": 2,
            },
            "front_end": None,
            "management": None,
            "cpu_vendor": layout.cpu_vendor or "intel",
            "description": f"one node read from {layout.source or 'the input'}",
        }
        | ({"cpu_sockets": sockets} if (sockets := _gpu_cpu_nodes(layout, scale_up)) > 1 else {})
        | ({"cpu": layout.cpu_family} if layout.cpu_family else {})
    )


def _gpu_cpu_nodes(layout: NodeLayout, scale_up: dict[str, Any]) -> int:
    """The CPU nodes a PCIe node's GPUs hang off: the distinct NUMA nodes of its GPUs when the input gives
    every one (nvidia-smi ``NUMA Affinity``, the XML's ``numaid``), as NCCL makes a CPU node of each NUMA
    node and joins them by SYS links (``topo.cc`` ncclTopoConnectCpus); 1 otherwise, or off PCIe, where
    GPUs meet over NVLink whatever their sockets.

    >>> from types import SimpleNamespace as NS
    >>> _gpu_cpu_nodes(NS(node_gpus=["GPU0", "GPU1"], gpu_numa={"GPU0": 0, "GPU1": 1}), {"kind": "pcie"})
    2
    """
    numa = [layout.gpu_numa.get(g) for g in layout.node_gpus]
    if scale_up.get("kind") != "pcie" or any(n is None for n in numa):
        return 1
    return min(len(set(numa)), MAX_CPU_SOCKETS)


def _scale_out_notes(layout: NodeLayout, speed: float, nics_per_gpu: int, gpus_per_nic: int) -> list[str]:
    """The assumptions :func:`_node_spec_data` makes about the NICs, fabric and CPU, in words."""
    n = len(layout.node_gpus)
    notes = []
    if nics_per_gpu > 1:
        notes.append(
            f"{nics_per_gpu} NICs under each GPU's PCIe switch: modelled as {nics_per_gpu} x "
            f"{speed * 8 / 1e9:g} Gb/s per GPU"
        )
    if gpus_per_nic > 1:
        notes.append(
            f"{len(layout.nics)} NICs for {n} GPUs: modelled as one {speed * 8 / 1e9:g} Gb/s NIC shared by "
            f"{gpus_per_nic} GPUs ({n // gpus_per_nic} NICs per node)"
        )
    if layout.fabric is None and layout.nics:
        notes.append("NIC fabric not in the input: InfiniBand assumed")
    if layout.cpu_vendor is None:
        notes.append("CPU vendor not in the input: Intel assumed (NCCL's network overheads)")
    return notes


def staged_nic_path(pairing: dict[str, GpuNicPath | None]) -> str | None:
    """The GPU-NIC path a node's spec records (``scale_out.nic_path``) when no GPU reaches its NIC with
    GPUDirect RDMA: the farthest paired path, ``NODE`` written ``PHB`` (NCCL has no NODE type: it computes
    PHB, ``src/graph/paths.cc``); None when any GPU has GDR or no NIC, the spec's default PIX then standing.
    Beyond NCCL_NET_GDR_LEVEL the engines stage every NIC's bytes in host memory
    (:func:`~aifabric.collectives.nccl_env.host_staging_efficiency`), the loss :data:`NO_GDR_FACTOR` names.

    >>> from aifabric.discovery.node_paths import GpuNicPath
    >>> pairs = (("GPU0", "NODE"), ("GPU1", "PHB"))
    >>> far = {g: GpuNicPath(g, "NIC0", "mlx5_0", p, False, "") for g, p in pairs}
    >>> staged_nic_path(far), staged_nic_path({"GPU0": None})
    ('PHB', None)
    """
    paths = list(pairing.values())
    if not paths or any(p is None or p.gdr for p in paths):
        return None
    far = normalize_path_code(max((p.path for p in paths if p is not None), key=path_rank))
    return {"NODE": "PHB", "PHB": "PHB", "SYS": "SYS"}.get(far)


def gdr_network_factor(
    layout: NodeLayout,
    pairing: dict[str, GpuNicPath | None],
    nic_effective_bytes_per_s: float = 0.0,
    gpus_per_nic: int = 1,
    *,
    no_gdr_factor: float = NO_GDR_FACTOR,
) -> float:
    """Share of its modelled NIC bandwidth a GPU of the node gets across nodes, averaged over the GPUs the
    pairing holds (:func:`~aifabric.discovery.node_paths.nic_pairing`): the spec gives each GPU one
    ``gpus_per_nic``-th of a NIC (:func:`local_gpus_per_nic`), and GPU ``g`` on NIC ``n`` gets

        phi_g = min(1, f_n x gpus_per_nic / k_n)

    with ``k_n`` the GPUs the pairing puts on NIC ``n`` and ``f_n`` that NIC's factor: 1 with GPUDirect
    RDMA, ``no_gdr_factor`` when its traffic is staged in host memory (:data:`NO_GDR_FACTOR`, or 1 where
    the spec's ``nic_path`` already carries the staging, :func:`staged_nic_path`), capped by the PCIe path
    to its GPU where the input gives link speeds: what the path carries (:func:`pcie_payload_bytes_per_s`)
    over one NIC's effective rate ``nic_effective_bytes_per_s``: a Gen4 x16 path, 28.8 GB/s, carries all
    of an HDR NIC and ~59 % of a 400 Gb/s one; a Gen5 x16 path, 57.6 GB/s, all of a 400 Gb/s one.

    Numerator and denominator count the same GPUs, those paired (a cut GPU has no NIC path; the former
    count, distinct NICs over ``GPUs read // gpus_per_nic``, mixed the pairing's NICs with the spec's and
    gave 1.67 on 6 NICs for 7 GPUs read). Range (0, 1]: every ``f_n`` is in (0, 1] and each ``phi_g`` is
    capped at 1, so the factor only carries losses: a GPU alone on a NIC the spec shares (6 NICs for 8 GPUs,
    modelled as 4, :func:`local_gpus_per_nic`) is not given more than its modelled share, the spec's NIC
    count already prices the node's NICs. The mean is the NICs' aggregate; NCCL splits a collective's bytes
    evenly over its channels, so where channels run at different speeds the slowest sets the pace and the
    busbw lies between ``min(phi_g)`` and this mean. Without NICs
    (pairing of None) or GPUs the layout costs nothing: 1.
    """
    paired = [(g, p) for g, p in pairing.items() if p is not None]
    if not paired or len(paired) < len(pairing):
        return 1.0
    nic_factor: dict[str, float] = {}
    sharers: dict[str, int] = {}
    for g, p in paired:
        factor = 1.0 if p.gdr else no_gdr_factor
        pcie = layout.gpu_nic_pcie.get((g, p.nic))
        if pcie is not None and nic_effective_bytes_per_s > 0:
            factor = min(factor, pcie_payload_bytes_per_s(*pcie) / nic_effective_bytes_per_s)
        nic_factor[p.nic] = min(nic_factor.get(p.nic, 1.0), factor)
        sharers[p.nic] = sharers.get(p.nic, 0) + 1
    shares = [min(1.0, nic_factor[p.nic] * gpus_per_nic / sharers[p.nic]) for _, p in paired]
    return sum(shares) / len(shares)


def pcie_payload_bytes_per_s(nccl_bytes_per_s: float, link: str) -> float:
    """What a PCIe path (``link``: its slowest link, ``"Gen5 x16"``) carries for a NIC's DMA, bytes/s per
    direction: the catalogue's ``pcie-gen<n>`` line rate, scaled to the width, times its DMA payload
    efficiency (Gen5 x16: 64 GB/s x 0.9002 = 57.6 GB/s; Gen4 x16: 28.8 GB/s, where a GPUDirect Storage read
    from the NIC into one L40S measured 28.36 GB/s, gds-bench.farmgpu.net). NCCL's path figure,
    ``nccl_bytes_per_s`` (width x per-lane speed / 80: Gen5 x16 = 48 GB/s, topo.cc kvDictPciGen), is the
    score its graph search ranks paths with, not a rate limit: 8 ConnectX-7 on Gen5 x16 moved 391.39 GB/s
    of 2-node ring busbw (NVIDIA/nccl-tests #309 T7), above 8 x 48. It stands where the catalogue has no
    such generation.

    >>> [round(pcie_payload_bytes_per_s(*p) / 1e9, 1) for p in ((48e9, "Gen5 x16"), (24e9, "Gen4 x16"))]
    [57.6, 28.8]
    >>> pcie_payload_bytes_per_s(3e9, "Gen1 x8")  # no pcie-gen1 in the catalogue: NCCL's figure
    3000000000.0
    """
    gen, _, width = link.partition(" x")
    key = f"pcie-{gen.lower()}"
    if not width.isdigit() or key not in catalog.catalog_names("scaleup"):
        return nccl_bytes_per_s
    entry = catalog.scaleup(key)
    return entry.per_gpu_per_direction_bytes_per_s * int(width) / 16 * entry.dma_payload_efficiency


def rail_cap(
    layout: NodeLayout, pairing: dict[str, GpuNicPath | None], nic_effective_bytes_per_s: float
) -> tuple[float, str] | None:
    """The slowest GPU-NIC PCIe path of the pairing (:func:`pcie_payload_bytes_per_s`), if it carries less
    than the NIC's effective rate."""
    caps = [
        (pcie_payload_bytes_per_s(*layout.gpu_nic_pcie[(g, p.nic)]), layout.gpu_nic_pcie[(g, p.nic)][1])
        for g, p in pairing.items()
        if p is not None and (g, p.nic) in layout.gpu_nic_pcie
    ]
    if not caps:
        return None
    low = min(caps)
    return low if low[0] < nic_effective_bytes_per_s else None


def expected_busbw(
    spec: ClusterSpec, network_factor: float, nccl_version: str | None = None
) -> tuple[ExpectedBusbw, ...]:
    """all_reduce busbw at :data:`EXPECTED_BYTES` (formula engine, NCCL ``nccl_version``'s tables, the
    newest recorded by default): one node, and 2 and 8 nodes with the network scaled by ``network_factor``
    (:func:`gdr_network_factor`)."""
    out = []
    one = formula_collective("all_reduce", EXPECTED_BYTES, spec, nccl_version=nccl_version)
    out.append(ExpectedBusbw("one node, NCCL default", 1, one.algorithm, one.protocol, one.busbw_bytes_per_s))
    if one.algorithm != Algorithm.RING and spec.n_gpus > 1:
        ring = formula_collective(
            "all_reduce", EXPECTED_BYTES, spec, algorithm="ring", nccl_version=nccl_version
        )
        out.append(
            ExpectedBusbw(
                "one node, NCCL_ALGO=Ring", 1, ring.algorithm, ring.protocol, ring.busbw_bytes_per_s
            )
        )
    net = Calibration(inter_scale=max(0.01, network_factor), name="node layout")
    for nodes, label, algorithm in ((2, "2 nodes, NCCL_ALGO=Ring (the fabric's figure)", "ring"),
                                    (8, "8 nodes, NCCL default", None)):  # fmt: skip
        multi = spec.with_changes(nodes=nodes)
        r = formula_collective(
            "all_reduce",
            EXPECTED_BYTES,
            multi,
            algorithm=algorithm,
            calibration=net,
            nccl_version=nccl_version,
        )
        out.append(ExpectedBusbw(label, nodes, r.algorithm, r.protocol, r.busbw_bytes_per_s))
    return tuple(out)
