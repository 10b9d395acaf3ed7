"""The cluster a logged run most likely ran on, when the caller does not give one.

nccl-tests logs name the GPU (rank lines), the ranks and the hosts, but never the NICs. :func:`infer_cluster`
builds a :class:`~aifabric.cluster.spec.ClusterSpec` from what the log says and fills the rest with stated
guesses: the GPU from the rank lines, else from a GPU name in the text above the table, else
:data:`DEFAULT_GPU`; the NICs of the cloud instance the log names (:mod:`aifabric.discovery.instances`), else
one NIC per GPU at :data:`DEFAULT_NIC_SPEED`; NVSwitch for NVLink GPUs and PCIe through
the CPU otherwise (as the ``v100-pcie-4gpu`` preset). Every guess comes back as a sentence.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aifabric import catalog
from aifabric.catalog.archs import cuda_compiles_for, gpu_architecture
from aifabric.catalog.cloud import CloudInstance, cloud_instances
from aifabric.catalog.nccl import version_tuple
from aifabric.cluster.presets import enough_tiers
from aifabric.cluster.resolve import resolve_cluster
from aifabric.cluster.spec import ClusterSpec
from aifabric.discovery.instances import (
    InstanceMention,
    instance_nic_note,
    instance_with_nics,
    instances_in_text,
)
from aifabric.discovery.nccl_info import Evidence
from aifabric.errors import ConfigError, ParseError
from aifabric.units import parse_nic_bandwidth

if TYPE_CHECKING:  # annotations only: inspect (topologies) need not load the nccl-tests parser
    from aifabric.discovery.nccl_tests import PerfTable

__all__ = [
    "DEFAULT_GPU",
    "DEFAULT_NIC_SPEED",
    "DEFAULT_PCIE_GPU",
    "GpuMention",
    "accelerator_from_name",
    "accelerators_in_text",
    "default_gpu",
    "infer_cluster",
    "log_scale_up",
    "nic_for_speed",
]

#: Accelerator assumed when neither the log nor the caller names one (catalogue key).
DEFAULT_GPU = "h100-sxm"
#: Accelerator assumed for GPUs a full topology shows without NVLink between them: the PCIe card of
#: :data:`DEFAULT_GPU`'s generation. An SXM GPU always sits on its NVLink/NVSwitch board (NVIDIA HGX H100
#: datasheet: SXM5 GPUs joined by NVLink 4 through NVSwitch), so GPUs with none are PCIe cards.
DEFAULT_PCIE_GPU = "h100-pcie"
#: NIC speed per GPU assumed when the caller does not give one (nccl-tests logs never print it).
DEFAULT_NIC_SPEED = "400 Gb/s"

# GPU names as nccl-tests prints them (rank lines) or people write them -> catalogue keys.
# Specific names first (``H100 PCIe`` before ``H100``): the first pattern that matches wins.
_GPU_NAMES: tuple[tuple[str, str | None], ...] = (
    (r"\bGB300\b", "gb300"),
    (r"\bGB200\b", "gb200"),
    (r"\bB300\b", "b300"),
    (r"\bB200\b", "b200"),
    (r"\bH200\b", "h200-sxm"),
    (r"\bH100[- ]?PCI[Ee]", "h100-pcie"),
    (r"\bH100[- ]?NVL\b", "h100-nvl"),
    (r"\bH100\b", "h100-sxm"),
    (r"\bH800\b", "h800-sxm"),
    (r"\bH20\b", "h20"),
    (r"\bA100[- ]?(?:80GB[- ])?PCI[Ee][- ]?80GB|\bA100 80GB PCI[Ee]", "a100-pcie-80gb"),
    (r"\bA100[- ]?PCI[Ee]", "a100-pcie-40gb"),
    (r"\bA100[- ]SXM4?[- ]40GB\b", "a100-sxm-40gb"),  # rank lines: "A100-SXM4-40GB"
    (r"\bA100\b", "a100-sxm-80gb"),
    (r"\bA30\b", "a30"),
    (r"\bA40\b", "a40"),
    (r"\bL40S\b", "l40s"),
    (r"\bMI355X\b", "mi355x"),
    (r"\bMI350X\b", "mi350x"),
    (r"\bMI325X\b", "mi325x"),
    (r"\bMI300X\b", "mi300x"),
    (r"\bGB10\b", "gb10"),
    (r"\bRTX PRO 6000\b", "rtx-pro-6000-blackwell"),
    (r"\bRTX 6000 Ada\b", "rtx-6000-ada"),
    (r"\bRTX[- ]?5090\b", "rtx-5090"),
    (r"\bRTX[- ]?4090\b", "rtx-4090"),
    (r"\bV100[- ]?PCI[Ee]", "v100-pcie-32gb"),
    (r"\bV100[- ]SXM2[- ]32GB\b", "v100-sxm2-32gb"),
    (r"\bV100\b", None),  # other V100s (SXM2 16 GB): no catalogue entry
)
#: The model name every match of a :data:`_GPU_NAMES` pattern holds (the word after its ``\b``), lower
#: case: a text without it cannot match, and is not scanned (:func:`_may_name`).
_GPU_WORDS: dict[str, str] = {p: re.match(r"\\b([A-Z0-9]+)", p)[1].lower() for p, _ in _GPU_NAMES}  # type: ignore[index]


@cache
def _instance_names() -> tuple[tuple[str, str], ...]:
    """(pattern, catalogue key) of every cloud instance type in ``catalog/data/cloud_instances.yaml``."""
    return tuple((_instance_pattern(i), i.accelerator) for i in cloud_instances())


def _instance_pattern(instance: CloudInstance) -> str:
    """The regular expression an instance type's names match, on word boundaries."""
    return rf"\b(?:{instance.pattern})\b"


