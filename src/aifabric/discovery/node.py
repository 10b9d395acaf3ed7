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

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aifabric.catalog.nccl import nccl_release
from aifabric.cluster.spec import ClusterSpec
from aifabric.collectives.nccl_env import host_staging_efficiency
from aifabric.discovery._text import clean_lines, line_count, nonempty_text
from aifabric.discovery.ib_ports import PortRate, nic_port_rate, port_rates_in_text
from aifabric.discovery.inference import (
    DEFAULT_NIC_SPEED,
    GpuMention,
    accelerators_in_text,
)
from aifabric.discovery.instances import (
    InstanceMention,
    instance_nic_note,
    instance_with_nics,
    instances_in_text,
)
from aifabric.discovery.nccl_xml import parse_nccl_topologies
from aifabric.discovery.node_layout import NodeLayout
from aifabric.discovery.node_paths import (
    GDR_PATHS,
    GpuNicPath,
    NumaNode,
    NvlinkGroup,
    gpu_nic_path,
    nic_pairing,
    numa_nodes,
    nvlink_groups,
    path_rank,
)
from aifabric.discovery.node_spec import (
    ExpectedBusbw,
    choose_accelerator,
    expected_busbw,
    gdr_network_factor,
    infer_node_spec,
    local_gpus_per_nic,
    local_nics_per_gpu,
    rail_cap,
    staged_nic_path,
)
from aifabric.discovery.node_warnings import Finding, layout_warnings, vm_signature, xml_vm_signature
from aifabric.discovery.nvsmi import TopoMatrix, refuse_headerless_rows, refuse_rocm_smi
from aifabric.errors import ParseError
from aifabric.units import parse_nic_bandwidth

__all__ = [
    "NodeInspection",
    "detect_format",
    "inspect_layout",
    "inspect_node_text",
]


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
    network_factor_beyond_spec: float = 1.0
    expected: tuple[ExpectedBusbw, ...] = ()
    warnings: tuple[Finding, ...] = ()
    assumptions: tuple[str, ...] = ()
    accelerator_source: str = ""
    nic_speed_assumed: bool = False
    nic_speed_instance: str | None = None
    rail_cap_bytes_per_s: float | None = None
    rail_cap_link: str | None = None

    @property
    def nic_share_per_gpu(self) -> float:
        """What the NICs give each GPU across nodes, as a share of one GPU-local NIC with GPUDirect RDMA:
        :attr:`network_factor` (the layout's loss on the NICs the spec models) over the GPUs that share
        one NIC (``scale_out.gpus_per_nic``). Two NICs for four GPUs, each reached without GPUDirect RDMA:
        2/4 x 2/3 = 1/3."""
        so = self.spec.scale_out if self.spec is not None else None
        return self.network_factor / (so.gpus_per_nic if so is not None else 1)

    @property
    def across_node_bound(self) -> tuple[float, str, tuple[tuple[str, float], ...]]:
        """What one GPU moves across nodes, bytes/s per direction, the bound that sets it (``gpu_pcie_link``
        or ``nic_share``) and the figures compared: the NIC side, ``nic_payload`` (per GPU: a shared NIC's
        share, :attr:`~aifabric.cluster.spec.ClusterSpec.nic_payload_bytes_per_s`) x ``host_staging``
        (:func:`~aifabric.collectives.nccl_env.host_staging_efficiency`, the GDR loss the saved spec
        carries), against the GPU's own PCIe link (``gpu_pcie_link``,
        :attr:`~aifabric.cluster.spec.ClusterSpec.nic_host_link_bytes_per_s`), then x the layout's other
        losses (``layout``: :attr:`network_factor_beyond_spec`), the way the engines price the saved spec.
        A100 SXM, 400 Gb/s NIC behind the CPU: 49.15 x 0.667 = 32.8 GB/s > 28.8 GB/s, the PCIe Gen4 link
        sets 28.8 GB/s, what GPUDirect RDMA would give too."""
        spec = self.spec
        if spec is None or spec.scale_out is None:
            return 0.0, "", ()
        payload, host = spec.nic_payload_bytes_per_s, spec.nic_host_link_bytes_per_s
        staging = host_staging_efficiency(spec)
        nic_side = payload * staging
        bound = "gpu_pcie_link" if host < nic_side else "nic_share"
        per_gpu = min(nic_side, host) * self.network_factor_beyond_spec
        figures = (
            ("nic_payload", payload),
            ("host_staging", staging),
            ("gpu_pcie_link", host),
            ("layout", self.network_factor_beyond_spec),
        )
        return per_gpu, bound, figures

    @property
    def nvlink_pairs(self) -> tuple[tuple[str, str, int], ...]:
        """Every NVLink pair ``(gpu_a, gpu_b, links)`` over all groups."""
        return tuple(p for g in self.nvlink_groups for p in g.pairs)

    def group_shape(self, group: NvlinkGroup) -> str:
        """How ``group`` is wired: ``full mesh (NVSwitch)`` only when the node is modelled on a switch (its
        ``scale_up`` kind and a switched link), else ``full mesh`` (two GPUs on an NVLink bridge, NV4
        between two RTX A6000s, or GPUs wired all-to-all: no switch) or ``partial``."""
        if not group.full_mesh:
            return "partial"
        on_switch = self.spec_data.get("scale_up", {}).get("kind") == "nvswitch" and not (
            self.spec is not None and self.spec.mesh_links_per_gpu
        )  # a bridge or mesh part (catalogue topology full_mesh) has no switch
        return "full mesh (NVSwitch)" if on_switch else "full mesh"

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

    def nics_by_path(self, gpu: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """The NICs of ``gpu`` grouped by path type, nearest type first (:func:`path_rank`), each group in
        the layout's NIC order; empty for a GPU the node does not have."""
        by_path: dict[str, list[str]] = {}
        for p in self.paths:
            if p.gpu == gpu:
                by_path.setdefault(p.path, []).append(p.nic)
        return tuple((path, tuple(by_path[path])) for path in sorted(by_path, key=path_rank))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict, SI units."""
        lay = self.layout
        return {
            "source": lay.source,
            "format": lay.kind,
            "line": lay.line,
            "gpus": list(lay.gpus),
            "nics": {n: lay.nic_names.get(n, n) for n in lay.nics},
            "missing": list(lay.missing),
            "accelerator": self.accelerator,
            "nic_speed_bytes_per_s": self.nic_speed_bytes_per_s,
            "nvlink_groups": [
                {
                    "gpus": list(g.gpus),
                    "full_mesh": g.full_mesh,
                    "shape": self.group_shape(g),
                    "pairs": [list(p) for p in g.pairs],
                }
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
            "nic_share_per_gpu": self.nic_share_per_gpu,
            "across_node_per_gpu_bytes_per_s": self.across_node_bound[0],
            "across_node_bound": self.across_node_bound[1],
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
            "nic_speed_instance": self.nic_speed_instance,
            "rail_cap_bytes_per_s": self.rail_cap_bytes_per_s,
            "rail_cap_link": self.rail_cap_link,
        }


def inspect_layout(
    layout: NodeLayout,
    *,
    gpu: str | None = None,
    nic_speed: str | None = None,
    named: tuple[GpuMention, ...] = (),
    instances: tuple[InstanceMention, ...] = (),
    ports: tuple[PortRate, ...] = (),
    nccl_version: str | None = None,
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
        Speed of each NIC, e.g. ``"400 Gb/s"`` (default: the NCCL dump's, else the rate ``ibstat`` prints for
        the GPUs' NICs, see ``ports``, else that of the cloud instance the file names for the GPU modelled,
        see ``instances``, else :data:`DEFAULT_NIC_SPEED`).
    named : tuple of GpuMention
        GPU models the input file names anywhere in its text
        (:func:`~aifabric.discovery.inference.accelerators_in_text`).
    instances : tuple of InstanceMention
        Cloud instance types the input file names (:func:`~aifabric.discovery.instances.instances_in_text`).
    ports : tuple of PortRate
        Port rates ``ibstat``/``ibstatus`` print in the input (:func:`~aifabric.discovery.ib_ports.
        port_rates_in_text`).
    nccl_version : str, optional
        The NCCL release the node runs (default: the newest recorded): its tables price the expected busbw,
        and it decides GPUDirect RDMA to a NIC behind the GPU's own Grace CPU
        (:func:`~aifabric.discovery.node_paths.c2c_gdr_verdict`: from 2.27.3 by default).

    Returns
    -------
    NodeInspection

    Raises
    ------
    ConfigError
        If ``gpu`` is not a catalogue key, ``nic_speed`` is not a NIC speed or ``nccl_version`` is not a
        recorded release's.
    ParseError
        If the input lists no GPU.
    """

    if not layout.gpus:
        # a hand-written NCCL_TOPO_FILE may give only the PCI tree (<pci busid=.../> without a class): NCCL
        # fills in the GPUs and NICs it detects at run time (NVIDIA/nccl v2.26.2 src/graph/xml.cc:
        # ncclTopoGetXmlFromFile, then ncclTopoFillGpu/ncclTopoFillNet)
        hint = (
            " (a topology file that gives only the PCI tree: NCCL adds the GPUs it detects at run time; "
            "inspect an NCCL_TOPO_DUMP_FILE dump or nvidia-smi topo -m instead)"
            if layout.kind == "nccl-xml"
            else ""
        )
        raise ParseError(f"the topology lists no GPU{hint}", line=layout.line, source=layout.source)
    release = nccl_release(nccl_version)
    accelerator, accelerator_source, notes = choose_accelerator(layout, gpu, named)
    if layout.c2c and layout.nics and nccl_version is None:
        notes.append(
            f"NCCL release not given: GPUDirect RDMA over NVLink-C2C judged for NCCL {release.version}, the "
            "newest recorded (--nccl-version for the node's)"
        )
    pairing = nic_pairing(layout, nccl_version)
    mine = {layout.nic_names.get(p.nic, p.nic) for p in pairing.values() if p is not None}
    speed, assumed_speed, instance = _nic_speed(
        layout, nic_speed, notes, instance_with_nics(accelerator, instances), nic_port_rate(ports, mine)
    )
    groups = nvlink_groups(layout)
    paths = tuple(gpu_nic_path(layout, g, n, nccl_version) for g in layout.gpus for n in layout.nics)
    nearest = _nearest_paths(layout, paths)
    spec, spec_data, findings = _spec_and_findings(
        layout, accelerator, speed, groups, nearest, pairing, notes
    )
    factor, beyond_spec, cap = _network_limits(layout, pairing, spec)
    return NodeInspection(
        layout=layout,
        accelerator=accelerator,
        nic_speed_bytes_per_s=speed,
        nvlink_groups=groups,
        nearest=nearest,
        pairing=pairing,
        paths=paths,
        numa=numa_nodes(layout),
        spec=spec,
        spec_data=spec_data,
        network_factor=factor,
        network_factor_beyond_spec=beyond_spec,
        expected=expected_busbw(spec, beyond_spec, nccl_version),
        warnings=tuple(findings),
        assumptions=tuple(notes),
        accelerator_source=accelerator_source,
        nic_speed_assumed=assumed_speed,
        nic_speed_instance=instance,
        rail_cap_bytes_per_s=cap[0] if cap else None,
        rail_cap_link=cap[1] if cap else None,
    )


def _nic_speed(
    layout: NodeLayout,
    nic_speed: str | None,
    notes: list[str],
    instance: InstanceMention | None = None,
    port_rate: tuple[float, tuple[PortRate, ...]] = (0.0, ()),
) -> tuple[float, bool, str | None]:
    """The speed of each NIC, bytes/s: ``nic_speed`` if given, else the layout's, else the ``port_rate``
    ``ibstat`` printed (:func:`~aifabric.discovery.ib_ports.nic_port_rate`), else that of the cloud
    ``instance`` the file names, else :data:`DEFAULT_NIC_SPEED` (each of the last three noted in
    ``notes``); whether it was assumed; and the instance it came from, as written.

    Raises
    ------
    ConfigError
        If ``nic_speed`` is not a NIC speed.
    """
    if nic_speed is not None:
        return parse_nic_bandwidth(nic_speed, field="--nic-speed"), False, None
    if layout.nic_speed_bytes_per_s:
        return layout.nic_speed_bytes_per_s, False, None
    gbps, ports = port_rate
    if ports:
        first, more = ports[0], f", and {len(ports) - 1} more port(s)" if len(ports) > 1 else ""
        notes.append(
            f"NIC speed from the port rate ibstat prints: {gbps:g} Gb/s ({first.device} port {first.port}, "
            f"line {first.line}{more}); give --nic-speed to override"
        )
        return parse_nic_bandwidth(f"{gbps:g} Gb/s", field="ibstat Rate"), False, None
    if instance is not None and instance.instance.nic_speed_bytes_per_s is not None:
        where = Path(layout.source).name if layout.source else "the file"
        notes.append(instance_nic_note(instance, where))
        return instance.instance.nic_speed_bytes_per_s, False, instance.written
    speed = parse_nic_bandwidth(DEFAULT_NIC_SPEED, field="--nic-speed")
    notes.append(f"NIC speed not in the input: {DEFAULT_NIC_SPEED} assumed (give --nic-speed)")
    return speed, True, None


def _nearest_paths(layout: NodeLayout, paths: tuple[GpuNicPath, ...]) -> dict[str, tuple[GpuNicPath, ...]]:
    """GPU -> its paths to the NICs of the closest path type, in NIC order (empty without NICs)."""
    nearest: dict[str, tuple[GpuNicPath, ...]] = {}
    for g in layout.gpus:
        mine = sorted(
            (p for p in paths if p.gpu == g), key=lambda p: (path_rank(p.path), layout.nics.index(p.nic))
        )
        nearest[g] = tuple(p for p in mine if path_rank(p.path) == path_rank(mine[0].path)) if mine else ()
    return nearest


def _spec_and_findings(
    layout: NodeLayout,
    accelerator: str,
    speed: float,
    groups: tuple[NvlinkGroup, ...],
    nearest: dict[str, tuple[GpuNicPath, ...]],
    pairing: dict[str, GpuNicPath | None],
    notes: list[str],
) -> tuple[ClusterSpec, dict[str, Any], list[Finding]]:
    """The node's one-node spec (:func:`infer_node_spec`), the mapping it was built from and every layout
    finding, layout warnings first; assumptions and what a partial input lacks go to ``notes``."""
    spec, spec_data, spec_notes, findings = infer_node_spec(
        layout,
        accelerator,
        speed,
        groups,
        local_nics_per_gpu(layout, nearest),
        local_gpus_per_nic(layout),
        staged_nic_path(pairing),
    )
    notes.extend(spec_notes)
    findings = layout_warnings(layout, nearest, pairing, speed) + findings
    notes.extend(f"partial input: {m}" for m in layout.missing)
    _host_findings(layout, spec, findings, notes)
    return spec, spec_data, findings


def _host_findings(layout: NodeLayout, spec: ClusterSpec, findings: list[Finding], notes: list[str]) -> None:
    """Add what the layout says of its host to ``findings`` (a VM, no affinity, GPUs without peer access)
    and ``notes`` (a hand-written NCCL topology file)."""
    vm = vm_signature(layout) or xml_vm_signature(layout, spec.accelerator_spec.nvlink_links > 0)
    if vm is not None:
        findings.append(Finding("vm", vm))
    elif not layout.affinity_known:
        findings.append(Finding("no_affinity", (
            "no CPU or NUMA affinity reported (typical of a VM): the PCIe layout shown may hide the real "
            "switches, and NCCL may need NCCL_TOPO_FILE (NVIDIA/nccl-tests #256; Azure/azhpc-images ships "
            "such files)"
        )))  # fmt: skip
    acc = spec.accelerator_spec
    if not spec.peer_to_peer and len(layout.gpus) > 1:
        findings.append(Finding("no_peer_to_peer", (
            f"{acc.name} has no GPU peer-to-peer (GeForce: 'GeForce cards do not support P2P', "
            "NVIDIA/nccl-tests #287): NCCL's P2P transport cannot connect, GPUs of this node talk over SHM "
            "through host memory (the expected figures above), and NCCL_P2P_DISABLE changes nothing"
        )))  # fmt: skip
    if layout.hand_written:
        notes.append(
            "hand-written NCCL topology file: no NVLinks or NIC speeds in it (NCCL adds them at run time); "
            "the catalogue's figures for the GPU are used"
        )


def _network_limits(
    layout: NodeLayout, pairing: dict[str, GpuNicPath | None], spec: ClusterSpec
) -> tuple[float, float, tuple[float, str] | None]:
    """The GPUDirect network factor of the node, the part of it the spec does not carry (the whole factor,
    less the host staging a spec's ``scale_out.nic_path`` beyond PXB already prices), and its rail cap
    (bytes/s and the link), if any.

    PCIe paths are per NIC: they are compared with one NIC's share, ``x gpus_per_nic / nics_per_gpu``,
    not the GPU's NICs together. The factor scales the GPU's scale-out, which the GPU's own x16 link
    already bounds (``nic_effective_bytes_per_s``), so a path no slower than that link costs nothing more;
    the cap names a path slower than the NIC itself (``nic_payload_bytes_per_s``), whichever link it is.
    """
    so = spec.scale_out
    share = so.gpus_per_nic / so.nics_per_gpu if so else 1.0
    nic = spec.nic_effective_bytes_per_s * share
    per_nic = so.gpus_per_nic if so else 1
    factor = gdr_network_factor(layout, pairing, nic, per_nic)
    staged = so is not None and so.nic_path not in GDR_PATHS
    beyond = gdr_network_factor(layout, pairing, nic, per_nic, no_gdr_factor=1.0) if staged else factor
    return factor, beyond, rail_cap(layout, pairing, spec.nic_payload_bytes_per_s * share)


def detect_format(text: str) -> str:
    """``nccl-xml`` if ``text`` holds a ``<system>`` document, ``nvidia-smi`` if a matrix header, else
    ``unknown``.

    The one that appears first wins when both do. A matrix line may carry a job log's timestamp and launcher
    tag (:func:`~aifabric.discovery._text.clean_lines`), as :meth:`TopoMatrix.from_text` reads it.

    >>> detect_format("\\tGPU0\\tGPU1\\tCPU Affinity\\n"), detect_format("<system version='1'></system>")
    ('nvidia-smi', 'nccl-xml')
    """
    xml = re.search(r"^[ \t]*<system\b", text, re.MULTILINE)
    cleaned = "\n".join(clean_lines(text.split("\n")))
    smi = re.search(r"^[ \t]*(?:\x1b\[[0-9;]*m)*GPU0(?:[ \t]|\x1b|$)", cleaned, re.MULTILINE)
    if xml and (not smi or text.count("\n", 0, xml.start()) < cleaned.count("\n", 0, smi.start())):
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
    nccl_version: str | None = None,
) -> list[NodeInspection]:
    """Inspect every node described in ``text``: one ``nvidia-smi topo -m`` matrix, or each NCCL XML
    ``<system>``.

    Parameters
    ----------
    text : str or bytes
        The file's content (commentary around the matrix or XML is allowed).
    source : str, optional
        File name, used in messages.
    gpu, nic_speed, nccl_version : str, optional
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
    layouts = _read_layouts(text, fmt, source)
    lines = text.split("\n")
    out = []
    for lay, (low, high) in zip(layouts, _document_regions(text, [lay.line for lay in layouts]), strict=True):
        region = "\n".join(lines[low:high])
        own = accelerators_in_text(region) if gpu is None else ()
        named = tuple(dataclasses.replace(m, line=m.line + low) for m in own)
        found = instances_in_text(region) if nic_speed is None else ()
        instances = tuple(dataclasses.replace(m, line=m.line + low) for m in found)
        rates = port_rates_in_text(region) if nic_speed is None else ()
        ports = tuple(dataclasses.replace(p, line=p.line + low) for p in rates)
        out.append(
            inspect_layout(
                lay,
                gpu=gpu,
                nic_speed=nic_speed,
                named=named,
                instances=instances,
                ports=ports,
                nccl_version=nccl_version,
            )
        )
    return out


#: Other tools' outputs people paste for a node, each by a line only it prints, and what ``inspect`` says
#: of it: the first that matches names the input in the one-line refusal.
_OTHER_OUTPUTS: tuple[tuple[re.Pattern[str], str], ...] = (
    (  # its column header, or the "# nThread 1 nGpus 8 ..." line that opens a run (copied without a table)
        re.compile(r"#\s*size\s+count\s+type|^[^\n#]{0,40}#\s*nThread \d", re.M),
        "an nccl-tests log: use 'aifabric nccl-tests compare'",
    ),
    (  # nvidia-smi -q: its "==============NVSMI LOG==============" banner, or (a grep of it) one of its keys
        # padded to the value column: "        CliqueId                          : 2"
        re.compile(
            r"^=+NVSMI LOG=+\s*$|^\s*(?:Attached GPUs|Product Name|GPU UUID|CliqueId|ClusterUUID)\s{2,}: ",
            re.M,
        ),
        "nvidia-smi -q output: properties of each GPU, not the paths between GPUs and NICs",
    ),
    (  # nvidia-smi nvlink -R / -s / -c: "Link 0: Remote Device 00000000:07:00.0: Link 46", "Link 0: 53.125
        # GB/s", "Link 0, P2P is supported: true"
        re.compile(
            r"^\s+Link \d{1,2}(?:: (?:Remote Device|\d+(?:\.\d+)? GB/s)|, [\w ]{1,40}: (?:true|false))", re.M
        ),
        "nvidia-smi nvlink output: the links of each GPU, not the paths between GPUs and NICs",
    ),
    (  # dcgmi nvlink -s (DCGM): its "NvLink Link Status" box, then "gpuId 0:" above a row of U/D/X/_ states
        re.compile(r"NvLink Link Status|^\s+gpuId \d{1,4}:\s*$", re.M),
        "dcgmi nvlink output: the state of each GPU's NVLink links, not the paths between GPUs and NICs",
    ),
    (  # ibstat (infiniband-diags): "CA 'mlx5_0'" opens each device; ibstatus: "Infiniband device 'x' port 1";
        # tried before ibv_devinfo, whose port keys ibstatus shares ("link_layer:")
        re.compile(r"^CA '[^']+'\s*$|^Infiniband device '[^']+' port \d+ status:", re.M),
        "ibstat or ibstatus output: NIC ports and their rates, not the paths between GPUs and NICs",
    ),
    (  # ibv_devinfo (rdma-core): "hca_id:" opens each device; a port block copied alone keeps its keys padded
        # to the value column ("        link_layer:             Ethernet", "phys_state: LINK_UP (5)")
        re.compile(r"^hca_id:\s|^\s+(?:link_layer|phys_state|active_speed|active_mtu|port_lid):\s+\S", re.M),
        "ibv_devinfo output: NIC ports, not the paths between GPUs and NICs",
    ),
    (  # ibdev2netdev (MLNX_OFED): "mlx5_0 port 1 ==> ib0 (Up)", padded when piped through column -t
        re.compile(r"^\s*[\w.-]{1,64}\s+port\s+\d{1,3}\s+==>\s+\S{1,64}\s+\((?:Up|Down)\)", re.M),
        "ibdev2netdev output: the network interface of each RDMA device, not the paths between GPUs and NICs",
    ),
    (  # show_gids (MLNX_OFED): its "DEV PORT INDEX GID IPv4 VER DEV" header and "n_gids_found=N" footer
        re.compile(r"^DEV\s+PORT\s+INDEX\s+GID\s|^n_gids_found=\d", re.M),
        "show_gids output: the GID table of each RDMA port, not the paths between GPUs and NICs",
    ),
    (  # ethtool: "Settings for eth0:", -S's "NIC statistics:" or its counters ("     rx_prio0_bytes: 8803"),
        # -i's "driver: mlx5_core" above "bus-info:"
        re.compile(
            r"^Settings for \S{1,64}:\s*$|^NIC statistics:\s*$|^\s+[rt]x_\w{1,64}: \d+\s*$|^bus-info: ", re.M
        ),
        "ethtool output: a network interface's settings or counters, not the paths between GPUs and NICs",
    ),
    (  # NCCL's topology as NCCL_DEBUG_SUBSYS=GRAPH prints it ("=== System : maxBw 24.0 totalBw 360.0 ===",
        # "maxWidth" before 2.12; graph/topo.cc ncclTopoPrint), with or without its INFO prefix
        re.compile(r"=== System : max(?:Bw|Width) "),
        "NCCL's topology log (NCCL_DEBUG_SUBSYS=GRAPH): set NCCL_TOPO_DUMP_FILE for the XML inspect reads",
    ),
    (  # AMD sysfs: "cat /sys/class/drm/card*/device/xgmi_num_links", a bare matrix of link counts
        re.compile(r"/xgmi_num_links\b"),
        "the XGMI link counts of AMD GPUs from sysfs, not the paths between GPUs and NICs",
    ),
    (  # NCCL_DEBUG=INFO lines, prefixed or pasted as bare messages (nccl_info's module docstring)
        re.compile(r"NCCL INFO |^NCCL version \d|^NET/(?:IB|Socket) ?: Using |^Using network \S", re.M),
        "NCCL_DEBUG=INFO lines: what a run used, not the paths between GPUs and NICs",
    ),
)


def _read_layouts(text: str, fmt: str, source: str | None) -> list[NodeLayout]:
    """The node layouts of ``text`` in format ``fmt`` (``auto``: :func:`detect_format`).

    Raises
    ------
    ParseError
        If the text holds neither format (hinting at ``nccl-tests compare`` for an nccl-tests log), or the
        matrix/XML is malformed.
    """
    kind = detect_format(text) if fmt == "auto" else fmt
    if kind == "unknown":
        refuse_rocm_smi(text.split("\n"), source)
        refuse_headerless_rows(text.split("\n"), source)
        n = line_count(text)
        hint = next((f" (it looks like {what})" for p, what in _OTHER_OUTPUTS if p.search(text)), "")
        raise ParseError(
            f"no nvidia-smi topo -m matrix (a line starting with GPU0) or NCCL topology XML (<system>) found "
            f"in {n} lines{hint}",
            line=n,
            source=source,
        )
    if kind == "nvidia-smi":
        return [NodeLayout.from_matrix(TopoMatrix.from_text(text, source=source))]
    return [NodeLayout.from_topology(t) for t in parse_nccl_topologies(text, source=source)]


def _document_regions(text: str, starts: list[int]) -> list[tuple[int, int]]:
    """For each document starting at a 1-based line, the lines ``low+1 .. high`` whose GPU names are its own:
    from after the previous document's ``</system>`` to its own (the comment above an XML names its
    instance, ``p4d.24xlarge``); the last one to the end. One document owns the whole text."""
    if len(starts) <= 1:
        return [(0, line_count(text) + 1)] * len(starts)
    lines = text.split("\n")
    ends = []
    for start in starts:
        end = next((i + 1 for i in range(start - 1, len(lines)) if "</system>" in lines[i]), len(lines))
        ends.append(end)
    ends[-1] = len(lines) + 1
    return [(ends[i - 1] if i else 0, ends[i]) for i in range(len(starts))]