def accelerator_from_name(name: str | None) -> str | None:
    """Catalogue key of a GPU as nccl-tests or people name it (``NVIDIA H100 80GB HBM3`` -> ``h100-sxm``).

    Returns None for names the catalogue has no entry for (V100 SXM2, unknown parts).

    Examples
    --------
    >>> accelerator_from_name("NVIDIA H100 80GB HBM3"), accelerator_from_name("Tesla V100-PCIE-32GB")
    ('h100-sxm', 'v100-pcie-32gb')
    >>> accelerator_from_name("AMD Instinct MI300X"), accelerator_from_name("NVIDIA H100 PCIe")
    ('mi300x', 'h100-pcie')
    """
    if not name:
        return None
    for pattern, key in _GPU_NAMES:
        if re.search(pattern, name, re.IGNORECASE):
            return key
    return None


@dataclass(frozen=True)
class GpuMention:
    """A GPU model named in a text: the catalogue key, the words as written and the 1-based line."""

    key: str
    written: str
    line: int


def accelerators_in_text(text: str) -> tuple[GpuMention, ...]:
    """Every catalogued GPU model a text names, once each, in order of first appearance: GPU names and cloud
    instance types (``p4d.24xlarge`` -> ``a100-sxm-40gb``, ``catalog/data/cloud_instances.yaml``).

    Names the catalogue has no entry for (``V100`` SXM2, unknown parts) are skipped; where two patterns
    match at one place (``V100-PCIE`` and ``V100``) the more specific one counts.

    Examples
    --------
    >>> text = "8 x A100 40GB\\nthen NVIDIA H100 80GB HBM3 and A100 again"
    >>> [(m.key, m.line) for m in accelerators_in_text(text)]
    [('a100-sxm-80gb', 1), ('h100-sxm', 2)]
    """
    found: list[tuple[int, int, int, str | None, str]] = []  # (start, pattern order, end, key, written)
    lowered = _lowered(text)
    for order, (pattern, key) in enumerate((*_GPU_NAMES, *_instance_names())):
        if not _may_name(pattern, lowered):
            continue
        for match in re.finditer(pattern, text, re.IGNORECASE):
            found.append((match.start(), order, match.end(), key, match.group(0)))
    found.sort()
    out: dict[str, GpuMention] = {}
    covered = -1
    for start, _, end, key, written in found:
        if start < covered:
            continue
        covered = end
        if key is not None and key not in out:
            out[key] = GpuMention(key, written, text.count("\n", 0, start) + 1)
    return tuple(out.values())


def nic_for_speed(speed_bytes_per_s: float) -> str:
    """The ConnectX generation that runs at ``speed_bytes_per_s`` per direction (catalogue key).

    >>> nic_for_speed(400e9 / 8), nic_for_speed(200e9 / 8)
    ('connectx-7', 'connectx-6')
    """
    gbps = speed_bytes_per_s * 8 / 1e9
    for limit, key in ((200, "connectx-6"), (400, "connectx-7"), (800, "connectx-8")):
        if gbps <= limit * 1.0001:
            return key
    return "connectx-9"


def _node_spec_dict(
    accelerator: str,
    gpus_per_node: int,
    nodes: int,
    nic_speed_bytes_per_s: float,
    *,
    name: str,
    instance: CloudInstance | None = None,
) -> dict[str, Any]:

    acc = catalog.accelerator(accelerator)
    if acc.nvlink or acc.scale_up_link:  # NVLink, or a vendor link such as AMD's xGMI mesh (one domain)
        scale_up: dict[str, Any] = {"kind": "nvswitch"}
    else:
        scale_up = {"kind": "pcie", "link": f"pcie-{acc.pcie}", "p2p_through_cpu": True}
    return {
        "name": name,
        "accelerator": accelerator,
        "gpus_per_node": gpus_per_node,
        "nodes": nodes,
        "scale_up": scale_up,
        "scale_out": _scale_out_dict(nic_speed_bytes_per_s, gpus_per_node, instance),
        "front_end": None,
        "management": None,
    }


def _scale_out_dict(
    speed_bytes_per_s: float, gpus_per_node: int, instance: CloudInstance | None
) -> dict[str, Any]:
    """The inferred scale-out: NICs of ``speed_bytes_per_s`` on a two-tier InfiniBand Clos, one per GPU, or
    as many as the cloud ``instance`` the log names has where its page gives the count.

    The instance's NIC part and NCCL transport (``cloud_instances.yaml`` ``nic``, ``transport``) are not
    applied: the efficiency of a plugin transport (TCPXO, EFA SRD) is itself read off public runs of those
    instances, so pricing a log with it would grade the log against figures taken from such logs (gIB, NCCL's
    verbs code, is priced at RoCEv2's framing, 0.3 % below the inferred InfiniBand NIC's); the note names the
    transport, and a ``--cluster`` spec with ``scale_out.transport`` applies it.
    """
    return {
        "nic": nic_for_speed(speed_bytes_per_s),
        "nic_speed": f"{speed_bytes_per_s * 8 / 1e9:g} Gb/s",
        "fabric": "infiniband",
        "switch": catalog.default_leaf_switch("infiniband", speed_bytes_per_s),
        "tiers": 2,
        **_nic_sharing(instance.nics if instance is not None else None, gpus_per_node),
    }


def _nic_sharing(nics: int | None, gpus_per_node: int) -> dict[str, int]:
    """``nics_per_gpu`` or ``gpus_per_nic`` for ``nics`` NICs over ``gpus_per_node`` GPUs, when one divides
    the other (p5: 32 over 8, 4 each; p4d: 4 over 8, 2 GPUs a NIC); else nothing (one NIC per GPU).

    Several NICs of a GPU are each on a plane of their own (port k on plane k), as a rail-optimised Clos
    cables them (:class:`~aifabric.cluster.spec.ScaleOutSpec`).

    >>> _nic_sharing(32, 8), _nic_sharing(4, 8), _nic_sharing(8, 8), _nic_sharing(8, 3)
    ({'nics_per_gpu': 4, 'planes': 4}, {'gpus_per_nic': 2}, {}, {})
    """
    if nics is None or nics == gpus_per_node:
        return {}
    if nics > gpus_per_node and nics % gpus_per_node == 0:
        return {"nics_per_gpu": nics // gpus_per_node, "planes": nics // gpus_per_node}
    if nics < gpus_per_node and gpus_per_node % nics == 0:
        return {"gpus_per_nic": gpus_per_node // nics}
    return {}


#: Any character that matches an ASCII letter or digit of a pattern under ``re.IGNORECASE`` (the Kelvin
#: sign matches ``k``, a dotless i ``i``): a text holding such a non-ASCII one is scanned whole.
_ASCII_ALNUM = re.compile("[a-z0-9]", re.IGNORECASE)


def _lowered(text: str) -> str | None:
    """``text`` in lower case where every match of a :data:`_GPU_NAMES` word in it is that word in the lower
    case (:func:`_may_name`): an ASCII text, or one whose non-ASCII characters (``×``, dashes, ``§``)
    match no ASCII letter or digit under ``re.IGNORECASE``, so that a match is made of ASCII characters
    only; None otherwise (unknown: every pattern is scanned).

    Optimisation: case 03's log (a dash and a ``§`` in its text) was scanned for every GPU pattern above
    each of its seven tables.

    >>> _lowered("8 x H100"), _lowered("8 × H100"), _lowered("8 \u212a H100") is None
    ('8 x h100', '8 × h100', True)
    """
    if not text.isascii() and any(_ASCII_ALNUM.fullmatch(c) for c in set(text) if not c.isascii()):
        return None
    return text.lower()


def _may_name(pattern: str, lowered: str | None) -> bool:
    """False when ``pattern`` (of :data:`_GPU_NAMES`) cannot match a text whose lower case is ``lowered``
    (an ASCII text without the pattern's model name): a whole-text regex scan saved; None: unknown."""
    word = _GPU_WORDS.get(pattern)
    return lowered is None or word is None or word in lowered


def _gpu_from_text(text_before: str) -> tuple[str | None, str | None]:
    lowered = _lowered(text_before)
    for pattern, key in _GPU_NAMES:
        if not _may_name(pattern, lowered):
            continue
        match = re.search(pattern, text_before, re.IGNORECASE)
        if match:
            return key, match.group(0)
    return None, None


def infer_cluster(
    table: PerfTable,
    *,
    cluster: ClusterSpec | str | Path | None = None,
    gpu: str | None = None,
    nic_speed: str | None = None,
    text_before: str | Callable[[], str] = "",
    intra: Sequence[Evidence] = (),
) -> tuple[ClusterSpec, tuple[str, ...]]:
    """The cluster a table ran on: ``cluster`` resized to the table's nodes, or one inferred from the log.

    Parameters
    ----------
    table : PerfTable
        Needs :attr:`PerfTable.n_ranks`.
    cluster : ClusterSpec, str or Path, optional
        A spec, a preset name or a YAML file; resized to the table's node count.
    gpu : str, optional
        Catalogue key of the accelerator (overrides the log).
    nic_speed : str, optional
        NIC speed per GPU, e.g. ``"400 Gb/s"`` (default: that of the cloud instance the text above the table
        names for the table's GPU, ``catalog/data/cloud_instances.yaml``, with its NIC count; else
        :data:`DEFAULT_NIC_SPEED`).
    text_before : str or callable returning str
        Text above the table, searched for a GPU name when the rank lines give none; a callable is called
        only then (a long log need not be joined for every table).
    intra : sequence of Evidence
        NCCL INFO lines naming the transport between GPUs of a node (``via P2P/IPC``, ``via SHM/direct``;
        :attr:`~aifabric.discovery.nccl_info.NcclInfo.intra_transports`): P2P there sets how an inferred
        PCIe node's GPUs meet (:func:`log_scale_up`).

    Returns
    -------
    (ClusterSpec, tuple of str)
        The cluster and the assumptions made, in words.

    Raises
    ------
    ParseError
        If the table does not say how many ranks it ran on, or its ranks do not fill its nodes evenly.
    ConfigError
        If ``cluster``, ``gpu`` or ``nic_speed`` is invalid, names another GPU than the log's rank lines, or
        the cluster is too small for the ranks.
    """

    n_ranks, n_nodes = table.n_ranks, table.n_nodes
    if not n_ranks:
        raise ParseError(
            "the log does not say how many ranks ran this table", line=table.line, source=table.source
        )
    _check_log_gpu(table, cluster, gpu)
    if cluster is not None:
        return _resized_cluster(cluster, n_ranks, n_nodes, table.gpu_name)
    return _inferred_cluster(
        table, n_ranks, n_nodes, gpu=gpu, nic_speed=nic_speed, text_before=text_before, intra=intra
    )


def _check_log_gpu(table: PerfTable, cluster: ClusterSpec | str | Path | None, gpu: str | None) -> None:
    """Refuse a ``--gpu`` or ``--cluster`` whose GPU is not the one the log's rank lines name.

    Raises
    ------
    ConfigError
        Naming the option's GPU and the log's.
    """
    logged = accelerator_from_name(table.gpu_name)
    if logged is None or (gpu is None and cluster is None):
        return
    where = (f"the log's {table.n_ranks} ranks run on {table.gpu_name!r} ({logged}, rank lines above line "
             f"{table.line})")  # fmt: skip
    if gpu is not None and gpu != logged:
        raise ConfigError(f"--gpu: {gpu!r} conflicts with {where}")
    if cluster is not None:
        base = resolve_cluster(cluster)
        if base.accelerator != logged:
            raise ConfigError(f"--cluster: {base.name} has {base.accelerator} GPUs; {where}")


def _resized_cluster(
    cluster: ClusterSpec | str | Path, n_ranks: int, n_nodes: int | None, gpu_name: str | None = None
) -> tuple[ClusterSpec, tuple[str, ...]]:
    """``cluster`` resized to the table's nodes (default: enough nodes for ``n_ranks``), with a note when the
    ranks do not fill its nodes.

    Raises
    ------
    ConfigError
        If ``cluster`` is invalid or has fewer GPUs than ``n_ranks``.
    """
    notes: list[str] = []
    base = resolve_cluster(cluster)
    nodes = n_nodes or -(-n_ranks // base.gpus_per_node)
    ran = f"the log ran {n_ranks} ranks" + (f" on {gpu_name!r}" if gpu_name else "")
    if n_ranks > nodes * base.gpus_per_node:  # the ranks' own count, before any resize changes it
        raise ConfigError(
            f"cluster: {ran} on {nodes} node(s); {nodes} node(s) of {base.name} hold "
            f"{nodes * base.gpus_per_node} GPUs (gpus_per_node={base.gpus_per_node})"
        )
    try:  # the path `collective --nodes` takes: a preset grown past two tiers gets a third
        spec = resolve_cluster(cluster, nodes=nodes)
    except ConfigError as err:
        raise ConfigError(f"cluster: {base.name} cannot be sized to {ran} on {nodes} node(s): {err}") from err
    if n_ranks > spec.n_gpus:
        raise ConfigError(f"cluster: {spec.name} has {spec.n_gpus} GPUs on {nodes} node(s); {ran}")
    if n_nodes and n_ranks != n_nodes * spec.gpus_per_node:
        notes.append(
            f"the log ran {n_ranks} ranks on {n_nodes} nodes; {spec.name} has {spec.gpus_per_node} "
            "GPUs per node"
        )
    return spec, tuple(notes)


def _inferred_cluster(
    table: PerfTable,
    n_ranks: int,
    n_nodes: int | None,
    *,
    gpu: str | None,
    nic_speed: str | None,
    text_before: str | Callable[[], str],
    intra: Sequence[Evidence] = (),
) -> tuple[ClusterSpec, tuple[str, ...]]:
    """A cluster of ``n_nodes`` holding ``n_ranks`` GPUs, from the log, the options and the defaults, with
    every guess in the notes, the GPUs of a PCIe node meeting as NCCL's ``intra`` lines say
    (:func:`log_scale_up`). The node count is never guessed: one rank is one node; more need a count.

    Raises
    ------
    ParseError
        If the node count is unknown for more than one rank (asking for ``--nodes``), or the ranks do not
        fill the nodes evenly.
    ConfigError
        If ``gpu`` or ``nic_speed`` is invalid.
    """
    notes: list[str] = []
    if n_nodes is None and n_ranks > 1:
        raise ParseError(
            f"the log does not say how many nodes ran its {n_ranks} ranks (no rank lines with hosts, NCCL "
            "INFO nNodes, or launcher line giving hosts or ranks per node); give --nodes or --gpus-per-node",
            line=table.line,
            source=table.source,
        )
    n_nodes = n_nodes or 1
    if n_ranks % n_nodes:
        raise ParseError(
            f"{n_ranks} ranks do not fill {n_nodes} nodes evenly; give --cluster",
            line=table.line,
            source=table.source,
        )
    text = _once(text_before)
    accelerator = gpu if gpu is not None else _table_accelerator(table, text, notes)
    instance = _log_instance(accelerator, n_nodes, nic_speed, text)
    speed = _log_nic_speed(nic_speed, n_nodes, instance, notes)
    data = _node_spec_dict(
        accelerator,
        n_ranks // n_nodes,
        n_nodes,
        speed,
        name=f"{n_nodes} x {n_ranks // n_nodes} {accelerator}",
        instance=instance.instance if instance is not None else None,
    )
    data["scale_up"] = log_scale_up(data["scale_up"], accelerator, n_ranks // n_nodes, intra, notes)
    spec = ClusterSpec.from_dict(data, source="inferred cluster")
    grown = enough_tiers(spec)  # a log of more GPUs than two tiers connect ran on three
    if grown is not spec:
        spec = grown
        notes.append(f"{spec.n_gpus} GPUs need more leaves than two switch tiers connect: a three-tier Clos")
    if data["scale_up"].get("p2p_through_cpu"):
        notes.append(_pcie_note(spec))
    return spec, tuple(notes)


def log_scale_up(
    scale_up: dict[str, Any],
    accelerator: str,
    gpus_per_node: int,
    intra: Sequence[Evidence],
    notes: list[str],
) -> dict[str, Any]:
    """The ``scale_up`` of an inferred PCIe node once NCCL's INFO lines name its transport between GPUs.

    ``via P2P/...`` (``src/transport/p2p.cc``: the P2P transport, GPUs reading and writing each other's
    memory) means NCCL found P2P usable between them (``src/graph/paths.cc`` ncclTopoCheckP2p), so the
    SHM-through-the-CPU assumption (:func:`_pcie_note`) does not hold: on a card an NVLink bridge joins in
    pairs (``accelerators.yaml`` ``nvlink_bridge``: H100 PCIe / NVL, 600 GB/s) a node of two is modelled
    as the bridged pair, otherwise as PCIe P2P. Either is noted in ``notes``; without a P2P line, or on a
    node that is not PCIe, ``scale_up`` is returned unchanged.
    """
    p2p = next((ev for ev in intra if "via P2P/" in ev.text), None)
    if p2p is None or scale_up.get("kind") != "pcie":
        return scale_up
    acc = catalog.accelerator(accelerator)
    said = f"NCCL ran its P2P transport between GPUs (line {p2p.line}: {p2p.text.strip()})"
    if acc.nvlink_bridge is not None and gpus_per_node == 2:
        bridge = catalog.scaleup(acc.nvlink_bridge)
        notes.append(
            f"{said}, and {acc.name} cards pair over an NVLink bridge "
            f"({bridge.per_gpu_bidirectional_bytes_per_s / 1e9:g} GB/s both ways): modelled as the bridged "
            f"pair ({acc.nvlink_bridge}); give --cluster for two cards without one"
        )
        return {"kind": "nvswitch", "link": acc.nvlink_bridge}
    notes.append(f"{said}: GPUs of a node reach each other over PCIe peer-to-peer, not SHM through the CPU")
    return {**scale_up, "p2p_through_cpu": False}


def _once(text: str | Callable[[], str]) -> Callable[[], str]:
    """``text``, or the text a callable returns, joined at most once however often it is asked for."""
    if isinstance(text, str):
        return lambda: text
    return cache(text)


def _log_instance(
    accelerator: str, n_nodes: int, nic_speed: str | None, text: Callable[[], str]
) -> InstanceMention | None:
    """The cloud instance the text above a multi-node table names for ``accelerator`` whose page gives its
    NICs (:func:`~aifabric.discovery.instances.instance_with_nics`), when no ``nic_speed`` is given; the
    text is read only then."""
    if n_nodes == 1 or nic_speed is not None:
        return None
    return instance_with_nics(accelerator, instances_in_text(text()))


def _log_nic_speed(
    nic_speed: str | None, n_nodes: int, instance: InstanceMention | None, notes: list[str]
) -> float:
    """The NIC speed of an inferred cluster, bytes/s: ``nic_speed``, else the named ``instance``'s, else
    :data:`DEFAULT_NIC_SPEED`; where it came from is noted for a multi-node table.

    Raises
    ------
    ConfigError
        If ``nic_speed`` is not a NIC speed.
    """
    if nic_speed is not None:
        return parse_nic_bandwidth(nic_speed, field="--nic-speed")
    if instance is not None and instance.instance.nic_speed_bytes_per_s is not None:
        notes.append(instance_nic_note(instance, "the log"))
        return instance.instance.nic_speed_bytes_per_s
    if n_nodes > 1:
        notes.append(
            f"NIC speed not in the log: one {DEFAULT_NIC_SPEED} NIC per GPU assumed (give --nic-speed)"
        )
    return parse_nic_bandwidth(DEFAULT_NIC_SPEED, field="--nic-speed")


def _pcie_note(spec: ClusterSpec) -> str:
    """The assumption a PCIe node is inferred with, and the transport NCCL runs between its GPUs there:
    SHM through host memory, as the GPUs either have no peer-to-peer (GeForce: accelerators.yaml
    ``peer_to_peer``) or meet through an Intel CPU (path PHB), beyond NCCL's default P2P level PXB
    (``src/graph/paths.cc`` ncclTopoCheckP2p; :mod:`aifabric.collectives.nccl_env`)."""
    shm = "GPUs of a node exchange bytes through host memory (NCCL's SHM transport"
    if not spec.peer_to_peer:
        return f"no NVLink, and {spec.accelerator_spec.name} has no GPU peer-to-peer: {shm})"
    return (
        "no NVLink: GPUs assumed to meet through the CPU root complex of an Intel host, beyond NCCL's "
        f"default P2P level: {shm}; NCCL_P2P_LEVEL=SYS would run P2P)"
    )


def _table_accelerator(table: PerfTable, text_before: Callable[[], str], notes: list[str]) -> str:
    """The catalogue key of the table's GPU: from its rank lines, else the text above it, else
    :data:`DEFAULT_GPU`; a guess is noted in ``notes``."""
    accelerator = accelerator_from_name(table.gpu_name)
    if accelerator is None:
        found, written = _gpu_from_text(text_before())
        if found is not None:
            accelerator = found
            notes.append(f"GPU model not in the rank lines: {written!r} read from the text above the table")
    if accelerator is None:
        accelerator, why = default_gpu(table.cuda_version)
        what = (
            f"GPU {table.gpu_name!r}{UNMODELLED_GPU}"
            if table.gpu_name
            else "GPU model not in the log: assumed "
        )
        notes.append(f"{what}{accelerator}{why} (give --gpu)")
    return accelerator


#: The GPU assumed for an architecture when the log names none, newest first: :data:`DEFAULT_GPU`, then the
#: first one whose architecture the log's CUDA compiles for (:func:`default_gpu`).
_ASSUMED_BY_ARCH = (DEFAULT_GPU, "a100-sxm-80gb", "v100-sxm2-32gb")


def default_gpu(cuda_version: str | None) -> tuple[str, str]:
    """The GPU assumed for a log that names none, and why when it is not :data:`DEFAULT_GPU`.

    The NCCL banner's CUDA (``NCCL version 2.14.3+cuda11.7``) is the toolkit NCCL was built with; one older
    than an architecture's first toolkit (``catalog/data/gpu_architectures.yaml``: Hopper sm_90 needs CUDA
    11.8, Ampere sm_80 11.0) built no code for it, so the newest architecture it does build for is assumed.
    The rule reads the accelerators' ``arch``; no ``sm`` needs to be in the log. (Such a build carries
    compute_80 PTX that a Hopper driver could JIT, so the rule picks a likelier guess, not a proof.)

    >>> default_gpu(None), default_gpu("12.2")
    (('h100-sxm', ''), ('h100-sxm', ''))
    >>> default_gpu("11.7")[0], default_gpu("10.1")[0]
    ('a100-sxm-80gb', 'v100-sxm2-32gb')
    """
    if cuda_version is None:
        return DEFAULT_GPU, ""
    usable = (
        k
        for k in _ASSUMED_BY_ARCH
        if cuda_compiles_for(catalog.accelerator(k).arch, cuda_version) is not False
    )
    key = next(usable, DEFAULT_GPU)
    if key == DEFAULT_GPU:
        return key, ""
    default_arch = catalog.accelerator(DEFAULT_GPU).arch
    first = gpu_architecture(default_arch)
    need = ".".join(map(str, first.min_cuda)) if first else "?"
    return key, (
        f" ({default_arch} needs CUDA >= {need}; NCCL here was built with CUDA {cuda_version}, which "
        f"compiles for {catalog.accelerator(key).arch} at most)"
    )


#: What a note of :func:`_table_accelerator` holds when the log names a GPU the catalogue lacks.
UNMODELLED_GPU = " not in the catalogue: assumed "
#: What a note of :func:`unrecorded_release_note` holds.
UNRECORDED_RELEASE = " is older than the oldest recorded release "


def unrecorded_release_note(version: str | None) -> str | None:
    """The note for a log whose NCCL ``version`` predates the catalogue's oldest recorded release
    (:func:`~aifabric.catalog.nccl.nccl_release_versions`), naming the tables it is priced with instead (the
    engine's default, the newest recorded); ``None`` for a recorded, newer or unreadable version.

    >>> unrecorded_release_note("2.8.4")  # doctest: +ELLIPSIS
    'NCCL 2.8.4 is older than the oldest recorded release 2.18.1: priced with the tables of NCCL 2.30...'
    >>> unrecorded_release_note("2.26.2") is None
    True
    >>> unrecorded_release_note("2.18") is None  # the 2.18 series: 2.18.3's tables, as the engine prices it
    True
    """
    releases = catalog.nccl_release_versions()
    try:
        want = version_tuple(version) if version is not None else None
    except ConfigError:
        return None
    if want is not None and len(want) == 2:  # "2.18" names its series, priced with the series' newest
        want = (*want, 10**6)
    if want is None or want >= version_tuple(releases[0]):
        return None
    return (
        f"NCCL {version}{UNRECORDED_RELEASE}{releases[0]}: priced with the tables of NCCL {releases[-1]}, "
        "the newest recorded; its own tuning is not modelled"
    )


def gpu_unmodelled(notes: Sequence[str]) -> bool:
    """Whether ``notes`` say the machine predicted on is not known to be the log's: the log names a GPU
    the catalogue lacks and the default was predicted on instead (no --gpu or --cluster), or its NCCL
    release predates every recorded one (:func:`unrecorded_release_note`). The rows are then compared, but
    no fault is read off them. A log that names no GPU says nothing against the default by itself, and is
    not counted.

    >>> gpu_unmodelled(["GPU 'Tesla T4' not in the catalogue: assumed h100-sxm (give --gpu)"])
    True
    >>> gpu_unmodelled(["GPU model not in the log: assumed h100-sxm (give --gpu)"])
    False
    >>> gpu_unmodelled([unrecorded_release_note("2.8.4")])
    True
    """
    return any(m in n for n in notes for m in (UNMODELLED_GPU, UNRECORDED_RELEASE))
